"""No chunk of any chunker is longer than ``max_chars``, whatever the text: a sentence without end, a paragraph of
one line, text without spaces (a property test over every chunker and random texts and settings)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.feature_groups.rag_pipeline.chunking.base import capped
from rag_integration.feature_groups.rag_pipeline.chunking.fixed_size_chunker import (
    FixedSizeChunker,
    FixedSizeChunkSettings,
)
from rag_integration.testing.runner import run_feature

pieces = st.sampled_from(["word", " ", "\n", "\n\n", ". ", "北京", "x" * 50, "Dr. ", "\t"])
texts = st.lists(pieces, min_size=1, max_size=120).map("".join)
CHUNKERS: list[dict[str, Any]] = [
    {"chunker": "sentence", "sentences_per_chunk": 3},
    {"chunker": "paragraph", "paragraphs_per_chunk": 2},
    {"chunker": "fixed", "chunk_size": 400},
    {"chunker": "fixed", "chunk_size": 50, "chunk_unit": "tokens"},
]


@settings(max_examples=60, deadline=None)
@given(text=texts, limit=st.integers(16, 120), chunker=st.sampled_from(CHUNKERS))
def test_no_chunk_is_longer_than_max_chars(text: str, limit: int, chunker: dict[str, Any]) -> None:
    assume(text.strip())
    options = {"document_source": "inline", "documents": [{"doc_id": "d", "text": text}], "max_chars": limit}
    rows = run_feature("docs__chunked", {**options, **chunker}, set(STAGES))
    assert all(0 < len(row["text"]) <= limit for row in rows)
    assert [row["chunk_index"] for row in rows] == list(range(len(rows)))


def test_a_long_chunk_is_cut_at_spaces_and_keeps_every_word() -> None:
    sentence = " ".join(f"word{number}" for number in range(2000))
    cut = capped(sentence, 100)
    assert all(len(piece) <= 100 for piece in cut)
    assert " ".join(cut).split() == sentence.split()
    assert capped("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]


@pytest.mark.parametrize("unit", ["chars", "tokens"])
def test_one_long_line_is_chunked_in_memory_a_few_times_its_size(unit: str) -> None:
    """A 4 MB line without a break: chunks are cut straight from it, so what is allocated is the chunks and, for
    words, two arrays of offsets (it was a tuple per character: 4.3 GB for a 50 MB line)."""
    text = ("word " * 800_000)[:4_000_000]
    settings = FixedSizeChunkSettings(
        size=500 if unit == "chars" else 100, overlap=50 if unit == "chars" else 10, unit=unit
    )
    tracemalloc.start()
    try:
        chunks = FixedSizeChunker.split(text, settings)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert chunks and all(chunk in text for chunk in chunks[:50])
    assert peak < 4 * len(text)
