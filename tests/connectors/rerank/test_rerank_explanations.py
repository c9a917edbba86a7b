"""``explain=True`` on the rerank backends: ranks and scores before and after, the lexical dominance's term parts and
the lexical fusion's parts."""

from __future__ import annotations

import math
from typing import Any

from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.rerank import CANDIDATES
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature


def rerank(**options: Any) -> list[dict[str, Any]]:
    request = {"rerank_backend": "lexical", "query_text": "moon ocean tide", "candidates": CANDIDATES, **options}
    [row] = run_feature("reranked_passages", request, {LexicalReranker})
    return list(row)


def test_ranks_and_scores_before_and_after() -> None:
    rows = rerank(explain=True)
    assert rows[0]["doc_id"] == "tide"
    by_id = {candidate["doc_id"]: (position, candidate) for position, candidate in enumerate(CANDIDATES, start=1)}
    for row in rows:
        explanation = row["explanation"]
        position, candidate = by_id[row["doc_id"]]
        assert (explanation["rank"], explanation["score"]) == (row["rank"], row["score"])
        assert (explanation["input_rank"], explanation["input_score"]) == (position, candidate["score"])
    assert rows[0]["explanation"]["input_rank"] == 5  # moved up from fifth


def test_lexical_parts_add_up_to_the_score() -> None:
    for row in rerank(explain=True, lexical_order="fusion", lexical_input_weight=2.0):
        incoming, matched = row["explanation"]["contributions"]
        assert incoming["part"] == "input order" and incoming["weight"] == 2.0
        assert incoming["contribution"] == 2.0 / (60 + incoming["rank"])
        assert matched["part"] == "bm25"
        if matched["rank"] is None:
            assert matched["bm25"] == 0.0 and matched["contribution"] == 0.0
        else:
            assert matched["bm25"] > 0.0 and matched["contribution"] == 1.0 / (60 + matched["rank"])
        assert incoming["contribution"] + matched["contribution"] == row["score"]


def test_plain_documents_have_no_input_score_and_filters_keep_input_places() -> None:
    documents = [dict(doc_id=doc["doc_id"], text=doc["text"], lang=doc["lang"]) for doc in CORPUS]
    rows = rerank(candidates=documents, explain=True, filters={"lang": "de"})
    assert {row["doc_id"] for row in rows} == {"bread", "tide"}
    for row in rows:
        assert row["explanation"]["input_score"] is None
        assert row["explanation"]["input_rank"] == 1 + [doc["doc_id"] for doc in CORPUS].index(row["doc_id"])


def test_after_retrieve_the_input_is_the_retrieval_ranking() -> None:
    options = {
        "retrieve_backend": "bm25s",
        "rerank_backend": "lexical",
        "candidates_source": "retrieved_passages",
        "query_text": "engine oil and the cat",
        "corpus": CORPUS,
        "explain": True,
        "lexical_order": "fusion",
    }
    retrieved = run_feature("retrieved_passages", options, {Bm25sRetriever})[0]
    [reranked] = run_feature("reranked_passages", options, {Bm25sRetriever, LexicalReranker})
    by_id = {passage["doc_id"]: passage for passage in retrieved}
    for row in reranked:
        source = by_id[row["doc_id"]]
        assert row["explanation"]["input_rank"] == source["rank"]
        assert row["explanation"]["input_score"] == source["score"]
        assert "metadata" not in row and "explanation" not in row["explanation"]  # retrieve's explanation is dropped
        assert math.isclose(sum(p["contribution"] for p in row["explanation"]["contributions"]), row["score"])


def test_dominance_names_each_term_part_and_whom_it_passed() -> None:
    candidates = [
        {"doc_id": "moon", "text": "The moon shines.", "score": 3.0, "rank": 1},
        {"doc_id": "both", "text": "The moon and the ocean.", "score": 2.0, "rank": 2},
        {"doc_id": "none", "text": "Bread needs an oven.", "score": 1.0, "rank": 3},
    ]
    rows = rerank(candidates=candidates, query_text="moon ocean", explain=True)
    assert [row["doc_id"] for row in rows] == ["both", "moon", "none"]
    first, second, last = (row["explanation"] for row in rows)
    assert first["kind"] == "lexical_dominance" and set(first["terms"]) == {"moon", "ocean"}
    assert (first["dominates"], first["dominated_by"]) == (2, 0)
    assert (second["dominates"], second["dominated_by"]) == (1, 1)
    assert (last["terms"], last["dominates"], last["dominated_by"]) == ({}, 0, 2)
    assert [row["score"] for row in rows] == [1.0, 1.0 - 1 / 3, 1.0 - 2 / 3]
