"""Rule-based English-to-SQL: counts and listings with filters, lookups, distinct values, ordering and "top N"."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.question.constructs import constructs_of, understood


class RuleBasedSql(BaseStructuredConnector):
    """``structured_backend="rule_based"``: count and list rows, filtered, looked up, ordered or the top N."""

    BACKEND: ClassVar[str | None] = "rule_based"
    CONSTRUCTS: ClassVar[frozenset[str]] = constructs_of("rule_based")
    UNDERSTANDS: ClassVar[tuple[str, ...]] = understood(CONSTRUCTS)
