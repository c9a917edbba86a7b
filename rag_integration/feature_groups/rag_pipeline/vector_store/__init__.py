"""The vector store stage: ``<source>__indexed`` selected by ``vector_store``, persisted to ``index_dir``."""

from rag_integration.feature_groups.rag_pipeline.vector_store.base import BaseVectorStore
from rag_integration.feature_groups.rag_pipeline.vector_store.faiss_vector_store import FaissVectorStore
from rag_integration.feature_groups.rag_pipeline.vector_store.store import VectorStore, load_store

__all__ = ["BaseVectorStore", "FaissVectorStore", "VectorStore", "load_store"]
