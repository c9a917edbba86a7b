"""Columns of the structured table: whitelisted names, their four types, and the values each type accepts.

Names must be plain ASCII identifiers, so no quoting trick or look-alike letter can ever reach the SQL;
values are checked against their column's type and never coerced.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.unicode_text import require_valid_text

COLUMN_TYPES = ("date", "integer", "real", "text")
SQLITE_TYPES = {"date": "TEXT", "integer": "INTEGER", "real": "REAL", "text": "TEXT"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""A result label (SQL alias): built from a column name and a prefix such as ``avg_``, so it may be longer."""
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
INT64 = (-(2**63), 2**63 - 1)
IDENTIFIER_TEXT = "an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters, not starting with 'sqlite_')"
EXPECTED_VALUES = {
    "integer": "an int (not a bool) within 64 bits",
    "real": "a finite int or float (not a bool)",
    "text": "a str (valid UTF-8)",
    "date": "a datetime.date or an ISO date string 'YYYY-MM-DD'",
}


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    type: str

    @property
    def words(self) -> tuple[str, ...]:
        """How a question may refer to the column: ``start_date`` is also "start date"."""
        return tuple(word for word in self.name.lower().split("_") if word)

    @property
    def numeric(self) -> bool:
        return self.type in ("integer", "real")

    def checked(self, value: Any, option: str) -> Any:
        """``value`` as stored in this column (a real column's ints become floats), or ``InvalidOptionError``."""
        kind = kind_of(value)
        if self.type == "integer" and kind == "integer" and INT64[0] <= value <= INT64[1]:
            return value
        if self.type == "real" and kind in ("integer", "real") and math.isfinite(value):
            return float(value)
        if self.type == "text" and kind == "text":
            return require_valid_text(value, option)  # the one rule for text that is not valid Unicode
        if self.type == "date" and (kind == "date" or (kind == "text" and is_iso_date(value))):
            return value
        raise InvalidOptionError(
            option, value, f"{EXPECTED_VALUES[self.type]} for {self.type} column '{self.name}', or None"
        )


def read_identifier(option: str, value: object) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value) or value.lower().startswith("sqlite_"):
        raise InvalidOptionError(option, value, IDENTIFIER_TEXT)
    return value


def read_columns(value: object) -> list[tuple[ColumnSpec, str | None]]:
    """Column names or ``{"name", "type"}`` dicts; the type is None where it must be inferred from the rows."""
    expected = "a non-empty list of column names or {'name': ..., 'type': one of " + ", ".join(COLUMN_TYPES) + "}"
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidOptionError("columns", value, expected)
    declared: list[tuple[ColumnSpec, str | None]] = []
    for position, entry in enumerate(value):
        option = f"columns[{position}]"
        if isinstance(entry, str):
            name, kind = read_identifier(option, entry), None
        elif isinstance(entry, Mapping) and set(entry) in ({"name"}, {"name", "type"}):
            name = read_identifier(f"{option}.name", entry["name"])
            kind = entry.get("type")
            if kind is not None and kind not in COLUMN_TYPES:
                raise InvalidOptionError(f"{option}.type", kind, "one of " + ", ".join(COLUMN_TYPES))
        else:
            raise InvalidOptionError(option, entry, expected)
        if any(name.lower() == other.name.lower() for other, _ in declared):
            raise InvalidOptionError(option, name, "column names that are unique (case-insensitively)")
        declared.append((ColumnSpec(name, kind or "text"), kind))
    return declared


def infer_type(name: str, values: list[Any]) -> str:
    """The one column type all non-None ``values`` share (ints with floats make ``real``); none at all is text."""
    kinds = {kind_of(value) for value in values if value is not None}
    if kinds <= {"integer"}:
        return "integer" if kinds else "text"
    if kinds <= {"integer", "real"}:
        return "real"
    if len(kinds) == 1 and kinds <= set(COLUMN_TYPES):
        return kinds.pop()
    raise InvalidOptionError(
        f"rows.{name}",
        [value for value in values if value is not None],
        "values of one type per column: str, int, float or datetime.date (or None)",
    )


def kind_of(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return "date"
    return "text" if isinstance(value, str) else type(value).__name__


def is_utf8(text: str) -> bool:
    """SQLite stores UTF-8; a lone surrogate cannot be stored or bound."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_iso_date(text: str) -> bool:
    """A real calendar date written exactly ``YYYY-MM-DD`` (the form that sorts correctly as text)."""
    if not ISO_DATE.fullmatch(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True
