"""Printing for people: one rich console setup and plain tables, shared by the CLI and the demos."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.table import Table


def console() -> Console:
    """A console that wraps nothing and, when piped, lays out for 160 columns instead of 80."""
    return Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None) -> None:
    """A plain table, to ``out`` or the console."""
    table = Table(*header, box=None, header_style="bold", pad_edge=False)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    (Console(file=out, soft_wrap=False, width=160) if out is not None else console()).print(table)
