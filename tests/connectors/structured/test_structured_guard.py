"""The SQL guard and the SQLite sandbox against hostile SQL: refused, nothing runs, nothing changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, SqlSafetyError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.structured import RuleBasedSql, TableSpec, guard_sql
from rag_integration.feature_groups.connectors.structured.sql import guard
from rag_integration.feature_groups.connectors.structured.sql.guard import MAX_NESTING
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, HOSTILE_SQL, TABLE, sandbox_snapshot

DANGEROUS_AT_SQLITE_LEVEL = [
    sql
    for sql in HOSTILE_SQL
    if any(
        word in sql.upper()
        for word in (
            "DROP",
            "DELETE",
            "INSERT",
            "UPDATE",
            "REPLACE",
            "CREATE",
            "ATTACH",
            "DETACH",
            "PRAGMA",
            "VACUUM",
            "LOAD_EXTENSION",
            "SQLITE_",
            "RANDOMBLOB",
            "ZEROBLOB",
            "WRITEFILE",
            "GENERATE_SERIES",
            "BEGIN",
            "RECURSIVE",
        )
    )
]


def table() -> TableSpec:
    return TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES}))


def test_there_are_at_least_thirty_hostile_inputs() -> None:
    assert len(set(HOSTILE_SQL)) >= 30 and len(DANGEROUS_AT_SQLITE_LEVEL) >= 30


@pytest.mark.parametrize("sql", HOSTILE_SQL)
def test_guard_refuses_hostile_sql(sql: str) -> None:
    with pytest.raises(SqlSafetyError, match="guard refused"):
        guard_sql(sql, TABLE, COLUMNS)


@pytest.mark.parametrize("sql", DANGEROUS_AT_SQLITE_LEVEL)
def test_sandbox_refuses_dangerous_sql_even_without_the_guard(
    sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SqliteSandbox(table(), time_limit=2.0, max_rows=1000) as sandbox:
        before = sandbox_snapshot(sandbox)
        with pytest.raises((SqlSafetyError, DeadlineExceededError)):
            sandbox.run(sql, [])
        assert sandbox_snapshot(sandbox) == before
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sql", HOSTILE_SQL)
def test_guarded_path_changes_nothing_and_creates_no_file(
    sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SqliteSandbox(table(), time_limit=2.0, max_rows=1000) as sandbox:
        before = sandbox_snapshot(sandbox)
        with pytest.raises(SqlSafetyError):
            sandbox.run(guard_sql(sql, TABLE, COLUMNS), [])
        assert sandbox_snapshot(sandbox) == before
    assert list(tmp_path.iterdir()) == []


def test_attach_to_an_absolute_path_creates_no_file(tmp_path: Path) -> None:
    target = tmp_path / "outside.db"
    for sql in (f"ATTACH DATABASE '{target}' AS x", f"VACUUM INTO '{target}'"):
        with pytest.raises(SqlSafetyError):
            guard_sql(sql, TABLE, COLUMNS)
        with SqliteSandbox(table(), time_limit=2.0, max_rows=10) as sandbox, pytest.raises(SqlSafetyError):
            sandbox.run(sql, [])
    assert not target.exists()


@pytest.mark.parametrize(
    ("sql", "regenerated"),
    [
        ("select name from employees where salary > ?", 'SELECT "name" FROM "employees" WHERE "salary" > ?'),
        ("SELECT COUNT(*) FROM EMPLOYEES;", 'SELECT COUNT(*) FROM "EMPLOYEES"'),
        (
            "SELECT department, avg(salary) AS mean FROM employees GROUP BY department ORDER BY avg(salary) DESC LIMIT 2",
            'SELECT "department", AVG("salary") AS "mean" FROM "employees" GROUP BY "department" '
            'ORDER BY AVG("salary") DESC LIMIT 2',
        ),
        (
            "SELECT lower(name), length(city) FROM employees WHERE city IN (?, ?) AND NOT salary BETWEEN ? AND ?",
            'SELECT LOWER("name"), LENGTH("city") FROM "employees" WHERE "city" IN (?, ?) AND NOT "salary" BETWEEN ? AND ?',
        ),
    ],
)
def test_guard_accepts_plain_selects_and_returns_regenerated_sql(sql: str, regenerated: str) -> None:
    assert guard_sql(sql, TABLE, COLUMNS) == regenerated
    assert guard_sql(regenerated, TABLE, COLUMNS) == regenerated


@pytest.mark.parametrize(
    ("table_name", "columns", "option"),
    [
        ("sqlite_master", COLUMNS, "table_name"),
        ("employees; --", COLUMNS, "table_name"),
        (TABLE, ["name", 'x"; DROP'], "columns[1]"),
        (TABLE, "name", "columns"),
    ],
)
def test_guard_validates_its_whitelist(table_name: str, columns: Any, option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option.replace("[", r"\[")):
        guard_sql("SELECT * FROM employees", table_name, columns)


def test_guard_refuses_non_strings() -> None:
    with pytest.raises(SqlSafetyError):
        guard_sql(b"SELECT * FROM employees", TABLE, COLUMNS)  # type: ignore[arg-type]


def test_sandbox_is_locked_read_only() -> None:
    with SqliteSandbox(table(), time_limit=2.0, max_rows=10) as sandbox:
        assert sandbox.connection.execute("SELECT 1").fetchall() == [(1,)]
        assert sandbox.connection.getlimit(sqlite3.SQLITE_LIMIT_ATTACHED) == 0
        with pytest.raises(sqlite3.DatabaseError):
            sandbox.connection.execute("SELECT typeof(name) FROM employees")
        assert sandbox_snapshot(sandbox)[3] == [(1,)]


def test_wrong_parameter_count_is_refused() -> None:
    with SqliteSandbox(table(), time_limit=2.0, max_rows=10) as sandbox, pytest.raises(SqlSafetyError):
        sandbox.run(guard_sql("SELECT * FROM employees WHERE name = ?", TABLE, COLUMNS), [])


def big_rows(count: int) -> list[dict[str, Any]]:
    return [dict(EMPLOYEES[position % len(EMPLOYEES)], name=f"person {position}") for position in range(count)]


def test_time_limit_stops_a_long_query() -> None:
    spec = TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": big_rows(5000)}))
    sql = guard_sql("SELECT * FROM employees ORDER BY lower(name), city, salary", TABLE, COLUMNS)
    with (
        SqliteSandbox(spec, time_limit=1e-9, max_rows=10_000) as sandbox,
        pytest.raises(DeadlineExceededError, match="sql_time_limit"),
    ):
        sandbox.run(sql, [])


def test_time_limit_option_reaches_the_sandbox() -> None:
    request = {
        "structured_backend": "rule_based",
        "question": "list employees ordered by name",
        "table_name": TABLE,
        "columns": COLUMNS,
        "rows": big_rows(5000),
        "sql_time_limit": 1e-9,
    }
    with pytest.raises(DeadlineExceededError):
        run_feature("structured_rows", request, {RuleBasedSql})


def test_deep_nesting_is_refused_before_parsing() -> None:
    """The reviewer's repro: 50 nested parentheses once escaped as a bare RecursionError."""
    with pytest.raises(SqlSafetyError, match="nested deeper than"):
        guard_sql("SELECT * FROM t WHERE " + "(" * 50 + "name = ?" + ")" * 50, "t", ["name"])
    nested = "SELECT * FROM t WHERE " + "(" * MAX_NESTING + "name = ?" + ")" * MAX_NESTING
    assert guard_sql(nested, "t", ["name"]).count("(") == MAX_NESTING


def test_parser_recursion_is_a_safety_error_even_past_the_token_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "MAX_NESTING", 10**6)
    for sql in ("SELECT * FROM t WHERE " + "(" * 2000 + "name = ?" + ")" * 2000, "SELECT " + "abs(" * 2000 + "name"):
        with pytest.raises(SqlSafetyError, match="nested too deeply"):
            guard_sql(sql, "t", ["name"])


def test_aliases_may_be_longer_than_names_but_stay_plain_identifiers() -> None:
    assert guard_sql(f"SELECT avg(salary) AS {'a' * 128} FROM employees", TABLE, COLUMNS).endswith('FROM "employees"')
    for alias in ("a" * 129, '"x y"', '"n\u0430me"'):
        with pytest.raises(SqlSafetyError, match="identifier"):
            guard_sql(f"SELECT avg(salary) AS {alias} FROM employees", TABLE, COLUMNS)
