"""The simplest grounded answer: the sentence that best matches the query (and the next one when it matches too),
with its single citation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.feature_groups.connectors.generate.base import (
    SENTENCE_MODEL,
    Answer,
    BaseGenerateConnector,
    best_answer,
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
    Usually, the alphabet is taken to be the binary alphabet"); a best sentence ending in ":" brings the steps after
    it instead; no sentence sharing a word with the query means no answer (``""``, no citations) rather than an
    unrelated one."""

    BACKEND: ClassVar[str | None] = "extractive"
    SETTINGS: ClassVar[type[Any] | None] = ExtractiveSettings

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """Every answer quotes one passage."""
        return {"cites_one_passage": True}

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: ExtractiveSettings) -> Answer:
        return compose(best_answer(query, scored_sentences(query, passages, settings.sentence_model)), passages)
