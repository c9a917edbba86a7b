"""Chunks of whole sentences, so no chunk starts or ends mid-sentence."""

from __future__ import annotations

from typing import Any, ClassVar

from rag_integration.core.options import OptionReader
from rag_integration.core.text.sentences import sentence_spans
from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker, group_spans


class SentenceChunker(BaseChunker):
    """``chunker="sentence"``: ``sentences_per_chunk`` (default 3), ``sentence_overlap`` (default 0)."""

    BACKEND: ClassVar[str | None] = "sentence"
    OPTIONS: ClassVar[tuple[str, ...]] = ("sentences_per_chunk", "sentence_overlap")

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        size = reader.integer("sentences_per_chunk", default=3, minimum=1)
        return {"size": size, "overlap": reader.integer("sentence_overlap", default=0, minimum=0, maximum=size - 1)}

    @classmethod
    def split(cls, text: str, settings: dict[str, Any]) -> list[str]:
        spans = sentence_spans(text)
        return group_spans(spans, settings["size"], settings["overlap"], text) if spans else []
