"""rag-integration-tantivy: a retrieve backend over Tantivy (``retrieve_backend="tantivy"``), an example plugin."""

from rag_tantivy.retriever import (
    TantivyIndex,
    TantivyIndexSettings,
    TantivyRetriever,
    TantivySettings,
)

__all__ = ["TantivyIndex", "TantivyIndexSettings", "TantivyRetriever", "TantivySettings"]
