"""Graph RAG on a networkx graph: the canonical spreading activation, or personalized PageRank from the query."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.errors import RankingContractError
from rag_integration.core.extras import require_module
from rag_integration.core.options import option
from rag_integration.feature_groups.connectors.graph_rag.base import (
    SCORINGS,
    BaseGraphRagConnector,
    Graph,
    GraphSettings,
    spreading_activation,
)

PAGERANK_TOLERANCE = 1e-13


@dataclass(frozen=True)
class NetworkxSettings(GraphSettings):
    """The canonical options, with personalized PageRank as a second way to score."""

    scoring: str = option(
        "graph_scoring",
        "choice",
        "how nodes are scored (`networkx`)",
        default="spreading_activation",
        choices=(*SCORINGS, "personalized_pagerank"),
    )
    alpha: float = option(
        "pagerank_alpha",
        "number",
        "`personalized_pagerank`: probability of following an edge rather than restarting at a seed",
        default=0.85,
        minimum=0.0,
        maximum=0.99,
        exclusive_minimum=True,
    )


class NetworkxGraphRag(BaseGraphRagConnector[NetworkxSettings]):
    """``graph_backend="networkx"``: ranks exactly like ``adjacency`` by default; ``graph_scoring=
    "personalized_pagerank"`` runs networkx's PageRank restarting at the query-matching nodes (``pagerank_alpha``)."""

    BACKEND: ClassVar[str | None] = "networkx"
    SETTINGS: ClassVar[type[Any] | None] = NetworkxSettings
    EXTRA: ClassVar[str | None] = "graph"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("networkx",)

    @classmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: NetworkxSettings) -> Sequence[float]:
        nx = require_module("networkx", "networkx", "graph")
        network = nx.Graph()
        network.add_nodes_from(range(len(graph.nodes)))
        network.add_weighted_edges_from(graph.edges)
        if settings.scoring == "personalized_pagerank":
            return _personalized_pagerank(nx, network, seeds, settings.alpha)

        def weighted_neighbours(node: int) -> Any:
            return ((neighbour, weight) for _, neighbour, weight in network.edges(node, data="weight"))

        return spreading_activation(seeds, weighted_neighbours, settings.hops, settings.damping)


def _personalized_pagerank(nx: Any, network: Any, seeds: list[float], alpha: float) -> list[float]:
    """Restarts (and the first iterate) sit on the seeds only, so nodes the seeds cannot reach score exactly 0."""
    require_module("scipy", "networkx", "graph")  # networkx's PageRank runs on scipy.sparse
    personalization = {node: seed for node, seed in enumerate(seeds) if seed > 0.0}
    # The error after k steps shrinks like alpha**k: iterate until it is far below the rounding of scores.
    iterations = math.ceil(math.log(PAGERANK_TOLERANCE) / math.log(alpha)) + 50
    try:
        ranks = nx.pagerank(
            network,
            alpha=alpha,
            personalization=personalization,
            nstart=personalization,
            weight="weight",
            tol=PAGERANK_TOLERANCE,
            max_iter=iterations,
        )
    except nx.PowerIterationFailedConvergence as error:
        raise RankingContractError(
            f"networkx's personalized PageRank did not converge within {iterations} iterations "
            f"(pagerank_alpha={alpha}): expected edge weights whose ratios a power iteration can resolve"
        ) from error
    return [float(ranks.get(node, 0.0)) for node in range(len(seeds))]
