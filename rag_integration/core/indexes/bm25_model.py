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
from rag_integration.core.ranking.bm25_scores import CorpusStatistics, TermCountArrays, bm25_scores
from rag_integration.core.ranking.passages import AllowedMask, Hits, best_positive_hits

if TYPE_CHECKING:
    import bm25s
    import numpy.typing as npt
    import scipy.sparse

QUERIES_PER_TASK = 64
"""Queries one pool task scores: enough that handing out tasks costs nothing next to the scoring."""


@dataclass(frozen=True)
class Bm25Model:
    """A ``bm25s.BM25`` of one method and its parameters over score arrays computed from term counts."""

    retriever: bm25s.BM25

    @classmethod
    def from_counts(
        cls,
        counts: TermCountArrays,
        vocabulary: dict[str, int],
        method: str,
        k1: float,
        b: float,
        statistics: CorpusStatistics | None = None,
    ) -> Bm25Model:
        """bm25s's model of these counts, its score matrix bit for bit as ``bm25s.BM25.index`` makes it (given the
        ``statistics`` of a corpus they are a shard of, its rows of the whole corpus's matrix)."""
        library = require_module("bm25s", "bm25s", "connectors")
        scores = bm25_scores(counts, method, k1, b, statistics=statistics)
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
        made on the first explanation and kept with the model."""
        sparse = require_module("scipy.sparse", "bm25s", "connectors")
        scores = self.retriever.scores
        shape = (len(scores["indptr"]) - 1, scores["num_docs"])
        return sparse.csr_matrix((scores["data"], scores["indices"], scores["indptr"]), shape=shape)

    def search(self, query_ids: list[list[int]], depth: int, allowed: AllowedMask, threads: int) -> list[Hits]:
        """bm25s's scores of each query (its term ids, repeats kept), its top hits picked among the positive ones
        (exactly bm25s's ranking at a fraction of its selection cost). On several threads, slices of queries are
        scored on a pool as raw bm25s does: the scoring and selection run mostly outside the GIL, and each score
        is bm25s's own sum, so the hits do not depend on the thread count."""
        weight_mask = None if allowed is None else allowed.astype(np.float32)
        score = self.retriever.get_scores_from_ids

        def hits(block: list[list[int]]) -> list[Hits]:
            return [best_positive_hits(score(ids, weight_mask=weight_mask), depth) if ids else [] for ids in block]

        if threads == 1 or len(query_ids) <= QUERIES_PER_TASK:
            return hits(query_ids)
        blocks = [query_ids[start : start + QUERIES_PER_TASK] for start in range(0, len(query_ids), QUERIES_PER_TASK)]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return [found for block_hits in pool.map(hits, blocks) for found in block_hits]
