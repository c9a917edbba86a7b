"""A 10 MB text through ``generate`` (both backends) and through the stage pipeline's sentence chunker finishes and
is right: sentence splitting, scoring and grounding are linear in the text (``benchmarks/text_bench.py`` times them).
So are the layout rules on hostile lines, and reading a hostile HTML page.
"""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.core.documents.html_text import html_text
from rag_integration.core.text.sentences import paragraph_spans, sentence_spans
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.feature_groups.rag_pipeline.chunking.paragraph_chunker import (
    ParagraphChunker,
    ParagraphChunkSettings,
)
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


RUN = 400_000
"""Long enough that a layout rule backtracking over a run (quadratic) would take minutes, not milliseconds."""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Intro.\n" + "* " * RUN + "x\nEnd.", 2),  # almost a thematic break
        ("# Title" + " " * RUN + "x\nEnd.", 2),  # spaces before what is not a closing '#'
        ("# Title " + "#" * RUN + "\nEnd.", 2),  # a closing run of '#'
        ("a | b\n|" + "-|" * RUN + "x\nEnd.", 1),  # almost a table separator
        ("a | b\n|-|" + " " * RUN + "x\nEnd.", 1),
        ("|" * RUN + "\n" + "|" * RUN + "\nEnd.", 1),  # rows of nothing but pipes
        ("| a | b |\n|---|---|\n" + "| c | d |\n" * (RUN // 10), RUN // 10 + 1),
        ("x | y\n-|-\n" * (RUN // 10), RUN // 10),  # a header over its separator, again and again
        ("# h\n\n" * (RUN // 5), RUN // 5),
        ("- " + " " * RUN + "\nx", 1),
    ],
)
def test_hostile_layouts_split_in_one_pass(text: str, expected: int) -> None:
    """Every layout rule (headings, rules, list items, table rows and separators) reads a line in one pass, so
    sentences, paragraphs and paragraph chunks of hostile text take time linear in its length."""
    assert len(sentence_spans(text)) == expected
    paragraphs = paragraph_spans(text)
    chunks = ParagraphChunker.split(text, ParagraphChunkSettings())
    assert paragraphs and chunks
    assert all(chunk in text for chunk in chunks[:100])


def test_a_hostile_page_reads_in_one_pass() -> None:
    """Deep nesting, unclosed cells, items and headings, skipped elements: one pass of the standard library parser."""
    run = RUN // 8
    pages = [
        "<div>" * run + "x" + "</div>" * run,
        "<table>" + "<tr><td>a<td>b" * run + "</table>",
        "<ul>" + "<li>a" * run + "</ul>",
        "<h2>" * run + "x",
        "<nav>" * run + "x",
        "<table><tr><td>" + "<table><tr><td>" * run + "x",
    ]
    texts = [html_text(page).text for page in pages]
    assert texts[0] == "x" and texts[3] == "## x" and texts[4] == "" and texts[5] == "| x |"
    assert texts[1].count("\n") == run - 1 and texts[2].count("- a") == run
