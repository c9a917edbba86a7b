"""rag-integration: open-source RAG tools behind mloda features, one option away from each other."""

from rag_integration.registry import available_backends

__version__ = "0.1.0"

__all__ = ["__version__", "available_backends"]
