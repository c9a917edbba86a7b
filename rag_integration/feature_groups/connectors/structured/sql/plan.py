"""What a backend makes of a question: a small query plan, later built into SQL by ``sql.builder``.

Plans hold column names from the validated table and plain values; they never hold SQL text. A ``Staged`` plan
needs values from a first query before it can be built: the guard allows no subquery, so "who earns the most"
(ties kept) first asks for the maximum, and a median first counts and then fetches the middle values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

LIKE_ESCAPE = "\\"
"""The escape character bound after every ``LIKE ? ESCAPE ?``; patterns escape ``%``, ``_`` and itself with it."""


@dataclass(frozen=True)
class Condition:
    """``column <operator> values``: a comparison (one value), ``between`` (two), ``in`` (one or more), ``like``
    (one pattern, ``\\`` escaping), or ``is null``/``is not null`` (none)."""

    column: str
    operator: str
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Output:
    """One output column: a table column, or an aggregate (``column`` None means ``COUNT(*)``)."""

    label: str
    column: str | None = None
    function: str | None = None
    distinct: bool = False


@dataclass(frozen=True)
class OrderKey:
    output: Output
    descending: bool = False


@dataclass(frozen=True)
class QueryPlan:
    """``outputs`` empty means every column; ``where`` is an OR of AND-groups."""

    outputs: tuple[Output, ...] = ()
    where: tuple[tuple[Condition, ...], ...] = ()
    group_by: Output | None = None
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None
    distinct: bool = False

    def narrowed(self, condition: Condition) -> QueryPlan:
        """The same plan with ``condition`` AND-ed onto every OR-group."""
        where = tuple((*group, condition) for group in self.where) or ((condition,),)
        return replace(self, where=where)

    def sources(self, table_columns: tuple[str, ...]) -> dict[str, str]:
        """Output label -> the table column whose values it carries unchanged (for restoring value types)."""
        if not self.outputs:
            return {name: name for name in table_columns}
        return {
            output.label: output.column
            for output in self.outputs
            if output.column is not None and output.function in (None, "min", "max")
        }


@dataclass(frozen=True)
class Staged:
    """A plan that needs the rows of ``first`` (a guarded query of its own) to build what runs next."""

    first: QueryPlan
    then: Callable[[Sequence[tuple[Any, ...]]], QueryPlan | Staged]


def tie_kept(rows: QueryPlan, column: str, descending: bool) -> Staged:
    """Every row of ``rows`` whose ``column`` equals its maximum (or minimum): ties are kept, never cut."""
    extreme = QueryPlan((Output("extreme", column, "max" if descending else "min"),), rows.where)
    return Staged(extreme, lambda found: rows.narrowed(Condition(column, "=", (found[0][0],))))


def median(rows: QueryPlan, column: str, label: str) -> Staged:
    """SQLite has no MEDIAN: count the values, fetch the one or two middle ones (LIMIT/OFFSET, bound), average them.

    The last query is ``AVG(DISTINCT column)`` over rows holding a middle value: one value or two distinct ones.
    """
    present = rows.narrowed(Condition(column, "is not null"))
    counted = QueryPlan((Output("n", column, "count"),), rows.where)

    def middle(found: Sequence[tuple[Any, ...]]) -> Staged:
        total = int(found[0][0])
        ordered = replace(
            present,
            outputs=(Output(column, column),),
            order_by=(OrderKey(Output(column, column)),),
            limit=2 - total % 2,
            offset=max(total - 1, 0) // 2,
        )
        return Staged(ordered, average)

    def average(found: Sequence[tuple[Any, ...]]) -> QueryPlan:
        values = tuple(dict.fromkeys(row[0] for row in found)) or (None,)
        return replace(rows.narrowed(Condition(column, "in", values)), outputs=(Output(label, column, "avg", True),))

    return Staged(counted, middle)
