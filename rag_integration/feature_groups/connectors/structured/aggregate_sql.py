"""Rule-based English-to-SQL with aggregates: everything ``rule_based`` maps, plus aggregates, medians, groups,
distinct counts and superlatives with ties kept."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.question.parser import describe

CONSTRUCTS = frozenset(
    {"count", "list", "lookup", "order", "top", "aggregate", "median", "group", "distinct_count", "superlative"}
)


class AggregateSql(BaseStructuredConnector):
    """``structured_backend="aggregate"``: counts and listings, plus aggregates, groups, medians and superlatives."""

    BACKEND: ClassVar[str | None] = "aggregate"
    CONSTRUCTS: ClassVar[frozenset[str]] = CONSTRUCTS
    UNDERSTANDS: ClassVar[tuple[str, ...]] = describe(CONSTRUCTS)
