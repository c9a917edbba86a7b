"""Properties of every question the parser's constructs can form: each SQL that runs (the stages of a median or a
superlative included) is what ``guard_sql`` returns for it, and every value from the question is bound, never
written into the SQL; a refusal is always ``InvalidOptionError`` on ``question``; planning is held to its deadline;
a refusal points to the backend that would answer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from rag_integration.core import deadline as deadline_module
from rag_integration.core.deadline import NO_DEADLINE, Budget, Deadline, deadline_scope
from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.structured import (
    AggregateSql,
    BaseStructuredConnector,
    RuleBasedSql,
    TableSpec,
    guard_sql,
)
from rag_integration.feature_groups.connectors.structured.question.cursor import NotUnderstood, Question
from rag_integration.feature_groups.connectors.structured.question.lexicon import Lexicon
from rag_integration.feature_groups.connectors.structured.question.parser import Parser
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE

BACKENDS = [RuleBasedSql, AggregateSql]


class RecordingSandbox(SqliteSandbox):
    """The sandbox, remembering every statement it ran and its parameters."""

    def __init__(self, table: TableSpec) -> None:
        super().__init__(table, time_limit=5.0, max_rows=10_000)
        self.ran: list[tuple[str, list[Any]]] = []

    def run(
        self, sql: str, params: Sequence[Any], *, time_limit: float | None = None
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        self.ran.append((sql, list(params)))
        return super().run(sql, params, time_limit=time_limit)


def employees() -> TableSpec:
    return TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES}))


def quote(text: str) -> str:
    return '"' + text.replace('"', "") + '"'


NUMBER = st.one_of(
    st.integers(min_value=-(10**9), max_value=10**9).map(str),
    st.integers(min_value=1, max_value=999).map(lambda n: f"{n}k"),
    st.integers(min_value=1, max_value=999_999).map(lambda n: f"{n:,}"),
    st.sampled_from(["1.5m", "4.5", "$50,000", "0.25"]),
)
YEAR = st.integers(min_value=1990, max_value=2030).map(str)
MONTH = st.sampled_from(["January", "March", "jun", "December"])
DATE = st.one_of(st.dates().map(lambda day: day.isoformat()), YEAR, st.builds(lambda m, y: f"{m} {y}", MONTH, YEAR))
STORED = st.sampled_from(["Berlin", "Munich", "Hamburg", "sales", "Engineering", "Ada", "marketing"])
TEXT = st.one_of(STORED, st.text(min_size=1, max_size=12).filter(lambda text: text.strip('"')).map(quote))
NUMBER_COLUMN = st.sampled_from(["salary", "rating"])
TEXT_COLUMN = st.sampled_from(["name", "city", "department"])
ANY_COLUMN = st.sampled_from(["name", "city", "department", "salary", "start date", "rating"])

FILTER = st.one_of(
    st.builds(lambda c, o, n: f"with {c} {o} {n}", NUMBER_COLUMN, st.sampled_from(["over", "at most", "is"]), NUMBER),
    st.builds(lambda c, a, b: f"with {c} between {a} and {b}", NUMBER_COLUMN, NUMBER, NUMBER),
    st.builds(lambda o, d: f"hired {o} {d}", st.sampled_from(["after", "before", "in", "since"]), DATE),
    st.builds(lambda o, d: f"with start date {o} {d}", st.sampled_from(["after", "on or before", "in"]), DATE),
    st.builds(lambda v: f"in {v}", STORED),
    st.builds(lambda a, b: f"in {a} or {b}", STORED, STORED),
    st.builds(lambda a, b, c: f"in {a}, {b} and {c}", STORED, STORED, STORED),
    st.builds(lambda v: f"not in {v}", STORED),
    st.builds(lambda c, v: f"whose {c} is {v}", TEXT_COLUMN, TEXT),
    st.builds(lambda c, v: f"whose {c} is not {v}", TEXT_COLUMN, TEXT),
    st.builds(lambda c, m, v: f"whose {c} {m} {v}", TEXT_COLUMN, st.sampled_from(["starts with", "contains"]), TEXT),
    st.builds(lambda c, n: f"{c} is {n}", ANY_COLUMN, st.sampled_from(["null", "not null"])),
    st.builds(lambda c: f"without a {c}", ANY_COLUMN),
    st.builds(lambda n: f"earning more than {n}", NUMBER),
)
INTENT = st.sampled_from(
    [
        "how many employees are there",
        "list employees",
        "employees",
        "list name and salary of employees",
        "average salary of employees",
        "median salary of employees",
        "who earns the most",
        "the oldest employee",
        "what is the salary of Ada",
        "which cities",
        "how many cities",
        "top 2 employees by salary",
        "maximum rating",
    ]
)
SUFFIX = st.sampled_from(["", " per city", " in each department", " ordered by salary descending", "?"])


@st.composite
def questions(draw: st.DrawFn) -> str:
    parts = [draw(INTENT)]
    for position in range(draw(st.integers(min_value=0, max_value=3))):
        if position:
            parts.append(draw(st.sampled_from(["and", "or", ""])))
        parts.append(draw(FILTER))
    return " ".join(part for part in parts if part) + draw(SUFFIX)


def question_values(question: str) -> list[str]:
    """The quoted texts of a question: each must reach the SQL only as (part of) a parameter."""
    pieces = question.split('"')
    return [piece for piece in pieces[1::2] if piece]


def check_ran(sandbox: RecordingSandbox, question: str) -> None:
    assert sandbox.ran
    for sql, params in sandbox.ran:
        assert guard_sql(sql, TABLE, COLUMNS) == sql
        statement = sqlglot.parse_one(sql, read="sqlite")
        assert not list(statement.find_all(exp.Literal)), sql
        assert sql.count("?") == len(params), (sql, params)
    final_params = sandbox.ran[-1][1]
    texts = [param for param in final_params if isinstance(param, str)]
    for value in question_values(question):
        found = [form.casefold() for text in texts for form in (text, re.sub(r"\\(.)", r"\1", text))]
        assert any(value.casefold() in form for form in found), (question, final_params)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(backend=st.sampled_from(BACKENDS), question=questions())
def test_every_sql_is_guarded_and_binds_every_value(backend: type[BaseStructuredConnector], question: str) -> None:
    with RecordingSandbox(employees()) as sandbox:
        try:
            backend.ask(sandbox, question)
        except InvalidOptionError as error:
            assert str(error).startswith("option 'question'")
            assert not sandbox.ran
            return
        check_ran(sandbox, question)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.text(alphabet="%_\\ab", min_size=1, max_size=8))
def test_like_patterns_escape_wildcards(value: str) -> None:
    """``%``, ``_`` and the escape character in a quoted value match only themselves."""
    rows = [dict(EMPLOYEES[0], name=name) for name in (value, "a" + value, value + "b", "zzz")]
    table = TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": rows}))
    with RecordingSandbox(table) as sandbox:
        result = AggregateSql.ask(sandbox, f'list name of employees whose name starts with "{value}"')
    check_ran(sandbox, f'"{value}"')
    expected = [
        name for name in (value, "a" + value, value + "b", "zzz") if name.casefold().startswith(value.casefold())
    ]
    assert [row["name"] for row in result["rows"]] == expected


def test_planning_is_held_to_the_deadline() -> None:
    """Planning counts against ``sql_time_limit``: a question whose time is already spent is not planned."""
    spent = Budget(1.0, deadline_module._clock() - 1, "sql_time_limit", NO_DEADLINE)
    question = Question("list employees in Berlin and salary over 5", Lexicon.of(employees()), spent)
    with pytest.raises(DeadlineExceededError, match="sql_time_limit"):
        Parser(question, AggregateSql.CONSTRUCTS).parse()
    with pytest.raises(DeadlineExceededError, match="sql_time_limit"):
        Lexicon.of(employees(), spent)


def test_planning_is_held_to_deadline_ms_when_it_ends_first() -> None:
    """A spent ``deadline_ms`` stops planning (not only the SQL), however long ``sql_time_limit`` is."""
    spent = Deadline(limit_ms=50, started=deadline_module._clock() - 1)
    with (
        RecordingSandbox(employees()) as sandbox,
        deadline_scope(spent),
        pytest.raises(DeadlineExceededError, match=r"deadline_ms.*planning"),
    ):
        AggregateSql.ask(sandbox, "list employees in Berlin and salary over 5")
    assert sandbox.ran == []
    budget = NO_DEADLINE.budget(5.0, "sql_time_limit")
    assert (budget.option, budget.seconds) == ("sql_time_limit", 5.0)


@pytest.mark.parametrize(
    "question",
    ["average salary per department", "how many employees per city", "who earns the most", "median salary",
     "how many cities", "the oldest employee"],
)  # fmt: skip
def test_rule_based_points_to_aggregate(question: str) -> None:
    with RecordingSandbox(employees()) as sandbox:
        with pytest.raises(InvalidOptionError, match="the 'aggregate' backend answers it") as caught:
            RuleBasedSql.ask(sandbox, question)
        assert str(caught.value).endswith(" | ".join(RuleBasedSql.UNDERSTANDS))
        assert AggregateSql.ask(sandbox, question)["rows"]


@pytest.mark.parametrize("question", ["what is the weather", "list employees in Paris", "average name"])
def test_no_pointer_when_no_backend_answers(question: str) -> None:
    with RecordingSandbox(employees()) as sandbox:
        for backend in BACKENDS:
            with pytest.raises(InvalidOptionError) as caught:
                backend.ask(sandbox, question)
            assert "backend answers it" not in str(caught.value)


def test_not_understood_never_escapes() -> None:
    with RecordingSandbox(employees()) as sandbox, pytest.raises(InvalidOptionError):
        RuleBasedSql.ask(sandbox, "list employees; drop table employees")
    assert issubclass(NotUnderstood, Exception) and not issubclass(NotUnderstood, InvalidOptionError)


@pytest.mark.parametrize(
    "question",
    [
        "list employees where salary is " + "not " * 490 + "over 5",
        "employees " + "in Berlin or " * 150 + "in Munich",
        "list employees where salary>1" + " or salary>2" * 164,
    ],
)
def test_long_runs_plan_without_recursion(question: str) -> None:
    """Runs of negations or values are read in loops: a 2,000-character question cannot exhaust the stack."""
    with RecordingSandbox(employees()) as sandbox:
        result = AggregateSql.ask(sandbox, question)
    check_ran(sandbox, question)
    assert result["rows"]
