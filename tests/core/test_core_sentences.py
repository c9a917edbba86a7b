"""The sentence splitter shared by generate, the orchestrator answer check and the sentence chunker."""

from __future__ import annotations

import pytest

from rag_integration.core.documents.corpus import Document
from rag_integration.core.text.grounding import QuoteSource, check_cited_answer, quotable_sentences
from rag_integration.core.text.sentences import paragraph_spans, sentence_spans, sentences, split_sentences


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


@pytest.mark.parametrize(
    ("text", "heading"),
    [
        ("## Action items", "Action items"),
        ("### 2.1 Engine oil ###", "2.1 Engine oil"),
        ("  # Title", "Title"),
        ("Skyhook\n=======", "Skyhook"),
        ("Installation\n------------\n", "Installation"),
        ("## 行动项目", "行动项目"),
        ("## بنود العمل", "بنود العمل"),
        ("## कार्य सूची", "कार्य सूची"),
    ],
)
def test_a_marked_heading_alone_is_a_heading_and_never_quotable(text: str, heading: str) -> None:
    """An ATX or setext heading with nothing after it (a chunk that is only a heading) is still a heading: the
    marks are not text, and ``quotable_sentences`` never offers it as an answer."""
    assert split_sentences(text) == [heading]
    assert [sentence.is_heading for sentence in sentences(text)] == [True]
    assert quotable_sentences(heading, [text]) == []


def test_a_lone_unmarked_line_is_still_text() -> None:
    """Only marks make a lone line a heading: a one-line text without them is a sentence to quote."""
    assert [sentence.is_heading for sentence in sentences("Oil change interval")] == [False]
    assert [quoted.text for quoted in quotable_sentences("oil", ["Oil change interval"])] == ["Oil change interval"]
    assert split_sentences("#hashtag is not a heading") == ["#hashtag is not a heading"]


@pytest.mark.parametrize(
    "question",
    ["How often?", "(How often?)", "多久换一次\uff1f", "¿Cada cuánto?", "كم مرة؟", "Really?!", "Why\u2049"],
)
def test_a_question_heads_the_sentences_after_it_and_is_never_quoted(question: str) -> None:
    text = f"# Oil\n\n{question} Every 10,000 km. Use 5W-30.\n\nNext question? Its answer."
    found = [
        (text[s.start : s.end], s.is_heading, s.heading and text[s.heading[0] : s.heading[1]]) for s in sentences(text)
    ]
    assert found == [
        ("Oil", True, None),
        (question, True, None),
        ("Every 10,000 km.", False, question),
        ("Use 5W-30.", False, question),
        ("Next question?", True, None),
        ("Its answer.", False, "Next question?"),
    ]
    quoted = [sentence.text for sentence in quotable_sentences(question, [text])]
    assert quoted[0] in ("Every 10,000 km.", "Use 5W-30.") and question not in quoted


TABLE = (
    "### Service intervals\n\n"
    "| Part | Interval |\n"
    "|------|:--------:|\n"
    "| Engine oil | every 15,000 km |\n"
    "| Brake fluid | every 2 years |\n\n"
    "Ask the workshop for details."
)


def test_each_table_row_is_a_sentence_and_the_separator_none() -> None:
    found = sentences(TABLE)
    shown = [(TABLE[s.start : s.end], s.is_heading, s.heading and TABLE[s.heading[0] : s.heading[1]]) for s in found]
    assert shown == [
        ("Service intervals", True, None),
        ("Part | Interval", True, None),
        ("Engine oil | every 15,000 km", False, "Part | Interval"),
        ("Brake fluid | every 2 years", False, "Part | Interval"),
        ("Ask the workshop for details.", False, "Service intervals"),
    ]
    assert not any("---" in sentence for sentence in split_sentences(TABLE))


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("a | b\n--|--\nc | d\ne | f\nafter", ["c | d", "e | f", "after"]),  # no outer pipes
        ("| x | y |\n| z | w |", ["x | y", "z | w"]),  # bordered rows without a header
        ("| 部件 | 间隔 |\n|---|---|\n| 机油 | 每年 |", ["机油 | 每年"]),
        ("| الجزء | المدة |\n|---|---|\n| زيت المحرك | كل سنة |", ["زيت المحرك | كل سنة"]),
        ("| भाग | अवधि |\n|---|---|\n| तेल | हर साल |", ["तेल | हर साल"]),
        ("| a \\| b |\n|---|\n| c \\|", ["c \\|"]),  # an escaped pipe is text
        ("x | y\n-|-|-\nz", ["x | y", "z"]),  # a separator of another width: no table, only markup
    ],
)
def test_table_layouts(text: str, rows: list[str]) -> None:
    assert [text[s.start : s.end] for s in sentences(text) if not s.is_heading] == rows


def test_a_table_row_is_quoted_and_the_quote_passes_the_grounding_check() -> None:
    """``quotable_sentences`` offers the row's cells; ``QuoteSource`` (the check) holds them as whole clauses, as
    it holds every sentence ``sentences`` cuts."""
    [best, *_] = quotable_sentences("how often brake fluid", [TABLE])
    assert best.text == "Brake fluid | every 2 years"
    assert QuoteSource.of(TABLE).holds_clauses(best.text)
    check_cited_answer(f"{best.text} [1]", ["d"], [Document("d", TABLE)], "test")
    assert all(QuoteSource.of(TABLE).holds_clauses(" ".join(s.split())) for s in split_sentences(TABLE))


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (
            "# Notes\n\n## Action items\n\n- Tom: report.\n- Anna: venue.",
            [(True, False, "heading")] * 2 + [(False, False, "item")],
        ),
        ("To check the oil level:\n\n1. Park.\n2. Wait.", [(False, True, "text"), (False, False, "item")]),
        ("检查机油\uff1a\n\n1. 停车。", [(False, True, "text"), (False, False, "item")]),
        ("Text.\n\n---\n\n***\n\nMore.", [(False, False, "text"), (False, False, "text")]),
        ("| a | b |\n|---|---|\n| c | d |", [(False, False, "header")]),
    ],
)
def test_paragraph_spans_say_what_a_paragraph_does(text: str, kinds: list[tuple[bool, bool, str]]) -> None:
    """The paragraphs a chunker keeps whole: headings alone, lead-ins, what they start with; markup alone (a rule
    between blank lines) is no paragraph."""
    found = paragraph_spans(text)
    assert [(p.heading, p.lead_in, p.first) for p in found] == kinds
    assert all(text[p.start : p.end] == text[p.start : p.end].strip() for p in found)


@pytest.mark.parametrize("fence", ["```", "~~~~", "```bash"])
def test_hash_lines_inside_a_code_fence_are_code_not_headings(fence: str) -> None:
    text = (
        f"# Setup\n\nRun these commands.\n\n{fence}\n# install the tools\npip install x\n{fence[:3]}\n\nThen restart."
    )
    found = sentences(text)
    headings = [text[s.start : s.end] for s in found if s.is_heading]
    assert headings == ["Setup"]
    assert any("# install the tools" in text[s.start : s.end] for s in found)
    assert all("```" not in text[s.start : s.end] and "~~~" not in text[s.start : s.end] for s in found)
