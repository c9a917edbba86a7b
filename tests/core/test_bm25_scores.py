"""``term_scores`` makes bm25s's own arrays, bit for bit, for every BM25 variant: what lets an updated index and a
build from scratch rank alike."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from typing import Any

import bm25s
import numpy as np
import pytest
import scipy.sparse
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.indexes.bm25_model import Bm25Model, Postings, QueryScorer
from rag_integration.core.ranking.bm25_scores import Bm25ScoreArrays, CorpusStatistics, TermCountArrays, term_scores
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import BM25_METHODS

corpora = st.lists(st.lists(st.integers(1, 12), max_size=15), min_size=1, max_size=25)


def bm25_scores(counts: TermCountArrays, method: str, k1: float, b: float, **options: Any) -> Bm25ScoreArrays:
    """Every column scored at once."""
    return term_scores(counts, method, k1, b, **options).complete()


def counts_of(documents: list[list[int]], vocabulary_size: int) -> TermCountArrays:
    rows = [row for row, ids in enumerate(documents) for _ in ids]
    flat = [term for ids in documents for term in ids]
    matrix = scipy.sparse.csr_matrix(
        (np.ones(len(flat), dtype=np.int32), (rows, flat)), shape=(len(documents), vocabulary_size), dtype=np.int32
    )
    matrix.sum_duplicates()
    return TermCountArrays(
        matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32), matrix.data.astype(np.int32), vocabulary_size
    )


@settings(max_examples=60, deadline=None)
@given(
    documents=corpora,
    method=st.sampled_from(BM25_METHODS),
    k1=st.floats(0.0, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_the_arrays_are_bm25s_own(documents: list[list[int]], method: str, k1: float, b: float) -> None:
    assume(not (method == "bm25+" and k1 == 0.0))  # refused by the backend: BM25+'s absent-term score is 0/0
    vocabulary = {"": 0, **{f"t{term}": term for term in range(1, 13)}}
    raw = bm25s.BM25(k1=k1, b=b, method=method)
    raw.index(
        bm25s.tokenization.Tokenized(ids=[ids or [0] for ids in documents], vocab=vocabulary), show_progress=False
    )
    ours = bm25_scores(counts_of(documents, len(vocabulary)), method, k1, b)
    assert np.array_equal(ours.indptr, raw.scores["indptr"])
    assert np.array_equal(ours.indices, raw.scores["indices"])
    assert ours.data.dtype == raw.scores["data"].dtype
    assert ours.data.tobytes() == raw.scores["data"].tobytes()
    if raw.nonoccurrence_array is None:
        assert ours.nonoccurrence is None
    else:
        assert ours.nonoccurrence is not None
        assert ours.nonoccurrence.tobytes() == raw.nonoccurrence_array.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    documents=corpora,
    method=st.sampled_from(BM25_METHODS),
    asked=st.lists(st.lists(st.integers(0, 12), max_size=6), max_size=4),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_columns_scored_when_asked_are_the_whole_matrix_bits(
    documents: list[list[int]], method: str, asked: list[list[int]], k1: float, b: float
) -> None:
    """Terms scored a query at a time (repeats, absent terms, terms asked again) hold the bits of the matrix
    scored at once; the terms never asked stay unscored until the whole matrix is asked for, and then the counts
    they are scored from are let go."""
    counts = counts_of(documents, 13)
    whole = bm25_scores(counts, method, k1, b)
    lazy = term_scores(counts, method, k1, b)
    for ids in asked:
        lazy.score(np.asarray(ids, dtype=np.int32))
    wanted = sorted({term for ids in asked for term in ids})
    assert np.flatnonzero(lazy.scored).tolist() == wanted
    for term in wanted:
        span = slice(int(whole.indptr[term]), int(whole.indptr[term + 1]))
        assert lazy.data[span].tobytes() == whole.data[span].tobytes()
    assert lazy.unscored == 13 - len(wanted)
    assert lazy.complete().data.tobytes() == whole.data.tobytes()
    assert lazy.unscored == 0 and not len(lazy.frequency)  # what the scores were made from is let go


def by_document(arrays: Any, documents: int, vocabulary_size: int) -> scipy.sparse.csr_matrix:
    matrix = scipy.sparse.csc_matrix((arrays.data, arrays.indices, arrays.indptr), shape=(documents, vocabulary_size))
    return matrix.tocsr()


@settings(max_examples=80, deadline=None)
@given(
    documents=corpora,
    method=st.sampled_from(BM25_METHODS),
    cuts=st.lists(st.integers(0, 25), max_size=4),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_shards_scored_with_summed_statistics_are_the_rows_of_one_index(
    documents: list[list[int]], method: str, cuts: list[int], k1: float, b: float
) -> None:
    """Cut a corpus anywhere (empty shards too): each shard scored with the sum of every shard's statistics holds,
    bit for bit, its documents' rows of the index over the whole corpus, and the same absent-term weights."""
    vocabulary_size = 13
    whole = bm25_scores(counts_of(documents, vocabulary_size), method, k1, b)
    bounds = [0, *sorted(min(cut, len(documents)) for cut in cuts), len(documents)]
    shards = [documents[start:end] for start, end in itertools.pairwise(bounds)]
    statistics = functools.reduce(
        operator.add, (CorpusStatistics.of(counts_of(shard, vocabulary_size)) for shard in shards)
    )
    once = CorpusStatistics.of(counts_of(documents, vocabulary_size))
    assert (statistics.document_count, statistics.total_length) == (once.document_count, once.total_length)
    assert np.array_equal(statistics.frequencies, once.frequencies)
    rows = by_document(whole, len(documents), vocabulary_size)
    for (start, end), shard in zip(itertools.pairwise(bounds), shards, strict=True):
        scored = bm25_scores(counts_of(shard, vocabulary_size), method, k1, b, statistics=statistics)
        mine, expected = by_document(scored, len(shard), vocabulary_size), rows[start:end]
        assert np.array_equal(mine.indptr, expected.indptr)
        assert np.array_equal(mine.indices, expected.indices)
        assert mine.data.tobytes() == expected.data.tobytes()
        if whole.nonoccurrence is not None:
            assert scored.nonoccurrence is not None
            assert scored.nonoccurrence.tobytes() == whole.nonoccurrence.tobytes()


def test_statistics_of_different_vocabularies_do_not_add() -> None:
    with pytest.raises(IndexMismatchError, match="index_shards"):
        CorpusStatistics.of(counts_of([[1]], 3)) + CorpusStatistics.of(counts_of([[1]], 4))


@settings(max_examples=80, deadline=None)
@given(
    documents=corpora,
    method=st.sampled_from(BM25_METHODS),
    query=st.lists(st.integers(0, 12), max_size=8),
    mask=st.one_of(st.none(), st.lists(st.booleans(), min_size=25, max_size=25)),
    compiled=st.booleans(),
)
def test_the_model_scores_a_query_as_bm25s_does(
    documents: list[list[int]], method: str, query: list[int], mask: list[bool] | None, compiled: bool
) -> None:
    """Repeated and absent terms, every variant, with and without a filter, by SciPy's loops or without them:
    the same float32 bits as bm25s."""
    vocabulary = {"": 0, **{f"t{term}": term for term in range(1, 13)}}
    model = Bm25Model.from_counts(counts_of(documents, len(vocabulary)), vocabulary, method, 1.2, 0.75)
    weights = None if mask is None else np.asarray(mask[: len(documents)], dtype=np.float32)
    scorer = QueryScorer.of(Postings.of(model.scores))
    assert scorer.loops is not None
    ours = (scorer if compiled else dataclasses.replace(scorer, loops=None)).block_scores([query], weights)[0]
    raw = model.retriever.get_scores_from_ids(query, weight_mask=weights)
    assert ours.dtype == raw.dtype
    assert ours.tobytes() == raw.tobytes()


@settings(max_examples=40, deadline=None)
@given(documents=corpora, query=st.lists(st.integers(0, 12), max_size=30), capacity=st.integers(25, 60))
def test_a_long_query_is_scored_in_chunks_of_terms_as_one(
    documents: list[list[int]], query: list[int], capacity: int
) -> None:
    """Past the postings one query gathers at once, its terms go in chunks, in order: the same bits."""
    vocabulary = {"": 0, **{f"t{term}": term for term in range(1, 13)}}
    model = Bm25Model.from_counts(counts_of(documents, len(vocabulary)), vocabulary, "lucene", 1.2, 0.75)
    postings = Postings.of(model.scores)
    postings = dataclasses.replace(postings, capacity=max(capacity, int(postings.lengths.max())))
    chunks = postings.chunks(np.asarray(query, dtype=np.int32))
    assert [term for chunk in chunks for term in chunk.tolist()] == query
    scorer = QueryScorer.of(postings)
    scorer.block_scores([[1, 2, 3]])  # what the scorer held before is cleared
    assert scorer.block_scores([query])[0].tobytes() == model.retriever.get_scores_from_ids(query).tobytes()


def test_scores_pickle_with_the_columns_filled_so_far() -> None:
    """An index is pickled to Spark's executors: its lazily filled columns travel, and the copy fills the rest."""
    import pickle

    counts = counts_of([[1, 2], [2, 3, 3], [4]], 13)
    lazy = term_scores(counts, "lucene", 1.2, 0.75)
    lazy.score(np.asarray([2], dtype=np.int32))
    copy = pickle.loads(pickle.dumps(lazy))
    assert copy.scored.tolist() == lazy.scored.tolist()
    copy.score(np.asarray([3], dtype=np.int32))
    assert copy.complete().data.tobytes() == bm25_scores(counts, "lucene", 1.2, 0.75).data.tobytes()


@settings(max_examples=60, deadline=None)
@given(documents=corpora, mask=st.lists(st.booleans(), min_size=25, max_size=25))
def test_only_keeps_the_marked_rows_in_order(documents: list[list[int]], mask: list[bool]) -> None:
    counts = counts_of(documents, 13)
    live = np.asarray(mask[: len(documents)], dtype=bool)
    matrix = scipy.sparse.csr_matrix((counts.counts, counts.terms, counts.indptr), shape=(len(documents), 13))
    expected = matrix[np.flatnonzero(live)]
    only = counts.only(live)
    assert only.indptr.tolist() == expected.indptr.tolist()
    assert only.terms.tolist() == expected.indices.tolist()
    assert only.counts.tolist() == expected.data.tolist()


def test_threads_scoring_the_same_terms_at_once_fill_each_column_once_and_alike() -> None:
    """Queries on a pool ask for overlapping terms at the same moment: every column ends as the whole matrix's."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    generator = random.Random(7)
    documents = [[generator.randint(1, 12) for _ in range(generator.randint(0, 15))] for _ in range(400)]
    counts = counts_of(documents, 13)
    whole = bm25_scores(counts, "bm25+", 1.2, 0.75)
    lazy = term_scores(counts, "bm25+", 1.2, 0.75)
    asked = [np.asarray([generator.randint(0, 12) for _ in range(4)], dtype=np.int32) for _ in range(400)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lazy.score, asked))
    wanted = sorted({int(term) for ids in asked for term in ids})
    assert lazy.unscored == 13 - len(wanted)
    for term in wanted:
        span = slice(int(whole.indptr[term]), int(whole.indptr[term + 1]))
        assert lazy.data[span].tobytes() == whole.data[span].tobytes()
