"""The paragraph chunker keeps a heading with the text it titles and a lead-in ("To check the oil level:") with
its list, within ``max_chars``; it reads paragraphs with the sentence splitter's layout rules
(``core.text.sentences.paragraph_spans``), so a chunk and the sentences quoted from it agree on what is a heading."""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.feature_groups.rag_pipeline.chunking.paragraph_chunker import (
    ParagraphChunker,
    ParagraphChunkSettings,
)
from rag_integration.testing.runner import run_feature


def chunks(text: str, **options: Any) -> list[str]:
    rows = run_feature(
        "docs__chunked",
        {"document_source": "inline", "documents": [{"doc_id": "d", "text": text}], "chunker": "paragraph", **options},
        set(STAGES),
    )
    return [row["text"] for row in rows]


MANUAL = (
    "# Owner's manual\n\n"
    "## 2 Engine\n\n"
    "### 2.1 Engine oil\n\n"
    "The engine holds 4.5 litres of oil.\n\n"
    "To check the oil level:\n\n"
    "1. Park the car on level ground.\n"
    "2. Pull the dipstick.\n\n"
    "Top up when the level is low.\n\n"
    "Brakes\n"
    "======\n\n"
    "Check the brake fluid every year.\n\n"
    "## Notes"
)


def test_headings_stay_with_their_text_and_a_lead_in_with_its_list() -> None:
    assert chunks(MANUAL) == [
        "# Owner's manual\n\n## 2 Engine\n\n### 2.1 Engine oil\n\nThe engine holds 4.5 litres of oil.",
        "To check the oil level:\n\n1. Park the car on level ground.\n2. Pull the dipstick.",
        "Top up when the level is low.",
        "Brakes\n======\n\nCheck the brake fluid every year.",
        "## Notes",  # a heading at the end stays alone
    ]


def test_an_unmarked_title_over_prose_stays_with_it_and_plain_paragraphs_stay_apart() -> None:
    assert chunks("Oil change interval\n\nChange the oil every year.\n\nCheck the tyres.\n\nRotate them.") == [
        "Oil change interval\n\nChange the oil every year.",
        "Check the tyres.",
        "Rotate them.",
    ]


def test_a_lead_in_brings_a_loose_list_and_stops_at_the_next_paragraph() -> None:
    text = "Steps:\n\n- Park.\n\n- Wait.\n\n- Read the level.\n\nThat is all.\n\n- An unrelated item."
    assert chunks(text) == ["Steps:\n\n- Park.\n\n- Wait.\n\n- Read the level.", "That is all.", "- An unrelated item."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "## 检查机油\n\n检查机油液位\uff1a\n\n1. 停车。\n2. 拔出油尺。",
            ["## 检查机油\n\n检查机油液位\uff1a\n\n1. 停车。\n2. 拔出油尺。"],
        ),
        (
            "## فحص الزيت\n\nلفحص مستوى الزيت:\n\n- أوقف السيارة.",
            ["## فحص الزيت\n\nلفحص مستوى الزيت:\n\n- أوقف السيارة."],
        ),
        ("## तेल जाँच\n\nतेल देखने के लिए:\n\n- गाड़ी रोकें।", ["## तेल जाँच\n\nतेल देखने के लिए:\n\n- गाड़ी रोकें।"]),
    ],
)
def test_every_script_keeps_heading_lead_in_and_list(text: str, expected: list[str]) -> None:
    assert chunks(text) == expected


def test_a_heading_is_not_joined_past_max_chars_unless_the_text_is_cut_anyway() -> None:
    body = "Change the engine oil every year and check it monthly."  # 54 characters
    assert chunks(f"## Engine oil\n\n{body}", max_chars=60) == ["## Engine oil", body]
    assert chunks(f"## Engine oil\n\n{body}", max_chars=80) == [f"## Engine oil\n\n{body}"]
    long_body = " ".join(["Change the engine oil every year."] * 10)  # longer than max_chars alone
    pieces = chunks(f"## Engine oil\n\n{long_body}", max_chars=100)
    assert pieces[0].startswith("## Engine oil\n\nChange the engine oil") and all(len(p) <= 100 for p in pieces)
    assert " ".join(pieces).split() == f"## Engine oil {long_body}".split()


def test_a_lead_in_keeps_as_many_list_paragraphs_as_fit() -> None:
    text = "Steps:\n\n- Park the car.\n\n- Wait five minutes.\n\n- Read the level."
    assert chunks(text, max_chars=40) == ["Steps:\n\n- Park the car.", "- Wait five minutes.", "- Read the level."]


def test_units_are_counted_by_paragraphs_per_chunk_and_markup_alone_is_no_chunk() -> None:
    text = "## A\n\nFirst.\n\n---\n\nSecond.\n\n## B\n\nThird.\n\n***"
    assert chunks(text, paragraphs_per_chunk=2) == ["## A\n\nFirst.\n\n---\n\nSecond.", "## B\n\nThird."]
    assert chunks(text) == ["## A\n\nFirst.", "Second.", "## B\n\nThird."]


def test_a_table_stays_one_chunk_with_its_heading() -> None:
    text = "## Intervals\n\n| Part | Interval |\n|---|---|\n| Oil | every year |\n\nAfter the table."
    assert chunks(text) == ["## Intervals\n\n| Part | Interval |\n|---|---|\n| Oil | every year |", "After the table."]


def test_split_alone_caps_joins_at_the_default_max_chars_and_chunks_are_verbatim() -> None:
    settings = ParagraphChunkSettings()
    assert ParagraphChunker.split(MANUAL, settings) == chunks(MANUAL)
    assert all(chunk in MANUAL for chunk in ParagraphChunker.split(MANUAL, settings))
    assert ParagraphChunker.split("", settings) == [] and ParagraphChunker.split("---\n\n===", settings) == []


def test_chunks_of_a_file_keep_their_line_numbers() -> None:
    rows = run_feature(
        "docs__chunked",
        {
            "document_source": "inline",
            "documents": [{"doc_id": "d", "text": MANUAL, "line_start": 1}],
            "chunker": "paragraph",
        },
        set(STAGES),
    )
    assert [(row["line_start"], row["line_end"]) for row in rows] == [(1, 7), (9, 12), (14, 14), (16, 19), (21, 21)]
