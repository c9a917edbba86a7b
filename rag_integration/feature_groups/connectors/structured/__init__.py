"""The structured family: ``structured_rows`` selected by ``structured_backend``, guarded by ``guard_sql``."""

from rag_integration.feature_groups.connectors.structured.aggregate_sql import AggregateSql
from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector, guard_sql
from rag_integration.feature_groups.connectors.structured.llm_sql import LlmSql
from rag_integration.feature_groups.connectors.structured.question.cursor import Question
from rag_integration.feature_groups.connectors.structured.question.parser import Parser
from rag_integration.feature_groups.connectors.structured.rule_based_sql import RuleBasedSql
from rag_integration.feature_groups.connectors.structured.sql.columns import ColumnSpec
from rag_integration.feature_groups.connectors.structured.sql.plan import Condition, OrderKey, Output, QueryPlan, Staged
from rag_integration.feature_groups.connectors.structured.sql.table import TableRows, TableSpec

__all__ = [
    "AggregateSql",
    "BaseStructuredConnector",
    "ColumnSpec",
    "Condition",
    "LlmSql",
    "OrderKey",
    "Output",
    "Parser",
    "QueryPlan",
    "Question",
    "RuleBasedSql",
    "Staged",
    "TableRows",
    "TableSpec",
    "guard_sql",
]
