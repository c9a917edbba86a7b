"""A backend's ``explain`` hook that breaks its contract (wrong count, no ``kind``, not a dict) is refused with
``RankingContractError`` naming it; a dict the hook reuses for every passage is never changed."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from rag_integration.core.errors import RankingContractError
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.runner import run_feature

CORPUS = [{"doc_id": "a", "text": "cats purr"}, {"doc_id": "b", "text": "cats and dogs"}, {"doc_id": "c", "text": "x"}]
SHARED = {"kind": "toy", "note": "the same dict for every passage"}
BROKEN: dict[str, Any] = {
    "too_few": lambda ranked: [query_hits[:-1] for query_hits in ranked],
    "no_kind": lambda ranked: [[{"note": "n"} for _ in query] for query in ranked],
    "not_a_dict": lambda ranked: [["why" for _ in query] for query in ranked],
    "not_a_list": lambda ranked: None,
}


class ExplainingBm25s(Bm25sRetriever):
    BACKEND: ClassVar[str | None] = "explaining_bm25s_for_tests"
    mode: ClassVar[str] = "shared"

    @classmethod
    def explain(cls, index: Any, ranked: Any, allowed: Any, settings: Any) -> Any:
        if cls.mode == "shared":
            return [[SHARED for _ in query.hits] for query in ranked]
        return BROKEN[cls.mode]([[{"kind": "k"} for _ in query.hits] for query in ranked])


class ExplainingLexical(LexicalReranker):
    BACKEND: ClassVar[str | None] = "explaining_lexical_for_tests"

    @classmethod
    def explain(cls, query: str, texts: list[str], positions: list[int], settings: Any) -> list[dict[str, Any]]:
        return [{"note": "no kind"} for _ in positions]


def retrieve() -> list[dict[str, Any]]:
    request = {"retrieve_backend": ExplainingBm25s.BACKEND, "query_text": "cats", "corpus": CORPUS, "explain": True}
    (row,) = run_feature("retrieved_passages", request, {ExplainingBm25s})
    return list(row)


def test_a_dict_reused_for_every_passage_is_copied_not_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ExplainingBm25s, "mode", "shared")
    passages = retrieve()
    assert [passage["explanation"]["kind"] for passage in passages] == ["toy", "toy"]
    assert SHARED == {"kind": "toy", "note": "the same dict for every passage"}


@pytest.mark.parametrize("mode", sorted(BROKEN))
def test_a_broken_retrieve_explain_hook_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setattr(ExplainingBm25s, "mode", mode)
    with pytest.raises(RankingContractError, match=r"ExplainingBm25s\.explain"):
        retrieve()


def test_a_broken_rerank_explain_hook_is_a_typed_error() -> None:
    request = {
        "rerank_backend": ExplainingLexical.BACKEND,
        "query_text": "cats",
        "candidates": CORPUS,
        "explain": True,
    }
    with pytest.raises(RankingContractError, match=r"ExplainingLexical\.explain must return dicts"):
        run_feature("reranked_passages", request, {ExplainingLexical})
