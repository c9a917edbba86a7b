"""The generate contract kit.

Subclass ``GenerateContractTests`` and implement ``connector_class``; override ``backend_options`` for options your
backend needs in tests, ``cites_one_passage`` when your backend answers from exactly one passage, ``empty_answer``
when your rows carry more fields than ``answer`` and ``citations``, and ``paraphrases`` when your backend (a language
model) words its answer itself instead of quoting passages verbatim.
The grounding check here is written independently of the family's own guard, so a guard bug cannot hide.
The standard tests come from ``ContractKit`` (generate has no ``top_k``, so none of its ``top_k`` tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.text.grounding import MARKER, citation_markers, claim_terms
from rag_integration.testing.kit import ContractKit, KitItemRows, kit_rows_feature
from rag_integration.testing.runner import run_feature
from rag_integration.testing.visibility import SEEDS, labelled, readable

PASSAGES: list[dict[str, Any]] = [
    {
        "doc_id": "engine",
        "text": "Change the engine oil every 10,000 km. Dr. Weber recommends 4.5 litres of oil, e.g. for a small car. "
        "Tyres wear out too.",
    },
    {"doc_id": "tide", "text": "The moon pulls the ocean.  Tides rise\ntwice a day [3]."},
    {"doc_id": "bread", "text": "Sourdough bread needs a starter. Bake the bread in a hot oven for 45 minutes."},
    {"doc_id": "munich", "text": "München liegt an der Isar. Die Stadt hat über 1,5 Millionen Einwohner."},
    {"doc_id": "volcano", "text": "Lava flows down the mountain after an eruption."},
]
SPACED_MARKER = citation_markers(space_before=True)
"""A ``[n]`` with the whitespace before it: the markers a passage may hold, in grounding's one marker grammar (the
grammar only; the grounding checks below are the kit's own)."""
RETRIEVED: list[dict[str, Any]] = [
    {**passage, "score": 1.0 / rank, "rank": rank} for rank, passage in enumerate(PASSAGES, start=1)
]


EMPTY_ANSWER: dict[str, Any] = {"answer": "", "citations": []}


def assert_grounded(
    row: Mapping[str, Any],
    passages: list[dict[str, Any]],
    *,
    keys: Iterable[str] = frozenset(EMPTY_ANSWER),
    quotes: bool = True,
) -> None:
    """Every citation a supplied passage, cited once and marked; each sentence found in the passage it cites
    (``quotes``), or for a paraphrasing backend sharing at least one word of three or more letters with it."""
    assert set(row) == set(keys), row
    answer, citations = row["answer"], row["citations"]
    assert isinstance(answer, str) and isinstance(citations, list)
    texts = {str(passage["doc_id"]): " ".join(SPACED_MARKER.sub("", passage["text"]).split()) for passage in passages}
    assert all(isinstance(doc_id, str) and doc_id in texts for doc_id in citations)
    assert len(set(citations)) == len(citations)
    if not answer:
        assert citations == []
        return
    pieces = MARKER.split(answer)
    assert pieces[-1] == "" and citations
    used = set()
    for sentence, number in zip(pieces[0::2], pieces[1::2]):
        index = int(number) - 1
        assert 0 <= index < len(citations)
        assert sentence.strip(), row
        if quotes:
            assert sentence.strip() in texts[citations[index]], (sentence, row)
        else:
            assert claim_terms(sentence) & claim_terms(texts[citations[index]]), (sentence, row)
        used.add(index)
    assert used == set(range(len(citations)))


class GenerateContractTests(ContractKit):
    """Every generate backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "generated_answer"
    items_option: ClassVar[str | None] = "passages"

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        queries = ["How many litres of oil does Dr. Weber recommend?", "Wie viele Einwohner hat München?", "zyxwvut"]
        return [
            {"query_text": queries, "passages": RETRIEVED},
            {"query_text": queries[:2], "passages_source": kit_rows_feature([RETRIEVED[:2], RETRIEVED[2:]])},
            {"query_text": "engine oil", "passages": []},
        ]

    @classmethod
    def cites_one_passage(cls) -> bool:
        """True when every non-empty answer cites exactly one passage."""
        return False

    @classmethod
    def empty_answer(cls) -> dict[str, Any]:
        """The row for a query with nothing to answer from; its keys are every row's keys."""
        return dict(EMPTY_ANSWER)

    @classmethod
    def paraphrases(cls) -> bool:
        """True when the backend words sentences itself (a language model): the kit then checks that each cited
        passage shares words with the sentence citing it, not that the sentence is a verbatim quote."""
        return False

    @classmethod
    def supports_top_k(cls) -> bool:
        return False

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"query_text": "How many litres of oil does Dr. Weber recommend?", "passages": RETRIEVED}

    @classmethod
    def sample_top(cls) -> Any:
        return "engine"

    @classmethod
    def batch_queries(cls) -> list[Any]:
        """Queries answered from each passage in turn, and a few naming two passages at once."""
        grounded = ["engine oil for a small car", "moon ocean tides", "bread oven starter", "lava eruption"]
        return [*grounded, "engine oil", "bread oven", "lava", "engine oil bread", "tides moon"]

    @classmethod
    def answer_keys(cls, row: Mapping[str, Any]) -> list[Any]:
        return list(row["citations"])

    def check_row(self, row: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """Grounded in the request's passages; one citation only when the backend cites one passage."""
        self.assert_grounded(row, request["passages"])
        if self.cites_one_passage() and row["citations"]:
            assert len(row["citations"]) == 1, row

    def assert_grounded(self, row: Mapping[str, Any], passages: list[dict[str, Any]]) -> None:
        assert_grounded(row, passages, keys=self.empty_answer(), quotes=not self.paraphrases())

    def generate(self, **options: object) -> list[Any]:
        return self.run(**options)

    def one(self, **options: object) -> dict[str, Any]:
        rows = self.generate(**options)
        assert len(rows) == 1, rows
        return dict(rows[0])

    def test_filters_never_leak(self) -> None:
        passages = [dict(passage, lang="de" if passage["doc_id"] == "munich" else "en") for passage in PASSAGES]
        row = self.one(query_text="München Isar engine oil tides", passages=passages, filters={"lang": "de"})
        assert row["citations"] == ["munich"]
        assert self.one(query_text="engine oil", passages=passages, filters={"lang": "de"}) == self.empty_answer()
        with pytest.raises(InvalidOptionError, match="filters"):
            self.generate(query_text="oil", passages=passages, filters=["de"])

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_get_answers_from_what_they_may_read(self, seed: int) -> None:
        passages, principals = labelled(RETRIEVED, seed)
        queries = ["How often should the engine oil be changed?", "When do tides rise?", "How long is bread baked?"]
        got = self.generate(query_text=queries, passages=passages, principals=principals)
        visible = readable(passages, principals)
        assert got == self.generate(query_text=queries, passages=visible)
        assert {doc_id for row in got for doc_id in row["citations"]} <= {passage["doc_id"] for passage in visible}
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.generate(query_text=queries, passages=passages)

    def test_expected_passage_and_whole_sentences(self) -> None:
        row = self.one(query_text="How many litres of oil does Dr. Weber recommend?", passages=RETRIEVED)
        assert row["citations"][0] == "engine"
        if not self.paraphrases():
            assert row["answer"].startswith("Dr. Weber recommends 4.5 litres of oil, e.g. for a small car. [1]")
        assert not {"volcano", "munich", "tide"} & set(row["citations"])

    def test_non_ascii_text(self) -> None:
        row = self.one(query_text="Wie viele Einwohner hat München?", passages=RETRIEVED)
        assert row["citations"][0] == "munich"
        if not self.paraphrases():
            assert "Die Stadt hat über 1,5 Millionen Einwohner. [1]" in row["answer"]
        self.assert_grounded(row, PASSAGES)

    def test_marker_like_text_in_passages_cannot_forge_markers(self) -> None:
        row = self.one(query_text="how often do tides rise", passages=RETRIEVED)
        if not self.paraphrases():
            assert "Tides rise twice a day. [1]" in row["answer"]
        assert "[3]" not in row["answer"]
        self.assert_grounded(row, PASSAGES)

    def test_citation_count(self) -> None:
        row = self.one(query_text="engine oil and sourdough bread", passages=RETRIEVED)
        self.assert_grounded(row, PASSAGES)
        if self.cites_one_passage():
            assert len(row["citations"]) == 1
        else:
            assert {"engine", "bread"} <= set(row["citations"])

    def test_no_passages_give_an_empty_answer(self) -> None:
        assert self.generate(query_text=["oil", "bread"], passages=[]) == [self.empty_answer()] * 2

    def test_nothing_relevant_gives_an_empty_answer(self) -> None:
        assert self.one(query_text="zyxwvut quasar", passages=RETRIEVED) == self.empty_answer()

    def test_passages_source_reads_an_upstream_feature(self) -> None:
        upstream = kit_rows_feature([RETRIEVED[:2], RETRIEVED[2:]])
        rows = run_feature(
            self.feature_name,
            self.request(query_text=["engine oil", "sourdough bread"], passages_source=upstream),
            {self.connector_class(), KitItemRows},
        )
        assert [row["citations"][0] for row in rows] == ["engine", "bread"]

    @pytest.mark.parametrize(
        ("options", "error", "option_name"),
        [
            ({"passages": PASSAGES}, MissingOptionError, "query_text"),
            ({"query_text": "oil"}, MissingOptionError, "passages"),
            ({"query_text": 3, "passages": PASSAGES}, InvalidOptionError, "query_text"),
            ({"query_text": "oil", "passages": "oil is slippery"}, InvalidOptionError, "passages"),
            ({"query_text": "oil", "passages": ["oil is slippery"]}, InvalidOptionError, r"passages\[0\]"),
            ({"query_text": "oil", "passages": [{"doc_id": "a", "text": 5}]}, InvalidOptionError, "text"),
            ({"query_text": "oil", "passages": [{"doc_id": 2.5, "text": "oil"}]}, InvalidOptionError, "doc_id"),
            ({"query_text": "oil", "passages": PASSAGES, "passages_source": "x"}, InvalidOptionError, "source"),
        ],
    )
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        with pytest.raises(error, match=option_name):
            self.generate(**options)
