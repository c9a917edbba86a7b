"""Fixed-size chunks of ``chunk_size`` characters or tokens, overlapping by ``chunk_overlap``."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans

TOKEN = re.compile(r"\S+")


class FixedSizeChunker(BaseChunker):
    """``chunker="fixed"``: ``chunk_unit`` ``"chars"`` (default) or ``"tokens"`` (whitespace-separated words)."""

    BACKEND: ClassVar[str | None] = "fixed"
    OPTIONS: ClassVar[tuple[str, ...]] = ("chunk_size", "chunk_overlap", "chunk_unit")

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        size = reader.integer("chunk_size", default=500, minimum=1)
        overlap = reader.integer("chunk_overlap", default=0, minimum=0)
        if overlap >= size:
            raise InvalidOptionError("chunk_overlap", overlap, f"an int smaller than chunk_size ({size})")
        return {
            "size": size,
            "overlap": overlap,
            "unit": reader.choice("chunk_unit", ("chars", "tokens"), default="chars"),
        }

    @classmethod
    def split(cls, text: str, settings: dict[str, Any]) -> list[str]:
        if settings["unit"] == "tokens":
            spans = [match.span() for match in TOKEN.finditer(text)]
        else:
            spans = [(position, position + 1) for position in range(len(text))]
        return group_spans(spans, settings["size"], settings["overlap"], text) if spans else []
