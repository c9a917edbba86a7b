"""The table a structured question is asked of: a whitelisted name, typed columns and validated rows."""

from __future__ import annotations

import datetime
import hashlib
import itertools
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from rag_integration.core.deadline import Budget
from rag_integration.core.documents.visibility import READERS, Visibility, label_of
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.structured.sql.columns import (
    ColumnSpec,
    infer_type,
    read_columns,
    read_identifier,
)

MAX_COLUMNS = 2000
"""SQLite's default column limit per table (``SQLITE_MAX_COLUMN``)."""
CHECK_EVERY = 4_096
"""Rows read, checked or loaded between two looks at the time budget (a look costs far less than 4k rows)."""
LOADING = "while reading and loading the table"
LOADING_EXPECTED = "reading, checking and loading the table's rows to finish in time"


@dataclass(frozen=True)
class TableSpec:
    """One validated table; ``rows`` hold every column (None where a row left it out), dates as ISO text."""

    name: str
    columns: tuple[ColumnSpec, ...]
    rows: tuple[tuple[Any, ...], ...]
    date_objects: frozenset[str] = frozenset()

    @classmethod
    def read(cls, reader: OptionReader, budget: Budget | None = None) -> TableSpec:
        """The table of a request; with a ``budget`` (``sql_time_limit`` and ``deadline_ms``, whichever ends first),
        reading and checking a large table stops with ``DeadlineExceededError`` once the time is up."""
        name = read_identifier("table_name", reader.string("table_name"))
        if not reader.has("columns"):
            raise MissingOptionError("columns", "a list of column names or {'name', 'type'} dicts", owner=reader.owner)
        if not reader.has("rows"):
            raise MissingOptionError("rows", "a list of dicts (one per row)", owner=reader.owner)
        declared = read_columns(reader.raw("columns"))
        if len(declared) > MAX_COLUMNS:
            raise InvalidOptionError(
                "columns", reader.raw("columns"), f"at most {MAX_COLUMNS} columns (SQLite's limit), not {len(declared)}"
            )
        names = [column.name for column, _ in declared]
        if any(name.lower() == READERS for name in names):
            expected = f"another column name: '{READERS}' is the key naming who may read a row"
            raise InvalidOptionError("columns", reader.raw("columns"), expected)
        rows = _readable(reader, _read_rows(reader.raw("rows"), [*names, READERS], budget))
        columns = []
        for column, given in declared:
            check_budget(budget)
            columns.append(
                ColumnSpec(column.name, given or infer_type(column.name, [row.get(column.name) for row in rows]))
            )
        stored, date_objects = _store(tuple(columns), rows, budget)
        return cls(name, tuple(columns), stored, date_objects)

    def column(self, name: str) -> ColumnSpec | None:
        """SQLite identifiers are case-insensitive, so lookups are too."""
        return next((column for column in self.columns if column.name.lower() == name.lower()), None)

    def free_label(self, *candidates: str) -> str:
        """A result label naming no column, so it can neither shadow one in GROUP BY/ORDER BY nor repeat a key.

        The first candidate no column is called (case-insensitively), else the first with the smallest free
        ``_<n>`` suffix: ``avg_salary`` for "average salary", ``avg_salary_1`` if the table has an ``avg_salary``.
        """
        suffixed = (f"{candidates[0]}_{number}" for number in itertools.count(1))
        return next(label for label in itertools.chain(candidates, suffixed) if self.column(label) is None)

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


def check_budget(budget: Budget | None, position: int = 0) -> None:
    """Look at the loading budget every ``CHECK_EVERY`` rows (``position``)."""
    if budget is not None and position % CHECK_EVERY == 0:
        budget.check(LOADING, LOADING_EXPECTED)


class TableRows(Sequence[Any]):
    """A request's ``rows`` list, frozen so mloda's planning stays cheap for a large table.

    mloda copies and writes out a request's options several times while planning it; for a list of a million row
    dicts that took longer than answering. ``TableRows`` copies to itself and writes out as one line carrying a
    content fingerprint (so two requests with different rows are never taken for one). It does not validate:
    ``TableSpec.read`` does, under the request's time limits, exactly as for a list.
    """

    __slots__ = ("_fingerprint", "_rows")

    def __init__(self, rows: Sequence[Any]) -> None:
        self._rows = tuple(rows)
        self._fingerprint = hashlib.sha256(pickle.dumps(self._rows, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()

    @classmethod
    def of(cls, rows: Any) -> Any:
        """``rows`` as ``TableRows`` when it is a non-empty list that pickles; anything else unchanged (and refused,
        typed, when the request is answered)."""
        if not isinstance(rows, list) or not rows:
            return rows
        try:
            return cls(rows)
        except Exception:  # a value that does not pickle: keep the list, mloda copies it as before
            return rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self._rows[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"TableRows({len(self._rows)} rows, sha256 {self._fingerprint})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableRows) and other._fingerprint == self._fingerprint and other._rows == self._rows

    def __hash__(self) -> int:
        return hash(self._fingerprint)

    def __copy__(self) -> TableRows:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TableRows:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (TableRows, (list(self._rows),))


def _readable(reader: OptionReader, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the request's principals may read, without their ``readers``: column types, counts and sums are
    then those of a table holding only them."""
    visible = Visibility.read(reader).visible([label_of(row) for row in rows], "rows")
    kept = rows if visible is None else [rows[position] for position in visible]
    return [{key: value for key, value in row.items() if key != READERS} if READERS in row else row for row in kept]


def _read_rows(value: object, names: list[str], budget: Budget | None = None) -> list[dict[str, Any]]:
    if not isinstance(value, (list, tuple, TableRows)):
        raise InvalidOptionError("rows", value, "a list of dicts (one per row)")
    rows: list[dict[str, Any]] = []
    for position, row in enumerate(value):
        check_budget(budget, position)
        if not isinstance(row, Mapping):
            raise InvalidOptionError(f"rows[{position}]", row, "a dict mapping column names to values")
        for key in row:
            if key not in names:
                raise InvalidOptionError(f"rows[{position}]", key, "only declared columns: " + ", ".join(names))
        rows.append(dict(row))
    return rows


def _store(
    columns: Sequence[ColumnSpec], rows: list[dict[str, Any]], budget: Budget | None = None
) -> tuple[tuple[tuple[Any, ...], ...], frozenset[str]]:
    """Check every value against its column's type and convert dates to ISO text, the form SQLite compares."""
    date_objects: set[str] = set()
    date_strings: set[str] = set()
    stored = []
    for position, row in enumerate(rows):
        check_budget(budget, position)
        values = []
        for column in columns:
            value = row.get(column.name)
            if value is not None:
                value = column.checked(value, f"rows[{position}].{column.name}")
                if column.type == "date":
                    (date_objects if isinstance(value, datetime.date) else date_strings).add(column.name)
                    value = value.isoformat() if isinstance(value, datetime.date) else value
            values.append(value)
        stored.append(tuple(values))
    mixed = sorted(date_objects & date_strings)
    if mixed:
        raise InvalidOptionError(f"rows.{mixed[0]}", "dates and strings", "one kind of date value per column")
    return tuple(stored), frozenset(date_objects)
