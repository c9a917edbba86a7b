"""The generate backends through the generate contract kit, and the grounding guard on its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import GroundingError, InvalidOptionError
from rag_integration.feature_groups.connectors.generate import (
    Answer,
    BaseGenerateConnector,
    ExtractiveResponder,
    TemplateResponder,
    check_grounded,
)
from rag_integration.testing.generate import RETRIEVED, GenerateContractTests, assert_grounded
from rag_integration.testing.runner import run_feature


class TestExtractiveContract(GenerateContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGenerateConnector]:
        return ExtractiveResponder

    @classmethod
    def cites_one_passage(cls) -> bool:
        return True


class TestTemplateContract(GenerateContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGenerateConnector]:
        return TemplateResponder


class TestTemplateTwoSentencesContract(GenerateContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGenerateConnector]:
        return TemplateResponder

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"max_sentences": 2}


def generate(backend: type[BaseGenerateConnector], **options: Any) -> Any:
    request = {"generate_backend": backend.BACKEND, "passages": RETRIEVED, **options}
    return run_feature("generated_answer", request, {backend})


def test_extractive_answers_with_the_best_sentence_and_the_next_only_when_it_matches_too() -> None:
    row = generate(ExtractiveResponder, query_text="engine oil and sourdough bread")[0]
    assert (
        row["answer"]
        == "Change the engine oil every 10,000 km. [1] Dr. Weber recommends 4.5 litres of oil, e.g. for a small car. [1]"
    )
    assert row["citations"] == ["engine"]
    assert_grounded(row, RETRIEVED)
    alone = generate(ExtractiveResponder, query_text="how many litres for a small car")[0]
    assert alone["answer"] == "Dr. Weber recommends 4.5 litres of oil, e.g. for a small car. [1]"


def test_template_cites_each_passage_once_and_reuses_its_marker() -> None:
    row = generate(TemplateResponder, query_text="oil engine car litres", max_sentences=3)[0]
    assert row["citations"] == ["engine"]
    assert row["answer"].count("[1]") >= 2 and "[2]" not in row["answer"]
    assert_grounded(row, RETRIEVED)


def test_template_respects_max_sentences() -> None:
    row = generate(TemplateResponder, query_text="oil bread tides lava moon", max_sentences=2)[0]
    assert len([piece for piece in row["answer"].split("]") if piece.strip()]) == 2


def test_template_keeps_within_max_words_and_always_answers_with_its_best_sentence() -> None:
    query = "oil engine car litres"
    whole = generate(TemplateResponder, query_text=query, max_sentences=3)[0]["answer"]
    assert whole.count("[1]") == 2
    one = generate(TemplateResponder, query_text=query, max_sentences=3, max_words=3)[0]["answer"]
    assert one == whole.split(" [1]")[0] + " [1]"  # longer than 3 words, but the best one is always given
    assert generate(TemplateResponder, query_text=query, max_sentences=3, max_words=40)[0]["answer"] == whole


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_bad_max_words_is_a_typed_error(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="max_words"):
        generate(TemplateResponder, query_text="oil", max_words=bad)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_bad_max_sentences_is_a_typed_error(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="max_sentences"):
        generate(TemplateResponder, query_text="oil", max_sentences=bad)


PASSAGES = [Document("a", "Cats purr on the windowsill. They nap."), Document("b", "Dogs fetch the ball.")]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (Answer("Cats purr on the windowsill. [1]", ["z"]), "never given"),
        (Answer("Cats purr on the windowsill. [1]", ["a", "a"]), "more than once"),
        (Answer("", ["a"]), "empty answer with citations"),
        (Answer("Cats purr on the windowsill.", ["a"]), "without citation markers"),
        (Answer("Cats purr on the windowsill. [1]", []), "without citation markers"),
        (Answer("Cats purr on the windowsill. [2]", ["a"]), r"marker \[2\]"),
        (Answer("Cats purr on the windowsill. [0]", ["a"]), r"marker \[0\]"),
        (Answer("Cats bark loudly. [1]", ["a"]), "does not contain it"),
        (Answer("Dogs fetch the ball. [1]", ["a"]), "does not contain it"),
        (Answer("[1] Cats purr on the windowsill.", ["a"]), "after the last marker"),
        (Answer("[1]", ["a"]), "does not contain it"),
        (Answer("Cats purr on the windowsill. [1]", ["a", "b"]), "without a marker"),
        (Answer(5, ["a"]), "expected a str answer"),  # type: ignore[arg-type]
        (Answer("They nap. [1]", [3]), "expected a str answer"),  # type: ignore[list-item]
    ],
)
def test_guard_refuses_ungrounded_output(answer: Answer, problem: str) -> None:
    with pytest.raises(GroundingError, match=problem):
        check_grounded(answer, PASSAGES, "SomeBackend")


@pytest.mark.parametrize(
    "answer",
    [
        Answer("", []),
        Answer("They nap. [1]", ["a"]),
        Answer("Dogs fetch the ball. [1] Cats purr on the windowsill. [2] They nap. [2]", ["b", "a"]),
        Answer("Cats   purr on the\nwindowsill. [1]", ["a"]),
    ],
)
def test_guard_accepts_grounded_output(answer: Answer) -> None:
    check_grounded(answer, PASSAGES, "SomeBackend")


class InventingResponder(BaseGenerateConnector):
    """A deliberately broken backend: the base's guard must stop its answer."""

    BACKEND: ClassVar[str | None] = "inventing-for-tests"

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: Mapping[str, Any]) -> Answer:
        return Answer(f"The answer to {query} is 42. [1]", [passages[0].doc_id])


def test_the_base_guard_stops_a_backend_that_invents() -> None:
    with pytest.raises(GroundingError, match="InventingResponder"):
        generate(InventingResponder, query_text="life")
