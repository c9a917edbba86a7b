"""Reading a filter's value: a number or ISO date for ordered comparisons, text matched to its stored spelling.

Values only ever become bound parameters; a value the column's type cannot hold is refused, never coerced.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rag_integration.feature_groups.connectors.structured.columns import INT64, ColumnSpec, is_iso_date
from rag_integration.feature_groups.connectors.structured.plan import Condition
from rag_integration.feature_groups.connectors.structured.tokens import Token

if TYPE_CHECKING:
    from rag_integration.feature_groups.connectors.structured.question import Question

STOP_WORDS = frozenset(
    [
        "and",
        "or",
        "order",
        "ordered",
        "sort",
        "sorted",
        "per",
        "by",
        "grouped",
        "group",
        "for",
        "top",
        "bottom",
        "first",
        "limit",
        "with",
        "where",
        "whose",
        "having",
        "in",
        "from",
        "at",
        "who",
        "that",
        "which",
    ]
)
"""Words that end an unquoted text value: ``city is Berlin and ...`` binds "Berlin"."""


def ordered_value(question: Question, column: ColumnSpec, after: str) -> Any:
    """The number (of a number column) or ISO date (of a date column) next in the question."""
    token = question.peek()
    if not column.numeric and column.type != "date":
        question.fail(f"'{after}' needs a number or date column, but '{column.name}' is {column.type}")
    if token is not None and column.numeric and token.kind == "number":
        number = float(token.text) if "." in token.text else int(token.text)
        if not math.isfinite(number) or (isinstance(number, int) and not INT64[0] <= number <= INT64[1]):
            question.fail(f"{token.text} is outside the range SQLite stores")
        question.position += 1
        return number
    if token is not None and column.type == "date" and is_iso_date(token.value):
        question.position += 1
        return token.value
    kind = "a number" if column.numeric else "an ISO date YYYY-MM-DD"
    question.fail(f"expected {kind} after '{column.name} {after}'")


def equality(question: Question, column: ColumnSpec, *, negated: bool) -> Condition:
    """``column is [not] value``; a text value matches every stored spelling that equals it case-insensitively."""
    if column.numeric or column.type == "date":
        value = ordered_value(question, column, "is not" if negated else "is")
        return Condition(column.name, "!=" if negated else "=", (value,))
    tokens = _value_tokens(question)
    if not tokens:
        question.fail(f"expected a value after '{column.name} is'")
    question.position += len(tokens)
    value = " ".join(token.value for token in tokens)
    variants = [stored for stored in question.table.text_values(column) if stored.casefold() == value.casefold()]
    values = tuple(sorted(variants)) if variants else (value,)
    if len(values) == 1:
        return Condition(column.name, "!=" if negated else "=", values)
    return Condition(column.name, "not in" if negated else "in", values)


def value_only(question: Question) -> Condition:
    """A value without its column ("in Berlin"): the text column storing it; the longest stored prefix wins."""
    question.accept("the")
    tokens = _value_tokens(question)
    for size in range(len(tokens), 0, -1):
        value = " ".join(token.value for token in tokens[:size]).casefold()
        found = {
            column.name: sorted(stored for stored in question.table.text_values(column) if stored.casefold() == value)
            for column in question.table.columns
            if column.type == "text"
        }
        holders = {name: variants for name, variants in found.items() if variants}
        if len(holders) > 1:
            question.fail(f"the value {value!r} is in several columns ({', '.join(sorted(holders))}); name one")
        if holders:
            question.position += size
            name, variants = holders.popitem()
            column = question.table.column(name)
            if column is not None and question.read_column() not in (None, column):
                question.fail(f"the value {value!r} is in column '{name}'")
            return Condition(name, "=" if len(variants) == 1 else "in", tuple(variants))
    shown = " ".join(token.value for token in tokens) or "(nothing)"
    question.fail(f"no text column holds the value {shown!r}; name the column, e.g. '<column> is {shown}'")


def _value_tokens(question: Question) -> list[Token]:
    """A quoted value, or the words up to the next joining or stop word."""
    first = question.peek()
    if first is not None and first.kind == "quoted":
        return [first]
    tokens: list[Token] = []
    while (token := question.peek(len(tokens))) is not None and token.kind in ("word", "number", "date"):
        if token.key in STOP_WORDS:
            break
        tokens.append(token)
    return tokens
