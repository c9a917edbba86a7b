"""The generate family: ``generated_answer`` selected by ``generate_backend``."""

from rag_integration.feature_groups.connectors.generate.base import Answer, BaseGenerateConnector, check_grounded
from rag_integration.feature_groups.connectors.generate.extractive_responder import ExtractiveResponder
from rag_integration.feature_groups.connectors.generate.llm_responder import LlmResponder
from rag_integration.feature_groups.connectors.generate.template_responder import TemplateResponder

__all__ = [
    "Answer",
    "BaseGenerateConnector",
    "ExtractiveResponder",
    "LlmResponder",
    "TemplateResponder",
    "check_grounded",
]
