"""Printing for people: one rich console setup and plain tables, shared by the CLI and the demos."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

PIPED_WIDTH = 160
"""The columns text is laid out for when stdout is not a terminal (rich would assume 80)."""
WIDEST_TABLE = 1000
"""Columns a piped table may take before its widest cells fold."""


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with control characters other than tab and newline shown escaped (``\\x1b``, ``\\u202e``): a file's
    escape sequences must not recolour or clear the reader's terminal, nor a bidirectional override reorder what
    is printed after it."""
    return _CONTROL.sub(_escaped, text)


def printable_line(text: str) -> str:
    """``printable`` for what must stay one line (a file name, a title, a plugin's name, a table cell): line breaks
    and tabs are escaped too, so a name cannot print a line that looks like the program's own."""
    return _LINE_CONTROL.sub(_escaped, text)


ECHO_CHARACTERS = 300
"""The most of a user's own text (a question) printed back: a 10,000-word question is not worth repeating."""


def echoed(text: str) -> str:
    """A user's text as printed back to them: ``printable_line``, and cut at ``ECHO_CHARACTERS`` with its length."""
    if len(text) <= ECHO_CHARACTERS:
        return printable_line(text)
    return f"{printable_line(text[:ECHO_CHARACTERS])}… ({len(text):,} characters)"


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def console() -> Console:
    """A console for lines of text, printed as they are (``[/section]`` or ``:cat:`` in a document is not markup):
    in a terminal it wraps them at the terminal's width; piped or redirected it never wraps (soft wrap), so every
    line printed is one line of the output, whatever its length."""
    terminal = sys.stdout.isatty()
    return Console(
        soft_wrap=not terminal, width=None if terminal else PIPED_WIDTH, markup=False, highlight=False, emoji=False
    )


def show_table(table: Table, out: TextIO | None = None) -> None:
    """Print ``table`` without cutting a cell: in a terminal at its width, a cell too wide folded onto more lines;
    piped or to ``out`` at the table's natural width (up to ``WIDEST_TABLE`` columns), one line per row."""
    for column in table.columns:
        column.overflow = "fold"
    terminal = out is None and sys.stdout.isatty()
    width = None
    if not terminal:
        measuring = Console(file=io.StringIO(), width=WIDEST_TABLE, markup=False, highlight=False, emoji=False)
        width = max(1, Measurement.get(measuring, measuring.options, table).maximum)
    Console(file=out, soft_wrap=False, width=width, markup=False, highlight=False, emoji=False).print(table)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None) -> None:
    """A plain table, to ``out`` or stdout."""
    table = Table(*header, box=None, header_style="bold", pad_edge=False)
    for row in rows:
        table.add_row(*(printable_line(str(cell)) for cell in row))
    show_table(table, out)
