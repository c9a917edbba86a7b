"""The rerank contract kit.

Subclass ``RerankContractTests`` and implement ``connector_class``; override ``backend_options`` for options your
backend needs in tests (e.g. ``flashrank_model_dir``: ``rag_integration.testing.tiny_flashrank`` writes an offline
model folder whose vocabulary covers ``KIT_TEXTS``, every text this kit sends). The standard tests come from
``ContractKit``, fed by this kit's adapter hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.testing.kit import (
    ContractKit,
    KitItemRows,
    assert_ranked_passages,
    document_texts,
    kit_rows_feature,
)
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature
from rag_integration.testing.visibility import SEEDS, labelled, readable, word_corpus

ROW_KEYS = {"doc_id", "text", "score", "rank"}
CANDIDATES: list[dict[str, Any]] = [
    {"doc_id": doc["doc_id"], "text": doc["text"], "score": 1.0 / (position + 1), "rank": position + 1}
    for position, doc in enumerate(CORPUS)
]
TWIN_TEXT = "identical twin passages about comets"
DOCUMENTS: list[dict[str, Any]] = [
    {"doc_id": 7, "text": "comet tails glow", "source": "sky"},
    {"text": "planets orbit the sun"},
]
KIT_TEXTS: tuple[str, ...] = (*(doc["text"] for doc in CORPUS), TWIN_TEXT, *(doc["text"] for doc in DOCUMENTS))


class RerankContractTests(ContractKit):
    """Every rerank backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "reranked_passages"
    items_option: ClassVar[str | None] = "candidates"

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        mixed = [
            dict(row, metadata={"year": 2020 if position % 2 else "unknown", "tags": ["a", position]})
            for position, row in enumerate(CANDIDATES)
        ]
        return [
            {"query_text": ["cat windowsill", "engine oil"], "candidates": mixed, "return_metadata": True, "top_k": 4},
            {
                "query_text": ["dog garden", "moon tide"],
                "candidates_source": kit_rows_feature([CANDIDATES[:3], CANDIDATES[3:]]),
                "explain": True,
            },
            {"query_text": "dog", "candidates": []},
        ]

    @classmethod
    def supports_explain(cls) -> bool:
        return True

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"query_text": "engine oil", "candidates": CANDIDATES}

    @classmethod
    def sample_top(cls) -> Any:
        return "engine"

    @classmethod
    def batch_queries(cls) -> list[Any]:
        return ["cat windowsill", "engine oil", "bread oven", "the dog and the cat"]

    @classmethod
    def top_k_request(cls) -> dict[str, Any]:
        return {"query_text": "dog", "candidates": CANDIDATES}

    @classmethod
    def top_k_answer_size(cls) -> tuple[int, int]:
        return len(CANDIDATES), len(CANDIDATES)  # every candidate is kept

    def check_row(self, row: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> None:
        """The candidates reordered: passages of the request's candidates, every one kept up to ``top_k``."""
        candidates = request["candidates"]
        assert_ranked_passages(row, document_texts(candidates))
        assert len(row) == min(request.get("top_k", 10), len(candidates))

    def check_explanation(self, passage: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """Also the ranks before and after: the candidate at ``input_rank`` is this passage, with its score."""
        super().check_explanation(passage, request)
        explanation, candidates = passage["explanation"], request["candidates"]
        assert explanation["rank"] == passage["rank"], explanation
        incoming = candidates[explanation["input_rank"] - 1]
        assert str(incoming.get("doc_id", explanation["input_rank"] - 1)) == passage["doc_id"], explanation
        assert explanation["input_score"] == incoming.get("score"), explanation

    def rerank(self, **options: object) -> list[Any]:
        return self.run(**options)

    def one(self, **options: object) -> list[dict[str, Any]]:
        rows = self.rerank(**options)
        assert len(rows) == 1, rows
        return list(rows[0])

    def test_filters_never_leak(self) -> None:
        candidates = [dict(row, metadata={"lang": doc["lang"]}) for row, doc in zip(CANDIDATES, CORPUS, strict=True)]
        rows = self.one(
            query_text="cat dog engine oil bread tide lava",
            candidates=candidates,
            filters={"lang": ["de", "fr"]},
            top_k=10,
        )
        assert rows and {row["doc_id"] for row in rows} <= {"bread", "tide", "volcano"}
        with pytest.raises(InvalidOptionError, match="filters"):
            self.rerank(query_text="cat", candidates=candidates, filters="de")

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_rerank_only_what_they_may_read(self, seed: int) -> None:
        """The rows, and the incoming ranks their explanations give, are those of the readable candidates alone."""
        words = [dict(doc, score=1.0 / (position + 10)) for position, doc in enumerate(word_corpus(14))]
        candidates, principals = labelled(CANDIDATES + words, seed)
        queries = ["engine oil car filter", "salary budget review board"]
        got = self.rerank(query_text=queries, candidates=candidates, principals=principals, explain=True, top_k=6)
        want = self.rerank(query_text=queries, candidates=readable(candidates, principals), explain=True, top_k=6)
        assert got == want
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.rerank(query_text=queries, candidates=candidates)

    def test_ranks_and_scores_are_ordered(self) -> None:
        passages = self.one(query_text="oil for the car engine and the dog", candidates=CANDIDATES)
        assert [passage["rank"] for passage in passages] == list(range(1, len(CORPUS) + 1))
        scores = [passage["score"] for passage in passages]
        assert scores == sorted(scores, reverse=True)

    def test_expected_top_candidate_with_margin(self) -> None:
        passages = self.one(query_text="change the engine oil filter of my car", candidates=CANDIDATES[::-1])
        assert passages[0]["doc_id"] == "engine"
        assert passages[0]["score"] > passages[1]["score"]

    def test_scores_are_fresh_and_order_follows_the_query(self) -> None:
        first = self.one(query_text="moon ocean tide", candidates=CANDIDATES)
        second = self.one(query_text="volcano lava eruption mountain", candidates=CANDIDATES)
        assert first[0]["doc_id"] == "tide" and second[0]["doc_id"] == "volcano"
        assert [p["score"] for p in first] != [c["score"] for c in CANDIDATES]

    def test_empty_candidates_give_an_empty_ranking(self) -> None:
        assert self.rerank(query_text=["cat", "dog"], candidates=[]) == [[], []]

    def test_ties_keep_input_order(self) -> None:
        twins = [{"doc_id": doc_id, "text": TWIN_TEXT} for doc_id in ("b", "c", "a")]
        passages = self.one(query_text="comets", candidates=twins)
        assert [passage["doc_id"] for passage in passages] == ["b", "c", "a"]
        assert passages[0]["score"] == passages[1]["score"] == passages[2]["score"]

    def test_plain_documents_are_candidates_too(self) -> None:
        passages = self.one(query_text="comet tails", candidates=DOCUMENTS, return_metadata=True)
        assert passages[0]["doc_id"] == "7" and passages[0]["metadata"] == {"source": "sky"}
        assert passages[1]["doc_id"] == "1" and passages[1]["metadata"] == {}

    def test_candidates_source_reads_an_upstream_feature(self) -> None:
        upstream = kit_rows_feature([CANDIDATES[:3], CANDIDATES[3:]])
        rows = run_feature(
            self.feature_name,
            self.request(query_text=["dog garden", "moon tide"], candidates_source=upstream, top_k=2),
            {self.connector_class(), KitItemRows},
        )
        assert [row[0]["doc_id"] for row in rows] == ["dog", "tide"]
        assert all(len(row) == 2 for row in rows)

    @pytest.mark.parametrize(
        ("options", "error", "option_name"),
        [
            ({"candidates": CANDIDATES}, MissingOptionError, "query_text"),
            ({"query_text": "cat"}, MissingOptionError, "candidates"),
            ({"query_text": 5, "candidates": CANDIDATES}, InvalidOptionError, "query_text"),
            ({"query_text": ["cat", None], "candidates": CANDIDATES}, InvalidOptionError, "query_text"),
            ({"query_text": "cat", "candidates": "a cat"}, InvalidOptionError, "candidates"),
            ({"query_text": "cat", "candidates": {"doc_id": "x", "text": "t"}}, InvalidOptionError, "candidates"),
            ({"query_text": "cat", "candidates": ["a cat"]}, InvalidOptionError, r"candidates\[0\]"),
            ({"query_text": "cat", "candidates": [{"doc_id": "x"}]}, InvalidOptionError, "text"),
            ({"query_text": "cat", "candidates": [{"doc_id": True, "text": "t"}]}, InvalidOptionError, "doc_id"),
            ({"query_text": "cat", "candidates": CANDIDATES, "candidates_source": "x"}, InvalidOptionError, "source"),
            ({"query_text": "cat", "candidates_source": 3}, InvalidOptionError, "candidates_source"),
            ({"query_text": "cat", "candidates": CANDIDATES, "return_metadata": 1}, InvalidOptionError, "metadata"),
        ],
    )
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        with pytest.raises(error, match=option_name):
            self.rerank(**options)
