"""The simplest grounded answer: the sentence that best matches the query (and the next one when it matches too),
with its single citation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.feature_groups.connectors.generate.base import (
    SENTENCE_MODEL,
    Answer,
    BaseGenerateConnector,
    compose,
    scored_sentences,
)


@dataclass(frozen=True)
class ExtractiveSettings:
    """How the sentence is chosen."""

    sentence_model: str = SENTENCE_MODEL.field()


class ExtractiveResponder(BaseGenerateConnector[ExtractiveSettings]):
    """``generate_backend="extractive"``: the best-matching sentence of any passage and ``[1]``, and the sentence after
    it when that one also shares a word with the query (an answer often runs on: "...a string over an alphabet.
    Usually, the alphabet is taken to be the binary alphabet"); no sentence sharing a word with the query means no
    answer (``""``, no citations) rather than an unrelated one."""

    BACKEND: ClassVar[str | None] = "extractive"
    SETTINGS: ClassVar[type[Any] | None] = ExtractiveSettings

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: ExtractiveSettings) -> Answer:
        ranked = scored_sentences(query, passages, settings.sentence_model)
        if not ranked or ranked[0].score <= 0.0:
            return compose([], passages)
        best = ranked[0]
        following = next((s for s in ranked if s.source == best.source and s.index == best.index + 1), None)
        if following is None or lexical_scores(query, [following.text])[0] <= 0.0:  # its own words, not its heading's
            return compose([best], passages)
        return compose([best, following], passages)
