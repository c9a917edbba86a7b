"""The readable text of an HTML page, by the standard library's ``html.parser``, written in the layout
``core.text.sentences`` reads: the title, and the text of the body with each block element on its own line or
paragraph, ``<h1>``-``<h6>`` as Markdown headings (``## Returns``), list items as ``- `` or ``1. `` items and each
table row as one ``| cell | cell |`` line (a header row of ``<th>`` cells underlined ``| --- | --- |``). Scripts,
styles and other non-text elements are dropped, and so are the page's chrome: ``<nav>``, ``<footer>``, ``<aside>``
and elements whose ``role`` is navigation, contentinfo or complementary, and ``hidden`` ones. One pass, linear in
the page, entities decoded."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object", "nav", "footer", "aside"}
)
"""Elements whose content is not text a reader of the page's content sees (``head`` holds the title, read on its
own; ``nav``, ``footer`` and ``aside`` are the site's navigation, small print and side bars)."""
HEAD_CONTENT = frozenset({"title", "meta", "link", "style", "script", "base", "noscript", "template"})
"""What a page's head may hold: any other element starts the body, closing a head left open."""
SKIPPED_ROLES = frozenset({"navigation", "contentinfo", "complementary", "search"})
"""``role`` values that mark the same chrome on any element."""
PARAGRAPHS = frozenset(
    {
        "p", "div", "ul", "ol", "dl", "table", "section", "article", "header", "main", "blockquote", "pre", "hr",
        "figure", "form", "fieldset", "details", "address", "caption",
    }
)  # fmt: skip
"""Elements that stand apart from what surrounds them: a blank line before and after (a line break inside a list
item, so the item stays one block)."""
LINES = frozenset({"br", "li", "dt", "dd", "tr", "summary", "figcaption", "legend"})
"""Elements that end a line of text."""
HEADINGS = {f"h{level}": level for level in range(1, 7)}
FENCE = "```"
"""The Markdown code fence a ``<pre>`` block is written between, so its lines read as code (``core.text.sentences``)."""
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"})
TABLE_PARTS = frozenset({"table", "thead", "tbody", "tfoot", "tr", "td", "th"})
_SPACES = re.compile(r"\s+")
_LINE_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n\s*\n\s*")


@dataclass(frozen=True)
class HtmlText:
    title: str
    text: str


@dataclass
class _List:
    ordered: bool
    number: int
    items_before: int
    """List items open around the list when it started."""
    open_item: bool = False


@dataclass
class _Row:
    cells: list[str] = field(default_factory=list)
    cell: list[str] | None = None
    """The open cell's text, None between cells."""
    header: bool = True
    """Every cell so far is a ``<th>`` or in ``<thead>``."""


class _Reader(HTMLParser):
    """Writes the page's text to ``parts``; a break (1: a new line, 2: a blank line) is written lazily before the
    next text, so runs of block elements leave one break, and a line's mark (``## ``, ``- ``, ``1. ``) goes right
    before its first text, so an empty element leaves none."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.skipping: list[str] = []
        self.in_title = False
        self.pending_break = 0
        self.prefix = ""
        self.heading = False
        self.pre = 0
        self.fenced = False
        self.lists: list[_List] = []
        self.items = 0
        """List items open: inside one, a paragraph break is a line break and a heading is text of the item."""
        self.tables = 0
        """Tables open, one inside another's cell counted: only the outermost one's rows are lines."""
        self.row: _Row | None = None
        self.rows = 0
        """Rows written of the current table."""
        self.in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skipping == ["head"] and tag not in HEAD_CONTENT:
            self.skipping.clear()  # the body begins: HTML lets a page leave out </head>
        if tag == "title" and all(skipped == "head" for skipped in self.skipping):
            self.in_title = True
        elif self.skipping:
            if tag == self.skipping[-1] and tag not in VOID:
                self.skipping.append(tag)  # the same element nested: its end tag is not the skipped one's
        elif tag not in VOID and (tag in SKIPPED or _hidden(attrs)):
            self.skipping.append(tag)
        elif self.tables and tag in TABLE_PARTS:
            self._table_start(tag)
        elif self._in_cell():
            self._cell_space()  # inside a cell every element is inline
        elif tag == "table":
            self.tables, self.rows, self.prefix = 1, 0, ""
            self._break(2)
        elif tag in HEADINGS and not self.items:
            self.heading = False  # a heading left open ends where the next starts
            self._break(2)
            self.heading = True
            self.prefix = "#" * HEADINGS[tag] + " "
        elif tag in ("ul", "ol"):
            self._break(1 if self.items else 2)
            self.lists.append(_List(tag == "ol", _start(attrs) if tag == "ol" else 1, self.items))
        elif tag == "li":
            self._start_item()
        elif tag in PARAGRAPHS or tag in LINES or tag in HEADINGS:
            self.pre += tag == "pre"
            self._break(2 if tag in PARAGRAPHS and not self.items else 1)
            if tag == "pre" and self.pre == 1 and not self.heading:
                self.prefix, self.fenced = FENCE + "\n", True  # a code block: its "#" lines are not headings

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.in_title:
            self.in_title = False
        elif self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            elif tag in ("body", "html"):
                self.skipping.clear()  # an element left open ends with the page
        elif self.tables and tag in TABLE_PARTS:
            self._table_end(tag)
        elif self._in_cell():
            self._cell_space()
        elif tag in HEADINGS and self.heading:
            self.heading = False
            self.prefix = ""
            self._break(2)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.items = self.lists.pop().items_before
            self.prefix = ""
            self._break(1 if self.items else 2)
        elif tag == "li":
            if self.lists and self.lists[-1].open_item:
                self.lists[-1].open_item = False
                self.items -= 1
            self.prefix = ""
            self._break(1)
        elif tag in PARAGRAPHS or tag in LINES or tag in HEADINGS:
            if tag == "pre" and self.pre == 1 and self.fenced:
                if self.prefix == FENCE + "\n":
                    self.prefix = ""  # an empty block: no fence
                else:
                    self.parts.append("\n" + FENCE)
                self.fenced = False
            self.pre = max(0, self.pre - (tag == "pre"))
            self._break(2 if tag in PARAGRAPHS and not self.items else 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif self.skipping:
            return
        elif self._in_cell():
            assert self.row is not None and self.row.cell is not None
            self.row.cell.append(data)
        elif self.pre and not self.heading:
            self._write(data)
        else:
            self._write(_SPACES.sub(" ", data))

    def close(self) -> None:
        super().close()
        if self.tables:
            self._end_row()

    def _write(self, data: str) -> None:
        if not data.strip():
            if not self.pending_break and self.parts:
                self.parts.append(" ")
            return
        if self.pending_break and self.parts:
            self.parts.append("\n" * self.pending_break)
        self.pending_break = 0
        if self.prefix:
            self.parts.append(self.prefix)
            self.prefix = ""
            data = data.lstrip()
        self.parts.append(data)

    def _break(self, strength: int) -> None:
        if self.heading:
            self.parts.append(" ")  # a heading is one line
        else:
            self.pending_break = max(self.pending_break, strength)

    def _start_item(self) -> None:
        """A list item: a line of its own starting ``- `` or, in an ordered list, its number; a new item closes
        one left open (``<li>a<li>b``)."""
        self._break(1)
        current = self.lists[-1] if self.lists else None
        if current is None or not current.open_item:
            self.items += 1
        if current is None:
            self.prefix = "- "
            return
        current.open_item = True
        if current.ordered:
            self.prefix = f"{current.number}. "
            current.number += 1
        else:
            self.prefix = "- "

    def _in_cell(self) -> bool:
        return self.row is not None and self.row.cell is not None

    def _cell_space(self) -> None:
        if self.row is not None and self.row.cell is not None:
            self.row.cell.append(" ")

    def _table_start(self, tag: str) -> None:
        if tag == "table" or self.tables > 1:
            self.tables += tag == "table"  # a table inside a table: its text is the open cell's
            self._cell_space()
        elif tag == "thead":
            self.in_head = True
        elif tag in ("tbody", "tfoot"):
            self.in_head = False
        elif tag == "tr":
            self._end_row()
            self.row = _Row()
        else:  # a cell; one left open ends here
            if self.row is None:
                self.row = _Row()
            self._end_cell(self.row)
            self.row.cell = []
            self.row.header = self.row.header and (tag == "th" or self.in_head)

    def _table_end(self, tag: str) -> None:
        if self.tables > 1:
            self.tables -= tag == "table"
            self._cell_space()
        elif tag in ("td", "th"):
            if self.row is not None:
                self._end_cell(self.row)
        elif tag == "tr":
            self._end_row()
        elif tag == "thead":
            self.in_head = False
        elif tag == "table":
            self._end_row()
            self.tables, self.in_head = 0, False
            self._break(2)

    @staticmethod
    def _end_cell(row: _Row) -> None:
        if row.cell is not None:
            row.cells.append(" ".join("".join(row.cell).split()).replace("|", "/"))
            row.cell = None

    def _end_row(self) -> None:
        """Write the open row as one line, ``| a | b |``; the table's first row, when all its cells are headers,
        gets the separator row under it that makes it the header row of a Markdown table."""
        row, self.row = self.row, None
        if row is None:
            return
        self._end_cell(row)
        if not any(row.cells):
            return
        self._break(1)
        line = "| " + " | ".join(row.cells) + " |"
        if row.header and self.rows == 0:
            line += "\n|" + " --- |" * len(row.cells)
        self._write(line)
        self.rows += 1
        self._break(1)


def _hidden(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element's attributes hide it (``hidden``, ``aria-hidden="true"``) or mark it as the page's chrome
    (``role="navigation"``, ``"contentinfo"``, ``"complementary"``, ``"search"``)."""
    for name, value in attrs:
        if name == "hidden" or (name == "aria-hidden" and value == "true"):
            return True
        if name == "role" and value is not None and value.strip().lower() in SKIPPED_ROLES:
            return True
    return False


def _start(attrs: list[tuple[str, str | None]]) -> int:
    """An ordered list's first number (``<ol start="3">``), 1 when absent or not a small number."""
    for name, value in attrs:
        if name == "start" and value is not None and value.strip().isdigit() and len(value.strip()) <= 9:
            return int(value.strip())
    return 1


def html_text(page: str) -> HtmlText:
    """The title and the visible text of ``page`` (blank lines between blocks, runs of spaces collapsed)."""
    reader = _Reader()
    reader.feed(page)
    reader.close()
    lines = _LINE_SPACES.sub(" ", "".join(reader.parts))
    text = _BLANK_LINES.sub("\n\n", "\n".join(line.strip() for line in lines.split("\n"))).strip()
    return HtmlText(" ".join("".join(reader.title).split()), text)
