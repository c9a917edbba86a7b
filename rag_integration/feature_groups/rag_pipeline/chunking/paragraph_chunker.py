"""Chunks of whole paragraphs (text separated by blank lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.options import option
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans

PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n[ \t]*\n|\s*$)", re.DOTALL)


@dataclass(frozen=True)
class ParagraphChunkSettings:
    size: int = option("paragraphs_per_chunk", "integer", "paragraphs per chunk", default=1, minimum=1)


class ParagraphChunker(BaseChunker[ParagraphChunkSettings]):
    """``chunker="paragraph"``: ``paragraphs_per_chunk`` (default 1)."""

    BACKEND: ClassVar[str | None] = "paragraph"
    SETTINGS: ClassVar[type[Any] | None] = ParagraphChunkSettings

    @classmethod
    def split(cls, text: str, settings: ParagraphChunkSettings) -> list[str]:
        spans = [match.span() for match in PARAGRAPH.finditer(text)]
        return group_spans(spans, settings.size, 0, text) if spans else []
