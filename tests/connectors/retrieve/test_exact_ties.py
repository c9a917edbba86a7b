"""Exact ties at the top_k cut: every tied hit is seen, ties break by doc_id, and widening is batched."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from rag_integration.core.documents.corpus import Document
from rag_integration.core.ranking import passages
from rag_integration.core.ranking.passages import Hits, rank_corpus, rank_hits, search_with_exact_ties
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.runner import run_feature


class FakeLibrary:
    """A search library with the worst internal tie order for the contract: equal scores come back by position,
    while doc_ids descend with position, so a ranker that trusted the library's order at a cut would return the
    wrong documents. Every call is recorded as (queries, depth).
    """

    def __init__(self, count: int, score: Callable[[str, int], float]) -> None:
        self.documents = [Document(f"doc-{count - position:06d}", f"text {position}") for position in range(count)]
        self.score = score
        self.calls: list[tuple[list[str], int]] = []

    def search(self, queries: list[str], depth: int) -> list[Hits]:
        self.calls.append((list(queries), depth))
        results = []
        for query in queries:
            hits = [(position, self.score(query, position)) for position in range(len(self.documents))]
            hits.sort(key=lambda hit: (-hit[1], hit[0]))
            results.append(hits[:depth])
        return results

    def expected(self, query: str, top_k: int) -> list[str]:
        """The contract's answer, from every document's score: best first, ties by ascending doc_id."""
        scored = [(self.score(query, position), doc.doc_id) for position, doc in enumerate(self.documents)]
        return [doc_id for score, doc_id in sorted(scored, key=lambda hit: (-hit[0], hit[1])) if score > 0][:top_k]


def flat(query: str, position: int) -> float:
    """Every document ties for a query starting with 'tie'; other queries score every document differently."""
    return 1.0 if query.startswith("tie") else 1.0 + position


def test_many_tied_queries_are_widened_together_in_log_many_calls() -> None:
    library = FakeLibrary(500, flat)
    queries = [f"tie {number}" for number in range(120)] + [f"plain {number}" for number in range(100)]
    results = search_with_exact_ties(library.search, queries, 3, len(library.documents))
    # 13, 26, 52, 104, 208, 416, 500: one call per depth, each carrying every query still tied, not one per query.
    depths = [depth for _, depth in library.calls]
    assert depths == [13, 26, 52, 104, 208, 416, 500]
    assert [len(batch) for batch, _ in library.calls] == [220] + [120] * 6
    assert all(len(results[position]) == 500 for position in range(120))
    assert all(len(results[position]) == 13 for position in range(120, 220))


def test_tied_cut_is_broken_by_doc_id_from_every_tied_hit() -> None:
    library = FakeLibrary(200, lambda query, position: 2.0 if position < 7 else (1.0 if position < 150 else 0.0))
    rows = rank_corpus(library.documents, ["q"], 10, lambda batch, depth, _allowed: library.search(batch, depth))
    assert [row["doc_id"] for row in rows[0]] == library.expected("q", 10)
    assert [row["rank"] for row in rows[0]] == list(range(1, 11))
    # All 143 documents tied at 1.0 were fetched: the last three of them in the library's order win by doc_id.
    assert [row["doc_id"] for row in rows[0][7:]] == ["doc-000051", "doc-000052", "doc-000053"]


def test_untied_queries_are_searched_once() -> None:
    library = FakeLibrary(100, lambda query, position: 1.0 if query == "tie" else 100.0 - position)
    search_with_exact_ties(library.search, ["a", "tie", "b"], 5, len(library.documents))
    searched = [query for batch, _ in library.calls for query in batch]
    assert searched.count("a") == 1 and searched.count("b") == 1 and searched.count("tie") > 1


def test_each_call_stays_within_the_hit_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    library = FakeLibrary(300, flat)
    queries = [f"tie {number}" for number in range(40)] + ["plain"]
    unbounded = search_with_exact_ties(library.search, queries, 4, len(library.documents))
    rounds = len(library.calls)
    library.calls.clear()
    monkeypatch.setattr(passages, "HITS_PER_CALL", 200)
    assert search_with_exact_ties(library.search, queries, 4, len(library.documents)) == unbounded
    assert all(len(batch) * depth <= 200 or len(batch) == 1 for batch, depth in library.calls)
    assert len(library.calls) > rounds


@pytest.mark.parametrize("count", [1, 5, 11, 12, 37])
def test_small_corpora_never_ask_for_more_hits_than_documents(count: int) -> None:
    library = FakeLibrary(count, flat)
    rows = rank_corpus(library.documents, ["tie", "plain"], 10, lambda b, d, _a: library.search(b, d))
    assert all(depth <= count for _, depth in library.calls)
    assert [row["doc_id"] for row in rows[0]] == library.expected("tie", 10)
    assert [row["doc_id"] for row in rows[1]] == library.expected("plain", 10)


def test_rank_hits_keeps_the_best_score_of_a_repeated_position_and_refuses_bad_hits() -> None:
    documents = [Document("b", "B"), Document("a", "A"), Document("c", "C")]
    rows = rank_hits([(0, 1.0), (2, 3.0), (0, 3.0), (1, 3.0), (1, 0.0)], documents, 2)
    assert [(row["doc_id"], row["score"], row["rank"]) for row in rows] == [("a", 3.0, 1), ("b", 3.0, 2)]
    assert rank_hits([(0, -1.0), (1, -2.0)], documents, 5, positive_only=False)[0]["doc_id"] == "b"
    with pytest.raises(ValueError, match="outside"):
        rank_hits([(3, 1.0)], documents, 1)
    with pytest.raises(ValueError, match="non-finite"):
        rank_hits([(0, math.nan)], documents, 1)


def test_bm25s_connector_widens_many_tied_queries_in_few_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through run_all: 60 identical documents tie for every query; 200 queries need a handful of searches."""
    calls: list[int] = []
    original = Bm25sRetriever.search.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Bm25sRetriever], index: object, queries: list[str], *rest: object) -> list[Hits]:
        calls.append(len(queries))
        result: list[Hits] = original(cls, index, queries, *rest)
        return result

    monkeypatch.setattr(Bm25sRetriever, "search", classmethod(counted))
    corpus = [{"doc_id": f"d{number:03d}", "text": "comets glow in the night sky"} for number in range(60, 0, -1)]
    corpus += [{"doc_id": f"x{number}", "text": f"unrelated words number{number}"} for number in range(40)]
    queries = ["comets"] * 100 + ["night sky"] * 100
    context = {"retrieve_backend": "bm25s", "query_text": queries, "corpus": corpus, "top_k": 3}
    rows = run_feature("retrieved_passages", context, {Bm25sRetriever})
    assert all([row["doc_id"] for row in query_rows] == ["d001", "d002", "d003"] for query_rows in rows)
    assert len(rows) == 200
    assert len(calls) <= 4 and calls[0] == 200
