"""The structured contract: options, the table, the guard and locked execution. Backends fill one hook, ``plan``.

A backend turns a question into a ``QueryPlan``; the base builds it into SQL with sqlglot, passes it through
``guard_sql`` and runs only the regenerated SQL in a locked in-memory SQLite sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.deadline import check_deadline, within_deadline
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.options import OptionReader
from rag_integration.core.schema import JSON, STRING, Shape
from rag_integration.feature_groups.connectors.structured.plan import QueryPlan
from rag_integration.feature_groups.connectors.structured.question import Question
from rag_integration.feature_groups.connectors.structured.table import TableSpec

if TYPE_CHECKING:
    from rag_integration.feature_groups.connectors.structured.sandbox import SqliteSandbox

DEFAULT_TIME_LIMIT = 5.0
DEFAULT_MAX_ROWS = 10_000


class BaseStructuredConnector(SelectorFeatureGroup):
    """``structured_rows``: ``{"sql", "params", "rows"}`` for each question asked of one table given inline."""

    FAMILY: ClassVar[str] = "structured"
    FEATURE_NAME: ClassVar[str] = "structured_rows"
    SELECTOR: ClassVar[str] = "structured_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = (
        "question",
        "table_name",
        "columns",
        "rows",
        "sql_time_limit",
        "max_result_rows",
    )
    EXTRA: ClassVar[str | None] = "structured"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("sqlglot",)
    UNDERSTANDS: ClassVar[tuple[str, ...]] = ()
    """The question shapes this backend maps, quoted in the error for a question it cannot map."""

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        questions = _read_questions(reader)
        table = TableSpec.read(reader)
        time_limit = reader.number("sql_time_limit", default=DEFAULT_TIME_LIMIT, minimum=0.0, exclusive_minimum=True)
        max_rows = reader.integer("max_result_rows", default=DEFAULT_MAX_ROWS, minimum=1)
        assert cls.BACKEND is not None
        require_module("sqlglot", cls.BACKEND, "structured")
        from rag_integration.feature_groups.connectors.structured.sandbox import SqliteSandbox

        with SqliteSandbox(table, time_limit=time_limit, max_rows=max_rows) as sandbox:
            return {cls.FEATURE_NAME: cls.answer_questions(sandbox, questions, reader)}

    @classmethod
    def answer_questions(
        cls, sandbox: SqliteSandbox, questions: list[str], reader: OptionReader
    ) -> list[dict[str, Any]]:
        """Each question's result; a backend that needs options beyond the table's reads them from ``reader``."""
        rows = []
        for position, question in enumerate(questions):
            check_deadline(f"before question {position + 1} of {len(questions)} was asked")
            rows.append(cls.ask(sandbox, question))
        return rows

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        """``params`` and ``rows`` hold any SQLite value, so the columnar frameworks carry them as JSON."""
        return {"sql": STRING, "params": JSON, "rows": JSON}

    @classmethod
    def ask(cls, sandbox: SqliteSandbox, text: str) -> dict[str, Any]:
        """Plan, build, guard and run one question; only the guard's regenerated SQL is executed."""
        from rag_integration.feature_groups.connectors.structured.guard import guard_sql
        from rag_integration.feature_groups.connectors.structured.sql_builder import build_select

        table = sandbox.table
        plan = cls.plan(Question(text, table, cls.UNDERSTANDS))
        sql, params = build_select(plan, table.name)
        guarded = guard_sql(sql, table.name, [column.name for column in table.columns])
        labels, rows = within_deadline(
            sandbox.time_limit, lambda limit: sandbox.run(guarded, params, time_limit=limit), "running the SQL"
        )
        sources = plan.sources(tuple(column.name for column in table.columns))
        restored = [
            {label: table.restore(sources.get(label), value) for label, value in zip(labels, row)} for row in rows
        ]
        return {"sql": guarded, "params": params, "rows": restored}

    @classmethod
    def plan(cls, question: Question) -> QueryPlan:
        """The query plan for one question, or ``question.fail(...)`` naming what this backend understands."""
        raise NotImplementedError


def guard_sql(sql: str, table_name: str, columns: Any) -> str:
    """Check ``sql`` with the family's guard and return the SQL regenerated from its parse tree.

    Raises ``SqlSafetyError`` unless it is exactly one plain SELECT over ``table_name`` reading only ``columns``
    (names or ``{"name", "type"}`` dicts) with allow-listed functions and bound values.
    """
    require_module("sqlglot", "guard_sql", "structured")
    from rag_integration.feature_groups.connectors.structured import guard

    return guard.guard_sql(sql, table_name, columns)


def _read_questions(reader: OptionReader) -> list[str]:
    if not reader.has("question"):
        raise MissingOptionError("question", "a question string or a list of them", owner=reader.owner)
    value = reader.string_or_strings("question")
    questions = [value] if isinstance(value, str) else value
    for position, question in enumerate(questions):
        if not question.strip():
            raise InvalidOptionError(
                f"question[{position}]" if len(questions) > 1 else "question", question, "a non-empty question"
            )
    return questions
