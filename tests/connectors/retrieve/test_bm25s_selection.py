"""The bm25s connector picks its hits itself (among positive scores): the ranking must equal the contract's ranking
of bm25s's own scores for every document, for every BM25 variant, thread count and filter."""

from __future__ import annotations

import random
from typing import Any

import bm25s
import numpy as np
import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_integration.core.ranking.passages import best_positive_hits_of_rows
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import BM25_METHODS
from rag_integration.testing.runner import run_feature

WORDS = [f"w{number}" for number in range(60)]


@given(
    st.lists(st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 2.5, -1.0]), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=70),
)
@settings(max_examples=300, deadline=None)
def test_best_positive_hits_are_the_top_positive_scores(values: list[float], depth: int) -> None:
    scores = np.asarray(values, dtype=np.float32)
    hits = best_positive_hits_of_rows(scores[np.newaxis, :], depth)[0]
    positive = sorted((value for value in values if value > 0), reverse=True)
    assert sorted((score for _, score in hits), reverse=True) == positive[:depth]
    assert len({position for position, _ in hits}) == len(hits)
    assert all(scores[position] == score for position, score in hits)


@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=2_000, max_value=9_000),
    st.floats(min_value=0.0, max_value=0.99),
)
@settings(max_examples=60, deadline=None)
def test_the_block_bound_keeps_every_top_score_of_long_arrays(seed: int, depth: int, size: int, zeros: float) -> None:
    """Long arrays go through the block-maximum bound: coarse values (ties everywhere), a share of zeros and
    negatives, the best scores bunched in one block or spread out."""
    generator = np.random.default_rng(seed)
    scores = (np.round(generator.exponential(1.0, size) * 8) / 8 - 0.25).astype(np.float32)
    scores[generator.random(size) < zeros] = 0.0
    if seed % 2:
        scores[: 3 * depth] = scores.max() + generator.integers(1, 4, size=3 * depth)
    hits = best_positive_hits_of_rows(scores[np.newaxis, :], depth)[0]
    positive = sorted(scores[scores > 0].tolist(), reverse=True)
    assert sorted((score for _, score in hits), reverse=True) == positive[:depth]
    assert len({position for position, _ in hits}) == len(hits)
    assert all(scores[position] == score for position, score in hits)


def corpus(seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Zipf-like documents with many equal lengths (so ties at the cut), some empty, and queries with unknown words."""
    generator = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    documents = [
        {
            "doc_id": f"d{generator.randrange(10**6):06d}-{number}",
            "text": " ".join(generator.choices(WORDS, weights, k=generator.choice([0, 3, 5, 5, 8]))),
            "part": "a" if number % 3 else "b",
        }
        for number in range(300)
    ]
    queries = [" ".join(generator.choices([*WORDS, "unknownword"], k=generator.randint(1, 4))) for _ in range(80)]
    return documents, queries


def expected(documents: list[dict[str, Any]], queries: list[str], method: str, top_k: int, part: str | None) -> Any:
    """The contract over raw bm25s's score of every document: positive only, best first, ties by doc_id."""
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    tokens = tokenizer.tokenize([doc["text"] for doc in documents], return_as="tuple", show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method=method)
    retriever.index(tokens, show_progress=False)
    answers = []
    for ids in tokenizer.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False, allow_empty=False):
        if not ids:
            answers.append([])
            continue
        scores = retriever.get_scores_from_ids(ids).tolist()
        scored = [
            (score, doc["doc_id"])
            for score, doc in zip(scores, documents, strict=True)
            if score > 0 and (part is None or doc["part"] == part)
        ]
        answers.append([doc_id for _, doc_id in sorted(scored, key=lambda hit: (-hit[0], hit[1]))[:top_k]])
    return answers


@pytest.mark.parametrize("method", BM25_METHODS)
@pytest.mark.parametrize("threads", [1, 3])
def test_rankings_equal_the_contract_over_raw_bm25s_scores(method: str, threads: int) -> None:
    documents, queries = corpus(seed=len(method) * 7 + threads)
    for top_k, part in ((5, None), (12, "b")):
        context: dict[str, Any] = {"retrieve_backend": "bm25s", "corpus": documents, "query_text": queries}
        context |= {"top_k": top_k, "bm25_method": method, "search_threads": threads}
        if part:
            context["filters"] = {"part": part}
        rows = run_feature("retrieved_passages", context, {Bm25sRetriever})
        assert [[row["doc_id"] for row in query_rows] for query_rows in rows] == expected(
            documents, queries, method, top_k, part
        )


@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=1, max_value=9_000),
    st.floats(min_value=0.0, max_value=1.0),
)
@settings(max_examples=80, deadline=None)
def test_rows_select_as_each_row_alone(seed: int, depth: int, rows: int, size: int, zeros: float) -> None:
    """A block of rows selected at once keeps each row's top positive scores: rows that are all zero, all tied, or
    whose bound falls to zero beside rows that are dense."""
    generator = np.random.default_rng(seed)
    scores = (np.round(generator.exponential(1.0, (rows, size)) * 8) / 8 - 0.25).astype(np.float32)
    scores[generator.random((rows, size)) < zeros] = 0.0
    if seed % 3 == 0:
        scores[0] = 0.0
    if seed % 5 == 0:
        scores[-1] = 1.5
    for row, hits in zip(scores, best_positive_hits_of_rows(scores, depth), strict=True):
        positive = sorted(row[row > 0].tolist(), reverse=True)
        assert sorted((score for _, score in hits), reverse=True) == positive[:depth]
        assert len({position for position, _ in hits}) == len(hits)
        assert all(row[position] == score for position, score in hits)
