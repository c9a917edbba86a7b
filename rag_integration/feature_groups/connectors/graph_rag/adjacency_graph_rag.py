"""Graph RAG on plain dicts: spreading activation over an adjacency list, standard library only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rag_integration.feature_groups.connectors.graph_rag.base import (
    BaseGraphRagConnector,
    Graph,
    GraphSettings,
    spreading_activation,
)


class AdjacencyGraphRag(BaseGraphRagConnector[GraphSettings]):
    """``graph_backend="adjacency"``: the canonical ranking (``graph_hops``, ``graph_damping``), no dependency."""

    BACKEND: ClassVar[str | None] = "adjacency"

    @classmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: GraphSettings) -> Sequence[float]:
        adjacency = graph.neighbours()
        return spreading_activation(seeds, lambda node: adjacency[node].items(), settings.hops, settings.damping)
