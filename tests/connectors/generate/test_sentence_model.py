"""``sentence_model``: an embedder's similarity to the query joins the word overlap in choosing sentences, so the
sentence that answers in other words can win over the one that repeats the question; a bad name is a typed error."""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.testing.runner import run_feature

PARCELS = (
    "Each parcel is labeled with a destination address and a tracking number. It may also carry the sender's phone "
    "number. At the destination, the parcels are sorted again by street and handed to couriers."
)
PROTOCOLS = (
    "The Zephyrnet protocols were designed entirely by a small team in Oslo. Later versions of Zephyrnet were open "
    "standards with published specifications. Zephyrnet is a family of radio protocols created to link weather "
    "stations on remote islands."
)


def answer(question: str, text: str, **options: Any) -> str:
    request = {"generate_backend": "extractive", "query_text": question, "passages": [{"doc_id": "d", "text": text}]}
    (row,) = run_feature("generated_answer", {**request, **options}, {ExtractiveResponder})
    return str(row["answer"])


@pytest.mark.parametrize(
    ("question", "text", "overlap", "model"),
    [
        (
            "What happens to the parcel at the destination?",
            PARCELS,
            "Each parcel is labeled with a destination address and a tracking number. [1]",
            "At the destination, the parcels are sorted again by street and handed to couriers. [1]",
        ),
        (
            "What is Zephyrnet?",
            PROTOCOLS,
            "The Zephyrnet protocols were designed entirely by a small team in Oslo. [1] Later versions of Zephyrnet "
            "were open standards with published specifications. [1]",
            "Zephyrnet is a family of radio protocols created to link weather stations on remote islands. [1]",
        ),
    ],
)
def test_the_model_picks_the_sentence_that_answers(question: str, text: str, overlap: str, model: str) -> None:
    assert answer(question, text) == overlap
    assert answer(question, text, sentence_model="overlap") == overlap
    assert answer(question, text, sentence_model="multilingual-e5-small") == model


def test_without_any_shared_word_there_is_still_no_answer() -> None:
    assert answer("Which violin did Paganini own?", PARCELS, sentence_model="multilingual-e5-small") == ""


@pytest.mark.parametrize("backend", [ExtractiveResponder, TemplateResponder])
@pytest.mark.parametrize("value", ["no-such-model", "", 3])
def test_a_bad_model_is_refused_naming_the_option(backend: type[Any], value: object) -> None:
    request = {"generate_backend": backend.BACKEND, "query_text": "q", "passages": [{"doc_id": "d", "text": "t"}]}
    with pytest.raises(InvalidOptionError, match="sentence_model"):
        run_feature("generated_answer", {**request, "sentence_model": value}, {backend})


def test_template_with_a_model_still_quotes_only_sentences_sharing_a_word() -> None:
    text = "The engine oil must be changed yearly. Mechanics service motors and lubricants. Cats purr."
    request = {
        "generate_backend": "template",
        "query_text": "what is the engine oil of the car",
        "passages": [{"doc_id": "d", "text": text}],
        "sentence_model": "multilingual-e5-small",
    }
    (row,) = run_feature("generated_answer", request, {TemplateResponder})
    assert row["answer"] == "The engine oil must be changed yearly. [1]"
