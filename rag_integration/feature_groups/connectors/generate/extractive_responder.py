"""The simplest grounded answer: the one sentence that best matches the query, with its single citation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import NoSettings
from rag_integration.feature_groups.connectors.generate.base import (
    Answer,
    BaseGenerateConnector,
    compose,
    scored_sentences,
)


class ExtractiveResponder(BaseGenerateConnector[NoSettings]):
    """``generate_backend="extractive"``: the best-matching sentence of any passage and ``[1]``; no sentence sharing
    a word with the query means no answer (``""``, no citations) rather than an unrelated one."""

    BACKEND: ClassVar[str | None] = "extractive"

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: NoSettings) -> Answer:
        best = scored_sentences(query, passages)[:1]
        return compose([sentence for sentence in best if sentence.score > 0.0], passages)
