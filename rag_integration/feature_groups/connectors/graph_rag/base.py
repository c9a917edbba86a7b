"""The graph_rag contract: nodes are documents, edges are undirected and weighted; the query seeds the nodes it
matches (BM25 over the node texts) and the graph carries that relevance to their neighbours. Backends fill one
hook, ``score_nodes``; the base validates the graph, seeds it, owns the spreading-activation rule and ranks the
result."""

from __future__ import annotations

import math
import sys
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.queries import query_rows
from rag_integration.core.contract.request_options import FILTERS, RETURN_METADATA, TOP_K, read_metadata_filter
from rag_integration.core.contract.sources import GRAPH, QUERIES, Source
from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import Document, read_documents
from rag_integration.core.documents.visibility import Visibility, label_of
from rag_integration.core.errors import InvalidOptionError, MissingOptionError, RankingContractError, short_repr
from rag_integration.core.options import OptionReader, SettingsT, option, option_keys
from rag_integration.core.ranking.passages import rank_hits
from rag_integration.core.text.lexical import lexical_scores

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame

EDGE_SHAPE = "an edge: a [source, target] pair or a {'source', 'target', 'weight'} dict"
SCORE_DECIMALS = 12  # rounding scores keeps floating-point summation order from reordering equal scores
# The smallest normal float: below it, 1 / weight overflows and networkx's PageRank cannot normalise the edges.
MIN_WEIGHT = sys.float_info.min
WEIGHT_RANGE = f"a finite number >= {MIN_WEIGHT!r} (the smallest normal float)"

WeightedNeighbours = Callable[[int], Iterable[tuple[int, float]]]


@dataclass(frozen=True)
class Graph:
    """Validated nodes and merged undirected edges ``(position, position, weight)`` in first-seen order."""

    nodes: tuple[Document, ...]
    edges: tuple[tuple[int, int, float], ...]

    def restricted_to(self, kept: list[int]) -> Graph:
        """The subgraph of the nodes at ``kept`` (those passing ``filters``, or those the caller may read): a node
        left out neither ranks nor passes activation on, and its edges are gone."""
        new_position = {old: new for new, old in enumerate(kept)}
        edges = tuple(
            (new_position[first], new_position[second], weight)
            for first, second, weight in self.edges
            if first in new_position and second in new_position
        )
        return Graph(tuple(self.nodes[position] for position in kept), edges)

    def neighbours(self) -> list[dict[int, float]]:
        adjacency: list[dict[int, float]] = [{} for _ in self.nodes]
        for first, second, weight in self.edges:
            adjacency[first][second] = weight
            adjacency[second][first] = weight
        return adjacency


SCORINGS = ("spreading_activation",)
"""How every graph backend can score nodes; a backend may offer more (``networkx``: personalized PageRank)."""


@dataclass(frozen=True)
class GraphSettings:
    """The canonical ranking's options, shared by every graph backend."""

    scoring: str = option(
        "graph_scoring",
        "choice",
        "how nodes are scored (`adjacency`)",
        default="spreading_activation",
        choices=SCORINGS,
    )
    hops: int = option(
        "graph_hops", "integer", "spreading steps (0: rank by the query match alone)", default=2, minimum=0, maximum=10
    )
    damping: float = option(
        "graph_damping",
        "number",
        "share of a node's activation passed on per step",
        default=0.5,
        minimum=0.0,
        maximum=1.0,
        exclusive_minimum=True,
    )


class BaseGraphRagConnector(SelectorFeatureGroup, Generic[SettingsT]):
    """``graph_passages``: nodes ranked for the query (``nodes`` + ``edges``, or the rows of ``graph_source``).

    Default scoring (``graph_scoring="spreading_activation"``) starts from each node's BM25 match and, for
    ``graph_hops`` steps, passes ``graph_damping`` of every node's activation to its neighbours in proportion to
    edge weight; a node's score is all the activation it received. Only nodes with a positive score are returned.
    """

    FAMILY: ClassVar[str] = "graph_rag"
    CONTRACT_VERSION: ClassVar[str] = "1.0"
    FEATURE_NAME: ClassVar[str] = "graph_passages"
    SELECTOR: ClassVar[str] = "graph_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = ("edges", *option_keys(TOP_K, FILTERS, RETURN_METADATA))
    """``edges`` goes with the inline ``nodes`` of ``GRAPH``."""
    SOURCES: ClassVar[tuple[Source, ...]] = (QUERIES, GRAPH)
    SETTINGS: ClassVar[type[Any] | None] = GraphSettings

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        inline = None
        if reader.has("nodes") or reader.has("edges"):
            inline = {"nodes": reader.raw("nodes"), "edges": reader.raw("edges")}
        rows = query_rows(reader, data, "nodes", inline, "graph_source")
        top_k = TOP_K.read(reader)
        return_metadata = RETURN_METADATA.read(reader)
        settings = cls.read_settings(reader)
        metadata_filter = read_metadata_filter(reader)
        graphs = [(row.query, read_graph(row.items, "" if row.option == "nodes" else row.option)) for row in rows]
        nodes = [list(enumerate(graph.nodes)) for _, graph in graphs]
        readable = Visibility.read(reader).visible_lists(nodes, lambda node: label_of(node[1].metadata), "nodes")
        if any(len(kept) < len(all_nodes) for kept, all_nodes in zip(readable, nodes, strict=True)):
            graphs = [
                (query, graph.restricted_to([position for position, _ in kept]))
                for (query, graph), kept in zip(graphs, readable, strict=True)
            ]
        if metadata_filter is not None:
            graphs = [(query, graph.restricted_to(metadata_filter.positions(graph.nodes))) for query, graph in graphs]
        ranked = []
        for position, (query, graph) in enumerate(graphs):
            check_deadline(f"before query {position + 1} of {len(graphs)} was ranked")
            ranked.append(cls.rank(query, graph, top_k, settings, return_metadata))
        return {cls.FEATURE_NAME: ranked}

    @classmethod
    def rank(
        cls, query: str, graph: Graph, top_k: int, settings: SettingsT, return_metadata: bool = False
    ) -> list[dict[str, Any]]:
        seeds = lexical_scores(query, [node.text for node in graph.nodes])
        if not any(seed > 0.0 for seed in seeds):
            return []
        scores = [float(score) for score in cls.score_nodes(graph, seeds, settings)]
        if len(scores) != len(graph.nodes):
            raise RankingContractError(f"{cls.__name__} returned {len(scores)} scores for {len(graph.nodes)} nodes")
        broken = [graph.nodes[position].doc_id for position, score in enumerate(scores) if not math.isfinite(score)]
        if broken:
            raise RankingContractError(f"{cls.__name__} returned a non-finite score for node(s) {short_repr(broken)}")
        hits = [(position, round(score, SCORE_DECIMALS)) for position, score in enumerate(scores)]
        return rank_hits(hits, graph.nodes, top_k, return_metadata=return_metadata)

    @classmethod
    @abstractmethod
    def score_nodes(cls, graph: Graph, seeds: list[float], settings: SettingsT) -> Sequence[float]:
        """One score per node (by position) from the query's seed scores; <= 0 means not relevant.

        Args:
            graph: the nodes (documents) and weighted undirected edges, after the request's ``filters``.
            seeds: each node's lexical match with the query, by position; at least one is positive.
            settings: what ``read_settings`` returned for the request.

        The base checks one finite score per node (else ``RankingContractError``), drops scores <= 0, ranks best
        first with ties broken by doc_id, and cuts at ``top_k``.
        """


def spreading_activation(
    seeds: Sequence[float], neighbours: WeightedNeighbours, hops: int, damping: float
) -> list[float]:
    """The canonical ranking, written once for every backend: ``neighbours(node)`` yields ``(neighbour, weight)``.

    For ``hops`` steps every active node passes ``damping`` of its activation on, each neighbour receiving the
    share ``weight / the node's total edge weight``; a node scores its seed plus all the activation it received.
    Totals are exact sums (``math.fsum``), so the order a graph library lists neighbours in cannot change them.
    """
    shares = []
    for node in range(len(seeds)):
        weighted = list(neighbours(node))
        strength = math.fsum(weight for _, weight in weighted)
        shares.append([(neighbour, weight / strength) for neighbour, weight in weighted])
    total, wave = list(seeds), list(seeds)
    for _ in range(hops):
        received = [0.0] * len(seeds)
        for node, activation in enumerate(wave):
            if activation > 0.0:
                for neighbour, share in shares[node]:
                    received[neighbour] += damping * activation * share
        wave = received
        total = [score + extra for score, extra in zip(total, received)]
    return total


def read_graph(raw: object, prefix: str) -> Graph:
    """A graph dict ``{"nodes": [...], "edges": [...]}``; option names in errors start with ``prefix``."""
    where = f"{prefix}." if prefix else ""
    if not isinstance(raw, Mapping):
        raise InvalidOptionError(prefix or "graph", raw, "a graph dict {'nodes': [...], 'edges': [...]}")
    if raw.get("nodes") is None:
        raise MissingOptionError(f"{where}nodes", "a list of node documents (or graph_source)")
    nodes = read_documents(raw["nodes"], f"{where}nodes")
    return Graph(tuple(nodes), read_edges(raw.get("edges"), f"{where}edges", nodes))


def read_edges(raw: object, option: str, nodes: Sequence[Document]) -> tuple[tuple[int, int, float], ...]:
    """Edges are undirected; the same pair listed twice (either way round) adds up its weights.

    Every node's total edge weight must stay a finite float (which bounds every merged pair too): past it the
    share ``weight / total`` that spreading activation and PageRank pass along would be lost to overflow.
    """
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, (list, tuple)):
        raise InvalidOptionError(option, raw, "a list of edges ([source, target] pairs or dicts)")
    position_of = {node.doc_id: position for position, node in enumerate(nodes)}
    listed: dict[tuple[int, int], list[float]] = {}
    weights_at: list[list[float]] = [[] for _ in nodes]
    for index, item in enumerate(raw):
        first, second, weight = _read_edge(item, f"{option}[{index}]", position_of)
        listed.setdefault((min(first, second), max(first, second)), []).append(weight)
        weights_at[first].append(weight)
        weights_at[second].append(weight)
    for position, weights in enumerate(weights_at):
        if not _finite_total(weights):
            raise InvalidOptionError(
                option,
                weights,
                f"edge weights that add up to a finite float at every node (a pair listed twice adds up too); "
                f"the weights at node {nodes[position].doc_id!r} add up past {sys.float_info.max!r}",
            )
    return tuple((first, second, math.fsum(weights)) for (first, second), weights in listed.items())


def _finite_total(weights: list[float]) -> bool:
    """Whether the exact sum of ``weights`` (``math.fsum``, which raises rather than overflow) is a finite float."""
    try:
        return math.isfinite(math.fsum(weights))
    except OverflowError:
        return False


def _read_edge(item: object, where: str, position_of: Mapping[str, int]) -> tuple[int, int, float]:
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
    return positions[0], positions[1], _read_weight(weight, f"{where}.weight")


def _read_weight(weight: object, option: str) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise InvalidOptionError(option, weight, WEIGHT_RANGE)
    try:
        value = float(weight)
    except OverflowError:  # an int beyond the float range
        raise InvalidOptionError(option, weight, WEIGHT_RANGE) from None
    if not math.isfinite(value) or value < MIN_WEIGHT:
        raise InvalidOptionError(option, weight, WEIGHT_RANGE)
    return value
