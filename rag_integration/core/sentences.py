"""Sentence splitting that survives abbreviations ("e.g.", "Dr."), decimals ("3.5"), initials and non-ASCII text.

A full stop ends a sentence only when whitespace follows and the next word does not start in lower case, the word
before it is not a known abbreviation, an initial or a dotted acronym; "!", "?", "…" and the CJK/Devanagari/Arabic
terminators always end one; so does a blank line. Sentences are returned as they appear in the text, stripped.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    {
        "al", "approx", "bzw", "ca", "capt", "cf", "co", "col", "corp", "dept", "dr", "ed", "eds", "esp", "gen",
        "gov", "inc", "jr", "lt", "ltd", "mr", "mrs", "ms", "mt", "prof", "resp", "rev", "sen", "sgt", "sr", "st",
        "vgl", "vs", "usw",
    }
)  # fmt: skip
"""Words whose full stop never ends a sentence ("Dr. Smith")."""

NUMBER_ABBREVIATIONS = frozenset(
    {
        "apr", "aug", "ch", "dec", "eq", "feb", "fig", "figs", "hr", "jan", "jul", "jun", "mar", "no", "nov", "nr",
        "oct", "op", "pp", "sep", "sept", "vol", "vols",
    }
)  # fmt: skip
"""Words that abbreviate only before a number ("No. 5", "Fig. 2"); "The answer is no. Then" ends a sentence."""

_BOUNDARY = re.compile(
    r"(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019\u00bb)\]]*+(?=\s|$)"  # . ! ? … then closing quotes/brackets, then space or end
    r"|[\u3002\uff01\uff1f!?\u061f\u0964]+[\"'\u201d\u2019\u300d\u300f)\]]*"  # CJK, Arabic and Devanagari marks need no space after
    r"|\n[ \t]*\n"  # a blank line
)
_NEXT_CHARACTER = re.compile(r"\s*+(\S?)")
WORD_WINDOW = 64
"""How far back a full stop looks for the word it ends: abbreviations, initials and dotted acronyms are shorter, and
the bound keeps splitting linear in the text's length even for text without spaces."""
_DOTTED = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]$")


def split_sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in ``text``, surrounding whitespace excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group().startswith(".") and not _ends_sentence(text, match.start(), match.end()):
            continue
        _add_stripped(spans, text, start, match.end())
        start = match.end()
    _add_stripped(spans, text, start, len(text))
    return spans


def _add_stripped(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.lstrip()
    if stripped:
        spans.append((end - len(stripped), end - (len(stripped) - len(stripped.rstrip()))))


def _ends_sentence(text: str, dot: int, end: int) -> bool:
    """Whether the full stop at ``dot`` (its run ending at ``end``) closes a sentence."""
    next_character = _NEXT_CHARACTER.match(text, end)
    following = next_character.group(1) if next_character else ""
    if following.islower():
        return False
    window = text[max(0, dot - WORD_WINDOW) : dot]
    if not window or window[-1].isspace():
        return True
    word = window.rsplit(None, 1)[-1].lstrip("\"'\u201c\u2018\u00ab([")
    if text[dot:end].startswith(".."):
        return True
    lowered = word.lower()
    if lowered in ABBREVIATIONS or ("." in word and _DOTTED.match(word)):
        return False
    if lowered in NUMBER_ABBREVIATIONS and following.isdigit():
        return False
    return not (len(word) == 1 and word.isalpha() and word.isupper())
