"""The retrieval stage: ``retrieved_passages`` with ``retrieve_backend="vector_store"``."""

from rag_integration.feature_groups.rag_pipeline.retrieval.vector_store_retriever import VectorStoreRetriever

__all__ = ["VectorStoreRetriever"]
