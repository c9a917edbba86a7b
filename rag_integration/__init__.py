"""rag-integration: open-source RAG tools behind mloda features, one option away from each other."""

from rag_integration.core.contract.mloda_logging import quiet_connector_error_tracebacks
from rag_integration.core.contract.transformers import load_transformers_only_for
from rag_integration.core.documents.corpus import Corpus
from rag_integration.core.indexes.cache import configure_index_cache
from rag_integration.registry import available_backends, discover_backends

quiet_connector_error_tracebacks()

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``rag_integration.forget``, imported when first used: the application is not loaded with the package."""
    if name == "forget":
        from rag_integration.application.forgetting import forget

        return forget
    raise AttributeError(f"module 'rag_integration' has no attribute {name!r}")


__all__ = [
    "Corpus",
    "__version__",
    "available_backends",
    "configure_index_cache",
    "discover_backends",
    "forget",
    "load_transformers_only_for",
]
