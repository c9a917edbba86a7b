"""Turn a ``QueryPlan`` into a sqlglot expression tree and render it: values become ``?`` parameters."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from rag_integration.feature_groups.connectors.structured.sql.plan import LIKE_ESCAPE, Condition, Output, QueryPlan

AGGREGATES: dict[str, type[exp.Func]] = {
    "count": exp.Count,
    "avg": exp.Avg,
    "min": exp.Min,
    "max": exp.Max,
    "sum": exp.Sum,
}
COMPARISONS: dict[str, type[exp.Binary]] = {
    "=": exp.EQ,
    "!=": exp.NEQ,
    ">": exp.GT,
    ">=": exp.GTE,
    "<": exp.LT,
    "<=": exp.LTE,
}


def build_select(plan: QueryPlan, table_name: str) -> tuple[str, list[Any]]:
    """The SELECT as SQLite text and its parameters, in placeholder order."""
    params: list[Any] = []
    outputs = [_output(output) for output in plan.outputs] or [exp.Star()]
    select = exp.Select(expressions=outputs).from_(exp.to_table(table_name, quoted=True), copy=False)
    if plan.distinct:
        select = select.distinct(copy=False)
    if plan.where:
        groups = [exp.and_(*(_condition(item, params) for item in group), copy=False) for group in plan.where]
        select = select.where(exp.or_(*groups, copy=False), copy=False)
    if plan.group_by is not None:
        select = select.group_by(_expression(plan.group_by), copy=False)
    if plan.order_by:
        select = select.order_by(
            *(exp.Ordered(this=_expression(key.output), desc=key.descending) for key in plan.order_by), copy=False
        )
    if plan.limit is not None:
        select = select.limit(exp.Placeholder(), copy=False)
        params.append(plan.limit)
    if plan.offset is not None:
        select = select.offset(exp.Placeholder(), copy=False)
        params.append(plan.offset)
    return select.sql(dialect="sqlite", identify=True), params


def _expression(output: Output) -> exp.Expr:
    column: exp.Expr = exp.column(output.column, quoted=True) if output.column else exp.Star()
    if output.function is None:
        return column
    if output.distinct:
        column = exp.Distinct(expressions=[column])
    return AGGREGATES[output.function](this=column)


def _output(output: Output) -> exp.Expr:
    expression = _expression(output)
    if output.function is None and output.label == output.column:
        return expression
    return exp.alias_(expression, output.label, quoted=True)


def _condition(condition: Condition, params: list[Any]) -> exp.Expr:
    column = exp.column(condition.column, quoted=True)
    operator = condition.operator
    negated = operator.startswith("not ") or operator == "is not null"
    params.extend(condition.values)
    found: exp.Expr
    if operator.endswith("null"):
        found = exp.Is(this=column, expression=exp.Null())
    elif operator.endswith("between"):
        found = exp.Between(this=column, low=exp.Placeholder(), high=exp.Placeholder())
    elif operator.endswith("in"):
        found = exp.In(this=column, expressions=[exp.Placeholder() for _ in condition.values])
    elif operator.endswith("like"):
        found = exp.Escape(this=exp.Like(this=column, expression=exp.Placeholder()), expression=exp.Placeholder())
        params.append(LIKE_ESCAPE)
    else:
        return COMPARISONS[operator](this=column, expression=exp.Placeholder())
    return exp.Not(this=found) if negated else found
