"""Rule-based English-to-SQL: counts and listings with filters, lookups, distinct values, ordering and "top N"."""

from __future__ import annotations

from typing import ClassVar

from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector
from rag_integration.feature_groups.connectors.structured.question.parser import describe

CONSTRUCTS = frozenset({"count", "list", "lookup", "order", "top"})


class RuleBasedSql(BaseStructuredConnector):
    """``structured_backend="rule_based"``: count and list rows, filtered, looked up, ordered or the top N."""

    BACKEND: ClassVar[str | None] = "rule_based"
    CONSTRUCTS: ClassVar[frozenset[str]] = CONSTRUCTS
    UNDERSTANDS: ClassVar[tuple[str, ...]] = describe(CONSTRUCTS)
