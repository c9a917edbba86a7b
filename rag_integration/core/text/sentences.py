"""The one sentence and clause splitter: generate, the grounding check, the orchestrator check and the sentence
chunker all cut text here, so what a backend quotes is always cut where the check expects a cut.

Two passes. The layout pass cuts the text into blocks: a blank line ends one, a Markdown ATX heading (``# Title``)
is one of its own, a setext underline (``=====`` or ``-----`` under a line) or a rule line ends one and is not
text, a list item (``- ``, ``* ``, ``+ ``, ``•``, ``1.``, ``1)``, ``a)``) starts one, and each row of a table
(``| a | b |``) is one; the heading marks, bullets, a row's outer pipes and a table's separator row
(``|---|---|``) are not part of any sentence. A marked heading is a heading even alone (a chunk that is only a
heading). A numbered item interrupts a running paragraph only when it is numbered 1 (as in CommonMark), so a line
wrapped before "31. Juli" stays inside its sentence. The same walk gives the paragraphs (``paragraph_spans``) a
chunker keeps whole, so chunks and the sentences quoted from them read one layout.

The punctuation pass cuts each block but a table row (one sentence) into sentences. A full stop ends a sentence only
when whitespace follows, the next word does not start in lower case, and the word before it is not a known
abbreviation ("Dr.", "e.g."), an initial, a dotted acronym or a day number before a month name ("31. Juli 2025");
"!", "?", "…" and the CJK/Arabic/Devanagari terminators of ``SENTENCE_MARKS`` always end one, the CJK ones without
a space after them.

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

_RULE = re.compile(r"[ \t]{0,3}(?:=++|-{2,}+|(?:\*[ \t]*+){3,}+|(?:_[ \t]*+){3,}+|(?:-[ \t]*+){3,}+)[ \t\r]*+")
"""A setext underline or a thematic break: the whole line is markup (possessive, so a long line fails in one pass)."""
_SETEXT = re.compile(r"[ \t]{0,3}(?:=++|-++)[ \t\r]*+")
_ATX = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]+|(?=[ \t\r]*$))")
_ITEM = re.compile(r"[ \t]*(?:([-*+\u2022\u2023\u25e6\u2043\u2219])|(\d{1,9})[.)]|[^\W\d_][)])[ \t]+(?=\S)")
_TABLE_SEPARATOR = re.compile(r"[ \t]{0,3}\|?[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t\r]*+")
"""The line under a Markdown table's header row (``|---|:--:|``): markup, never a sentence."""
_TABLE_START = re.compile(r"[ \t]{0,3}[#|]")
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
"""A Markdown code fence line: what lies between two is code, read as plain text."""
"""How a one-line text that may be a heading or a table row starts; any other line is one block as it is."""
LEAD_IN_MARKS = ":\uff1a"
SHOUTED_WORDS = 12
"""The most words a line in capitals may have to be a heading: longer ones are a text written in capitals."""
QUESTION_MARKS = "?\uff1f\u061f\u2047\u2048\u2049"
"""Marks that end a question: Latin (also Spanish ``¿...?``), full-width CJK, Arabic, and the doubled forms."""
"""How a block that introduces what follows ends ("To check the oil level:"), in Latin and full-width script."""
BLOCK_KINDS = ("text", "title", "heading", "item", "row", "header")
"""What a layout block is: running text, a one-line unmarked title, a marked heading (ATX or setext), a list item,
a table row, a table's header row."""


class Block(NamedTuple):
    """A layout block of a text: ``text[start:end]`` without its marks; ``heading`` when it titles what follows;
    ``kind`` one of ``BLOCK_KINDS``."""

    start: int
    end: int
    heading: bool = False
    kind: str = "text"


class Paragraph(NamedTuple):
    """A run of non-blank lines holding text, ``text[start:end]`` with its marks (a heading's ``#``, an underline,
    bullets, a table's pipes and separator row), surrounding whitespace excluded.

    ``heading``: every block in it is a heading, so it titles what follows rather than saying anything;
    ``lead_in``: its last block ends in a colon ("To check the oil level:"), so it introduces what follows;
    ``first``: the kind of its first block (one of ``BLOCK_KINDS``: ``"item"`` for a list, ``"row"`` or
    ``"header"`` for a table)."""

    start: int
    end: int
    heading: bool
    lead_in: bool
    first: str


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
    against a query may count them, while the heading itself, a title, states nothing to quote.

    A table row is one sentence, its cells without the outer pipes ("Brake fluid | every 2 years"), under its
    table's header row (the column names) when the table has one, else under the heading; the header row is a
    heading.

    A question is never an answer: a sentence that asks (``QUESTION_MARKS``) is a heading over the sentences after
    it, as an FAQ's question is over its answer, until the next heading or question."""
    found: list[Sentence] = []
    heading: tuple[int, int] | None = None
    header: tuple[int, int] | None = None
    for block in block_spans(text):
        spans: list[tuple[int, int]] = []
        if block.kind in ("row", "header"):
            spans.append((block.start, block.end))
        else:
            _split_block(text, block.start, block.end, spans)
        if not spans:
            continue
        if block.kind == "header":
            header = (spans[0][0], spans[-1][1])
            found.extend(Sentence(start, end, None, True) for start, end in spans)
            continue
        if block.kind != "row":
            header = None
        if block.heading:
            heading = (spans[0][0], spans[-1][1])
            found.extend(Sentence(start, end, None, True) for start, end in spans)
        elif block.kind == "row":
            found.extend(Sentence(start, end, header or heading) for start, end in spans)
        else:
            for start, end in spans:
                if _asks(text, end):
                    heading = (start, end)
                    found.append(Sentence(start, end, None, True))
                else:
                    found.append(Sentence(start, end, heading))
    return found


def block_spans(text: str) -> list[Block]:
    """The layout blocks of ``text`` (paragraph, heading, list item, table row), marks excluded.

    One walk over the lines; a text without a line break is one block, found without looking at its characters,
    unless it starts with ``#`` or ``|`` (a heading or a table row alone). An ATX heading (``## Title``) or a
    paragraph underlined setext-style is a heading even with nothing after it; a single line ending in a letter or
    digit (no mark) is a heading when a list item, a table or a block that ends in a sentence mark follows it: a
    title over prose, where a run of unpunctuated lines (a poem, a list of notes) titles nothing. A line in
    capitals (``OPENING HOURS``) over a line that is not is a block of its own and a heading over what follows.

    A table is a header row (a line with ``|``) over a separator row (``|---|---|``, as many cells), then every
    following line with a ``|``; a line starting and ending with ``|`` is a table row too. Each row is a block of
    its own, from its first cell to its last (outer pipes excluded); the separator row is markup.
    """
    return _layout(text)[0]


def paragraph_spans(text: str) -> list[Paragraph]:
    """The paragraphs of ``text`` (runs of non-blank lines) that hold text, in order, read by the same walk as
    ``block_spans``: the units a paragraph chunker keeps whole, with what each says about its neighbours."""
    blocks, paragraphs = _layout(text)
    found: list[Paragraph] = []
    for start, end, first, last in paragraphs:
        if first == last:
            continue  # only markup: a rule, an underline, a separator row
        held = blocks[first:last]
        found.append(
            Paragraph(
                start,
                end,
                heading=all(block.heading for block in held),
                lead_in=ends_lead_in(text, held[-1].end),
                first=held[0].kind,
            )
        )
    return found


def _layout(text: str) -> tuple[list[Block], list[tuple[int, int, int, int]]]:
    """The blocks of ``text`` and its paragraphs as ``(start, end, first block, end block)``: one walk, each line
    looked at once and, when it holds a ``|``, once more as the line under a possible table header."""
    if "\n" not in text and not _TABLE_START.match(text):
        if not text.strip():
            return [], []
        start, end = len(text) - len(text.lstrip()), len(text.rstrip())
        return [Block(start, end)], [(start, end, 0, 1)]
    found: list[tuple[int, int, str]] = []  # (start, end, kind): kind one of BLOCK_KINDS
    paragraphs: list[tuple[int, int, int, int]] = []
    start = end = -1
    kind = "text"
    lines = 0
    paragraph_start, paragraph_first = -1, 0
    last_line, last_body = 0, ""

    def close(heading: bool = False) -> None:
        nonlocal start
        if start >= 0 and text[start:end].strip():
            if heading:
                found.append((start, end, "heading"))
            elif kind == "text" and lines == 1 and (_last_visible(text, end).isalnum() or _shouted(text[start:end])):
                found.append((start, end, "title"))
            else:
                found.append((start, end, kind))
        start = -1

    def close_paragraph() -> None:
        nonlocal paragraph_start
        if paragraph_start >= 0:
            paragraph_end = last_line + len(last_body.rstrip())
            paragraphs.append((paragraph_start, paragraph_end, paragraph_first, len(found)))
        paragraph_start = -1

    body_lines = text.split("\n")
    table = separator_next = False
    fence = ""  # the open code fence's mark (``` or ~~~): its lines are code, never headings, items or rows
    line_start = 0
    for number, body in enumerate(body_lines):
        line_end = line_start + len(body)
        blank = not body or body.isspace()
        if not blank and paragraph_start < 0:
            paragraph_start, paragraph_first = line_start + len(body) - len(body.lstrip()), len(found)
        if not blank:
            last_line, last_body = line_start, body
        piped = "|" in body
        fenced = _FENCE.match(body)
        if fenced and (not fence or fenced.group(1).startswith(fence)):
            close()  # a fence line is markup; it opens a code block or closes the one open
            fence = "" if fence else fenced.group(1)[:3]
            kind, table = "text", False
        elif fence:
            if start < 0:
                start, lines, kind = line_start, 0, "text"
            end = line_end
            lines += 2  # code is never a one-line title
        elif separator_next:
            separator_next = False
        elif blank:
            close()
            close_paragraph()
            kind, table = "text", False
        elif piped and _TABLE_SEPARATOR.fullmatch(body):
            close()  # a separator row out of place: markup
            kind = "text"
        elif piped and not table and _is_header(body, body_lines[number + 1] if number + 1 < len(body_lines) else ""):
            close()
            _add_row(found, body, line_start, "header")
            kind, table, separator_next = "text", True, True
        elif piped and (table or _bordered(body)):
            close()
            _add_row(found, body, line_start, "row")
            kind, table = "text", True
        else:
            table = False
            atx = _ATX.match(body)
            item = _ITEM.match(body)
            if _RULE.fullmatch(body):
                close(heading=kind == "text" and _SETEXT.fullmatch(body) is not None)
                kind = "text"
            elif atx:
                close()
                start, end = line_start + atx.end(), line_start + _atx_end(body, atx.end())
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
                next_line = body_lines[number + 1] if number + 1 < len(body_lines) else ""
                if lines == 1 and _shouted(body) and next_line.strip() and not _in_capitals(next_line):
                    close()  # an all-caps line over lines that are not titles them (a text all in capitals stays)
        line_start = line_end + 1
    close()
    close_paragraph()
    blocks = []
    for position, (block_start, block_end, block_kind) in enumerate(found):
        following = found[position + 1] if position + 1 < len(found) else None
        heading = block_kind in ("heading", "header") or (
            block_kind == "title"
            and following is not None
            and (
                following[2] in ("item", "row", "header")
                or _last_visible(text, following[1]) in SENTENCE_MARKS
                or _shouted(text[block_start:block_end])
            )
        )
        blocks.append(Block(block_start, block_end, heading, block_kind))
    return blocks, paragraphs


def _atx_end(body: str, content_start: int) -> int:
    """Where an ATX heading's text ends in its line ``body``: before a closing run of ``#`` that follows a space
    (``## Title ##``), else at the line's end; string scans, no backtracking."""
    trimmed = body.rstrip(" \t\r")
    unhashed = trimmed.rstrip("#")
    if len(unhashed) < len(trimmed) and (len(unhashed) <= content_start or unhashed[-1] in " \t"):
        return max(content_start, len(unhashed))
    return len(body)


def _cells(line: str) -> int:
    """How many cells a table line has: its pipes that are not escaped (``\\|``), outer ones not counted."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return inner.count("|") - inner.count("\\|") + 1


def _is_header(line: str, following: str) -> bool:
    """Whether ``line`` is a table's header row: the line after it is a separator row of as many cells."""
    return "|" in following and _TABLE_SEPARATOR.fullmatch(following) is not None and _cells(line) == _cells(following)


def _bordered(line: str) -> bool:
    """Whether ``line`` starts and ends with a pipe (after whitespace): a table row even without a header."""
    inner = line.strip()
    return len(inner) > 1 and inner[0] == "|" and inner[-1] == "|"


def _add_row(found: list[tuple[int, int, str]], body: str, line_start: int, kind: str) -> None:
    """A table row's block: from its first cell's text to its last's, outer pipes and whitespace excluded (an
    escaped final pipe, ``\\|``, is text)."""
    start = len(body) - len(body.lstrip(" \t|"))
    end = len(body.rstrip(" \t\r|"))
    if end < len(body) and body[end] == "|" and body[end - 1 : end] == "\\":
        end += 1
    if end > start:
        found.append((line_start + start, line_start + end, kind))


def ends_lead_in(text: str, end: int | None = None) -> bool:
    """Whether ``text`` (up to ``end``) ends in a colon, closing brackets and quotes aside: a lead-in ("To check the
    oil level:") that introduces what follows and says nothing alone."""
    last = _last_visible(text, len(text) if end is None else end)
    return last != "" and last in LEAD_IN_MARKS


def _asks(text: str, end: int) -> bool:
    """Whether the sentence ending at ``end`` asks: its closing run of sentence marks (closing brackets and quotes
    aside) holds a question mark ("Why?", "Really?!", "多久\uff1f")."""
    position = _last_visible_position(text, end)
    while position >= 0 and text[position] in SENTENCE_MARKS:
        if text[position] in QUESTION_MARKS:
            return True
        position -= 1
    return False


def _shouted(line: str) -> bool:
    """Whether a line is written in capitals as a heading is ("OPENING HOURS"): at most ``SHOUTED_WORDS`` words, two
    or more cased letters, none in lower case, and no sentence mark at its end. Scripts without case never are."""
    if len(line.split(None, SHOUTED_WORDS)) > SHOUTED_WORDS:
        return False
    return _in_capitals(line) and _last_visible(line, len(line)) not in SENTENCE_MARKS


def _in_capitals(line: str) -> bool:
    """Whether a line's letters are capitals: two or more cased ones, none in lower case."""
    cased = 0
    for character in line:
        if character.islower():
            return False
        cased += character.isupper()
    return cased >= 2


def _last_visible(text: str, end: int) -> str:
    """The last character before ``end`` that is not whitespace or a closing bracket or quote ("" when none)."""
    position = _last_visible_position(text, end)
    return text[position] if position >= 0 else ""


def _last_visible_position(text: str, end: int) -> int:
    """Where ``_last_visible``'s character is (-1 when none)."""
    position = end - 1
    while position >= 0 and (text[position].isspace() or text[position] in CLOSING):
        position -= 1
    return position


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
