"""The graph_rag contract: nodes are documents, edges are undirected and weighted; the query seeds the nodes it
matches (BM25 over the node texts) and the graph carries that relevance to their neighbours. Backends fill one
hook, ``score_nodes``; the base validates the graph, seeds it and ranks the result."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents import Document, read_documents
from rag_integration.core.errors import InvalidOptionError, MissingOptionError, RankingContractError
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.lexical import lexical_scores
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import rank_hits
from rag_integration.core.queries import query_rows

EDGE_SHAPE = "an edge: a [source, target] pair or a {'source', 'target', 'weight'} dict"
SCORE_DECIMALS = 12  # rounding scores keeps floating-point summation order from reordering equal scores


@dataclass(frozen=True)
class Graph:
    """Validated nodes and merged undirected edges ``(position, position, weight)`` in first-seen order."""

    nodes: tuple[Document, ...]
    edges: tuple[tuple[int, int, float], ...]

    def neighbours(self) -> list[dict[int, float]]:
        adjacency: list[dict[int, float]] = [{} for _ in self.nodes]
        for first, second, weight in self.edges:
            adjacency[first][second] = weight
            adjacency[second][first] = weight
        return adjacency


class BaseGraphRagConnector(SelectorFeatureGroup):
    """``graph_passages``: nodes ranked for the query (``nodes`` + ``edges``, or the rows of ``graph_source``).

    Default scoring (``graph_scoring="spreading_activation"``) starts from each node's BM25 match and, for
    ``graph_hops`` steps, passes ``graph_damping`` of every node's activation to its neighbours in proportion to
    edge weight; a node's score is all the activation it received. Only nodes with a positive score are returned.
    """

    FAMILY: ClassVar[str] = "graph_rag"
    FEATURE_NAME: ClassVar[str] = "graph_passages"
    SELECTOR: ClassVar[str] = "graph_backend"
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"graph_source": "nodes"}
    SCORINGS: ClassVar[tuple[str, ...]] = ("spreading_activation",)

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        inline = None
        if reader.has("nodes") or reader.has("edges"):
            inline = {"nodes": reader.raw("nodes"), "edges": reader.raw("edges")}
        rows = query_rows(reader, data, "nodes", inline, "graph_source")
        top_k = reader.integer("top_k", default=10, minimum=1)
        return_metadata = reader.boolean("return_metadata", default=False)
        settings = cls.read_settings(reader)
        graphs = [(row.query, read_graph(row.items, "" if row.option == "nodes" else row.option)) for row in rows]
        return {cls.FEATURE_NAME: [cls.rank(query, graph, top_k, settings, return_metadata) for query, graph in graphs]}

    @classmethod
    def rank(
        cls, query: str, graph: Graph, top_k: int, settings: Mapping[str, Any], return_metadata: bool = False
    ) -> list[dict[str, Any]]:
        seeds = lexical_scores(query, [node.text for node in graph.nodes])
        if not any(seed > 0.0 for seed in seeds):
            return []
        scores = [float(score) for score in cls.score_nodes(graph, seeds, settings)]
        if len(scores) != len(graph.nodes) or not all(math.isfinite(score) for score in scores):
            raise RankingContractError(f"{cls.__name__} returned {len(scores)} scores for {len(graph.nodes)} nodes")
        hits = [(position, round(score, SCORE_DECIMALS)) for position, score in enumerate(scores)]
        return rank_hits(hits, graph.nodes, top_k, return_metadata=return_metadata)

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {
            "scoring": reader.choice("graph_scoring", cls.SCORINGS, default=cls.SCORINGS[0]),
            "hops": reader.integer("graph_hops", default=2, minimum=0, maximum=10),
            "damping": reader.number("graph_damping", default=0.5, minimum=0.0, maximum=1.0, exclusive_minimum=True),
        }

    @classmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: Mapping[str, Any]) -> Sequence[float]:
        """One score per node (by position) from the query's seed scores; <= 0 means not relevant."""
        raise NotImplementedError


def read_graph(raw: Any, prefix: str) -> Graph:
    """A graph dict ``{"nodes": [...], "edges": [...]}``; option names in errors start with ``prefix``."""
    where = f"{prefix}." if prefix else ""
    if not isinstance(raw, Mapping):
        raise InvalidOptionError(prefix or "graph", raw, "a graph dict {'nodes': [...], 'edges': [...]}")
    if raw.get("nodes") is None:
        raise MissingOptionError(f"{where}nodes", "a list of node documents (or graph_source)")
    nodes = read_documents(raw["nodes"], f"{where}nodes")
    return Graph(tuple(nodes), read_edges(raw.get("edges"), f"{where}edges", nodes))


def read_edges(raw: Any, option: str, nodes: Sequence[Document]) -> tuple[tuple[int, int, float], ...]:
    """Edges are undirected; the same pair listed twice (either way round) adds up its weights."""
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, (list, tuple)):
        raise InvalidOptionError(option, raw, "a list of edges ([source, target] pairs or dicts)")
    position_of = {node.doc_id: position for position, node in enumerate(nodes)}
    merged: dict[tuple[int, int], float] = {}
    for index, item in enumerate(raw):
        first, second, weight = _read_edge(item, f"{option}[{index}]", position_of)
        pair = (min(first, second), max(first, second))
        merged[pair] = merged.get(pair, 0.0) + weight
    return tuple((first, second, weight) for (first, second), weight in merged.items())


def _read_edge(item: Any, where: str, position_of: Mapping[str, int]) -> tuple[int, int, float]:
    if isinstance(item, Mapping):
        if not {"source", "target"} <= set(item) or not set(item) <= {"source", "target", "weight"}:
            raise InvalidOptionError(where, item, f"{EDGE_SHAPE} (keys source, target and optional weight)")
        ends, weight = (item["source"], item["target"]), item.get("weight", 1.0)
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        ends, weight = (item[0], item[1]), 1.0
    else:
        raise InvalidOptionError(where, item, EDGE_SHAPE)
    positions = []
    for end in ends:
        if isinstance(end, bool) or not isinstance(end, (str, int)):
            raise InvalidOptionError(where, item, "edge endpoints that are node doc_ids (str or int)")
        if str(end) not in position_of:
            raise InvalidOptionError(where, item, f"edge endpoints naming nodes; no node has doc_id {str(end)!r}")
        positions.append(position_of[str(end)])
    if positions[0] == positions[1]:
        raise InvalidOptionError(where, item, "an edge between two different nodes (self-loops are not allowed)")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
        raise InvalidOptionError(f"{where}.weight", weight, "a finite number > 0")
    return positions[0], positions[1], float(weight)
