"""The triples knowledge-graph source: its graph shape, its errors, and both graph backends reading it."""

from __future__ import annotations

from typing import Any

import pytest
from mloda.user import Feature, Options

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.feature_groups.connectors.graph_rag import (
    AdjacencyGraphRag,
    NetworkxGraphRag,
    TriplesKnowledgeGraph,
)
from rag_integration.testing.graph_rag import TRIPLES
from rag_integration.testing.runner import run_feature


def knowledge_graph(triples: Any) -> dict[str, Any]:
    rows = run_feature("knowledge_graph", {"kg_backend": "triples", "triples": triples}, {TriplesKnowledgeGraph})
    assert len(rows) == 1
    return dict(rows[0])


def test_entities_become_nodes_and_links_become_weighted_edges() -> None:
    graph = knowledge_graph(
        [
            ["Marie Curie", "discovered", "Polonium"],
            ["Polonium", "was named by", "Marie Curie"],
            ["Marie Curie", "discovered", "Polonium"],
            [" Polonium ", "is", "Polonium"],
            ["Marie Curie", "worked in", "Paris"],
        ]
    )
    assert [node["doc_id"] for node in graph["nodes"]] == ["Marie Curie", "Polonium", "Paris"]
    assert graph["nodes"][2] == {"doc_id": "Paris", "text": "Marie Curie worked in Paris."}
    assert graph["nodes"][1]["text"] == (
        "Marie Curie discovered Polonium. Polonium was named by Marie Curie. Polonium is Polonium."
    )
    assert graph["edges"] == [
        {"source": "Marie Curie", "target": "Polonium", "weight": 2.0},  # two distinct triples, the repeat counted once
        {"source": "Marie Curie", "target": "Paris", "weight": 1.0},
    ]  # the self-referential fact stays in the node's text but makes no edge


def test_no_triples_make_an_empty_graph() -> None:
    assert knowledge_graph([]) == {"nodes": [], "edges": []}


@pytest.mark.parametrize(
    ("triples", "option"),
    [
        ("Curie discovered Polonium", "triples"),
        ({"Curie": "Polonium"}, "triples"),
        ([["Curie", "discovered"]], r"triples\[0\]"),
        ([["Curie", "discovered", "Polonium", "1898"]], r"triples\[0\]"),
        ([["Curie", "discovered", 84]], r"triples\[0\]"),
        ([["Curie", " ", "Polonium"]], r"triples\[0\]"),
        (["Curie discovered Polonium"], r"triples\[0\]"),
    ],
)
def test_bad_triples_are_typed_errors(triples: Any, option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        knowledge_graph(triples)


def test_missing_triples_is_a_missing_option() -> None:
    with pytest.raises(MissingOptionError, match="triples"):
        run_feature("knowledge_graph", {"kg_backend": "triples"}, {TriplesKnowledgeGraph})


def test_both_graph_backends_answer_over_the_knowledge_graph() -> None:
    source = Feature("knowledge_graph", options=Options(context={"kg_backend": "triples", "triples": TRIPLES}))
    answers = [
        run_feature(
            "graph_passages",
            {"graph_backend": backend.BACKEND, "query_text": "capital city", "graph_source": source},
            {backend, TriplesKnowledgeGraph},
        )
        for backend in (AdjacencyGraphRag, NetworkxGraphRag)
    ]
    assert answers[0] == answers[1]
    ranked = [passage["doc_id"] for passage in answers[0][0]]
    assert ranked[0] in {"Warsaw", "Poland"} and "Polonium" in ranked  # reached only through the graph
