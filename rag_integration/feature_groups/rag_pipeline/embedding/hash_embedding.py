"""The zero-download hashed bag-of-words embedder, for tests and demos."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.rag_pipeline.embedding.base import BaseEmbeddingStage


class HashEmbeddingStage(BaseEmbeddingStage):
    """``embedding_model="hash"``."""

    BACKEND: ClassVar[str | None] = "hash"
