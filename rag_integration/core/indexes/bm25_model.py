"""A bm25s ``BM25`` made from term counts, and its batched search.

bm25s makes its score matrix from token lists (``BM25.index``); ``core.ranking.bm25_scores`` makes the same arrays,
bit for bit, from term counts that can be updated. This module is where those arrays are handed to bm25s: the one
place that sets a ``BM25``'s attributes instead of calling ``index``.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag_integration.core.extras import require_module
from rag_integration.core.ranking.bm25_scores import TermCountArrays, bm25_scores
from rag_integration.core.ranking.passages import AllowedMask, Hits, best_positive_hits

if TYPE_CHECKING:
    import bm25s
    import numpy.typing as npt
    import scipy.sparse

MAX_BLOCK_QUERIES = 64
BLOCK_SCORES = 1 << 18
"""Queries scored together on a thread: at most 64, and at most ~260k scores (2 MB) held per block."""


@dataclass(frozen=True)
class Bm25Model:
    """A ``bm25s.BM25`` of one method and its parameters over score arrays computed from term counts."""

    retriever: bm25s.BM25

    @classmethod
    def from_counts(
        cls, counts: TermCountArrays, vocabulary: dict[str, int], method: str, k1: float, b: float
    ) -> Bm25Model:
        """bm25s's model of these counts, its score matrix bit for bit as ``bm25s.BM25.index`` makes it."""
        library = require_module("bm25s", "bm25s", "connectors")
        scores = bm25_scores(counts, method, k1, b)
        retriever = library.BM25(k1=k1, b=b, method=method)
        retriever.scores = {
            "data": scores.data,
            "indices": scores.indices,
            "indptr": scores.indptr,
            "num_docs": counts.document_count,
        }
        retriever.vocab_dict = vocabulary
        retriever.unique_token_ids_set = set(vocabulary.values())
        retriever.nonoccurrence_array = scores.nonoccurrence
        return cls(retriever)

    @property
    def nonoccurrence(self) -> npt.NDArray[np.float32] | None:
        """BM25L's and BM25+'s weight of each term where it is absent (None for the other variants)."""
        nonoccurrence: npt.NDArray[np.float32] | None = self.retriever.nonoccurrence_array
        return nonoccurrence

    @functools.cached_property
    def term_document_matrix(self) -> scipy.sparse.csr_matrix:
        """bm25s's score arrays (one row of document scores per term) as a SciPy CSR matrix sharing their data,
        made on the first threaded search or explanation and kept with the model."""
        sparse = require_module("scipy.sparse", "bm25s", "connectors")
        scores = self.retriever.scores
        shape = (len(scores["indptr"]) - 1, scores["num_docs"])
        return sparse.csr_matrix((scores["data"], scores["indices"], scores["indptr"]), shape=shape)

    def search(self, query_ids: list[list[int]], depth: int, allowed: AllowedMask, threads: int) -> list[Hits]:
        """bm25s's scores of each query (its term ids, repeats kept), its top hits picked among the positive ones
        (exactly bm25s's ranking at a fraction of its selection cost). On several threads, blocks of queries are
        scored as one sparse product with the score matrix, which runs outside the GIL; the sums are added in the
        same order, so the scores are bit for bit bm25s's."""
        weight_mask = None if allowed is None else allowed.astype(np.float32)
        if threads == 1 or self.nonoccurrence is not None:
            score = self.retriever.get_scores_from_ids
            return [best_positive_hits(score(ids, weight_mask=weight_mask), depth) if ids else [] for ids in query_ids]
        matrix = self.term_document_matrix
        size = max(1, min(MAX_BLOCK_QUERIES, BLOCK_SCORES // max(1, matrix.shape[1])))
        blocks = [query_ids[start : start + size] for start in range(0, len(query_ids), size)]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            scored = pool.map(lambda block: _block_hits(matrix, block, depth, weight_mask), blocks)
            return [hits for block_hits in scored for hits in block_hits]


def _block_hits(
    matrix: scipy.sparse.csr_matrix, block: list[list[int]], depth: int, weight_mask: npt.NDArray[np.float32] | None
) -> list[Hits]:
    """The hits of a block of queries (term ids, repeats kept) from one product of their term counts and the
    matrix: each document's score is summed over the query's terms in query order, as bm25s sums it."""
    pointers = np.zeros(len(block) + 1, dtype=np.int64)
    np.cumsum([len(ids) for ids in block], out=pointers[1:])
    terms = np.fromiter((token for ids in block for token in ids), dtype=np.int64, count=int(pointers[-1]))
    counts = np.ones(len(terms), dtype=matrix.dtype)
    product = type(matrix)((counts, terms, pointers), shape=(len(block), matrix.shape[0])) @ matrix
    rows = product.indptr.tolist()
    hits = []
    for row in range(len(block)):
        scores, documents = product.data[rows[row] : rows[row + 1]], product.indices[rows[row] : rows[row + 1]]
        if weight_mask is not None:
            scores = scores * weight_mask[documents]
        hits.append(best_positive_hits(scores, depth, documents))
    return hits
