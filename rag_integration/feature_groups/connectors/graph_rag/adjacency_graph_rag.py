"""Graph RAG on plain dicts: spreading activation over an adjacency list, standard library only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rag_integration.feature_groups.connectors.graph_rag.base import BaseGraphRagConnector, Graph


class AdjacencyGraphRag(BaseGraphRagConnector):
    """``graph_backend="adjacency"``: the canonical ranking (``graph_hops``, ``graph_damping``), no dependency."""

    BACKEND: ClassVar[str | None] = "adjacency"

    @classmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: Mapping[str, Any]) -> Sequence[float]:
        neighbours = graph.neighbours()
        strength = [sum(weights.values()) for weights in neighbours]
        total, wave = list(seeds), list(seeds)
        for _ in range(settings["hops"]):
            received = [0.0] * len(wave)
            for node, activation in enumerate(wave):
                if activation > 0.0:
                    for neighbour, weight in neighbours[node].items():
                        received[neighbour] += settings["damping"] * activation * weight / strength[node]
            wave = received
            total = [score + extra for score, extra in zip(total, received)]
        return total
