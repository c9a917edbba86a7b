"""rag-integration: open-source RAG tools behind mloda features, one option away from each other."""

from rag_integration.core.contract.mloda_logging import quiet_connector_error_tracebacks
from rag_integration.core.contract.transformers import load_transformers_only_for
from rag_integration.core.documents.corpus import Corpus
from rag_integration.core.indexes.cache import configure_index_cache
from rag_integration.registry import available_backends, discover_backends

quiet_connector_error_tracebacks()

__version__ = "0.1.0"

__all__ = [
    "Corpus",
    "__version__",
    "available_backends",
    "configure_index_cache",
    "discover_backends",
    "load_transformers_only_for",
]
