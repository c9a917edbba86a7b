"""bm25s's score matrix computed from term counts in a few array operations: the same formulas, in the same
floating-point order, as ``bm25s.BM25.index`` evaluates them document by document, so the arrays are bit for bit
bm25s's (tested for every variant), and a corpus whose counts changed is scored again in time linear in its size."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.extras import require_module

if TYPE_CHECKING:
    import numpy.typing as npt

NONOCCURRENCE_METHODS = ("bm25l", "bm25+")
BM25S_DELTA = 0.5
"""bm25s's default ``delta`` of BM25L and BM25+, which the backend never changes."""


@dataclass(frozen=True)
class TermCountArrays:
    """Each document's distinct terms and how often they occur, as the rows of a CSR matrix (documents by terms)."""

    indptr: npt.NDArray[np.int64]
    terms: npt.NDArray[np.int32]
    counts: npt.NDArray[np.int32]
    vocabulary_size: int

    @property
    def document_count(self) -> int:
        return len(self.indptr) - 1

    def only(self, live: npt.NDArray[np.bool_]) -> TermCountArrays:
        """The rows ``live`` marks, in order: the counts of those documents alone (their entries gathered, so a few
        rows of a large corpus cost only their own entries)."""
        rows = np.flatnonzero(live)
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        entries = _spans(self.indptr[rows], lengths)
        return TermCountArrays(indptr, self.terms[entries], self.counts[entries], self.vocabulary_size)

    def row_of(self, entries: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The row each entry (a position in ``terms``) belongs to."""
        rows: npt.NDArray[np.int64] = np.searchsorted(self.indptr, entries, side="right") - 1
        return rows


@dataclass(frozen=True)
class CorpusStatistics:
    """What BM25 needs of a whole corpus beyond one document: its size, total length and each term's document
    frequency. They add up over disjoint parts, so shards scored with the sum rank as one index over all of them."""

    document_count: int
    total_length: int
    frequencies: npt.NDArray[np.int64]

    @classmethod
    def of(cls, counts: TermCountArrays, empty_term: int = 0) -> CorpusStatistics:
        """The statistics of one corpus's counts, a document without terms counting ``empty_term`` once."""
        _, terms, term_counts = _with_empty_term(counts, empty_term)
        frequencies = np.bincount(terms, minlength=counts.vocabulary_size).astype(np.int64)
        return cls(counts.document_count, int(term_counts.sum(dtype=np.int64)), frequencies)

    def __sub__(self, part: CorpusStatistics) -> CorpusStatistics:
        """The statistics without those of ``part``, some of the same documents (what an overlay leaves of a base)."""
        return CorpusStatistics(
            self.document_count - part.document_count,
            self.total_length - part.total_length,
            self.frequencies - part.frequencies,
        )

    def __add__(self, other: CorpusStatistics) -> CorpusStatistics:
        if len(self.frequencies) != len(other.frequencies):
            raise IndexMismatchError(
                "index_shards",
                len(other.frequencies),
                f"statistics over {len(self.frequencies)} terms, as every shard's",
            )
        total = self.document_count + other.document_count
        return CorpusStatistics(total, self.total_length + other.total_length, self.frequencies + other.frequencies)

    @property
    def average_length(self) -> np.float64:
        """bm25s's average document length: the float64 mean of integer lengths, which is exactly this quotient."""
        if not self.document_count:
            return np.float64(np.nan)
        return np.float64(self.total_length) / np.float64(self.document_count)


@dataclass(frozen=True)
class Bm25ScoreArrays:
    """bm25s's ``scores`` (a CSC matrix, one column of document scores per term) and its non-occurrence array."""

    data: npt.NDArray[np.float32]
    indices: npt.NDArray[np.int32]
    indptr: npt.NDArray[np.int32]
    nonoccurrence: npt.NDArray[np.float32] | None


@dataclass
class TermScores:
    """bm25s's score arrays with each term's column computed when first asked for (``score``): opening an index
    whose corpus statistics changed costs the transpose of its counts, and a query only its own terms' postings.
    Every entry is computed by the same operations as the whole matrix's, so a column is the same bits either way."""

    indptr: npt.NDArray[np.int32]
    indices: npt.NDArray[np.int32]
    sizes: npt.NDArray[Any]
    """Each term's posting count."""
    frequency: npt.NDArray[np.float32]
    length_part: npt.NDArray[np.float64]
    """Each document's part of its length normalisation: ``k1 * norm``, or ``norm`` for BM25L."""
    idf: npt.NDArray[np.float32]
    nonoccurrence: npt.NDArray[np.float32] | None
    method: str
    k1: float
    data: npt.NDArray[np.float32]
    scored: npt.NDArray[np.bool_]
    unscored: int
    documents: int
    lock: threading.Lock

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (an index sent to Spark's executors) with the columns filled so far, without the lock."""
        with self.lock:
            return {name: value for name, value in vars(self).items() if name != "lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state, lock=threading.Lock())

    def score(self, ids: npt.NDArray[Any]) -> None:
        """The columns of the terms ``ids`` filled in ``data`` (those not yet filled)."""
        if bool(self.scored[ids].all()):
            return
        with self.lock:
            missing = np.unique(ids[~self.scored[ids]])
            if len(missing):
                self._fill(_spans(self.indptr[missing], self.sizes[missing]), np.repeat(missing, self.sizes[missing]))
                self._scored(missing)

    def complete(self) -> Bm25ScoreArrays:
        """Every column filled: bm25s's arrays."""
        with self.lock:
            if self.unscored:
                terms = np.repeat(np.arange(len(self.scored)), self.sizes)
                self._fill(slice(None), terms)
                self._scored(slice(None))
        return Bm25ScoreArrays(self.data, self.indices, self.indptr, self.nonoccurrence)

    def _scored(self, terms: slice | npt.NDArray[Any]) -> None:
        """``terms`` marked scored; once every term is, the counts and lengths they were scored from are let go."""
        self.scored[terms] = True
        self.unscored = int(np.count_nonzero(~self.scored)) if isinstance(terms, slice) else self.unscored - len(terms)
        if not self.unscored:
            self.frequency, self.length_part = self.frequency[:0], self.length_part[:0]

    def _fill(self, entries: slice | npt.NDArray[np.int64], terms: npt.NDArray[Any]) -> None:
        """bm25s's score of each of ``entries`` (of the terms ``terms``), in bm25s's order and precision."""
        per_entry = self.length_part[self.indices[entries]]  # a new array, which the scores then overwrite
        scores = _term_frequency_component(self.method, self.frequency[entries], per_entry, self.k1)
        scores *= self.idf[terms]
        if self.nonoccurrence is not None:
            scores -= self.nonoccurrence[terms]
        self.data[entries] = scores


def term_scores(
    counts: TermCountArrays,
    method: str,
    k1: float,
    b: float,
    empty_term: int = 0,
    statistics: CorpusStatistics | None = None,
) -> TermScores:
    """bm25s's arrays for a corpus given by its term counts, each column computed when first asked for. A document
    without terms counts ``empty_term`` once, as bm25s's tokenizer gives it the empty token. With ``statistics`` (of
    a whole corpus these documents are part of), the documents are scored as that corpus's rows: bit for bit the
    rows of one index over all of it."""
    scoring = require_module("bm25s.scoring", "bm25s", "connectors")
    sparse = require_module("scipy.sparse", "bm25s", "connectors")
    documents, vocabulary_size = counts.document_count, counts.vocabulary_size
    indptr, terms, term_counts = _with_empty_term(counts, empty_term)
    lengths = np.add.reduceat(term_counts, indptr[:-1], dtype=np.int64) if len(terms) else np.diff(indptr)
    if statistics is None:
        average_length = lengths.mean() if documents else np.float64(np.nan)
        frequencies, corpus_size = np.bincount(terms, minlength=vocabulary_size), documents
    else:
        average_length, frequencies = statistics.average_length, statistics.frequencies
        corpus_size = statistics.document_count
    compute_idf = scoring._select_idf_scorer(method)
    idf = _per_frequency(frequencies, lambda df: compute_idf(df, N=corpus_size))
    length_norm = (1 - b) + b * lengths / average_length
    nonoccurrence = None
    if method in NONOCCURRENCE_METHODS:
        score_tfc = scoring._select_tfc_scorer(method)
        absent = score_tfc(tf_array=0, l_d=average_length, l_avg=average_length, k1=k1, b=b, delta=BM25S_DELTA)
        nonoccurrence = _per_frequency(frequencies, lambda df: compute_idf(df, N=corpus_size) * absent)
    by_document = sparse.csr_matrix((term_counts.astype(np.float32), terms, indptr), shape=(documents, vocabulary_size))
    by_term = by_document.tocsc()
    return TermScores(
        by_term.indptr,
        by_term.indices,
        np.diff(by_term.indptr),
        by_term.data,
        length_norm if method == "bm25l" else k1 * length_norm,
        idf,
        nonoccurrence,
        method,
        k1,
        np.empty(len(by_term.data), dtype=np.float32),
        np.zeros(vocabulary_size, dtype=bool),
        vocabulary_size,
        documents,
        threading.Lock(),
    )


def _spans(starts: npt.NDArray[Any], sizes: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """The positions of the ranges of ``sizes`` from ``starts``, one after another."""
    sizes = sizes.astype(np.int64)
    offsets = np.repeat(starts.astype(np.int64) - np.cumsum(sizes) + sizes, sizes)
    return offsets + np.arange(int(sizes.sum()), dtype=np.int64)


def _term_frequency_component(
    method: str, frequency: npt.NDArray[np.float32], length_part: npt.NDArray[np.float64], k1: float
) -> npt.NDArray[np.float64]:
    """bm25s's term-frequency component of every entry (``bm25s.scoring._score_tfc_*``), given its document's
    length part (``TermScores.length_part``, computed once per document), in an array of its own that this
    overwrites: each formula's operations in bm25s's order and precision (its float32 ``tf`` times a Python float
    stays float32), on few entry-sized temporaries."""
    if method == "bm25l":
        component = np.divide(frequency, length_part, out=length_part)
        shifted = (k1 + 1) * (component + BM25S_DELTA)
        component += k1
        component += BM25S_DELTA
        return np.divide(shifted, component, out=component)
    denominator = length_part
    denominator += frequency
    if method in ("robertson", "lucene"):
        return np.divide(frequency, denominator, out=denominator)
    numerator = frequency * (k1 + 1) if method == "atire" else (k1 + 1) * frequency
    saturated: npt.NDArray[np.float64] = np.divide(numerator, denominator, out=denominator)
    if method == "bm25+":
        saturated += BM25S_DELTA
    return saturated


def _with_empty_term(
    counts: TermCountArrays, empty_term: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """The count rows with ``empty_term`` counted once in every row that has no term."""
    empty = np.diff(counts.indptr) == 0
    if not empty.any():
        return counts.indptr, counts.terms, counts.counts
    positions = counts.indptr[:-1][empty]
    shifted = np.zeros(len(counts.indptr), dtype=np.int64)
    np.cumsum(empty, out=shifted[1:])
    terms = np.insert(counts.terms, positions, empty_term).astype(np.int32)
    term_counts = np.insert(counts.counts, positions, 1).astype(np.int32)
    return counts.indptr + shifted, terms, term_counts


def _per_frequency(frequencies: npt.NDArray[np.int64], compute: Callable[[int], float]) -> npt.NDArray[np.float32]:
    """A float32 array over terms of ``compute(df)``, called once per distinct non-zero document frequency (0 where
    no document holds the term), as bm25s fills its per-term arrays."""
    distinct, inverse = np.unique(frequencies, return_inverse=True)
    values = np.array([compute(int(df)) if df else 0.0 for df in distinct.tolist()], dtype=np.float32)
    return values[inverse]
