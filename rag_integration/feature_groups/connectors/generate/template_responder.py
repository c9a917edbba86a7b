"""A multi-source grounded answer: the top sentences across passages, each followed by its passage's marker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import option
from rag_integration.core.text.grounding import QuotableSentence
from rag_integration.feature_groups.connectors.generate.base import (
    Answer,
    BaseGenerateConnector,
    compose,
    scored_sentences,
)


@dataclass(frozen=True)
class TemplateSettings:
    """How long a template answer may be."""

    max_sentences: int = option(
        "max_sentences", "integer", "`template` only: most sentences in one answer", default=3, minimum=1
    )


class TemplateResponder(BaseGenerateConnector[TemplateSettings]):
    """``generate_backend="template"``: up to ``max_sentences`` (default 3) best-matching sentences, best first, as
    ``"sentence [n] sentence [m]"``; each passage drawn from is cited once, a repeated sentence is used once."""

    BACKEND: ClassVar[str | None] = "template"
    SETTINGS: ClassVar[type[Any] | None] = TemplateSettings

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: TemplateSettings) -> Answer:
        picks: list[QuotableSentence] = []
        seen: set[str] = set()
        for sentence in scored_sentences(query, passages):
            if sentence.score <= 0.0 or len(picks) == settings.max_sentences:
                break
            if sentence.text.casefold() not in seen:
                seen.add(sentence.text.casefold())
                picks.append(sentence)
        return compose(picks, passages)
