"""The graph_rag family: ``graph_passages`` selected by ``graph_backend``, and its ``knowledge_graph`` source."""

from rag_integration.feature_groups.connectors.graph_rag.adjacency_graph_rag import AdjacencyGraphRag
from rag_integration.feature_groups.connectors.graph_rag.base import (
    BaseGraphRagConnector,
    Graph,
    read_graph,
    spreading_activation,
)
from rag_integration.feature_groups.connectors.graph_rag.networkx_graph_rag import NetworkxGraphRag
from rag_integration.feature_groups.connectors.graph_rag.triples_knowledge_graph import TriplesKnowledgeGraph

__all__ = [
    "AdjacencyGraphRag",
    "BaseGraphRagConnector",
    "Graph",
    "NetworkxGraphRag",
    "TriplesKnowledgeGraph",
    "read_graph",
    "spreading_activation",
]
