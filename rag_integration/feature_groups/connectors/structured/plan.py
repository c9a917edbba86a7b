"""What a backend makes of a question: a small query plan, later built into SQL by ``sql_builder``.

Plans hold column names from the validated table and plain values; they never hold SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Condition:
    """``column <operator> values``: a comparison (one value), ``between`` (two), ``in``/``not in`` (one or more)."""

    column: str
    operator: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Output:
    """One output column: a table column, or an aggregate (``column`` None means ``COUNT(*)``)."""

    label: str
    column: str | None = None
    function: str | None = None


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

    def sources(self, table_columns: tuple[str, ...]) -> dict[str, str]:
        """Output label -> the table column whose values it carries unchanged (for restoring value types)."""
        if not self.outputs:
            return {name: name for name in table_columns}
        return {
            output.label: output.column
            for output in self.outputs
            if output.column is not None and output.function in (None, "min", "max")
        }
