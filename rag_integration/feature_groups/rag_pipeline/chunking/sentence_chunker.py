"""Chunks of whole sentences, so no chunk starts or ends mid-sentence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import option
from rag_integration.core.text.sentences import sentence_spans
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans


@dataclass(frozen=True)
class SentenceChunkSettings:
    size: int = option("sentences_per_chunk", "integer", "sentences per chunk", default=3, minimum=1)
    overlap: int = option(
        "sentence_overlap",
        "integer",
        "sentences shared by neighbouring chunks, fewer than a chunk's",
        default=0,
        minimum=0,
    )

    def __post_init__(self) -> None:
        if self.overlap >= self.size:
            raise InvalidOptionError("sentence_overlap", self.overlap, f"an int between 0 and {self.size - 1}")


class SentenceChunker(BaseChunker[SentenceChunkSettings]):
    """``chunker="sentence"``: ``sentences_per_chunk`` (default 3), ``sentence_overlap`` (default 0)."""

    BACKEND: ClassVar[str | None] = "sentence"
    SETTINGS: ClassVar[type[Any] | None] = SentenceChunkSettings

    @classmethod
    def split(cls, text: str, settings: SentenceChunkSettings) -> list[str]:
        spans = sentence_spans(text)
        return group_spans(spans, settings.size, settings.overlap, text) if spans else []
