"""Rule-based English-to-SQL with aggregates: average, minimum, maximum and total, optionally per group."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.clauses import read_group
from rag_integration.feature_groups.connectors.structured.filters import read_conditions
from rag_integration.feature_groups.connectors.structured.plan import Condition, OrderKey, Output, QueryPlan
from rag_integration.feature_groups.connectors.structured.question import Question
from rag_integration.feature_groups.connectors.structured.rule_based_sql import ROW_INTENTS, count_plan, list_plan

AGGREGATE_WORDS: dict[str, tuple[str, ...]] = {
    "avg": ("average", "avg", "mean"),
    "min": ("minimum", "min", "lowest", "smallest", "earliest"),
    "max": ("maximum", "max", "highest", "largest", "biggest", "latest"),
    "sum": ("total", "sum", "sum of", "total of"),
}
LEAD_WORDS = (
    "what is",
    "what's",
    "what are",
    "show",
    "show me",
    "give me",
    "compute",
    "calculate",
    "find",
    "get",
    "list",
)
AGGREGATE_INTENTS = (
    "aggregate: '[what is the] average|minimum|maximum|total <column> [of <rows>] [filters] [per|by|for each <column>]'",
    "grouped count: 'how many <rows> [filters] per|by|for each <column>'",
    *ROW_INTENTS,
)


class AggregateSql(BaseStructuredConnector):
    """``structured_backend="aggregate"``: avg/min/max/sum and counts, optionally grouped, plus everything rule_based maps."""

    BACKEND: ClassVar[str | None] = "aggregate"
    UNDERSTANDS: ClassVar[tuple[str, ...]] = AGGREGATE_INTENTS

    @classmethod
    def plan(cls, question: Question) -> QueryPlan:
        plan = aggregate_plan(question) or count_plan(question, grouped=True) or list_plan(question)
        if plan is None:
            question.fail("it starts with no aggregate ('average', 'maximum', ...), count or list word")
        return plan


def aggregate_plan(question: Question) -> QueryPlan | None:
    """Aggregates: "average salary per department", "maximum start date in Berlin", "total salary in sales"."""
    start = question.position
    question.accept(*LEAD_WORDS)
    question.skip({"the"})
    function = next((name for name, words in AGGREGATE_WORDS.items() if question.accept(*words)), None)
    if function is None:
        question.position = start
        return None
    column = question.require_column(function, filler={"of", "the"})
    if function in ("avg", "sum") and not column.numeric:
        question.fail(f"'{function}' needs a number column, but '{column.name}' is {column.type}")
    where: tuple[tuple[Condition, ...], ...] = ()
    group = read_group(question)
    if group is None:
        question.skip({"of", "for", "among", "across"})
        question.skip_table_words()
        where = read_conditions(question)
        group = read_group(question)
    where = where or read_conditions(question)
    question.finish()
    value = Output(question.table.free_label(f"{function}_{column.name}"), column.name, function)
    if group is None:
        return QueryPlan(outputs=(value,), where=where)
    key = Output(group.name, group.name)
    return QueryPlan(outputs=(key, value), where=where, group_by=key, order_by=(OrderKey(key),))
