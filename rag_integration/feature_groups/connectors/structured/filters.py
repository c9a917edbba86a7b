"""The filter grammar: conditions joined by and/or, each a column comparison or a bare value ("in Berlin")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_integration.feature_groups.connectors.structured.columns import ColumnSpec
from rag_integration.feature_groups.connectors.structured.plan import Condition
from rag_integration.feature_groups.connectors.structured.values import equality, ordered_value, value_only

if TYPE_CHECKING:
    from rag_integration.feature_groups.connectors.structured.question import Question

CONDITION_LEADS = frozenset(
    [
        "with",
        "where",
        "whose",
        "who",
        "that",
        "which",
        "having",
        "is",
        "are",
        "was",
        "were",
        "the",
        "a",
        "an",
        "work",
        "works",
        "working",
        "live",
        "lives",
        "living",
        "based",
        "located",
        "have",
        "has",
    ]
)
"""Words that may introduce a filter ("who work in Berlin"); a column of the same name wins when compared."""
COMPARATIVES: dict[str, tuple[str, ...]] = {
    ">=": ("at least", "no less than", "not less than", "on or after", "since", ">=", "greater than or equal to"),
    "<=": ("at most", "no more than", "not more than", "on or before", "up to", "<=", "less than or equal to"),
    ">": ("over", "above", "more than", "greater than", "higher than", "exceeding", "after", "later than", ">"),
    "<": ("below", "under", "less than", "lower than", "fewer than", "before", "earlier than", "<"),
}
NOT_EQUAL = ("is not equal to", "does not equal", "is not", "isn't", "not", "!=", "<>")
EQUAL = ("is equal to", "equal to", "equals", "is", "are", "was", "=", "==")
COMPARISONS = (*NOT_EQUAL, *EQUAL, "between", *(phrase for phrases in COMPARATIVES.values() for phrase in phrases))
JOINERS = (", and", ", or", "and", "or", ",")


def read_conditions(question: Question) -> tuple[tuple[Condition, ...], ...]:
    """Filters joined by and/or (and binds tighter, as in SQL), as OR-groups of AND-ed conditions.

    A joiner with no filter after it is left unread, so ``finish`` refuses the question instead of dropping it.
    """
    groups: list[tuple[Condition, ...]] = []
    current: list[Condition] = []
    joiner: str | None = None
    before = question.position
    while (condition := read_condition(question)) is not None:
        if joiner is not None and joiner.endswith("or"):
            groups.append(tuple(current))
            current = []
        current.append(condition)
        before = question.position
        joiner = question.accept(*JOINERS)
        if joiner is None:
            break
    else:
        question.position = before
    if current:
        groups.append(tuple(current))
    return tuple(groups)


def comparison_ahead(question: Question) -> bool:
    """True when the next words compare a column ("over", "is", "between"), without consuming them."""
    start = question.position
    found = question.accept(*COMPARISONS) is not None
    question.position = start
    return found


def read_condition(question: Question) -> Condition | None:
    start = question.position
    question.skip(CONDITION_LEADS)
    if not question.column_comparison_ahead() and question.accept("in", "from", "at"):
        return value_only(question)
    column = question.read_column()
    if column is None:
        question.position = start
        return None
    return _comparison(question, column)


def _comparison(question: Question, column: ColumnSpec) -> Condition:
    if question.accept(*NOT_EQUAL):
        return equality(question, column, negated=True)
    said_is = question.accept(*EQUAL)
    if question.accept("between"):
        low = ordered_value(question, column, "between")
        if not question.accept("and", "to"):
            question.fail(f"expected 'and' in '{column.name} between ... and ...'")
        return Condition(column.name, "between", (low, ordered_value(question, column, "between")))
    for operator, phrases in COMPARATIVES.items():
        phrase = question.accept(*phrases)
        if phrase:
            return Condition(column.name, operator, (ordered_value(question, column, phrase),))
    if said_is:
        return equality(question, column, negated=False)
    question.fail(f"expected a comparison after column '{column.name}' (is, over, at least, below, at most, between)")
