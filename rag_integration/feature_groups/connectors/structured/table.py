"""The table a structured question is asked of: a whitelisted name, typed columns and validated rows.

Names must be plain ASCII identifiers, so no quoting trick or look-alike letter can ever reach the SQL;
values are checked against their column's type and never coerced.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader

COLUMN_TYPES = ("date", "integer", "real", "text")
SQLITE_TYPES = {"date": "TEXT", "integer": "INTEGER", "real": "REAL", "text": "TEXT"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
INT64 = (-(2**63), 2**63 - 1)
IDENTIFIER_TEXT = "an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters, not starting with 'sqlite_')"


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


@dataclass(frozen=True)
class TableSpec:
    """One validated table; ``rows`` hold every column (None where a row left it out), dates as ISO text."""

    name: str
    columns: tuple[ColumnSpec, ...]
    rows: tuple[tuple[Any, ...], ...]
    date_objects: frozenset[str] = frozenset()

    @classmethod
    def read(cls, reader: OptionReader) -> TableSpec:
        name = read_identifier("table_name", reader.string("table_name"))
        if not reader.has("columns"):
            raise MissingOptionError("columns", "a list of column names or {'name', 'type'} dicts", owner=reader.owner)
        if not reader.has("rows"):
            raise MissingOptionError("rows", "a list of dicts (one per row)", owner=reader.owner)
        declared = read_columns(reader.raw("columns"))
        rows = _read_rows(reader.raw("rows"), [column.name for column, _ in declared])
        columns = tuple(ColumnSpec(column.name, given or _infer_type(column.name, rows)) for column, given in declared)
        stored, date_objects = _store(columns, rows)
        return cls(name, columns, stored, date_objects)

    def column(self, name: str) -> ColumnSpec | None:
        """SQLite identifiers are case-insensitive, so lookups are too."""
        return next((column for column in self.columns if column.name.lower() == name.lower()), None)

    def text_values(self, column: ColumnSpec) -> list[str]:
        """The distinct stored strings of a text column, in first-seen order."""
        position = self.columns.index(column)
        seen = dict.fromkeys(row[position] for row in self.rows if isinstance(row[position], str))
        return list(seen)

    def restore(self, source: str | None, value: Any) -> Any:
        """Give a date column's value back as the ``datetime.date`` it came in as."""
        if source in self.date_objects and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        return value


def read_identifier(option: str, value: Any) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value) or value.lower().startswith("sqlite_"):
        raise InvalidOptionError(option, value, IDENTIFIER_TEXT)
    return value


def read_columns(value: Any) -> list[tuple[ColumnSpec, str | None]]:
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


def _read_rows(value: Any, names: list[str]) -> list[dict[str, Any]]:
    if not isinstance(value, (list, tuple)):
        raise InvalidOptionError("rows", value, "a list of dicts (one per row)")
    rows: list[dict[str, Any]] = []
    for position, row in enumerate(value):
        if not isinstance(row, Mapping):
            raise InvalidOptionError(f"rows[{position}]", row, "a dict mapping column names to values")
        for key in row:
            if key not in names:
                raise InvalidOptionError(f"rows[{position}]", key, "only declared columns: " + ", ".join(names))
        rows.append(dict(row))
    return rows


def _infer_type(name: str, rows: list[dict[str, Any]]) -> str:
    kinds = {_kind_of(row[name]) for row in rows if row.get(name) is not None}
    if kinds <= {"integer"}:
        return "integer" if kinds else "text"
    if kinds <= {"integer", "real"}:
        return "real"
    if len(kinds) == 1 and kinds <= set(COLUMN_TYPES):
        return kinds.pop()
    values = [row[name] for row in rows if row.get(name) is not None]
    raise InvalidOptionError(
        f"rows.{name}", values, "values of one type per column: str, int, float or datetime.date (or None)"
    )


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return "date"
    return "text" if isinstance(value, str) else type(value).__name__


def _store(
    columns: Sequence[ColumnSpec], rows: list[dict[str, Any]]
) -> tuple[tuple[tuple[Any, ...], ...], frozenset[str]]:
    """Check every value against its column's type and convert dates to ISO text, the form SQLite compares."""
    date_objects: set[str] = set()
    date_strings: set[str] = set()
    stored = []
    for position, row in enumerate(rows):
        values = []
        for column in columns:
            value = row.get(column.name)
            if value is not None:
                value = _checked(column, value, f"rows[{position}].{column.name}")
                if column.type == "date":
                    (date_objects if isinstance(value, datetime.date) else date_strings).add(column.name)
                    value = value.isoformat() if isinstance(value, datetime.date) else value
            values.append(value)
        stored.append(tuple(values))
    mixed = sorted(date_objects & date_strings)
    if mixed:
        raise InvalidOptionError(f"rows.{mixed[0]}", "dates and strings", "one kind of date value per column")
    return tuple(stored), frozenset(date_objects)


def _checked(column: ColumnSpec, value: Any, option: str) -> Any:
    kind = _kind_of(value)
    if column.type == "integer" and kind == "integer" and INT64[0] <= value <= INT64[1]:
        return value
    if column.type == "real" and kind in ("integer", "real") and math.isfinite(value):
        return float(value)
    if column.type == "text" and kind == "text" and is_utf8(value):
        return value
    if column.type == "date" and kind == "date":
        return value
    if column.type == "date" and kind == "text" and is_iso_date(value):
        return value
    expected = {
        "integer": "an int (not a bool) within 64 bits",
        "real": "a finite int or float (not a bool)",
        "text": "a str (valid UTF-8)",
        "date": "a datetime.date or an ISO date string 'YYYY-MM-DD'",
    }[column.type]
    raise InvalidOptionError(option, value, f"{expected} for {column.type} column '{column.name}', or None")


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
