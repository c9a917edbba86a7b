"""The rerank family: ``reranked_passages`` selected by ``rerank_backend``."""

from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector
from rag_integration.feature_groups.connectors.rerank.flashrank_reranker import FlashRankReranker
from rag_integration.feature_groups.connectors.rerank.lexical_reranker import LexicalReranker

__all__ = ["BaseRerankConnector", "FlashRankReranker", "LexicalReranker"]
