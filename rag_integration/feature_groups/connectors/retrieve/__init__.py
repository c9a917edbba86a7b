"""The retrieve family: ``retrieved_passages`` selected by ``retrieve_backend``."""

from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector, RetrieveRequest
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.faiss_retriever import FaissDenseRetriever
from rag_integration.feature_groups.connectors.retrieve.hybrid_rrf_retriever import HybridRrfRetriever
from rag_integration.feature_groups.connectors.retrieve.tfidf_retriever import TfidfRetriever

__all__ = [
    "BaseRetrieveConnector",
    "Bm25sRetriever",
    "FaissDenseRetriever",
    "HybridRrfRetriever",
    "RetrieveRequest",
    "TfidfRetriever",
]
