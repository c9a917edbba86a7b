"""A multi-source grounded answer: the top sentences across passages, each followed by its passage's marker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import option
from rag_integration.core.text.analysis import count_words
from rag_integration.core.text.grounding import QuotableSentence
from rag_integration.feature_groups.connectors.generate.base import (
    SENTENCE_MODEL,
    Answer,
    BaseGenerateConnector,
    compose,
    lead_in_items,
    scored_sentences,
)


@dataclass(frozen=True)
class TemplateSettings:
    """How long a template answer may be."""

    max_sentences: int = option(
        "max_sentences", "integer", "`template` only: most sentences in one answer", default=3, minimum=1
    )
    max_words: int | None = option(
        "max_words",
        "integer",
        "`template` only: most words in one answer (the best sentence is kept whatever its length; a later one "
        "that would pass the budget is left out for a shorter one); none by default",
        default=None,
        minimum=1,
    )
    sentence_model: str = SENTENCE_MODEL.field()


class TemplateResponder(BaseGenerateConnector[TemplateSettings]):
    """``generate_backend="template"``: up to ``max_sentences`` (default 3) best-matching sentences within
    ``max_words``, best first (by their match, not their place in the passages), as ``"sentence [n] sentence [m]"``;
    each passage drawn from is cited once, a repeated sentence is used once. A lead-in ("Packing list:") comes with
    the items after it, as in ``extractive``, and counts as one sentence."""

    BACKEND: ClassVar[str | None] = "template"
    SETTINGS: ClassVar[type[Any] | None] = TemplateSettings

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: TemplateSettings) -> Answer:
        picks: list[QuotableSentence] = []
        seen: set[str] = set()
        words = chosen = 0
        ranked = scored_sentences(query, passages, settings.sentence_model)
        by_place = {(sentence.source, sentence.index): sentence for sentence in ranked}
        for sentence in ranked:
            if chosen == settings.max_sentences:
                break
            if not sentence.shares_a_word:  # a model may rank it high; the template quotes only matches
                continue
            group = [sentence, *lead_in_items(sentence, by_place)]
            group = [part for part in group if part.text.casefold() not in seen]
            length = sum(count_words(part.text) for part in group)
            if (
                not group
                or group[0] is not sentence
                or (picks and settings.max_words is not None and words + length > settings.max_words)
            ):
                continue
            seen.update(part.text.casefold() for part in group)
            picks.extend(group)
            words += length
            chosen += 1
        return compose(picks, passages)
