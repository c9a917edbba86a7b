"""A 10 MB text through ``generate`` (both backends) and through the stage pipeline's sentence chunker finishes and
is right: sentence splitting, scoring and grounding are linear in the text (``benchmarks/text_bench.py`` times them).
"""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

TOPICS = ("engine", "oil", "filter", "tide", "moon", "bread", "oven", "river", "stone", "garden")
SENTENCES = 150_000
NEEDLE = "The zeppelin hangar stores helium."


def ten_megabytes() -> str:
    """About 10 MB of distinct sentences with one sentence, in the middle, that alone matches the query."""
    sentences = [
        f"Sentence {number} tells about the {TOPICS[number % 10]} and the {TOPICS[number * 7 % 10]} "
        f"near house {number % 1000}."
        for number in range(SENTENCES)
    ]
    sentences.insert(SENTENCES // 2, NEEDLE)
    text = " ".join(sentences)
    assert len(text) >= 10_000_000
    return text


@pytest.fixture(scope="module")
def big_text() -> str:
    return ten_megabytes()


@pytest.mark.parametrize("backend", [ExtractiveResponder, TemplateResponder])
def test_generate_answers_from_a_ten_megabyte_passage(big_text: str, backend: Any) -> None:
    options = {
        "generate_backend": backend.BACKEND,
        "query_text": "zeppelin helium hangar",
        "passages": [{"doc_id": "big", "text": big_text}],
    }
    [row] = run_feature("generated_answer", options, {backend})
    assert row == {"answer": f"{NEEDLE} [1]", "citations": ["big"]}


def test_the_sentence_chunker_splits_a_ten_megabyte_document(big_text: str) -> None:
    options = {
        "document_source": "inline",
        "documents": [{"doc_id": "big", "text": big_text}],
        "chunker": "sentence",
        "sentences_per_chunk": 1000,
        "max_chars": 100_000,  # a chunk of 1,000 sentences is about 67,000 characters
    }
    rows = run_feature("docs__chunked", options, set(STAGES))
    assert len(rows) == (SENTENCES + 1 + 999) // 1000
    assert [row["chunk_index"] for row in rows] == list(range(len(rows)))
    assert rows[0]["text"].startswith("Sentence 0 tells") and rows[-1]["text"].endswith(
        f"house {(SENTENCES - 1) % 1000}."
    )
    assert sum(row["text"].count(NEEDLE) for row in rows) == 1
    assert " ".join(row["text"] for row in rows) == big_text
