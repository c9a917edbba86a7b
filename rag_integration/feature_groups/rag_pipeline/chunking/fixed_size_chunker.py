"""Fixed-size chunks of ``chunk_size`` characters or tokens, overlapping by ``chunk_overlap``."""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import option
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker

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
        """Windows cut straight from the text: characters by position, words by arrays of their start and end
        offsets, so a 50 MB line holds its chunks and two integer arrays, not a tuple per character."""
        words: tuple[array[int], array[int]] | None = None
        if settings.unit == "tokens":
            offsets = "i" if len(text) < 2**31 else "q"  # 4 bytes an offset where they fit
            words = array(offsets), array(offsets)
            for match in TOKEN.finditer(text):
                words[0].append(match.start())
                words[1].append(match.end())
        count = len(text) if words is None else len(words[0])
        step = settings.size - settings.overlap
        chunks = []
        for first in range(0, count, step):
            last = min(first + settings.size, count) - 1
            begin, end = (first, last + 1) if words is None else (words[0][first], words[1][last])
            chunk = text[begin:end].strip()
            if chunk:
                chunks.append(chunk)
            if first + settings.size >= count:
                break
        return chunks
