"""An in-memory SQLite database holding one table, locked before any question's SQL touches it.

The guard is the first wall; this is the second, so a guard bug still cannot write, attach a file, load an
extension or run forever: ``query_only``, an authorizer that allows only reading this table's columns and the
guard's functions, SQLite limits (no attached databases, bounded string size) and a progress-handler deadline.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from rag_integration.core.deadline import Budget
from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, SqlSafetyError, short_repr
from rag_integration.feature_groups.connectors.structured.sql.columns import SQLITE_TYPES
from rag_integration.feature_groups.connectors.structured.sql.guard import ALLOWED_FUNCTIONS
from rag_integration.feature_groups.connectors.structured.sql.table import CHECK_EVERY, TableSpec, check_budget

PROGRESS_STEPS = 1_000
MAX_VALUE_BYTES = 1_000_000


class SqliteSandbox:
    """Build the table, load the rows with bound parameters, then lock the connection for reading only; a ``budget``
    (the request's loading budget) is checked between batches of rows, so loading a large table is bounded too."""

    def __init__(self, table: TableSpec, *, time_limit: float, max_rows: int, budget: Budget | None = None) -> None:
        self.table = table
        self.time_limit = time_limit
        self.max_rows = max_rows
        self.connection = sqlite3.connect(":memory:", isolation_level=None)
        self._deadline = 0.0
        self._timed_out = False
        try:
            self._load(budget)
            self._lock(budget)
        except BaseException:
            self.connection.close()
            raise

    def __enter__(self) -> SqliteSandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()

    def run(
        self, sql: str, params: Sequence[Any], *, time_limit: float | None = None
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column labels and rows of one guarded SELECT; more than ``max_rows`` rows is refused, never cut short.
        ``time_limit`` (seconds) stands in for ``sql_time_limit`` when the request's deadline is nearer."""
        limit = self.time_limit if time_limit is None else time_limit
        self._deadline = time.monotonic() + limit
        self._timed_out = False
        try:
            cursor = self.connection.execute(sql, list(params))
            rows = cursor.fetchmany(self.max_rows + 1)
        except sqlite3.OperationalError as error:
            if self._timed_out:
                raise DeadlineExceededError(
                    f"option 'sql_time_limit' ({limit} s) was exceeded by {short_repr(sql)}"
                ) from error
            raise SqlSafetyError(f"SQLite refused {short_repr(sql)}: {error}") from error
        except (sqlite3.DatabaseError, sqlite3.ProgrammingError) as error:
            raise SqlSafetyError(f"SQLite refused {short_repr(sql)}: {error}") from error
        if len(rows) > self.max_rows:
            raise SqlSafetyError(
                f"option 'max_result_rows' ({self.max_rows}) was exceeded by {short_repr(sql)}: "
                "narrow the question or raise max_result_rows"
            )
        return [description[0] for description in cursor.description], rows

    def _load(self, budget: Budget | None) -> None:
        table = self.table
        columns = ", ".join(f'"{column.name}" {SQLITE_TYPES[column.type]}' for column in table.columns)
        strict = " STRICT" if sqlite3.sqlite_version_info >= (3, 37, 0) else ""
        names = ", ".join(f'"{column.name}"' for column in table.columns)
        marks = ", ".join("?" for _ in table.columns)
        try:
            self.connection.execute(f'CREATE TABLE "{table.name}" ({columns}){strict}')
            for start in range(0, len(table.rows), CHECK_EVERY):
                check_budget(budget)
                batch = table.rows[start : start + CHECK_EVERY]
                self.connection.executemany(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', batch)
        except sqlite3.Error as error:  # a limit of this SQLite build (columns, bound variables, value size)
            raise InvalidOptionError("rows", table.name, f"a table this SQLite can hold ({error})") from error

    def _lock(self, budget: Budget | None) -> None:
        connection = self.connection
        connection.execute("PRAGMA query_only = ON")
        if hasattr(connection, "enable_load_extension"):
            connection.enable_load_extension(False)
        longest = 0
        for position, row in enumerate(self.table.rows):
            check_budget(budget, position)
            longest = max(longest, max((len(str(value).encode()) for value in row), default=0))
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(MAX_VALUE_BYTES, 2 * longest))
        connection.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 1)
        connection.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 0)
        connection.set_authorizer(self.authorize)
        connection.set_progress_handler(self._past_deadline, PROGRESS_STEPS)

    def authorize(self, action: int, first: str | None, second: str | None, database: str | None, _: str | None) -> int:
        """Allow a SELECT, reading this table's columns, and calling the guard's functions; deny everything else."""
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ and database in ("main", None) and self._readable(first, second):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (second or "").lower() in ALLOWED_FUNCTIONS.values():
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def _readable(self, table: str | None, column: str | None) -> bool:
        if table is None or table.lower() != self.table.name.lower() or column is None:
            return False
        return column == "" or self.table.column(column) is not None

    def _past_deadline(self) -> int:
        """SQLite calls this every few VM steps; a non-zero answer interrupts the statement."""
        self._timed_out = time.monotonic() > self._deadline
        return int(self._timed_out)
