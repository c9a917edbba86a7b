"""Fixed-size chunks of ``chunk_size`` characters or tokens, overlapping by ``chunk_overlap``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import option
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans

TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class FixedSizeChunkSettings:
    size: int = option("chunk_size", "integer", "characters or words per chunk", default=500, minimum=1)
    overlap: int = option(
        "chunk_overlap",
        "integer",
        "characters or words shared by neighbouring chunks, fewer than a chunk's",
        default=0,
        minimum=0,
    )
    unit: str = option(
        "chunk_unit",
        "choice",
        "what `chunk_size` counts: characters, or whitespace-separated words",
        default="chars",
        choices=("chars", "tokens"),
    )

    def __post_init__(self) -> None:
        if self.overlap >= self.size:
            raise InvalidOptionError("chunk_overlap", self.overlap, f"an int smaller than chunk_size ({self.size})")


class FixedSizeChunker(BaseChunker[FixedSizeChunkSettings]):
    """``chunker="fixed"``: ``chunk_unit`` ``"chars"`` (default) or ``"tokens"`` (whitespace-separated words)."""

    BACKEND: ClassVar[str | None] = "fixed"
    SETTINGS: ClassVar[type[Any] | None] = FixedSizeChunkSettings

    @classmethod
    def split(cls, text: str, settings: FixedSizeChunkSettings) -> list[str]:
        if settings.unit == "tokens":
            spans = [match.span() for match in TOKEN.finditer(text)]
        else:
            spans = [(position, position + 1) for position in range(len(text))]
        return group_spans(spans, settings.size, settings.overlap, text) if spans else []
