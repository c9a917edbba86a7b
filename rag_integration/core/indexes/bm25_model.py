"""A bm25s ``BM25`` made from term counts, and its batched search.

bm25s makes its score matrix from token lists (``BM25.index``); ``core.ranking.bm25_scores`` makes the same arrays,
bit for bit, from term counts that can be updated. This module is where those arrays are handed to bm25s: the one
place that sets a ``BM25``'s attributes instead of calling ``index``.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_integration.core.extras import optional_module, require_module
from rag_integration.core.ranking.bm25_scores import CorpusStatistics, TermCountArrays, TermScores, term_scores
from rag_integration.core.ranking.passages import AllowedMask, Hits, best_positive_hits_of_rows

if TYPE_CHECKING:
    import bm25s
    import numpy.typing as npt
    import scipy.sparse

QUERIES_PER_TASK = 64
"""Queries one pool task scores: enough that handing out tasks costs nothing next to the scoring."""
SCORES_AT_ONCE = 1 << 20
"""Most scores a search holds at once, over all its threads (4 MiB of float32; 1-16 MiB measured on one thread,
this was fastest): each thread scores and selects a block of queries together."""
BM25S_ID_TYPE = "int32"
"""bm25s's default ``int_dtype``, the type it indexes its non-occurrence array with."""
GATHERED_POSTINGS = 1 << 20
"""Most postings a query gathers at once (8 MiB with float32 scores), beyond its longest term's."""


@dataclass(frozen=True)
class Bm25Model:
    """bm25s's model of one method and its parameters over score arrays computed from term counts, each term's
    scores when a query first needs them (``TermScores``)."""

    scores: TermScores
    vocabulary: dict[str, int]
    k1: float
    b: float

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
        require_module("bm25s", "bm25s", "connectors")
        return cls(term_scores(counts, method, k1, b, statistics=statistics), vocabulary, k1, b)

    @functools.cached_property
    def retriever(self) -> bm25s.BM25:
        """A ``bm25s.BM25`` over the whole score matrix (every term's scores computed now)."""
        library = require_module("bm25s", "bm25s", "connectors")
        scores = self.scores.complete()
        retriever = library.BM25(k1=self.k1, b=self.b, method=self.scores.method)
        retriever.scores = {
            "data": scores.data,
            "indices": scores.indices,
            "indptr": scores.indptr,
            "num_docs": self.scores.documents,
        }
        retriever.vocab_dict = self.vocabulary
        retriever.unique_token_ids_set = set(self.vocabulary.values())
        retriever.nonoccurrence_array = scores.nonoccurrence
        return retriever

    @property
    def nonoccurrence(self) -> npt.NDArray[np.float32] | None:
        """BM25L's and BM25+'s weight of each term where it is absent (None for the other variants)."""
        return self.scores.nonoccurrence

    @functools.cached_property
    def term_document_matrix(self) -> scipy.sparse.csr_matrix:
        """bm25s's score arrays (one row of document scores per term) as a SciPy CSR matrix sharing their data,
        made on the first explanation and kept with the model."""
        sparse = require_module("scipy.sparse", "bm25s", "connectors")
        scores = self.scores.complete()
        shape = (len(scores.indptr) - 1, self.scores.documents)
        return sparse.csr_matrix((scores.data, scores.indices, scores.indptr), shape=shape)

    def search(self, query_ids: list[list[int]], depth: int, allowed: AllowedMask, threads: int) -> list[Hits]:
        """bm25s's scores of each query (its term ids, repeats kept), its top hits picked among the positive ones
        (exactly bm25s's ranking at a fraction of its selection cost). On several threads, slices of queries are
        scored on a pool as raw bm25s does; each score is bm25s's own sum (``QueryScorer``), so the hits do not
        depend on the thread count."""
        weight_mask = None if allowed is None else allowed.astype(np.float32)
        postings = Postings.of(self.scores)
        rows = max(1, min(len(query_ids), postings.rows_at_once(threads)))
        scorers = threading.local()  # one per pool thread, kept for its every task: fresh arrays cost page faults

        def hits(block: list[list[int]]) -> list[Hits]:
            scorer = getattr(scorers, "scorer", None)
            if scorer is None:
                scorer = scorers.scorer = QueryScorer.of(postings, rows)
            found: list[Hits] = []
            for start in range(0, len(block), len(scorer.matrix)):
                queries = block[start : start + len(scorer.matrix)]
                chosen = best_positive_hits_of_rows(scorer.block_scores(queries, weight_mask), depth)
                found += [hits if ids else [] for ids, hits in zip(queries, chosen, strict=True)]
            return found

        if threads == 1 or len(query_ids) <= QUERIES_PER_TASK:
            return hits(query_ids)
        blocks = [query_ids[start : start + QUERIES_PER_TASK] for start in range(0, len(query_ids), QUERIES_PER_TASK)]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return [found for block_hits in pool.map(hits, blocks) for found in block_hits]


@dataclass(frozen=True)
class Postings:
    """A model's score arrays as SciPy's sparse loops take them (one index type), each term's posting count, and
    the most postings one query gathers at once (a longer query is scored in chunks of terms); ``scores`` fills a
    term's scores before a query reads them."""

    scores: TermScores
    indptr: npt.NDArray[Any]
    indices: npt.NDArray[Any]
    data: npt.NDArray[Any]
    lengths: npt.NDArray[np.int64]
    documents: int
    nonoccurrence: npt.NDArray[Any] | None
    id_type: np.dtype[Any]
    capacity: int
    one: npt.NDArray[Any]

    def rows_at_once(self, threads: int) -> int:
        """How many queries' scores each of ``threads`` threads holds at once: up to a pool task's, all of them
        together in at most ``SCORES_AT_ONCE``."""
        return max(1, min(QUERIES_PER_TASK, SCORES_AT_ONCE // max(1, self.documents * threads)))

    @classmethod
    def of(cls, scores: TermScores) -> Postings:
        data, indices, indptr = scores.data, scores.indices, scores.indptr
        kind = np.dtype(np.int32 if len(indices) < np.iinfo(np.int32).max else np.int64)
        lengths = np.diff(indptr).astype(np.int64)
        capacity = max(int(lengths.max(initial=0)), GATHERED_POSTINGS)
        return cls(
            scores,
            indptr.astype(kind),
            indices.astype(kind, copy=False),
            data,
            lengths,
            scores.documents,
            scores.nonoccurrence,
            np.dtype(BM25S_ID_TYPE),
            capacity,
            np.ones(1, dtype=data.dtype),
        )

    def chunks(self, ids: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
        """``ids`` in order, cut where their postings would pass ``capacity``."""
        sizes = self.lengths[ids]
        if int(sizes.sum()) <= self.capacity:
            return [ids]
        chunks, start, held = [], 0, 0
        for position, size in enumerate(sizes.tolist()):
            if held + size > self.capacity:
                chunks.append(ids[start:position])
                start, held = position, 0
            held += size
        chunks.append(ids[start:])
        return chunks


@dataclass
class QueryScorer:
    """One thread's scoring of queries, a block at a time, in arrays it reuses (a fresh scores array per query
    cost more than the scoring): a row of scores per query and room for a query's gathered postings."""

    postings: Postings
    matrix: npt.NDArray[Any]
    gathered_indices: npt.NDArray[Any]
    gathered_data: npt.NDArray[Any]
    loops: Any
    """SciPy's compiled sparse loops, called directly (a matrix object per query costs more than its scores), or
    None where SciPy no longer has them (a private module): then ``np.add.at`` per term, as bm25s adds."""

    @classmethod
    def of(cls, postings: Postings, rows: int = 1) -> QueryScorer:
        data, kind = postings.data.dtype, postings.indices.dtype
        loops = optional_module("scipy.sparse._sparsetools")
        if not all(hasattr(loops, name) for name in ("csr_row_index", "csc_matvec")):
            loops = None
        matrix = np.zeros((rows, postings.documents), dtype=data)
        return cls(postings, matrix, np.empty(0, kind), np.empty(0, data), loops)

    def block_scores(
        self, queries: list[list[int]], weight_mask: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[Any]:
        """Each query's ``bm25s.BM25.get_scores_from_ids`` as a row, bit for bit, valid until the next block: each
        term's documents, which are distinct, get its float32 score added, term after term in the query's order.
        SciPy's compiled sparse loops do it with the GIL released, in two calls per query (bm25s's ``np.add.at``
        per term holds the GIL, so a second thread only queued behind the first): the query's postings gathered
        in order (``csr_row_index``), then added as one sparse column (``csc_matvec``)."""
        postings = self.postings
        matrix = self.matrix[: len(queries)]
        matrix.fill(0.0)
        for row, query_ids in zip(matrix, queries, strict=True):
            ids = np.asarray(query_ids, dtype=postings.indices.dtype)
            postings.scores.score(ids)
            size = int(postings.lengths[ids].sum())
            if size <= postings.capacity:
                self._add(row, ids, size)
            else:
                for chunk in postings.chunks(ids):
                    self._add(row, chunk, int(postings.lengths[chunk].sum()))
        if postings.nonoccurrence is not None:
            absent = [postings.nonoccurrence[np.asarray(ids, dtype=postings.id_type)].sum() for ids in queries]
            matrix += np.array(absent, dtype=matrix.dtype)[:, None]
        if weight_mask is not None:
            matrix *= weight_mask
        return matrix

    def _add(self, scores: npt.NDArray[Any], ids: npt.NDArray[Any], size: int) -> None:
        """The postings of ``ids`` (``size`` of them) added to ``scores``, term after term."""
        postings, loops = self.postings, self.loops
        if loops is None:
            for start, end in zip(postings.indptr[ids].tolist(), postings.indptr[ids + 1].tolist(), strict=True):
                np.add.at(scores, postings.indices[start:end], postings.data[start:end])
            return
        if size > len(self.gathered_indices):
            self.gathered_indices = np.empty(size, dtype=postings.indices.dtype)
            self.gathered_data = np.empty(size, dtype=postings.data.dtype)
        indices, data = self.gathered_indices[:size], self.gathered_data[:size]
        loops.csr_row_index(len(ids), ids, postings.indptr, postings.indices, postings.data, indices, data)
        span = np.array([0, size], dtype=indices.dtype)
        loops.csc_matvec(postings.documents, 1, span, indices, data, postings.one, scores)
