"""The retrieve contract kit.

Subclass ``RetrieveContractTests`` in a test module and implement ``connector_class``; override
``backend_options`` for options your backend needs in tests (e.g. a small embedder),
``matches_by_word_overlap`` if a query sharing no word with a document may still retrieve it, and
``request`` if the backend answers from something that must exist before the request (a store on disk).
The standard tests (row shape, ``top_k``, options in ``group``, duplicate ids, batching, determinism, framework
parity) come from ``ContractKit``, fed by this kit's adapter hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.corpus import Corpus
from rag_integration.core.documents.visibility import InvalidReadersError, PrincipalsRequiredError
from rag_integration.core.errors import ConnectorError
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.memory import forget_built
from rag_integration.core.indexes.store import intact_claim
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO
from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever
from rag_integration.testing.kit import (
    PASSAGE_KEYS,
    CorpusContractKit,
    assert_ranked_passages,
    document_texts,
    kit_rows_feature,
)
from rag_integration.testing.runner import query_and_corpus_errors, run_feature
from rag_integration.testing.visibility import SEEDS, assert_same_passages, labelled, readable, word_corpus

CORPUS: list[dict[str, Any]] = [
    {"doc_id": "cat", "lang": "en", "text": "The cat purrs and naps on the warm windowsill all afternoon."},
    {"doc_id": "dog", "lang": "en", "text": "A loyal dog fetches the ball and guards the garden gate."},
    {"doc_id": "engine", "lang": "en", "text": "Change the engine oil and the oil filter of the car every year."},
    {"doc_id": "bread", "lang": "de", "text": "Sourdough bread needs a starter, flour, water and a hot oven."},
    {"doc_id": "tide", "lang": "de", "text": "The moon pulls the ocean, making the tide rise twice a day."},
    {"doc_id": "volcano", "lang": "fr", "text": "Lava from the volcano flows down the mountain after an eruption."},
]
ROW_KEYS = PASSAGE_KEYS


class RetrieveContractTests(CorpusContractKit):
    """Every retrieve backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "retrieved_passages"
    kit_corpus: ClassVar[list[dict[str, Any]]] = CORPUS

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        mixed = [
            dict(doc, year=2020 if position % 2 else "unknown", tags=["x", position])
            for position, doc in enumerate(CORPUS)
        ]
        return [
            {"query_text": ["cat windowsill", "engine oil", "zyxwvut qqqq"], "corpus": mixed, "return_metadata": True},
            {
                "queries_source": kit_rows_feature(["moon tide ocean", "lava eruption"]),
                "corpus": CORPUS,
                "top_k": 2,
                "explain": True,
            },
            {"query_text": "cat", "corpus": []},
            {
                "queries_source": kit_rows_feature(["engine oil car", "moon tide", "cat dog"]),
                "corpus": [
                    dict(doc, readers=["eng"] if position % 2 else ["*"]) for position, doc in enumerate(CORPUS)
                ],
                "principals": ["eng", "alice"],
                "top_k": 3,
            },
        ]

    @classmethod
    def supports_explain(cls) -> bool:
        return True

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"query_text": "engine oil filter for my car", "corpus": CORPUS}

    def check_row(self, row: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> None:
        """Passages of the request's corpus, each with a score above zero (SPEC: only score > 0 is returned)."""
        assert_ranked_passages(row, document_texts(request["corpus"]), positive=True)

    @classmethod
    def added_metadata_keys(cls) -> frozenset[str]:
        """Metadata keys the backend adds to every document (e.g. where it was read from)."""
        return frozenset()

    def retrieve(self, **options: object) -> list[Any]:
        """The rows for one request."""
        return self.run(**options)

    def one(self, **options: object) -> list[dict[str, Any]]:
        rows = self.retrieve(**options)
        assert len(rows) == 1, rows
        return list(rows[0])

    def test_ranks_and_scores_are_ordered(self) -> None:
        passages = self.one(query_text="oil for the car engine and the dog", corpus=CORPUS, top_k=6)
        assert passages
        assert_ranked_passages(passages, document_texts(CORPUS), positive=True)

    def test_expected_top_document_with_margin(self) -> None:
        passages = self.one(query_text="engine oil filter for my car", corpus=CORPUS, top_k=3)
        assert passages[0]["doc_id"] == "engine"
        if len(passages) > 1:
            assert passages[0]["score"] > passages[1]["score"]

    def test_empty_corpus_returns_no_passage(self) -> None:
        assert self.retrieve(query_text=["cat", "dog"], corpus=[]) == [[], []]

    def test_query_sharing_nothing_returns_empty(self) -> None:
        hollow = [{"doc_id": "blank", "text": ""}, {"doc_id": "stopwords", "text": "To be or not to be."}]
        passages = self.one(query_text="zyxwvut qqqq", corpus=CORPUS + hollow, top_k=20)
        if self.matches_by_word_overlap():
            assert passages == []
        else:  # nearest neighbours by meaning: a ranked, deterministic answer over the corpus it was given
            texts = {doc["doc_id"]: doc["text"] for doc in CORPUS + hollow}
            assert [passage["rank"] for passage in passages] == list(range(1, len(passages) + 1))
            assert all(passage["text"] == texts[passage["doc_id"]] for passage in passages)
            assert self.one(query_text="zyxwvut qqqq", corpus=CORPUS + hollow, top_k=20) == passages

    def test_ties_break_by_doc_id(self) -> None:
        text = "identical twin documents about comets"
        twins = [{"doc_id": doc_id, "text": text} for doc_id in ("b", "c", "a")]
        passages = self.one(query_text="comets", corpus=twins + CORPUS, top_k=2)
        assert [passage["doc_id"] for passage in passages] == ["a", "b"]

    def test_filters_never_leak(self) -> None:
        everything = "cat dog engine oil bread tide lava"
        passages = self.one(query_text=everything, corpus=CORPUS, top_k=10, filters={"lang": ["de", "fr"]})
        assert passages
        assert {passage["doc_id"] for passage in passages} <= {"bread", "tide", "volcano"}
        german = self.one(query_text="cat purrs windowsill bread", corpus=CORPUS, filters={"lang": "de"})
        assert {passage["doc_id"] for passage in german} <= {"bread", "tide"}
        assert self.one(query_text="cat", corpus=CORPUS, filters={"lang": "xx"}) == []

    def test_return_metadata(self) -> None:
        passages = self.one(query_text="bread oven", corpus=CORPUS, return_metadata=True, top_k=1)
        added = self.added_metadata_keys()
        assert {key: value for key, value in passages[0]["metadata"].items() if key not in added} == {"lang": "de"}

    def test_doc_ids_are_normalised(self) -> None:
        corpus = [{"doc_id": 7, "text": "comet tails glow"}, {"text": "planets orbit the sun"}, *CORPUS]
        passages = self.one(query_text="comet tails", corpus=corpus)
        assert passages[0]["doc_id"] == "7"
        assert self.one(query_text="planets orbit", corpus=corpus)[0]["doc_id"] == "1"

    def test_second_call_reuses_the_index(self) -> None:
        self.retrieve(query_text="cat", corpus=CORPUS)
        builds = INDEX_CACHE.stats.builds
        self.retrieve(query_text=["dog", "oil"], corpus=CORPUS, top_k=2)
        assert INDEX_CACHE.stats.builds == builds
        assert INDEX_CACHE.stats.hits >= 1

    def test_changed_corpus_is_never_served_a_stale_index(self) -> None:
        self.retrieve(query_text="cat", corpus=CORPUS)
        changed = [dict(doc, text="nothing about felines here") if doc["doc_id"] == "cat" else doc for doc in CORPUS]
        passages = self.one(query_text="cat windowsill purrs", corpus=changed, top_k=6)
        texts = {doc["doc_id"]: doc["text"] for doc in changed}
        assert all(passage["text"] == texts[passage["doc_id"]] for passage in passages)
        if self.matches_by_word_overlap():
            assert "cat" not in [passage["doc_id"] for passage in passages]

    def test_index_dir_persists_and_reloads(self, tmp_path: Path) -> None:
        first = self.retrieve(query_text=["cat", "engine oil"], corpus=CORPUS, index_dir=str(tmp_path))
        assert any(tmp_path.iterdir())
        forget_built()
        second = self.retrieve(query_text=["cat", "engine oil"], corpus=CORPUS, index_dir=str(tmp_path))
        assert second == first
        connector = self.connector_class()
        if connector.stores_index() or not connector.CORPUS_REQUIRED:  # a backend that needs no corpus reads a store
            assert INDEX_CACHE.stats.builds == 0 and INDEX_CACHE.stats.loads >= 1
        else:  # the index is derived again from the analysed corpus kept in index_dir, no text analysed again
            assert ANALYSIS_MEMO.stats.analysed == 0 and ANALYSIS_MEMO.stats.reused == len(CORPUS)

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_get_what_an_index_of_their_documents_alone_gives(self, seed: int) -> None:
        """Exact, with no side channel: statistics, vocabulary and neighbours come from the readable documents."""
        corpus, principals = labelled(word_corpus(40), seed)
        queries = ["engine oil filter", "salary budget review", "customer refund ticket warranty"]
        got = self.retrieve(query_text=queries, corpus=corpus, principals=principals, top_k=5)
        visible = readable(corpus, principals)
        want = self.retrieve(query_text=queries, corpus=visible, top_k=5) if visible else [[] for _ in queries]
        assert_same_passages(got, want)

    def test_labelled_corpus_needs_principals(self) -> None:
        corpus = [dict(doc, readers=["eng"]) for doc in CORPUS]
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.retrieve(query_text="engine oil", corpus=corpus)
        with pytest.raises(InvalidReadersError, match=r"corpus\[2\]\.readers"):
            self.retrieve(query_text="engine oil", corpus=[*corpus[:2], dict(CORPUS[2], readers="eng")], principals=[])
        with pytest.raises(ConnectorError, match="principals"):
            self.retrieve(query_text="engine oil", corpus=corpus, principals="eng")

    def test_unlabelled_and_everyone(self) -> None:
        corpus = [dict(doc, readers=["*"]) if doc["doc_id"] == "cat" else dict(doc) for doc in CORPUS]
        everything = "cat windowsill engine oil bread lava tide dog"
        assert {row["doc_id"] for row in self.one(query_text=everything, corpus=corpus, principals=[])} <= {"cat"}
        public = self.one(query_text=everything, corpus=corpus, principals=[], unlabelled="public", top_k=10)
        assert {row["doc_id"] for row in public} == {
            row["doc_id"] for row in self.one(query_text=everything, corpus=CORPUS, top_k=10)
        }

    def test_a_changed_label_takes_effect_on_the_next_request(self) -> None:
        corpus = [dict(doc, readers=["eng"]) for doc in CORPUS]
        assert self.one(query_text="engine oil filter car", corpus=corpus, principals=["eng"])[0]["doc_id"] == "engine"
        revoked = [dict(doc, readers=["hr"]) if doc["doc_id"] == "engine" else doc for doc in corpus]
        after = self.one(query_text="engine oil filter car", corpus=revoked, principals=["eng"], top_k=10)
        assert "engine" not in {row["doc_id"] for row in after}

    @pytest.mark.parametrize(("options", "error", "option_name"), query_and_corpus_errors(CORPUS))
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        with pytest.raises(error, match=option_name):
            self.retrieve(**options)


class VectorStoreContractTests(RetrieveContractTests):
    """The retrieve kit for the stage pipeline's ``vector_store`` backend, which answers from a store on disk.

    Before each request, ``request`` builds the request's corpus into a store with the pipeline's own stages
    (``docs__embedded__indexed``) and points ``index_dir`` at it; ``vector_store`` then checks the corpus against
    the store. Everything else is the family's kit unchanged.
    """

    store_root: Path

    @classmethod
    def connector_class(cls) -> type[Any]:
        return VectorStoreRetriever

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"embedding_model": "hash"}

    @classmethod
    def matches_by_word_overlap(cls) -> bool:
        return False

    @classmethod
    def added_metadata_keys(cls) -> frozenset[str]:
        return frozenset({"source"})  # the inline document stage records where each document came from

    @pytest.fixture(autouse=True)
    def _store_root(self, tmp_path: Path) -> None:
        self.store_root = tmp_path

    def request(self, **options: object) -> dict[str, Any]:
        request = super().request(**options)
        folder = self.build_store(request)
        return request if folder is None else {**request, "index_dir": str(folder)}

    def build_store(self, request: Mapping[str, Any]) -> Path | None:
        """Build the request's corpus into a store (once per corpus); None when there is no corpus to build."""
        try:
            corpus = Corpus(request["corpus"])
        except (KeyError, ConnectorError):
            return None
        if not corpus:
            return None
        folder = Path(request.get("index_dir") or self.store_root / corpus.fingerprint[:16])
        claim = intact_claim(folder)
        if claim is None or claim.corpus_fingerprint != corpus.fingerprint:
            stage_options = {
                "document_source": "inline",
                "documents": list(request["corpus"]),
                "embedding_model": request["embedding_model"],
                "vector_store": "faiss",
                "index_dir": str(folder),
            }
            run_feature("docs__embedded__indexed", stage_options, set(STAGES))
        return folder

    def test_without_a_corpus_the_store_alone_answers(self) -> None:
        with_corpus = self.retrieve(query_text="engine oil", corpus=CORPUS)
        folder = self.request(corpus=CORPUS)["index_dir"]
        alone = run_feature(
            self.feature_name,
            {
                "retrieve_backend": "vector_store",
                "index_dir": folder,
                "query_text": "engine oil",
                **self.backend_options(),
            },
            {self.connector_class()},
        )
        assert alone == with_corpus
