"""The sentence splitter shared by generate, the orchestrator answer check and the sentence chunker."""

from __future__ import annotations

import pytest

from rag_integration.core.text.sentences import sentence_spans, split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Dr. Smith measured 3.5 kg of oil, e.g. in the engine. The result was clear!",
            ["Dr. Smith measured 3.5 kg of oil, e.g. in the engine.", "The result was clear!"],
        ),
        (
            "Mr. and Mrs. Lee met Prof. Kim vs. St. Clair. Done.",
            ["Mr. and Mrs. Lee met Prof. Kim vs. St. Clair.", "Done."],
        ),
        (
            "J. R. R. Tolkien wrote books. He lived in the U.K. for years.",
            ["J. R. R. Tolkien wrote books.", "He lived in the U.K. for years."],
        ),
        ("Versions 2.0 and 3.5. The end", ["Versions 2.0 and 3.5.", "The end"]),
        (
            "After Brown v. Board of Education it changed. Then",
            ["After Brown v. Board of Education it changed.", "Then"],
        ),
        ("Pi is 3.14159 roughly. Yes", ["Pi is 3.14159 roughly.", "Yes"]),
        ("Der Ärztin gefällt das. Über Nacht blieb es kalt.", ["Der Ärztin gefällt das.", "Über Nacht blieb es kalt."]),
        ("Das ist z.B. gut. Öl ist teuer.", ["Das ist z.B. gut.", "Öl ist teuer."]),
        ("Он пришёл. Она ушла.", ["Он пришёл.", "Она ушла."]),
        ("東京は日本の首都です。大阪は大きい都市です。", ["東京は日本の首都です。", "大阪は大きい都市です。"]),
        ('He said "Stop." Then he left... Really? Yes.', ['He said "Stop."', "Then he left...", "Really?", "Yes."]),
        ("Wait... what happened", ["Wait... what happened"]),
        ("First paragraph without a stop\n\nsecond paragraph", ["First paragraph without a stop", "second paragraph"]),
        ("See Fig. 3 for details.", ["See Fig. 3 for details."]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_sentences_are_verbatim_substrings() -> None:
    text = "Ein Satz über Öl.  Noch ein Satz, e.g. mit 2.5 Litern!\nUnd ein dritter."
    assert all(sentence in text for sentence in split_sentences(text))
    assert len(split_sentences(text)) == 3


def test_spans_point_at_the_sentences() -> None:
    text = "  One here.  Two, e.g. this one!\n\nThree"
    assert [text[start:end] for start, end in sentence_spans(text)] == split_sentences(text)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("The answer is no. Then we left.", ["The answer is no.", "Then we left."]),
        ("See No. 5 and Fig. 2 first. Then go.", ["See No. 5 and Fig. 2 first.", "Then go."]),
        ("We met in Jan. Everyone came.", ["We met in Jan.", "Everyone came."]),
    ],
)
def test_number_abbreviations_continue_only_before_numbers(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_text_without_spaces_or_with_long_runs_of_stops_splits_in_one_pass() -> None:
    """Each full stop looks back a bounded window and a run of stops is matched once, so hostile text is linear."""
    assert split_sentences("a." * 200_000) == ["a." * 200_000]
    assert split_sentences("." * 500_000 + " Next one.") == ["." * 500_000, "Next one."]
    long_word = "x" * 100_000
    assert split_sentences(f"{long_word}. Dr. {long_word}. End") == [f"{long_word}.", f"Dr. {long_word}.", "End"]
