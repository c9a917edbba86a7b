"""``explain=True`` on the retrieve backends: what each explanation says, that its parts add up to the score, and
that it costs nothing when off (the contract kit checks every backend's explanations in general)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.ranking.passages import AllowedMask, RankedQuery
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature

BACKENDS: dict[str, Any] = {
    "bm25s": Bm25sRetriever,
    "tfidf": TfidfRetriever,
    "faiss": FaissDenseRetriever,
    "hybrid_rrf": HybridRrfRetriever,
}
QUERIES = ["engine oil oil filters for my car", "the cats and the dogs", "moon tide ocean lava"]


def retrieve(backend: str, **options: Any) -> list[list[dict[str, Any]]]:
    request = {"retrieve_backend": backend, "corpus": CORPUS, "query_text": QUERIES, "top_k": 4, **options}
    if backend in ("faiss", "hybrid_rrf"):
        request.setdefault("embedding_model", "hash")
    return run_feature("retrieved_passages", request, {BACKENDS[backend]})


def contributions_total(passage: dict[str, Any]) -> float:
    return sum(part["contribution"] for part in passage["explanation"]["contributions"])


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
@pytest.mark.parametrize("threads", [1, 2])
def test_bm25s_term_contributions_sum_to_the_score(method: str, threads: int) -> None:
    rows = retrieve("bm25s", bm25_method=method, search_threads=threads, explain=True)
    assert all(rows)
    for row in rows:
        for passage in row:
            explanation = passage["explanation"]
            assert (explanation["kind"], explanation["method"]) == ("bm25", method)
            assert math.isclose(contributions_total(passage), passage["score"], rel_tol=1e-9)


def test_bm25s_names_stems_query_words_and_repeats() -> None:
    [engine, *_] = retrieve("bm25s", explain=True)[0]
    assert engine["doc_id"] == "engine"
    parts = {part["term"]: part for part in engine["explanation"]["contributions"]}
    assert set(parts) == {"engin", "oil", "filter", "car"}
    assert parts["filter"]["query_words"] == ["filters"] and parts["engin"]["query_words"] == ["engine"]
    assert parts["oil"]["query_count"] == 2 and parts["engin"]["query_count"] == 1
    # a term twice in the query adds its weight twice: twice what a term of the same weight adds once
    assert parts["oil"]["contribution"] > parts["filter"]["contribution"]
    contributions = [part["contribution"] for part in engine["explanation"]["contributions"]]
    assert contributions == sorted(contributions, reverse=True)


def test_bm25s_explains_the_same_ranking_without_stemming() -> None:
    [engine, *_] = retrieve("bm25s", explain=True, stemmer=False)[0]
    terms = {part["term"] for part in engine["explanation"]["contributions"]}
    assert terms == {"engine", "oil", "car"}  # "filters" is not "filter" without a stemmer


def test_tfidf_contributions_are_products_of_weights_adding_to_the_cosine() -> None:
    for row in retrieve("tfidf", explain=True, tfidf_ngram_max=2):
        for passage in row:
            for part in passage["explanation"]["contributions"]:
                assert part["contribution"] == part["query_weight"] * part["document_weight"]
            assert math.isclose(contributions_total(passage), passage["score"], rel_tol=1e-9)
    [engine, *_] = retrieve("tfidf", explain=True, tfidf_ngram_max=2)[0]
    bigram = next(part for part in engine["explanation"]["contributions"] if part["term"] == "engin oil")
    assert bigram["query_words"] == ["engine", "oil"]


def test_faiss_gives_its_similarity_and_metric() -> None:
    for row in retrieve("faiss", explain=True, faiss_index="hnsw"):
        for passage in row:
            explanation = passage["explanation"]
            assert explanation == {
                "backend": "faiss",
                "kind": "dense",
                "score": passage["score"],
                "metric": "cosine",
                "similarity": passage["score"],
                "embedding_model": get_embedder("hash-512").model_id,
                "faiss_index": "hnsw",
            }


def test_hybrid_contributions_are_each_rankings_rank_and_weight() -> None:
    weights = [2.0, 0.5]
    fused = retrieve("hybrid_rrf", explain=True, rrf_weights=weights, rrf_k=10.0, top_k=6)
    lexical = retrieve("bm25s", top_k=100)
    dense = retrieve("faiss", top_k=100)
    for row, lexical_row, dense_row in zip(fused, lexical, dense, strict=True):
        assert row
        for passage in row:
            explanation = passage["explanation"]
            assert explanation["kind"] == "rrf" and explanation["rrf_k"] == 10.0
            parts = explanation["contributions"]
            assert [part["ranker"] for part in parts] == ["bm25s", "faiss"]
            for part, weight, alone in zip(parts, weights, (lexical_row, dense_row), strict=True):
                found = next((other for other in alone if other["doc_id"] == passage["doc_id"]), None)
                assert part["weight"] == weight
                if found is None:
                    assert (part["rank"], part["score"], part["contribution"]) == (None, None, 0.0)
                else:
                    assert (part["rank"], part["score"]) == (found["rank"], found["score"])
                    assert part["contribution"] == weight / (10.0 + found["rank"])
            assert sum(part["contribution"] for part in parts) == passage["score"]


def test_hybrid_explains_under_filters_as_it_ranked() -> None:
    rows = retrieve("hybrid_rrf", explain=True, filters={"lang": ["de", "fr"]})
    for row in rows:
        for passage in row:
            assert passage["doc_id"] in {"bread", "tide", "volcano"}
            assert all(part["rank"] is None or part["rank"] <= 3 for part in passage["explanation"]["contributions"])
            assert math.isclose(contributions_total(passage), passage["score"], rel_tol=1e-12)


def test_explanations_are_only_computed_for_the_returned_passages_and_never_when_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[RankedQuery]] = []
    original = Bm25sRetriever.explain.__func__  # type: ignore[attr-defined]

    def spy(cls: Any, index: Any, ranked: list[RankedQuery], allowed: AllowedMask, settings: Any) -> Any:
        seen.append(ranked)
        return original(cls, index, ranked, allowed, settings)

    monkeypatch.setattr(Bm25sRetriever, "explain", classmethod(spy))
    plain = retrieve("bm25s", top_k=2)
    assert not seen and all("explanation" not in passage for row in plain for passage in row)
    explained = retrieve("bm25s", top_k=2, explain=True)
    [ranked] = seen
    assert [query.query for query in ranked] == QUERIES
    assert [len(query.hits) for query in ranked] == [len(row) for row in explained]
    assert all(len(query.hits) <= 2 for query in ranked)


@pytest.mark.parametrize("bad", ["yes", 1, 1.0, [True]], ids=repr)
def test_a_non_bool_explain_is_refused_naming_it(bad: object) -> None:
    from rag_integration.core.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="explain"):
        retrieve("bm25s", explain=bad)


def test_hybrid_says_when_the_embedder_does_not_know_the_query_language() -> None:
    """The default embedder (MiniLM) knows English only: a German query is ranked by bm25s alone."""
    corpus = [
        {"doc_id": "de", "text": "Das Sauerteigbrot braucht einen heißen Ofen und viel Zeit zum Backen."},
        {"doc_id": "en", "text": "Sourdough bread needs a hot oven and plenty of time to bake."},
    ]
    request = {"retrieve_backend": "hybrid_rrf", "corpus": corpus, "explain": True}
    [[german]] = run_feature(
        "retrieved_passages", {**request, "query_text": "Sauerteigbrot im heißen Ofen backen"}, {HybridRrfRetriever}
    )
    lexical, dense = german["explanation"]["contributions"]
    assert german["doc_id"] == "de" and lexical["rank"] == 1 and "note" not in lexical
    assert (dense["rank"], dense["score"], dense["contribution"]) == (None, None, 0.0)
    assert "query's language" in dense["note"]
    assert german["score"] == lexical["contribution"]
