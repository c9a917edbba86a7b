"""The graph_rag contract kit.

Subclass ``GraphRagContractTests`` and implement ``connector_class``; override ``backend_options`` for options
your backend needs in tests (e.g. a ``graph_scoring``). The standard tests come from ``ContractKit``, fed by this
kit's adapter hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest
from mloda.provider import FeatureGroup
from mloda.user import Feature, Options

from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.feature_groups.connectors.graph_rag.triples_knowledge_graph import TriplesKnowledgeGraph
from rag_integration.testing.kit import (
    ContractKit,
    KitItemRows,
    assert_ranked_passages,
    document_texts,
    kit_rows_feature,
)
from rag_integration.testing.runner import run_feature
from rag_integration.testing.visibility import SEEDS, labelled, readable

NODES: list[dict[str, Any]] = [
    {"doc_id": "curie", "text": "Marie Curie won the Nobel Prize in Physics and the Nobel Prize in Chemistry."},
    {"doc_id": "polonium", "text": "Polonium is a radioactive element first isolated in 1898."},
    {"doc_id": "warsaw", "text": "Warsaw is the capital of Poland on the Vistula river."},
    {"doc_id": "sorbonne", "text": "The Sorbonne is a university in Paris."},
    {"doc_id": "lava", "text": "Lava flows from a volcano during an eruption."},
    {"doc_id": "basalt", "text": "Basalt is a rock that forms when lava cools."},
]
EDGES: list[Any] = [
    {"source": "curie", "target": "polonium", "weight": 2.0},
    ["curie", "warsaw"],
    ["sorbonne", "curie"],
    ["lava", "basalt"],
]
TRIPLES: list[list[str]] = [
    ["Marie Curie", "discovered", "Polonium"],
    ["Marie Curie", "was born in", "Warsaw"],
    ["Polonium", "is named after", "Poland"],
    ["Warsaw", "is the capital of", "Poland"],
    ["Basalt", "forms from", "Lava"],
]
ROW_KEYS = {"doc_id", "text", "score", "rank"}


def edge_ends(edge: Any) -> tuple[Any, Any]:
    """The two node ids of an edge given as a ``{"source", "target"}`` dict or a ``[source, target]`` pair."""
    return (edge["source"], edge["target"]) if isinstance(edge, dict) else (edge[0], edge[1])


class GraphRagContractTests(ContractKit):
    """Every graph_rag backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "graph_passages"
    items_option: ClassVar[str | None] = "nodes"

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        mixed = [dict(node, year=1898 if position % 2 else "unknown") for position, node in enumerate(NODES)]
        second = {"nodes": NODES[3:], "edges": [["lava", "basalt"]]}
        return [
            {"query_text": ["Nobel Prize", "zyxwvut"], "nodes": mixed, "edges": EDGES, "return_metadata": True},
            {
                "query_text": ["Nobel Prize", "lava"],
                "graph_source": kit_rows_feature([{"nodes": NODES, "edges": []}, second]),
            },
        ]

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"query_text": "Nobel Prize", "nodes": NODES, "edges": EDGES}

    @classmethod
    def sample_top(cls) -> Any:
        return "curie"

    @classmethod
    def batch_queries(cls) -> list[Any]:
        return ["Nobel Prize", "lava rock", "Poland"]

    @classmethod
    def top_k_request(cls) -> dict[str, Any]:
        return cls.sample_request()

    @classmethod
    def top_k_answer_size(cls) -> tuple[int, int]:
        return 4, 4  # curie and the three nodes reachable from it

    @classmethod
    def duplicate_ids_request(cls, documents: list[dict[str, Any]]) -> dict[str, Any]:
        return {"query_text": "Nobel", "nodes": documents}  # no edges: they would name the kit's nodes

    def check_row(self, row: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> None:
        """Passages of the request's nodes, each reached with a score above zero."""
        assert_ranked_passages(row, document_texts(request["nodes"]), positive=True)

    def rank(self, **options: object) -> list[Any]:
        return self.run(**options)

    def one(self, **options: object) -> list[dict[str, Any]]:
        rows = self.rank(**options)
        assert len(rows) == 1, rows
        return list(rows[0])

    def test_filters_never_leak_and_block_activation(self) -> None:
        nodes = [dict(node, field="physics" if node["doc_id"] in ("curie", "polonium") else "other") for node in NODES]
        unfiltered = self.one(query_text="Nobel Prize", nodes=nodes, edges=EDGES, top_k=10)
        assert unfiltered[0]["doc_id"] == "curie" and "warsaw" in {row["doc_id"] for row in unfiltered}
        without_curie = self.one(query_text="Nobel Prize", nodes=nodes, edges=EDGES, filters={"field": "other"})
        assert without_curie == []  # warsaw and sorbonne were reachable only through curie
        kept = self.one(query_text="Nobel Prize radioactive", nodes=nodes, edges=EDGES, filters={"field": "physics"})
        assert {row["doc_id"] for row in kept} <= {"curie", "polonium"}
        with pytest.raises(InvalidOptionError, match="filters"):
            self.rank(query_text="Nobel", nodes=nodes, edges=EDGES, filters="junk")

    def test_a_hidden_node_passes_no_activation(self) -> None:
        """A node the caller may not read does not exist for them: no rank, and no bonus to its neighbours."""
        nodes = [dict(node, readers=["lab"] if node["doc_id"] == "curie" else ["*"]) for node in NODES]
        query = "Marie Curie Nobel Prize polonium"
        insiders = {row["doc_id"] for row in self.one(query_text=query, nodes=nodes, edges=EDGES, principals=["lab"])}
        assert {"curie", "warsaw", "sorbonne"} <= insiders  # curie's neighbours rank through it
        outsiders = {row["doc_id"] for row in self.one(query_text=query, nodes=nodes, edges=EDGES, principals=["x"])}
        assert outsiders and not outsiders & {"curie", "warsaw", "sorbonne"}

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_rank_the_readable_subgraph(self, seed: int) -> None:
        nodes, principals = labelled(NODES, seed)
        queries = ["Marie Curie polonium", "lava volcano rock", "Warsaw Poland university"]
        got = self.rank(query_text=queries, nodes=nodes, edges=EDGES, principals=principals, top_k=6)
        visible = readable(nodes, principals)
        names = {node["doc_id"] for node in visible}
        edges = [edge for edge in EDGES if set(edge_ends(edge)) <= names]
        assert got == self.rank(query_text=queries, nodes=visible, edges=edges, top_k=6)
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.rank(query_text=queries, nodes=nodes, edges=EDGES)

    def test_ranks_and_scores_are_ordered(self) -> None:
        passages = self.one(query_text="Nobel Prize volcano eruption", nodes=NODES, edges=EDGES)
        assert [passage["rank"] for passage in passages] == list(range(1, len(passages) + 1))
        scores = [passage["score"] for passage in passages]
        assert scores == sorted(scores, reverse=True) and all(score > 0.0 for score in scores)

    def test_expected_top_node_with_margin(self) -> None:
        passages = self.one(query_text="Who won the Nobel Prize?", nodes=NODES, edges=EDGES)
        assert passages[0]["doc_id"] == "curie"
        assert passages[0]["score"] > passages[1]["score"]

    def test_neighbours_rank_through_the_graph(self) -> None:
        ranked = [passage["doc_id"] for passage in self.one(query_text="Nobel Prize", nodes=NODES, edges=EDGES)]
        assert ranked[0] == "curie"
        assert set(ranked) == {"curie", "polonium", "warsaw", "sorbonne"}  # no word of the query in the last three
        assert ranked.index("polonium") < ranked.index("warsaw")  # the heavier edge carries more
        without_edges = self.one(query_text="Nobel Prize", nodes=NODES)
        assert [passage["doc_id"] for passage in without_edges] == ["curie"]

    def test_empty_graph_and_unmatched_query_give_nothing(self) -> None:
        assert self.rank(query_text=["Nobel", "lava"], nodes=[], edges=[]) == [[], []]
        assert self.one(query_text="zyxwvut quasar", nodes=NODES, edges=EDGES) == []

    def test_ties_break_by_doc_id(self) -> None:
        nodes = [{"doc_id": doc_id, "text": "twin comets"} for doc_id in ("b", "c", "a")]
        passages = self.one(query_text="comets", nodes=nodes, edges=[["a", "b"], ["b", "c"], ["c", "a"]])
        assert [passage["doc_id"] for passage in passages] == ["a", "b", "c"]

    def test_pairs_and_dicts_describe_the_same_edges(self) -> None:
        as_dicts = [{"source": "curie", "target": "polonium", "weight": 1}, {"source": "warsaw", "target": "curie"}]
        as_pairs = [["polonium", "curie"], ("curie", "warsaw")]
        assert self.one(query_text="Nobel", nodes=NODES, edges=as_dicts) == self.one(
            query_text="Nobel", nodes=NODES, edges=as_pairs
        )

    def test_int_doc_ids_are_normalised(self) -> None:
        nodes = [{"doc_id": 1, "text": "Nobel laureate"}, {"doc_id": 2, "text": "a quiet village"}]
        passages = self.one(query_text="Nobel", nodes=nodes, edges=[[1, "2"]])
        assert [passage["doc_id"] for passage in passages] == ["1", "2"]

    def test_knowledge_graph_feeds_graph_source(self) -> None:
        kg_options = {"kg_backend": "triples", "triples": TRIPLES}
        graph = run_feature("knowledge_graph", kg_options, {TriplesKnowledgeGraph})[0]
        query = "Who discovered Polonium?"
        inline = self.one(query_text=query, nodes=graph["nodes"], edges=graph["edges"])
        groups: set[type[FeatureGroup]] = {self.connector_class(), TriplesKnowledgeGraph}
        by_name_request = self.request(query_text=query, graph_source="knowledge_graph", **kg_options)
        by_name_in_group = run_feature(self.feature_name, by_name_request, groups, in_group=True)
        by_name_in_context = run_feature(self.feature_name, by_name_request, groups)
        kg_feature = Feature("knowledge_graph", options=Options(context=kg_options))
        by_feature = run_feature(self.feature_name, self.request(query_text=query, graph_source=kg_feature), groups)
        assert by_name_in_group == by_name_in_context == by_feature == [inline]
        ranked = [passage["doc_id"] for passage in inline]
        assert set(ranked[:2]) == {"Polonium", "Marie Curie"}
        assert "Lava" not in ranked and "Basalt" not in ranked

    def test_graph_source_rows_pair_with_queries(self) -> None:
        second = {
            "nodes": [{"doc_id": "x", "text": "lava rock"}, {"doc_id": "y", "text": "cold sea"}],
            "edges": [["x", "y"]],
        }
        upstream = kit_rows_feature([{"nodes": NODES, "edges": EDGES}, second])
        rows = run_feature(
            self.feature_name,
            self.request(query_text=["Nobel Prize", "lava"], graph_source=upstream),
            {self.connector_class(), KitItemRows},
        )
        assert [row[0]["doc_id"] for row in rows] == ["curie", "x"]
        assert [passage["doc_id"] for passage in rows[1]] == ["x", "y"]

    @pytest.mark.parametrize(
        ("options", "error", "option_name"),
        [
            ({"nodes": NODES, "edges": EDGES}, MissingOptionError, "query_text"),
            ({"query_text": "Nobel"}, MissingOptionError, "nodes"),
            ({"query_text": "Nobel", "edges": EDGES}, MissingOptionError, "nodes"),
            ({"query_text": ["Nobel", 1], "nodes": NODES}, InvalidOptionError, "query_text"),
            ({"query_text": "Nobel", "nodes": "curie"}, InvalidOptionError, "nodes"),
            ({"query_text": "Nobel", "nodes": ["curie"]}, InvalidOptionError, r"nodes\[0\]"),
            ({"query_text": "Nobel", "nodes": [{"doc_id": "a"}]}, InvalidOptionError, "text"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": {"curie": "warsaw"}}, InvalidOptionError, "edges"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie", "mars"]]}, InvalidOptionError, "mars"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie", "curie"]]}, InvalidOptionError, "self-loop"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie", "warsaw", "x"]]}, InvalidOptionError, "edges"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": ["curie-warsaw"]}, InvalidOptionError, r"edges\[0\]"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie"]]}, InvalidOptionError, r"edges\[0\]"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie", 2.5]]}, InvalidOptionError, "edges"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [["curie", True]]}, InvalidOptionError, "edges"),
            ({"query_text": "Nobel", "nodes": NODES, "edges": [{"source": "curie"}]}, InvalidOptionError, "edges"),
            (
                {
                    "query_text": "Nobel",
                    "nodes": NODES,
                    "edges": [{"source": "curie", "target": "warsaw", "wieght": 2}],
                },
                InvalidOptionError,
                "edges",
            ),
            ({"query_text": "Nobel", "nodes": NODES, "graph_source": "kg"}, InvalidOptionError, "graph_source"),
            ({"query_text": "Nobel", "nodes": NODES, "graph_hops": -1}, InvalidOptionError, "graph_hops"),
            ({"query_text": "Nobel", "nodes": NODES, "graph_damping": 0}, InvalidOptionError, "graph_damping"),
            ({"query_text": "Nobel", "nodes": NODES, "graph_scoring": "magic"}, InvalidOptionError, "graph_scoring"),
        ],
    )
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        with pytest.raises(error, match=option_name):
            self.rank(**options)

    @pytest.mark.parametrize(
        "weight",
        [
            0,
            -1.0,
            True,
            "2",
            float("nan"),
            float("inf"),
            None.__class__,
            5e-324,
            1e-310,
            pytest.param(10**400, id="10**400"),
        ],
    )
    def test_bad_weight_is_a_typed_error(self, weight: object) -> None:
        edges = [["curie", "polonium"], {"source": "curie", "target": "warsaw", "weight": weight}]
        with pytest.raises(InvalidOptionError, match=r"edges\[1\].weight"):
            self.rank(query_text="Nobel", nodes=NODES, edges=edges)

    @pytest.mark.parametrize(
        "edges",
        [
            [
                {"source": "curie", "target": "warsaw", "weight": 1e308},
                {"source": "warsaw", "target": "curie", "weight": 1e308},
            ],
            [
                {"source": "curie", "target": "warsaw", "weight": 1e308},
                {"source": "polonium", "target": "curie", "weight": 1e308},
            ],
        ],
        ids=["one pair listed twice", "two edges at one node"],
    )
    def test_weights_adding_up_past_the_float_range_are_refused(self, edges: list[Any]) -> None:
        with pytest.raises(InvalidOptionError, match=r"option 'edges'.*'curie' add up past"):
            self.rank(query_text="Nobel", nodes=NODES, edges=edges)

    @pytest.mark.parametrize("scale", [4e307, 1e-300])
    def test_only_relative_weights_matter_even_at_the_ends_of_the_float_range(self, scale: float) -> None:
        def scaled(edge: dict[str, Any] | Sequence[Any]) -> dict[str, Any]:
            source, target, weight = (
                (edge["source"], edge["target"], edge["weight"]) if isinstance(edge, dict) else (*edge, 1.0)
            )
            return {"source": source, "target": target, "weight": weight * scale}

        queries = ["Nobel Prize", "Who won the Nobel Prize in Physics and Chemistry?", "lava rock"]
        plain = self.rank(query_text=queries, nodes=NODES, edges=EDGES)
        extreme = self.rank(query_text=queries, nodes=NODES, edges=[scaled(edge) for edge in EDGES])
        assert [[p["doc_id"] for p in row] for row in extreme] == [[p["doc_id"] for p in row] for row in plain]
        assert [[p["score"] for p in row] for row in extreme] == [
            pytest.approx([p["score"] for p in row], rel=1e-9) for row in plain
        ]
