"""The one sentence and clause splitter: generate, the grounding check, the orchestrator check and the sentence
chunker all cut text here, so what a backend quotes is always cut where the check expects a cut.

Two passes. The layout pass cuts the text into blocks: a blank line ends one, a Markdown ATX heading (``# Title``)
is one of its own, a setext underline (``=====`` or ``-----`` under a line) or a rule line ends one and is not
text, and a list item (``- ``, ``* ``, ``+ ``, ``•``, ``1.``, ``1)``, ``a)``) starts one; the heading marks and
bullets are not part of any sentence. A numbered item interrupts a running paragraph only when it is numbered 1
(as in CommonMark), so a line wrapped before "31. Juli" stays inside its sentence.

The punctuation pass cuts each block into sentences. A full stop ends a sentence only when whitespace follows, the
next word does not start in lower case, and the word before it is not a known abbreviation ("Dr.", "e.g."), an
initial, a dotted acronym or a day number before a month name ("31. Juli 2025"); "!", "?", "…" and the
CJK/Arabic/Devanagari terminators of ``SENTENCE_MARKS`` always end one, the CJK ones without a space after them.

Clauses are finer: a clause also ends at ``, ; :`` and their CJK and Arabic forms (``CLAUSE_MARKS``), before a
closing bracket or quote and before a spaced dash, and starts after an opening one. ``starts_clause`` and
``ends_clause`` say so for one position; ``core.text.grounding`` adds the sentence boundaries of the source, so a quote
may run from any clause start to any clause end.
"""

from __future__ import annotations

import re
from typing import NamedTuple

ABBREVIATIONS = frozenset(
    {
        "al", "approx", "bzw", "ca", "capt", "cf", "co", "col", "corp", "dept", "dr", "ed", "eds", "esp", "gen",
        "gov", "inc", "jh", "jr", "lt", "ltd", "mr", "mrs", "ms", "mt", "prof", "resp", "rev", "sen", "sgt", "sr",
        "st", "str", "v", "vgl", "vs", "usw",
    }
)  # fmt: skip
"""Words whose full stop never ends a sentence ("Dr. Smith", "Brown v. Board")."""

NUMBER_ABBREVIATIONS = frozenset(
    {
        "apr", "aug", "ch", "dec", "eq", "feb", "fig", "figs", "hr", "jan", "jul", "jun", "mar", "no", "nov", "nr",
        "oct", "op", "pp", "sep", "sept", "vol", "vols",
    }
)  # fmt: skip
"""Words that abbreviate only before a number ("No. 5", "Fig. 2"); "The answer is no. Then" ends a sentence."""

MONTH_NAMES = frozenset(
    {
        "januar", "jänner", "februar", "feber", "märz", "april", "mai", "juni", "juli", "august", "september",
        "oktober", "november", "dezember", "jan", "feb", "mär", "apr", "jun", "jul", "aug", "sep", "sept", "okt",
        "nov", "dez",
    }
)  # fmt: skip
"""Capitalised month names (and their abbreviations) written after an ordinal day ("am 31. Juli", "1. Jan."): the
day's full stop does not end the sentence. Languages that write the month in lower case after an ordinal day
(Danish, Norwegian, Finnish, Czech, Polish, Hungarian, ...) are covered by the lower-case rule."""

SENTENCE_MARKS = ".!?\u2026\u3002\uff01\uff1f\uff61\u061f\u06d4\u0964\u0965\u203c\u2047\u2048\u2049"
"""Characters that may end a sentence: Latin, CJK (full- and half-width), Arabic/Urdu and Devanagari."""
CLAUSE_MARKS = frozenset(SENTENCE_MARKS + ",;:\uff0c\uff1b\uff1a\u3001\u060c\u061b")
"""Characters after which a clause ends: every sentence mark and the commas, semicolons and colons of the scripts."""
UNSPACED_MARKS = frozenset("\u3002\uff01\uff1f\uff61\uff0c\uff1b\uff1a\u3001")
"""CJK punctuation, after which the next clause starts without a space."""
CLOSING = frozenset("\"'\u201d\u2019\u00bb)]}\u300d\u300f\u3011\u300b\uff09")
OPENING = frozenset("\"'\u201c\u2018\u201e\u00ab([{\u300c\u300e\u3010\u300a\uff08")
DASHES = frozenset("-\u2013\u2014")

_CLOSERS = "\"'\u201d\u2019\u00bb)\\]\u300d\u300f\u3011\u300b\uff09"
_BOUNDARY = re.compile(
    r"(?<![.!?\u2026])[.!?\u2026\u203c\u2047-\u2049]++[" + _CLOSERS + r"]*+(?=\s|$)"  # . ! ? … then closers, then space
    r"|[\u3002\uff01\uff1f\uff61!?\u061f\u06d4\u0964\u0965]+[" + _CLOSERS + r"]*"  # CJK, Arabic, Devanagari: no space
)
_NEXT_WORD = re.compile(r"\s*+([^\W\d_]*)(\S?)")
WORD_WINDOW = 64
"""How far back a full stop looks for the word it ends: abbreviations, initials and dotted acronyms are shorter, and
the bound keeps splitting linear in the text's length even for text without spaces."""
_DOTTED = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]$")
_DAY = re.compile(r"^\d{1,2}$")

_RULE = re.compile(r"[ \t]{0,3}(?:=+|-{2,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|(?:-[ \t]*){3,})[ \t\r]*")
"""A setext underline or a thematic break: the whole line is markup."""
_SETEXT = re.compile(r"[ \t]{0,3}(?:=+|-+)[ \t\r]*")
_ATX = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]+|(?=[ \t\r]*$))")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t\r]*$")
_ITEM = re.compile(r"[ \t]*(?:([-*+\u2022\u2023\u25e6\u2043\u2219])|(\d{1,9})[.)]|[^\W\d_][)])[ \t]+(?=\S)")


class Block(NamedTuple):
    """A layout block of a text: ``text[start:end]`` without its marks; ``heading`` when it titles what follows."""

    start: int
    end: int
    heading: bool = False


class Sentence(NamedTuple):
    """A sentence ``text[start:end]``; ``heading`` is the span of the heading it falls under (None outside any),
    ``is_heading`` whether the sentence is itself a heading."""

    start: int
    end: int
    heading: tuple[int, int] | None = None
    is_heading: bool = False


def split_sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in ``text``, surrounding whitespace and layout marks excluded."""
    return [(sentence.start, sentence.end) for sentence in sentences(text)]


def sentences(text: str) -> list[Sentence]:
    """Each sentence of ``text`` with the heading it falls under: a heading's words say what the sentences below it
    are about ("Oil change interval" over "Change the engine oil every 10,000 km."), so a caller scoring sentences
    against a query may count them, while the heading itself, a title, states nothing to quote."""
    found: list[Sentence] = []
    heading: tuple[int, int] | None = None
    for block in block_spans(text):
        spans: list[tuple[int, int]] = []
        _split_block(text, block.start, block.end, spans)
        if block.heading:
            heading = (spans[0][0], spans[-1][1]) if spans else heading
            found.extend(Sentence(start, end, None, True) for start, end in spans)
        else:
            found.extend(Sentence(start, end, heading) for start, end in spans)
    return found


def block_spans(text: str) -> list[Block]:
    """The layout blocks of ``text`` (paragraph, heading, list item), marks excluded.

    One walk over the lines; a text without a line break is one block, found without looking at its characters.
    A block is a heading when another block follows it and it is an ATX heading, a paragraph underlined
    setext-style, or a single line ending in a letter or digit (no mark) followed by a list item or by a block
    that ends in a sentence mark: a title over prose, where a run of unpunctuated lines (a poem, a list of
    notes) titles nothing.
    """
    if "\n" not in text:
        return [Block(0, len(text))] if text.strip() else []
    found: list[tuple[int, int, str]] = []  # (start, end, kind): kind is "heading", "title", "item" or "text"
    start = end = -1
    kind = "text"
    lines = 0

    def close(heading: bool = False) -> None:
        nonlocal start
        if start >= 0 and text[start:end].strip():
            if heading:
                found.append((start, end, "heading"))
            elif kind == "text" and lines == 1 and _last_visible(text, end).isalnum():
                found.append((start, end, "title"))
            else:
                found.append((start, end, kind))
        start = -1

    line_start = 0
    for body in text.split("\n"):
        line_end = line_start + len(body)
        atx = _ATX.match(body)
        item = _ITEM.match(body)
        if not body or body.isspace() or _RULE.fullmatch(body):
            close(heading=kind == "text" and _SETEXT.fullmatch(body) is not None)
            kind = "text"
        elif atx:
            close()
            closing = _ATX_CLOSING.search(body, atx.end())
            start, end = line_start + atx.end(), line_start + (closing.start() if closing else len(body))
            close(heading=True)
            kind = "text"
        elif item and (start < 0 or kind == "item" or item.group(1) is not None or item.group(2) == "1"):
            close()
            start, end, kind = line_start + item.end(), line_end, "item"
        else:
            if start < 0:
                start, lines, kind = line_start, 0, "text"
            end = line_end
            lines += 1
        line_start = line_end + 1
    close()
    blocks = []
    for position, (block_start, block_end, block_kind) in enumerate(found):
        following = found[position + 1] if position + 1 < len(found) else None
        heading = following is not None and (
            block_kind == "heading"
            or (
                block_kind == "title"
                and (following[2] == "item" or _last_visible(text, following[1]) in SENTENCE_MARKS)
            )
        )
        blocks.append(Block(block_start, block_end, heading))
    return blocks


def _last_visible(text: str, end: int) -> str:
    """The last character before ``end`` that is not whitespace or a closing bracket or quote ("" when none)."""
    position = end - 1
    while position >= 0 and (text[position].isspace() or text[position] in CLOSING):
        position -= 1
    return text[position] if position >= 0 else ""


def _split_block(text: str, block_start: int, block_end: int, spans: list[tuple[int, int]]) -> None:
    start = block_start
    for match in _BOUNDARY.finditer(text, block_start, block_end):
        if match.group().startswith(".") and not _ends_sentence(
            text, match.start(), match.end(), block_start, block_end
        ):
            continue
        _add_stripped(spans, text, start, match.end())
        start = match.end()
    _add_stripped(spans, text, start, block_end)


def _add_stripped(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.lstrip()
    if stripped:
        spans.append((end - len(stripped), end - (len(stripped) - len(stripped.rstrip()))))


def _ends_sentence(text: str, dot: int, end: int, block_start: int, block_end: int) -> bool:
    """Whether the full stop at ``dot`` (its run ending at ``end``) closes a sentence."""
    following_word, following = "", ""
    next_word = _NEXT_WORD.match(text, end, block_end)
    if next_word:
        following_word = next_word.group(1)
        following = following_word[:1] or next_word.group(2)
    if following.islower():
        return False
    window = text[max(block_start, dot - WORD_WINDOW) : dot]
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
    if _DAY.match(word) and following_word.casefold() in MONTH_NAMES:
        return False
    return not (len(word) == 1 and word.isalpha() and word.isupper())


def starts_clause(text: str, start: int) -> bool:
    """Whether a clause of ``text`` may start at ``start``, by punctuation alone: the text's start, after a clause
    mark and a space, right after a CJK mark or an opening bracket or quote, after a closer or a dash and a space."""
    if start == 0:
        return True
    before = text[start - 1]
    if before in OPENING or before in UNSPACED_MARKS:
        return True
    if not before.isspace():
        return False
    return start < 2 or text[start - 2] in CLAUSE_MARKS or text[start - 2] in CLOSING or text[start - 2] in DASHES


def ends_clause(text: str, end: int, last: str) -> bool:
    """Whether a clause of ``text`` whose last character is ``last`` may end at ``end``, by punctuation alone:
    the text's end, before a clause mark or a closer, before a spaced dash, or after a mark or a closer that is
    followed by a space, another mark or a closer."""
    if end == len(text):
        return True
    after = text[end]
    if last in CLAUSE_MARKS or last in CLOSING:
        return after.isspace() or after in CLOSING or after in CLAUSE_MARKS or last in UNSPACED_MARKS
    if after in CLAUSE_MARKS or after in CLOSING:
        return True
    return after.isspace() and text[end + 1 : end + 2] in DASHES
