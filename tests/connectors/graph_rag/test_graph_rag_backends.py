"""The graph_rag backends through the graph_rag contract kit; parity between them; personalized PageRank."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from rag_integration.core.errors import InvalidOptionError, RankingContractError
from rag_integration.feature_groups.connectors.graph_rag import (
    AdjacencyGraphRag,
    BaseGraphRagConnector,
    Graph,
    NetworkxGraphRag,
    spreading_activation,
)
from rag_integration.testing.graph_rag import EDGES, NODES, GraphRagContractTests
from rag_integration.testing.runner import run_feature


class TestAdjacencyContract(GraphRagContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGraphRagConnector]:
        return AdjacencyGraphRag


class TestNetworkxContract(GraphRagContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGraphRagConnector]:
        return NetworkxGraphRag


class TestNetworkxPagerankContract(GraphRagContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGraphRagConnector]:
        return NetworkxGraphRag

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"graph_scoring": "personalized_pagerank"}


def rank(backend: type[BaseGraphRagConnector], **options: Any) -> list[Any]:
    return run_feature("graph_passages", {"graph_backend": backend.BACKEND, "top_k": 1000, **options}, {backend})


WORDS = ["comet", "orbit", "lava", "river", "bread", "engine", "tide", "forest", "castle", "violin"]


def random_graph(seed: int, size: int, weighted: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """A reproducible graph with several components, repeated edges and, optionally, uneven weights."""
    generator = random.Random(seed)
    nodes = [{"doc_id": f"n{i:02d}", "text": " ".join(generator.sample(WORDS, 2))} for i in range(size)]
    edges: list[Any] = []
    for _ in range(size * 2):
        first, second = generator.sample(range(size - 3), 2)  # the last three nodes stay isolated
        ends = (nodes[first]["doc_id"], nodes[second]["doc_id"])
        if weighted:
            edges.append({"source": ends[0], "target": ends[1], "weight": round(generator.uniform(0.1, 5.0), 3)})
        else:
            edges.append(list(ends))
    return nodes, edges


GRAPHS = {
    "kit": (NODES, EDGES),
    "chain": (
        [{"doc_id": str(i), "text": "comet" if i == 0 else f"stop{i}"} for i in range(6)],
        [[str(i), str(i + 1)] for i in range(5)],
    ),
    "star-with-island": (
        [{"doc_id": "hub", "text": "comet hub"}]
        + [{"doc_id": f"s{i}", "text": "spoke"} for i in range(5)]
        + [{"doc_id": "island", "text": "comet island"}],
        [{"source": "hub", "target": f"s{i}", "weight": float(i + 1)} for i in range(5)],
    ),
    **{f"random-{seed}": random_graph(seed, 14, weighted=seed % 2 == 0) for seed in range(6)},
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("settings", [{}, {"graph_hops": 1}, {"graph_hops": 4, "graph_damping": 0.9}])
def test_networkx_ranks_exactly_like_adjacency(name: str, settings: dict[str, Any]) -> None:
    nodes, edges = GRAPHS[name]
    queries = ["comet", "lava river", "orbit forest castle", "violin"]
    adjacency = rank(AdjacencyGraphRag, query_text=queries, nodes=nodes, edges=edges, **settings)
    assert any(len(rows) > 1 for rows in adjacency)
    assert rank(NetworkxGraphRag, query_text=queries, nodes=nodes, edges=edges, **settings) == adjacency


def test_multi_hop_reach_follows_graph_hops() -> None:
    nodes, edges = GRAPHS["chain"]
    for hops in (0, 1, 3):
        reached = [
            row["doc_id"]
            for row in rank(AdjacencyGraphRag, query_text="comet", nodes=nodes, edges=edges, graph_hops=hops)[0]
        ]
        assert reached == [str(i) for i in range(hops + 1)]


def test_repeated_edges_add_up() -> None:
    nodes = [{"doc_id": "a", "text": "comet"}, {"doc_id": "b", "text": "x"}, {"doc_id": "c", "text": "y"}]
    doubled = rank(AdjacencyGraphRag, query_text="comet", nodes=nodes, edges=[["a", "b"], ["b", "a"], ["a", "c"]])[0]
    weighted = rank(
        AdjacencyGraphRag,
        query_text="comet",
        nodes=nodes,
        edges=[{"source": "a", "target": "b", "weight": 2}, ["a", "c"]],
    )[0]
    assert doubled == weighted and [row["doc_id"] for row in doubled] == ["a", "b", "c"]


def test_personalized_pagerank_reaches_the_whole_component_and_nothing_else() -> None:
    nodes, edges = GRAPHS["chain"]
    ranked = rank(
        NetworkxGraphRag, query_text="comet", nodes=nodes, edges=edges, graph_scoring="personalized_pagerank"
    )[0]
    order = [row["doc_id"] for row in ranked]
    assert sorted(order) == [str(i) for i in range(6)]
    assert order.index("1") < order.index("2") < order.index("3") < order.index("4") < order.index("5")
    nodes, edges = GRAPHS["star-with-island"]
    ranked = rank(
        NetworkxGraphRag, query_text="spoke", nodes=nodes, edges=edges, graph_scoring="personalized_pagerank"
    )[0]
    assert "island" not in [row["doc_id"] for row in ranked]
    assert ranked[0]["doc_id"] == "hub"  # every spoke's walk returns through the hub
    assert sum(row["score"] for row in ranked) == pytest.approx(1.0)


def test_pagerank_alpha_changes_how_far_relevance_travels() -> None:
    nodes, edges = GRAPHS["chain"]
    near = rank(
        NetworkxGraphRag,
        query_text="comet",
        nodes=nodes,
        edges=edges,
        graph_scoring="personalized_pagerank",
        pagerank_alpha=0.3,
    )[0]
    far = rank(
        NetworkxGraphRag,
        query_text="comet",
        nodes=nodes,
        edges=edges,
        graph_scoring="personalized_pagerank",
        pagerank_alpha=0.9,
    )[0]
    assert near[0]["score"] > far[0]["score"] and near[-1]["score"] < far[-1]["score"]


@pytest.mark.parametrize("alpha", [0, 1.0, -0.5, True, "0.8"])
def test_bad_pagerank_alpha_is_a_typed_error(alpha: Any) -> None:
    with pytest.raises(InvalidOptionError, match="pagerank_alpha"):
        rank(
            NetworkxGraphRag,
            query_text="Nobel",
            nodes=NODES,
            graph_scoring="personalized_pagerank",
            pagerank_alpha=alpha,
        )


def test_adjacency_offers_no_pagerank() -> None:
    with pytest.raises(InvalidOptionError, match="graph_scoring"):
        rank(AdjacencyGraphRag, query_text="Nobel", nodes=NODES, graph_scoring="personalized_pagerank")


def test_same_ranking_in_a_fresh_process() -> None:
    nodes, edges = GRAPHS["random-2"]
    request = {"graph_backend": "networkx", "query_text": ["comet", "lava river"], "nodes": nodes, "edges": edges}
    script = (
        "import json, sys\n"
        "from rag_integration.testing.runner import run_feature\n"
        "from rag_integration.feature_groups.connectors.graph_rag import NetworkxGraphRag\n"
        "print(json.dumps(run_feature('graph_passages', json.loads(sys.argv[1]), {NetworkxGraphRag})))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, json.dumps(request)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="4242"),
        check=True,
    )
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == run_feature(
        "graph_passages", request, {NetworkxGraphRag}
    )


def test_a_pagerank_that_does_not_converge_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import networkx

    def never_converges(*args: Any, **kwargs: Any) -> Any:
        raise networkx.PowerIterationFailedConvergence(kwargs["max_iter"])

    monkeypatch.setattr(networkx, "pagerank", never_converges)
    with pytest.raises(RankingContractError, match=r"did not converge within \d+ iterations \(pagerank_alpha=0.85\)"):
        rank(NetworkxGraphRag, query_text="Nobel", nodes=NODES, edges=EDGES, graph_scoring="personalized_pagerank")


class NanGraphRag(BaseGraphRagConnector):
    """A deliberately broken backend: one score per node, one of them NaN."""

    BACKEND: ClassVar[str | None] = "nan-for-tests"

    @classmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: Mapping[str, Any]) -> Sequence[float]:
        return [float("nan"), *seeds[1:]]


def test_a_non_finite_score_is_reported_as_such() -> None:
    with pytest.raises(
        RankingContractError, match=r"NanGraphRag returned a non-finite score for node\(s\) \['curie'\]"
    ):
        rank(NanGraphRag, query_text="Nobel", nodes=NODES, edges=EDGES)


def test_the_shared_rule_does_not_depend_on_the_order_neighbours_are_listed_in() -> None:
    """Both backends call ``spreading_activation``; a graph library listing neighbours in another order (or with
    weights whose float sums depend on order) must not change a single bit of the scores."""
    weights = {0: {1: 0.1, 2: 0.2, 3: 0.3}, 1: {0: 0.1}, 2: {0: 0.2, 3: 1e-9}, 3: {0: 0.3, 2: 1e-9}}
    seeds = [1.7, 0.0, 0.3, 0.0]
    forward = spreading_activation(seeds, lambda node: weights[node].items(), 3, 0.5)
    backward = spreading_activation(seeds, lambda node: reversed(list(weights[node].items())), 3, 0.5)
    assert forward == backward
    one_hop = spreading_activation(seeds, lambda node: weights[node].items(), 1, 0.5)
    assert one_hop[1] == pytest.approx(0.5 * 1.7 * 0.1 / 0.6)  # node 0 passes on its share 0.1 / (0.1 + 0.2 + 0.3)
