"""Rule-based English-to-SQL with aggregates: everything ``rule_based`` maps, plus aggregates, medians, groups,
distinct counts and superlatives with ties kept."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.question.constructs import constructs_of, understood


class AggregateSql(BaseStructuredConnector):
    """``structured_backend="aggregate"``: counts and listings, plus aggregates, groups, medians and superlatives."""

    BACKEND: ClassVar[str | None] = "aggregate"
    CONSTRUCTS: ClassVar[frozenset[str]] = constructs_of("aggregate")
    UNDERSTANDS: ClassVar[tuple[str, ...]] = understood(CONSTRUCTS)
