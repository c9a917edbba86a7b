"""Hostile questions and hostile cell values through both backends: refused with a typed error, or mapped to one
guarded SELECT in which the hostile text is only ever a bound parameter, and the database never changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from rag_integration.core.errors import InvalidOptionError, SqlSafetyError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.structured import (
    AggregateSql,
    BaseStructuredConnector,
    RuleBasedSql,
    TableSpec,
    guard_sql,
)
from rag_integration.feature_groups.connectors.structured.sql.guard import ALLOWED_NODES
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, HOSTILE_SQL, TABLE, sandbox_snapshot

BACKENDS = [RuleBasedSql, AggregateSql]
HOSTILE_TEXT = [
    *HOSTILE_SQL,
    "Robert'); DROP TABLE employees;--",
    "x' OR '1'='1",
    "' UNION SELECT sql FROM sqlite_master --",
    'name" FROM sqlite_master --',
    "Berlin\u037e DROP TABLE employees",  # Greek question mark looks like ';'
    "Ber\u200blin",
    "ATTACH 'x.db' AS y",
]


def sandbox_for(rows: list[dict[str, Any]]) -> SqliteSandbox:
    spec = TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": rows}))
    return SqliteSandbox(spec, time_limit=2.0, max_rows=100_000)


def assert_single_read_only_select(result: dict[str, Any]) -> None:
    sql = result["sql"]
    statements = [statement for statement in sqlglot.parse(sql, read="sqlite") if statement is not None]
    assert len(statements) == 1 and isinstance(statements[0], exp.Select)
    assert {type(node) for node in statements[0].walk()} <= ALLOWED_NODES
    assert not list(statements[0].find_all(exp.Literal))
    assert guard_sql(sql, TABLE, COLUMNS) == sql
    assert sql.count("?") == len(result["params"])
    column_names = {column if isinstance(column, str) else column["name"] for column in COLUMNS}
    referenced = {node.name for node in statements[0].find_all(exp.Column, exp.Table)}
    assert referenced <= {TABLE} | column_names  # nothing from the question became a table or column name


def ask_or_refuse(
    backend: type[BaseStructuredConnector], sandbox: SqliteSandbox, question: str
) -> dict[str, Any] | None:
    """The backend's answer, or None when it refused with one of the typed errors a question may raise."""
    try:
        return backend.ask(sandbox, question)
    except (InvalidOptionError, SqlSafetyError):
        return None


def quoted(text: str) -> str | None:
    for mark in ('"', "'"):
        if mark not in text and "\n" not in text:
            return f"{mark}{text}{mark}"
    return None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hostile", HOSTILE_TEXT)
def test_hostile_questions_are_refused_or_bound(
    backend: type[BaseStructuredConnector], hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with sandbox_for(EMPLOYEES) as sandbox:
        before = sandbox_snapshot(sandbox)
        questions = [hostile, f"how many employees in {hostile}", f"list employees where city is {hostile}"]
        for question in questions:
            result = ask_or_refuse(backend, sandbox, question)
            if result is not None:
                assert_single_read_only_select(result)
        if (value := quoted(hostile)) is not None:
            result = backend.ask(sandbox, f"list employees where name is {value}")
            assert_single_read_only_select(result)
            assert result["params"] == [hostile] and result["rows"] == []
        assert sandbox_snapshot(sandbox) == before
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_cell_values_stay_data(backend: type[BaseStructuredConnector]) -> None:
    rows = [dict(EMPLOYEES[position % len(EMPLOYEES)], name=text) for position, text in enumerate(HOSTILE_TEXT)]
    with sandbox_for(rows) as sandbox:
        before = sandbox_snapshot(sandbox)
        listing = backend.ask(sandbox, "list name of employees")
        assert [row["name"] for row in listing["rows"]] == HOSTILE_TEXT
        for text in HOSTILE_TEXT:
            if (value := quoted(text)) is None:
                continue
            found = backend.ask(sandbox, f"how many employees where name is {value}")
            assert_single_read_only_select(found)
            same = [other for other in HOSTILE_TEXT if other.casefold() == text.casefold()]
            assert found["rows"] == [{"count": len(same)}]
        assert sandbox_snapshot(sandbox) == before


WORDS = [
    "how",
    "many",
    "list",
    "show",
    "which",
    "top",
    "bottom",
    "average",
    "maximum",
    "total",
    "per",
    "by",
    "in",
    "is",
    "not",
    "and",
    "or",
    ",",
    "over",
    "at",
    "least",
    "below",
    "between",
    "after",
    "before",
    "ordered",
    "descending",
    "employees",
    "name",
    "department",
    "city",
    "salary",
    "start",
    "date",
    "rating",
    "Berlin",
    "sales",
    "where",
    "with",
    "whose",
    "of",
    "the",
    "3",
    "50000",
    "2020-01-01",
    "4.5",
    "-1",
    "'",
    '"',
    ";",
    "--",
    "/*",
    "*",
    "(",
    ")",
    "DROP",
    "TABLE",
    "ATTACH",
    "PRAGMA",
    "sqlite_master",
    "SELECT",
    "UNION",
    "load_extension",
    "?",
    ":x",
    "=",
    ">=",
]
QUESTION_WORDS = st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=12))
CELL_TEXT = st.text(max_size=30)


INTENTS = [
    "how many employees",
    "list employees",
    "show name and salary of employees",
    "which employees",
    "top 3 employees by salary",
    "list bottom 2 employees by rating",
    "average salary",
    "maximum start date",
    "how many employees per city",
]
NUMBERS = st.one_of(st.integers(min_value=-(10**12), max_value=10**12).map(str), st.sampled_from(["4.5", "0.25"]))
DATES = st.dates().map(lambda day: day.isoformat())
TEXTS = st.one_of(st.text(max_size=20).map(lambda text: quoted(text) or '"x"'), st.sampled_from(["Berlin", "sales"]))
FILTERS = {
    "name": (TEXTS, ["is", "is not", "="]),
    "city": (TEXTS, ["is", "is not"]),
    "department": (TEXTS, ["is", "equals"]),
    "salary": (NUMBERS, ["is", "over", "at least", "below", "at most", "between"]),
    "rating": (NUMBERS, ["above", "under", "between", "="]),
    "start date": (DATES, ["after", "before", "since", "between", "is"]),
}
ANY_VALUE = st.one_of(NUMBERS, DATES, TEXTS, st.sampled_from(WORDS))
SUFFIXES = ["", " ordered by salary", " sorted by name descending", " per department", " by city", " top 2 by rating"]


@st.composite
def shaped_questions(draw: st.DrawFn) -> str:
    """Questions in the backends' own grammar: random filters, mostly well-typed, sometimes not."""
    parts = [draw(st.sampled_from(INTENTS))]
    for position in range(draw(st.integers(min_value=0, max_value=4))):
        if position:
            parts.append(draw(st.sampled_from(["and", "or", ","])))
        column = draw(st.sampled_from(sorted(FILTERS)))
        values, operators = FILTERS[column]
        values = draw(st.sampled_from([values, values, values, ANY_VALUE]))
        operator = draw(st.sampled_from(operators))
        if operator == "between":
            parts.append(f"with {column} between {draw(values)} and {draw(values)}")
        else:
            parts.append(f"where {column} {operator} {draw(values)}")
    return " ".join(parts) + draw(st.sampled_from(SUFFIXES))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    backend=st.sampled_from(BACKENDS),
    question=st.one_of(
        shaped_questions(), shaped_questions(), st.lists(QUESTION_WORDS, min_size=1, max_size=14).map(" ".join)
    ),
)
def test_random_shaped_questions_only_ever_read(backend: type[BaseStructuredConnector], question: str) -> None:
    with sandbox_for(EMPLOYEES) as sandbox:
        before = sandbox_snapshot(sandbox)
        result = ask_or_refuse(backend, sandbox, question)
        if result is not None:
            assert_single_read_only_select(result)
        assert sandbox_snapshot(sandbox) == before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    backend=st.sampled_from(BACKENDS),
    words=st.lists(QUESTION_WORDS, min_size=1, max_size=14),
    names=st.lists(CELL_TEXT, min_size=0, max_size=6),
    salary=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_random_questions_and_values_only_ever_read(
    backend: type[BaseStructuredConnector], words: list[str], names: list[str], salary: int
) -> None:
    rows = [dict(EMPLOYEES[position % len(EMPLOYEES)], name=name, salary=salary) for position, name in enumerate(names)]
    with sandbox_for(EMPLOYEES + rows) as sandbox:
        before = sandbox_snapshot(sandbox)
        result = ask_or_refuse(backend, sandbox, " ".join(words))
        if result is not None:
            assert_single_read_only_select(result)
        assert sandbox_snapshot(sandbox) == before


SQL_WORDS = [
    "SELECT",
    "*",
    "name",
    "salary",
    "FROM",
    "employees",
    "WHERE",
    "=",
    "?",
    ">",
    "AND",
    "OR",
    "NOT",
    "(",
    ")",
    ",",
    "COUNT(*)",
    "AVG(salary)",
    "GROUP BY",
    "ORDER BY",
    "DESC",
    "LIMIT",
    "1",
    "'x'",
    ";",
    "--",
    "/*",
    "*/",
    "UNION",
    "sqlite_master",
    "PRAGMA",
    "ATTACH",
    "WITH",
    "AS",
    "x",
    "DELETE",
    "INSERT",
    "load_extension('y')",
    "main.",
]


@settings(max_examples=400, deadline=None)
@given(words=st.lists(st.sampled_from(SQL_WORDS), min_size=1, max_size=16))
def test_guard_only_ever_returns_one_plain_select(words: list[str]) -> None:
    try:
        sql = guard_sql(" ".join(words), TABLE, COLUMNS)
    except SqlSafetyError:
        return
    assert_single_read_only_select({"sql": sql, "params": [None] * sql.count("?")})


TEMPLATES = [
    "list employees where name is {value}",
    "how many employees where city is {value} or department is {value}",
    "show name of employees whose department is not {value} ordered by salary descending",
    "average salary per city with name is {value}",
]


@settings(max_examples=200, deadline=None)
@given(
    template=st.sampled_from(TEMPLATES),
    value=st.text(min_size=1, max_size=40).filter(lambda text: quoted(text) is not None),
)
def test_any_quoted_value_is_bound_never_inlined(template: str, value: str) -> None:
    with sandbox_for(EMPLOYEES) as sandbox:
        before = sandbox_snapshot(sandbox)
        result = AggregateSql.ask(sandbox, template.format(value=quoted(value)))
        assert_single_read_only_select(result)
        text_params = [param for param in result["params"] if isinstance(param, str)]
        assert text_params and all(param.casefold() == value.casefold() for param in text_params)
        assert sandbox_snapshot(sandbox) == before
