"""Chunks of whole paragraphs (text separated by blank lines)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans

PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n[ \t]*\n|\s*$)", re.DOTALL)


class ParagraphChunker(BaseChunker):
    """``chunker="paragraph"``: ``paragraphs_per_chunk`` (default 1)."""

    BACKEND: ClassVar[str | None] = "paragraph"
    OPTIONS: ClassVar[tuple[str, ...]] = ("paragraphs_per_chunk",)

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {"size": reader.integer("paragraphs_per_chunk", default=1, minimum=1), "overlap": 0}

    @classmethod
    def split(cls, text: str, settings: dict[str, Any]) -> list[str]:
        spans = [match.span() for match in PARAGRAPH.finditer(text)]
        return group_spans(spans, settings["size"], settings["overlap"], text) if spans else []
