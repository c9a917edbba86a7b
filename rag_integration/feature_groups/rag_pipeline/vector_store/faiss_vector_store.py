"""FAISS as the vector store: flat (exact), HNSW or IVF, the same index code the dense retriever uses. The store
keeps the vectors; the index is built from them, with these settings, when the store is read."""

from __future__ import annotations

from typing import Any, ClassVar

from rag_integration.core.indexes.vector_index import FaissSettings
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.vector_store.base import BaseVectorStore


class FaissVectorStore(BaseVectorStore):
    """``vector_store="faiss"`` with ``faiss_index`` (flat, hnsw, ivf) and ``index_dir``."""

    BACKEND: ClassVar[str | None] = "faiss"
    SETTINGS: ClassVar[type[Any] | None] = FaissSettings
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss",)

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        """The FAISS options in the form a store's manifest records them."""
        return FaissSettings.read(reader).manifest()
