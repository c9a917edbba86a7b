"""FAISS inner-product indexes over normalised vectors: build, search with a mask, write, read.

Shared by the dense retriever and the stage pipeline's vector store, so both rank identically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.extras import require_module
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import Hits

FAISS_INDEX_TYPES = ("flat", "hnsw", "ivf")
FAISS_INDEX_FILE = "index.faiss"
SEARCH_SETTINGS = ("hnsw_ef_search", "ivf_nprobe")
"""Settings that only steer a search: they are not part of an index's identity, so changing them never rebuilds."""


def read_faiss_settings(reader: OptionReader) -> dict[str, Any]:
    """The FAISS options (``faiss_index`` and its tuning knobs), validated."""
    return {
        "faiss_index": reader.choice("faiss_index", FAISS_INDEX_TYPES, default="flat"),
        "hnsw_m": reader.integer("hnsw_m", default=32, minimum=4, maximum=256),
        "hnsw_ef_search": reader.integer("hnsw_ef_search", default=128, minimum=1),
        "ivf_nlist": reader.integer("ivf_nlist", default=0, minimum=0),
        "ivf_nprobe": reader.integer("ivf_nprobe", default=8, minimum=1),
    }


def build_faiss_index(vectors: npt.NDArray[np.float32], settings: Mapping[str, Any], backend: str) -> Any:
    faiss = require_module("faiss", backend, "faiss")
    count, dimension = vectors.shape
    kind = settings["faiss_index"]
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, settings["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
    elif kind == "ivf":
        nlist = settings["ivf_nlist"] or max(1, min(int(4 * math.sqrt(count)), count // 39))
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFFlat(quantizer, dimension, max(1, min(nlist, count)), faiss.METRIC_INNER_PRODUCT)
        index.cp.min_points_per_centroid = 1  # small corpora train fine; silence faiss's warning
        index.train(vectors)
    else:
        index = faiss.IndexFlatIP(dimension)
    # HNSW insertion order depends on thread scheduling; one thread keeps the graph identical every run.
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def search_faiss_index(
    index: Any,
    query_vectors: npt.NDArray[np.float32],
    depth: int,
    allowed: npt.NDArray[np.bool_] | None,
    settings: Mapping[str, Any],
    backend: str,
) -> list[Hits]:
    """Up to ``depth`` ``(position, inner product)`` hits per query; positions outside ``allowed`` never appear."""
    faiss = require_module("faiss", backend, "faiss")
    selector = None if allowed is None else faiss.IDSelectorBatch(np.flatnonzero(allowed).astype(np.int64))
    kind = settings["faiss_index"]
    if kind == "hnsw":
        params = faiss.SearchParametersHNSW(efSearch=max(settings["hnsw_ef_search"], depth), sel=selector)
    elif kind == "ivf":
        params = faiss.SearchParametersIVF(nprobe=settings["ivf_nprobe"], sel=selector)
    else:
        params = faiss.SearchParameters(sel=selector)
    scores, positions = index.search(query_vectors, depth, params=params)
    return [
        [(int(position), float(score)) for position, score in zip(row_positions, row_scores) if position >= 0]
        for row_positions, row_scores in zip(positions, scores)
    ]


def write_faiss_index(index: Any, path: Path, backend: str) -> None:
    require_module("faiss", backend, "faiss").write_index(index, str(path))


def read_faiss_index(path: Path, backend: str) -> Any:
    return require_module("faiss", backend, "faiss").read_index(str(path))
