"""rag-integration: open-source RAG tools behind mloda features, one option away from each other."""

from rag_integration.core.documents import Corpus
from rag_integration.registry import available_backends

__version__ = "0.1.0"

__all__ = ["Corpus", "__version__", "available_backends"]
