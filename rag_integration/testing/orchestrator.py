"""The orchestrator contract kit.

Subclass ``OrchestratorContractTests`` in a test module and implement ``connector_class``; override
``backend_options`` for options your backend needs in tests (a server URL, a fixture path), and
``matches_by_word_overlap`` if a query sharing no word with the corpus may still find documents.
Every query the kit sends to an engine is listed in ``KIT_QUERIES``, so a recorded backend can be
prepared for exactly these (run over ``CORPUS``, and ``"comets"`` over ``TWINS + CORPUS``). The standard tests
come from ``ContractKit``, fed by this kit's adapter hooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.text.sentences import split_sentences
from rag_integration.testing.kit import PASSAGE_KEYS as PASSAGE_KEYS  # importable from here as before
from rag_integration.testing.kit import (
    CorpusContractKit,
    assert_ranked_passages,
    document_texts,
    kit_rows_feature,
)
from rag_integration.testing.runner import query_and_corpus_errors
from rag_integration.testing.visibility import SEEDS, labelled, readable

CORPUS: list[dict[str, Any]] = [
    {
        "doc_id": "cat",
        "lang": "en",
        "text": "The cat purrs and naps on the warm windowsill all afternoon. At night it hunts moths in the garden.",
    },
    {
        "doc_id": "dog",
        "lang": "en",
        "text": "A loyal dog fetches the ball and guards the garden gate. It barks at the postman every morning.",
    },
    {
        "doc_id": "engine",
        "lang": "en",
        "text": "Change the engine oil and the oil filter of the car every year. Old oil wears the engine out.",
    },
    {
        "doc_id": "bread",
        "lang": "de",
        "text": "Sourdough bread needs a starter, flour, water and a hot oven. The dough rests overnight.",
    },
    {
        "doc_id": "tide",
        "lang": "de",
        "text": "The moon pulls the ocean, making the tide rise twice a day. Sailors plan their trips by the tide tables.",
    },
    {
        "doc_id": "volcano",
        "lang": "fr",
        "text": "Lava from the volcano flows down the mountain after an eruption. Ash clouds can ground aeroplanes.",
    },
]
TWINS: list[dict[str, Any]] = [{"doc_id": doc_id, "text": "Identical twin documents about comets."} for doc_id in "bca"]
KIT_QUERIES: tuple[str, ...] = (
    "cat windowsill",
    "oil for the car engine and the dog",
    "engine oil filter for my car",
    "the cat and the dog",
    "zyxwvut qqqq",
    "engine oil",
    "moon tide ocean",
    "lava eruption",
    "the dog and the cat",
    "oil",
    "comets",
)
ROW_KEYS = {"answer", "documents"}
TEXT_OF = {document["doc_id"]: document["text"] for document in CORPUS + TWINS}


def quoted_from(answer: str, passages: list[dict[str, Any]]) -> bool:
    """True when every sentence of ``answer`` appears verbatim (up to whitespace) in one of ``passages``."""
    texts = [" ".join(passage["text"].split()) for passage in passages]
    return all(any(" ".join(sentence.split()) in text for text in texts) for sentence in split_sentences(answer))


class OrchestratorContractTests(CorpusContractKit):
    """Every orchestrator backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "orchestrated_answer"
    kit_corpus: ClassVar[list[dict[str, Any]]] = CORPUS

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        return [
            {"query_text": ["cat windowsill", "engine oil filter for my car", "zyxwvut qqqq"], "corpus": CORPUS},
            {"queries_source": kit_rows_feature(["moon tide ocean", "lava eruption"]), "corpus": CORPUS, "top_k": 2},
            {"query_text": "comets", "corpus": CORPUS + TWINS, "top_k": 2},
        ]

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"query_text": "engine oil", "corpus": CORPUS}

    @classmethod
    def passages_of(cls, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        return list(row["documents"])

    def check_row(self, row: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """An answer quoted from its documents, which are ranked passages of the request's corpus."""
        assert set(row) == ROW_KEYS, row
        assert type(row["answer"]) is str, row
        assert_ranked_passages(row["documents"], document_texts(request["corpus"]))
        assert quoted_from(row["answer"], row["documents"]), row

    @classmethod
    def engine_holds_its_own_corpus(cls) -> bool:
        """True for a remote engine that answers from its own copy of the corpus (R2R): the kit cannot hand it only
        the readable documents, so it checks that nothing hidden is returned and a tainted answer is withheld."""
        return False

    def orchestrate(self, **options: object) -> list[Any]:
        return self.run(**options)

    def one(self, **options: object) -> dict[str, Any]:
        rows = self.orchestrate(**options)
        assert len(rows) == 1, rows
        return dict(rows[0])

    def test_filters_never_leak(self) -> None:
        row = self.one(query_text="moon tide ocean", corpus=CORPUS, filters={"lang": ["de", "fr"]}, top_k=6)
        assert row["documents"] and {passage["doc_id"] for passage in row["documents"]} <= {"bread", "tide", "volcano"}
        assert quoted_from(row["answer"], row["documents"])
        with pytest.raises(InvalidOptionError, match="filters"):
            self.orchestrate(query_text="moon tide ocean", corpus=CORPUS, filters="de")

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_get_answers_from_what_they_may_read(self, seed: int) -> None:
        """The engine sees only the readable corpus: the same answer and documents as over those documents alone."""
        corpus, principals = labelled(CORPUS, seed)
        queries = ["engine oil", "moon tide ocean", "the cat and the dog"]
        got = self.orchestrate(query_text=queries, corpus=corpus, principals=principals, top_k=6)
        visible = readable(corpus, principals)
        names = {document["doc_id"] for document in visible}
        assert all(passage["doc_id"] in names for row in got for passage in row["documents"])
        if self.engine_holds_its_own_corpus():  # only what it returns can be cut: the answer is withheld or grounded
            assert all(row["answer"] == "" or quoted_from(row["answer"], row["documents"]) for row in got)
        else:
            assert got == self.orchestrate(query_text=queries, corpus=visible, top_k=6)
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.orchestrate(query_text=queries, corpus=corpus)

    def test_documents_are_grounded_in_the_corpus(self) -> None:
        passages = self.one(query_text="oil for the car engine and the dog", corpus=CORPUS, top_k=6)["documents"]
        assert passages
        assert [passage["rank"] for passage in passages] == list(range(1, len(passages) + 1))
        scores = [passage["score"] for passage in passages]
        assert scores == sorted(scores, reverse=True)
        assert len({passage["doc_id"] for passage in passages}) == len(passages)
        for passage in passages:
            assert passage["text"] == TEXT_OF[passage["doc_id"]]

    def test_answer_is_quoted_from_the_returned_documents(self) -> None:
        row = self.one(query_text="engine oil filter for my car", corpus=CORPUS, top_k=2)
        assert row["answer"] and quoted_from(row["answer"], row["documents"])
        assert "oil" in row["answer"].lower()
        row = self.one(query_text="cat windowsill", corpus=CORPUS)
        assert row["answer"] and row["documents"] and quoted_from(row["answer"], row["documents"])

    def test_expected_top_document_with_margin(self) -> None:
        """The query also names the dog, so a runner-up exists and the margin over it is always checked."""
        passages = self.one(query_text="oil for the car engine and the dog", corpus=CORPUS, top_k=3)["documents"]
        assert len(passages) >= 2
        assert [passage["doc_id"] for passage in passages[:2]] == ["engine", "dog"]
        assert passages[0]["score"] > passages[1]["score"]

    def test_empty_corpus_gives_empty_answers(self) -> None:
        assert self.orchestrate(query_text=["cat", "dog"], corpus=[]) == [{"answer": "", "documents": []}] * 2

    def test_query_sharing_nothing(self) -> None:
        row = self.one(query_text="zyxwvut qqqq", corpus=CORPUS)
        if self.matches_by_word_overlap():
            assert row == {"answer": "", "documents": []}
        else:
            assert quoted_from(row["answer"], row["documents"])

    def test_each_query_finds_its_document(self) -> None:
        queries = ["cat windowsill", "engine oil", "moon tide ocean", "lava eruption"]
        batched = self.orchestrate(query_text=queries, corpus=CORPUS, top_k=3)
        assert [row["documents"][0]["doc_id"] for row in batched] == ["cat", "engine", "tide", "volcano"]

    def test_ties_break_by_doc_id(self) -> None:
        passages = self.one(query_text="comets", corpus=TWINS + CORPUS, top_k=2)["documents"]
        assert [passage["doc_id"] for passage in passages] == ["a", "b"]
        assert passages[0]["score"] == passages[1]["score"]

    @pytest.mark.parametrize(("options", "error", "option_name"), query_and_corpus_errors(CORPUS))
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        with pytest.raises(error, match=option_name):
            self.orchestrate(**options)
