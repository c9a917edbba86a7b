"""Clauses after the filters: "ordered by <column> [descending]", "top|bottom N by <column>", "per <column>"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_integration.feature_groups.connectors.structured.columns import ColumnSpec

if TYPE_CHECKING:
    from rag_integration.feature_groups.connectors.structured.question import Question

DESCENDING = ("descending", "desc", "in descending order", "highest first", "largest first", "latest first")
ASCENDING = ("ascending", "asc", "in ascending order", "lowest first", "smallest first", "earliest first")
GROUP_WORDS = ("per", "by", "for each", "for every", "in each", "grouped by", "group by", "broken down by")
ORDER_WORDS = ("ordered by", "sorted by", "order by", "sort by", "sorted on", "ordered on")


def read_order(question: Question) -> tuple[ColumnSpec, bool] | None:
    """The column and direction of "ordered by <column> [descending]", or None when no order is named."""
    start = question.position
    question.accept(",")
    if not question.accept(*ORDER_WORDS):
        question.position = start
        return None
    column = question.require_column("ordered by")
    descending = question.accept(*DESCENDING) is not None
    if not descending:
        question.accept(*ASCENDING)
    return column, descending


def read_top(question: Question) -> tuple[int, ColumnSpec, bool] | None:
    """Top or bottom N: "top 3 by salary" (highest first), "bottom 3 by salary" (lowest first)."""
    start = question.position
    question.accept(",")
    word = question.accept("top", "bottom")
    if word is None:
        question.position = start
        return None
    count = question.read_int(word)
    question.skip_table_words()
    if not question.accept("by"):
        question.fail(f"'{word} N' needs 'by <column>'")
    return count, question.require_column(f"{word} {count} by"), word == "top"


def read_group(question: Question) -> ColumnSpec | None:
    """The column after "per", "by", "for each", ... or None when the question names no group."""
    phrase = question.accept(*GROUP_WORDS)
    return None if phrase is None else question.require_column(phrase)
