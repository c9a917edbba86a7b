"""What a process remembers between requests, forgotten at once: built indexes, analysed corpora and embeddings."""

from __future__ import annotations

from rag_integration.core.indexes.cache import INDEX_CACHE, VIEW_CACHE
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO


def forget_built() -> None:
    """Start as a new process would: the next request builds from nothing (or from its ``index_dir``)."""
    INDEX_CACHE.clear()
    VIEW_CACHE.clear()
    ANALYSIS_MEMO.clear()
    EMBEDDING_MEMO.clear()
