"""The document source stage: feature ``docs`` selected by ``document_source``."""

from rag_integration.feature_groups.rag_pipeline.documents.base import BaseDocumentSource
from rag_integration.feature_groups.rag_pipeline.documents.file_source import FileDocumentSource
from rag_integration.feature_groups.rag_pipeline.documents.inline_source import InlineDocumentSource

__all__ = ["BaseDocumentSource", "FileDocumentSource", "InlineDocumentSource"]
