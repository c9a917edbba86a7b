"""The entry points' targets. Importing this module imports rag-integration and this package, never ``tantivy``:
discovery lists the backend on a machine without it, and the hooks import it when a request selects the backend."""

from rag_tantivy.retriever import TantivyRetriever

FEATURE_GROUPS = (TantivyRetriever,)
"""The manifest (``mloda.feature_groups``): the feature group classes this distribution adds."""

OPTIONAL_ROOTS = ("tantivy",)
"""The marker (``mloda.optional_dependencies``): import roots whose absence skips this entry point."""
