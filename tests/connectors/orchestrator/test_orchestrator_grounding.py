"""The family base's grounding guard, fed engine answers directly: what it accepts and what it refuses; and the
shared rule of ``core.text.grounding`` giving the same verdict for generate's cited answers and orchestrator answers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from rag_integration.core.documents.corpus import Document, read_documents
from rag_integration.core.errors import GroundingError, RankingContractError
from rag_integration.core.text.grounding import check_cited_answer, check_quoted_answer, is_clause_quote
from rag_integration.feature_groups.connectors.orchestrator import (
    BaseOrchestratorConnector,
    EngineAnswer,
    EngineHit,
    OrchestratorRequest,
    R2RFixtureOrchestrator,
)
from rag_integration.feature_groups.connectors.orchestrator.base import ground_answer
from rag_integration.testing.runner import run_feature

DOCUMENTS = read_documents(
    [
        {"doc_id": "oil", "text": "Change the engine oil every year.  Old oil wears\nthe engine out."},
        {"doc_id": "tide", "text": "The moon pulls the ocean. The tide rises twice a day."},
        {"doc_id": "b", "text": "Twin."},
        {"doc_id": "a", "text": "Twin."},
    ],
    "corpus",
)
BY_ID = {document.doc_id: document for document in DOCUMENTS}
POSITION_OF = {document.doc_id: position for position, document in enumerate(DOCUMENTS)}


def grounded(answer: str, *hits: tuple[str, str, float], top_k: int = 10) -> dict[str, Any]:
    engine_answer = EngineAnswer(answer, tuple(EngineHit(*hit) for hit in hits))
    return ground_answer(engine_answer, DOCUMENTS, POSITION_OF, top_k, "test")


def test_whole_documents_and_verbatim_chunks_are_accepted_and_merged() -> None:
    row = grounded(
        "Old oil wears the engine out.",
        ("oil", "Old oil wears the engine out.", 0.9),
        ("oil", "Change the engine oil every year.", 0.7),
        ("tide", "The moon pulls the ocean. The tide rises twice a day.", 0.7),
    )
    assert row["answer"] == "Old oil wears the engine out."
    assert [(p["doc_id"], p["score"], p["rank"]) for p in row["documents"]] == [("oil", 0.9, 1), ("tide", 0.7, 2)]
    assert row["documents"][0]["text"] == BY_ID["oil"].text


def test_ties_break_by_doc_id_before_the_cut() -> None:
    row = grounded("Twin.", ("b", "Twin.", 0.5), ("a", "Twin.", 0.5), top_k=1)
    assert [p["doc_id"] for p in row["documents"]] == ["a"]


def test_no_hits_and_no_answer_is_an_empty_row() -> None:
    assert grounded("") == {"answer": "", "documents": []}


@pytest.mark.parametrize(
    ("answer", "hits", "problem"),
    [
        ("", [("moon", "The moon pulls the ocean.", 0.5)], "never given"),
        ("", [("tide", "The sun pulls the ocean.", 0.5)], "not in that document"),
        ("", [("tide", "", 0.5)], "not in that document"),
        ("The tide rises.", [("tide", "The moon pulls the ocean.", 0.5)], "none of the 1 returned documents"),
        ("The tide rises twice a day.", [], "returned no document"),
        ("The tide rises twice a day.", [("oil", "Old oil", 0.9), ("tide", "The tide", 0.5)], "none of the 1"),
    ],
)
def test_ungrounded_answers_are_refused(answer: str, hits: list[tuple[str, str, float]], problem: str) -> None:
    with pytest.raises(GroundingError, match=problem):
        grounded(answer, *hits, top_k=1)


@pytest.mark.parametrize("scores", [(0.2, 0.9), (math.nan, 0.1), (math.inf, 0.1)])
def test_incoherent_scores_are_refused(scores: tuple[float, float]) -> None:
    with pytest.raises(RankingContractError, match="never increase"):
        grounded("", ("oil", "Old oil", scores[0]), ("tide", "The tide", scores[1]))


def test_a_backend_must_answer_every_query(monkeypatch: pytest.MonkeyPatch) -> None:
    def one_answer_only(cls: Any, request: OrchestratorRequest, settings: Mapping[str, Any]) -> list[EngineAnswer]:
        return [EngineAnswer("", ())]

    monkeypatch.setattr(R2RFixtureOrchestrator, "orchestrate", classmethod(one_answer_only))
    # r2r asks one query at a time under its deadline; the base's count check applies to every batch answer
    monkeypatch.setattr(R2RFixtureOrchestrator, "timed_answers", vars(BaseOrchestratorConnector)["timed_answers"])
    options = {"orchestrator_backend": "r2r", "query_text": ["a", "b"], "corpus": [{"text": "x"}]}
    with pytest.raises(RankingContractError, match="answered 1 of 2 queries"):
        run_feature("orchestrated_answer", options, {R2RFixtureOrchestrator})


def test_a_hit_repeated_lower_keeps_its_best_score_and_rank() -> None:
    row = grounded("", ("tide", "The tide rises twice a day.", 0.8), ("oil", "Old oil", 0.6), ("tide", "The moon", 0.6))
    assert [(p["doc_id"], p["score"], p["rank"]) for p in row["documents"]] == [("tide", 0.8, 1), ("oil", 0.6, 2)]


PASSAGE = Document("p", "Cats purr on the windowsill. They nap [2] all day.\nDogs   bark.")
SHARED_VERDICTS = [
    ("Cats purr on the windowsill.", True),
    ("Cats purr on the   windowsill.", True),  # whitespace never matters
    ("They nap all day.", True),  # nor do marker-like [n] in the passage
    ("They nap all day. Cats purr on the windowsill.", True),  # each sentence is quoted; their order is free
    ("Dogs bark. They nap all day.", True),
    ("Cats purr loudly.", False),
    ("Cats purr on the windowsill. Cats bark.", False),  # one unquoted sentence is enough to refuse
    ("purr on the windowsill. They", False),  # a quote is whole clauses, not any verbatim part of a sentence
    ("Cats purr.", False),  # nor a clause with its qualifier dropped
]
SAFETY = Document("s", "Never mix bleach and ammonia. Bleach is safe in small doses, diluted with water.")


@pytest.mark.parametrize(
    ("claim", "grounded_verdict"),
    [
        ("Never mix bleach and ammonia.", True),
        ("mix bleach and ammonia", False),  # the negation dropped
        ("Mix bleach and ammonia.", False),
        ("Bleach is safe in small doses, diluted with water.", True),
        ("Bleach is safe in small doses,", True),  # a whole clause
        ("diluted with water.", True),
        ("Bleach is safe", False),  # the qualifier dropped
        ("Bleach is safe in small", False),
        ("safe in small doses", False),
    ],
)
def test_a_quote_is_whole_clauses_of_its_source(claim: str, grounded_verdict: bool) -> None:
    assert is_clause_quote(claim, SAFETY.text) is grounded_verdict
    for check in (
        lambda: check_cited_answer(f"{claim} [1]", ["s"], [SAFETY], "generate"),
        lambda: check_quoted_answer(claim, [SAFETY], "orchestrator"),
    ):
        if grounded_verdict:
            check()
        else:
            with pytest.raises(GroundingError):
                check()


@pytest.mark.parametrize(("sentences", "grounded_verdict"), SHARED_VERDICTS)
def test_generate_and_orchestrator_answers_share_one_grounding_rule(sentences: str, grounded_verdict: bool) -> None:
    verdicts = []
    for check in (
        lambda: check_cited_answer(f"{sentences} [1]", ["p"], [PASSAGE], "generate"),
        lambda: check_quoted_answer(sentences, [PASSAGE], "orchestrator"),
    ):
        try:
            check()
            verdicts.append(True)
        except GroundingError:
            verdicts.append(False)
    assert verdicts == [grounded_verdict, grounded_verdict]


def test_orchestrator_answer_may_quote_a_sentence_from_any_returned_document() -> None:
    row = grounded(
        "The tide rises twice a day. Old oil wears the engine out.",
        ("tide", "The tide rises twice a day.", 0.9),
        ("oil", "Old oil wears the engine out.", 0.8),
    )
    assert [p["doc_id"] for p in row["documents"]] == ["tide", "oil"]
