"""FAISS inner-product indexes over normalised vectors: typed settings, build, search with a mask, write, read.

Shared by the dense retriever and the stage pipeline's vector store, so both rank identically.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.store import load_npy, save_npy
from rag_integration.core.options import OptionReader, OptionSpec, option, read_options
from rag_integration.core.ranking.passages import Hits

if TYPE_CHECKING:
    import faiss

FAISS_INDEX_TYPES = ("flat", "hnsw", "ivf")
FAISS_VECTORS_FILE = "vectors.npy"
"""A persisted FAISS index is its vectors; the index is rebuilt from them, so no FAISS file is ever parsed."""
MAX_SEARCH_BREADTH = 1_000_000
"""Largest ``hnsw_ef_search``, ``ivf_nlist`` and ``ivf_nprobe``: FAISS keeps them in C ints, and a breadth beyond a
million candidates or cells buys nothing but memory."""
MAX_SEARCH_THREADS = 1024
"""Largest ``search_threads``: OpenMP takes a C int, and no machine this runs on has more cores."""


SEARCH_THREADS: OptionSpec[int] = OptionSpec(
    "search_threads",
    "integer",
    "threads one search may use (`bm25s`, `faiss`, `hybrid_rrf`, `vector_store`); any count ranks the same",
    default=1,
    minimum=1,
    maximum=MAX_SEARCH_THREADS,
)


@dataclass(frozen=True)
class FaissIndexSettings:
    """What shapes a FAISS index, hence part of its cache key: the kind and its build knobs."""

    kind: str = option(
        "faiss_index",
        "choice",
        "`flat` (exact), `hnsw` or `ivf` (approximate, for large corpora)",
        default="flat",
        choices=FAISS_INDEX_TYPES,
    )
    hnsw_m: int = option("hnsw_m", "integer", "HNSW graph degree", default=32, minimum=4, maximum=256)
    ivf_nlist: int = option(
        "ivf_nlist",
        "integer",
        "IVF cells (0: about 4·√n, at least 39 documents per cell)",
        default=0,
        minimum=0,
        maximum=MAX_SEARCH_BREADTH,
    )


@dataclass(frozen=True)
class FaissSearchSettings:
    """What only steers a search (never part of a key): HNSW breadth, IVF cells probed, OpenMP threads."""

    hnsw_ef_search: int = option(
        "hnsw_ef_search", "integer", "HNSW search breadth", default=128, minimum=1, maximum=MAX_SEARCH_BREADTH
    )
    ivf_nprobe: int = option(
        "ivf_nprobe", "integer", "IVF cells probed", default=8, minimum=1, maximum=MAX_SEARCH_BREADTH
    )
    threads: int = SEARCH_THREADS.field()


@dataclass(frozen=True)
class FaissSettings:
    """Every FAISS option of one request, split into the index's shape and the search knobs."""

    index: FaissIndexSettings
    search: FaissSearchSettings

    @classmethod
    def read(cls, reader: OptionReader) -> FaissSettings:
        """``faiss_index`` and its tuning knobs, validated; ``search_threads`` as well."""
        return read_options(cls, reader)

    @classmethod
    def from_manifest(cls, raw: Mapping[str, Any], threads: int = 1) -> FaissSettings:
        """The settings a vector store's manifest records (option names as keys), searched with ``threads``."""
        return cls(
            FaissIndexSettings(raw["faiss_index"], raw["hnsw_m"], raw["ivf_nlist"]),
            FaissSearchSettings(raw["hnsw_ef_search"], raw["ivf_nprobe"], threads),
        )

    def manifest(self) -> dict[str, Any]:
        """Option name -> value, as a vector store's manifest keeps them; the thread count is per request."""
        return {
            "faiss_index": self.index.kind,
            "hnsw_m": self.index.hnsw_m,
            "ivf_nlist": self.index.ivf_nlist,
            "hnsw_ef_search": self.search.hnsw_ef_search,
            "ivf_nprobe": self.search.ivf_nprobe,
        }


def build_faiss_index(
    vectors: npt.NDArray[np.float32], settings: FaissIndexSettings | Mapping[str, Any], backend: str
) -> Any:
    """A FAISS index over ``vectors``; ``settings`` may be a manifest's mapping (as the ``__indexed`` stage keeps)."""
    faiss = require_module("faiss", backend, "faiss")
    shape = settings if isinstance(settings, FaissIndexSettings) else FaissSettings.from_manifest(settings).index
    count, dimension = vectors.shape
    if shape.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, shape.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    elif shape.kind == "ivf":
        nlist = shape.ivf_nlist or max(1, min(int(4 * math.sqrt(count)), count // 39))
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFFlat(quantizer, dimension, max(1, min(nlist, count)), faiss.METRIC_INNER_PRODUCT)
        index.cp.min_points_per_centroid = 1  # small corpora train fine; silence faiss's warning
        index.train(vectors)
    else:
        index = faiss.IndexFlatIP(dimension)
    # HNSW insertion order depends on thread scheduling; one thread keeps the graph identical every run.
    with _omp_threads(faiss, 1):
        index.add(vectors)
    return index


def search_faiss_index(
    index: faiss.Index,
    query_vectors: npt.NDArray[np.float32],
    depth: int,
    allowed: npt.NDArray[np.bool_] | None,
    settings: FaissSettings,
    backend: str,
) -> list[Hits]:
    """Up to ``depth`` ``(position, inner product)`` hits per query; positions outside ``allowed`` never appear."""
    faiss = require_module("faiss", backend, "faiss")
    selector = None if allowed is None else faiss.IDSelectorBatch(np.flatnonzero(allowed).astype(np.int64))
    search = settings.search
    if settings.index.kind == "hnsw":
        params = faiss.SearchParametersHNSW(efSearch=max(search.hnsw_ef_search, depth), sel=selector)
    elif settings.index.kind == "ivf":
        params = faiss.SearchParametersIVF(nprobe=search.ivf_nprobe, sel=selector)
    else:
        params = faiss.SearchParameters(sel=selector)
    with _omp_threads(faiss, search.threads):
        scores, positions = index.search(query_vectors, depth, params=params)
    return [
        [(int(position), float(score)) for position, score in zip(row_positions, row_scores) if position >= 0]
        for row_positions, row_scores in zip(positions, scores)
    ]


@contextlib.contextmanager
def _omp_threads(faiss: ModuleType, threads: int) -> Iterator[None]:
    """Run a block with FAISS's OpenMP thread count set, and restore the process's count after it."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def faiss_index_bytes(index: faiss.Index, backend: str) -> bytes:
    """The index in FAISS's own serial form: what a pickled index carries, so it never depends on SWIG objects."""
    return bytes(require_module("faiss", backend, "faiss").serialize_index(index).tobytes())


def faiss_index_nbytes(index: faiss.Index) -> int:
    """About the memory a FAISS index holds, read from its counts without serialising it: the float32 vectors, plus
    the list ids and centroids of an IVF index and the neighbour lists of an HNSW graph."""
    count, dimension = int(index.ntotal), int(index.d)
    size = count * dimension * 4
    hnsw = getattr(index, "hnsw", None)
    if hnsw is not None:
        size += int(hnsw.neighbors.size()) * 4 + int(hnsw.offsets.size()) * 8 + int(hnsw.levels.size()) * 4
    nlist = getattr(index, "nlist", None)
    if nlist is not None:
        size += count * 8 + int(nlist) * dimension * 4
    return size


def faiss_index_from_bytes(data: bytes, backend: str) -> faiss.Index:
    library = require_module("faiss", backend, "faiss")
    index: faiss.Index = library.deserialize_index(np.frombuffer(data, dtype=np.uint8).copy())
    return index


def save_faiss_vectors(index: faiss.Index, folder: Path, backend: str) -> None:
    """Persist the vectors an index holds, in insertion order."""
    save_npy(folder / FAISS_VECTORS_FILE, faiss_vectors(index, None, backend))


def faiss_vectors(index: faiss.Index, positions: Sequence[int] | None, backend: str) -> npt.NDArray[np.float32]:
    """The vectors an index holds at ``positions`` (None: all, in insertion order); an IVF index gets a direct map
    to give them back."""
    faiss = require_module("faiss", backend, "faiss")
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.make_direct_map()
    if positions is None:
        return np.asarray(index.reconstruct_n(0, index.ntotal), dtype=np.float32)
    return np.asarray(index.reconstruct_batch(np.asarray(positions, dtype=np.int64)), dtype=np.float32)


def load_faiss_index(
    folder: Path, settings: FaissIndexSettings | Mapping[str, Any], count: int, dimension: int, backend: str
) -> Any:
    """The index rebuilt (deterministically, as ``build_faiss_index`` always builds) from persisted vectors whose
    shape is checked against ``count`` x ``dimension`` before they are read."""
    vectors = load_npy(folder / FAISS_VECTORS_FILE, (count, dimension), "float32")
    if not np.isfinite(vectors).all():
        raise IndexMismatchError("index_dir", str(folder), "finite vectors")
    return build_faiss_index(vectors, settings, backend)
