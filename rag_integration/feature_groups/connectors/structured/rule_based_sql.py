"""Rule-based English-to-SQL: counts and listings with filters, ordering and "top N by column"."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.clauses import read_group, read_order, read_top
from rag_integration.feature_groups.connectors.structured.columns import ColumnSpec
from rag_integration.feature_groups.connectors.structured.filters import comparison_ahead, read_conditions
from rag_integration.feature_groups.connectors.structured.plan import OrderKey, Output, QueryPlan
from rag_integration.feature_groups.connectors.structured.question import Question

COUNT_WORDS = ("how many", "count", "count the", "number of", "the number of", "what is the number of")
LIST_WORDS = ("list", "show", "show me", "find", "get", "give me", "display", "which", "what are", "return", "who")
FILTERS = (
    "filters: '<column> is [not] <value>', 'in <value>', '<column> over|above|at least|below|under|at most <number or "
    "date>', '<column> after|before <date>', '<column> between <a> and <b>', joined by 'and'/'or'"
)
ROW_INTENTS = (
    "count: 'how many <rows> [filters]'",
    "list: 'list|show|which <rows or columns> [filters] [ordered by <column> [descending]]'",
    "top: '[list] top N <rows> by <column> [filters]' or 'bottom N ... by <column>'",
    FILTERS,
)


class RuleBasedSql(BaseStructuredConnector):
    """``structured_backend="rule_based"``: count and list rows, filtered, ordered or the top N by a column."""

    BACKEND: ClassVar[str | None] = "rule_based"
    UNDERSTANDS: ClassVar[tuple[str, ...]] = ROW_INTENTS

    @classmethod
    def plan(cls, question: Question) -> QueryPlan:
        plan = count_plan(question, grouped=False) or list_plan(question)
        if plan is None:
            question.fail("it starts with neither a count ('how many') nor a list word ('list', 'show', 'which')")
        return plan


def count_plan(question: Question, *, grouped: bool) -> QueryPlan | None:
    """Counts: "how many employees in Berlin"; with ``grouped``, also "... per department"."""
    if not question.accept(*COUNT_WORDS):
        return None
    question.skip_table_words()
    where = read_conditions(question)
    group = read_group(question) if grouped else None
    where = where or read_conditions(question)
    question.finish()
    counted = Output(question.table.free_label("count", "row_count"), None, "count")
    if group is None:
        return QueryPlan(outputs=(counted,), where=where)
    key = Output(group.name, group.name)
    return QueryPlan(outputs=(key, counted), where=where, group_by=key, order_by=(OrderKey(key),))


def list_plan(question: Question) -> QueryPlan | None:
    """Listings: "list employees in Berlin ordered by salary", "show name and city where salary over 50000"."""
    starts_with_top = (first := question.peek()) is not None and first.key in ("top", "bottom")
    if not question.accept(*LIST_WORDS) and not starts_with_top:
        return None
    question.skip({"the", "all", "me"})
    top = read_top(question)
    shown = () if top else _projection(question)
    question.skip_table_words()
    top = top or read_top(question)
    where = read_conditions(question)
    order = read_order(question)
    top = top or read_top(question)
    question.finish()
    if top and order:
        question.fail("use either 'top N by <column>' or 'ordered by <column>', not both")
    outputs = tuple(Output(column.name, column.name) for column in shown)
    if top:
        count, column, descending = top
        return QueryPlan(outputs, where, order_by=_order(question, shown, column, descending), limit=count)
    if order:
        return QueryPlan(outputs, where, order_by=_order(question, shown, *order))
    return QueryPlan(outputs, where)


def _projection(question: Question) -> tuple[ColumnSpec, ...]:
    """Columns named right after the list word ("name and salary of ..."); none when a filter starts there.

    A joiner with no column after it ("show name and") is left unread, so ``finish`` refuses the question.
    """
    start = before = question.position
    columns: list[ColumnSpec] = []
    while (column := question.read_column()) is not None:
        columns.append(column)
        before = question.position
        if not question.accept(",", "and", ", and"):
            break
    else:
        question.position = before
    if not columns or comparison_ahead(question):
        question.position = start
        return ()
    question.accept("of", "for", "from")
    return tuple(dict.fromkeys(columns))


def _order(
    question: Question, shown: tuple[ColumnSpec, ...], column: ColumnSpec, descending: bool
) -> tuple[OrderKey, ...]:
    """Sort by ``column``, then by every other shown column, so ties come out the same in every run."""
    rest = [other for other in (shown or question.table.columns) if other != column]
    keys = [OrderKey(Output(column.name, column.name), descending)]
    return (*keys, *(OrderKey(Output(other.name, other.name)) for other in rest))
