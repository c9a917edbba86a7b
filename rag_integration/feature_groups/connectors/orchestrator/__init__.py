"""The orchestrator family: ``orchestrated_answer`` selected by ``orchestrator_backend``."""

from rag_integration.core.errors import RemoteServiceError
from rag_integration.feature_groups.connectors.orchestrator.base import (
    BaseOrchestratorConnector,
    EngineAnswer,
    EngineHit,
    OrchestratorRequest,
)
from rag_integration.feature_groups.connectors.orchestrator.haystack_orchestrator import HaystackOrchestrator
from rag_integration.feature_groups.connectors.orchestrator.r2r_orchestrator import R2RFixtureOrchestrator

__all__ = [
    "BaseOrchestratorConnector",
    "EngineAnswer",
    "EngineHit",
    "HaystackOrchestrator",
    "OrchestratorRequest",
    "R2RFixtureOrchestrator",
    "RemoteServiceError",
]
