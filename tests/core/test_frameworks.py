"""Compute frameworks beyond the kits' parity checks: column types, empty results, metadata that JSON cannot hold,
the knowledge-graph source, and frameworks no connector serves."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.duckdb import DuckDBFramework
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.contract.schema import arrow_type, passages_shape
from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.generate import TemplateResponder
from rag_integration.feature_groups.connectors.graph_rag import AdjacencyGraphRag, TriplesKnowledgeGraph
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, TfidfRetriever
from rag_integration.feature_groups.connectors.structured import AggregateSql
from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever
from rag_integration.testing.graph_rag import TRIPLES
from rag_integration.testing.kit import FRAMEWORK_MODULES, KitItemRows, framework_class, kit_rows_feature
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE

FRAMEWORKS = sorted(FRAMEWORK_MODULES)
MIXED = [
    dict(doc, year=2020 if position % 2 else "unknown", tags=["x", position], extra={"n": 1.5, "ok": True})
    for position, doc in enumerate(CORPUS)
]


def native(framework_name: str, feature: str, options: dict[str, Any], *groups: Any) -> Any:
    result = mlodaAPI.run_all(
        [Feature(feature, options=Options(context=options))],
        compute_frameworks=[framework_class(framework_name)],
        plugin_collector=PluginCollector.enabled_feature_groups(set(groups)),
    )
    return result[0]


def logical(arrow_type_: Any) -> str:
    """A type's spelling without what frameworks name differently for the same type (Polars' large lists and
    strings, Spark's list child named ``element``)."""
    return str(arrow_type_).replace("large_", "").replace("element:", "item:")


def arrow_schema_of(frame: Any) -> Any:
    """The frame's schema as Arrow, whatever framework returned it."""
    module = type(frame).__module__
    if module.startswith("pyspark"):
        return frame.toArrow().schema
    if module.startswith("polars"):
        return frame.to_arrow().schema
    if module.startswith("pandas"):
        return pa.Table.from_pandas(frame, preserve_index=False).schema
    return frame.schema


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_passage_columns_have_the_declared_type_even_when_empty(framework_name: str) -> None:
    options = {"retrieve_backend": "bm25s", "query_text": ["zyxw", "qqqq"], "corpus": CORPUS, "return_metadata": True}
    frame = native(framework_name, "retrieved_passages", options, Bm25sRetriever)
    column_type = arrow_schema_of(frame).field("retrieved_passages").type
    assert logical(column_type) == logical(arrow_type(passages_shape(return_metadata=True)))


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_mixed_type_metadata_round_trips_unchanged(framework_name: str) -> None:
    options = {"retrieve_backend": "bm25s", "query_text": "cat dog engine bread tide lava", "corpus": MIXED}
    options.update(top_k=6, return_metadata=True)
    rows = run_feature("retrieved_passages", options, {Bm25sRetriever}, framework=framework_class(framework_name))
    by_id = {doc["doc_id"]: doc for doc in MIXED}
    assert len(rows[0]) == len(MIXED)
    for passage in rows[0]:
        expected = {key: value for key, value in by_id[passage["doc_id"]].items() if key not in ("doc_id", "text")}
        assert passage["metadata"] == expected
        assert type(passage["metadata"]["year"]) is type(expected["year"])


def test_metadata_travels_as_json_text_on_columnar_frameworks() -> None:
    options = {"retrieve_backend": "bm25s", "query_text": "bread", "corpus": MIXED, "return_metadata": True}
    table = native("PyArrowTable", "retrieved_passages", options, Bm25sRetriever)
    passage = table.column("retrieved_passages").to_pylist()[0][0]
    bread = next(doc for doc in MIXED if doc["doc_id"] == "bread")
    assert json.loads(passage["metadata"]) == {key: bread[key] for key in ("lang", "year", "tags", "extra")}


@pytest.mark.parametrize("value", [("a", "tuple"), datetime.date(2020, 1, 1), float("nan"), {1: "int key"}], ids=repr)
def test_metadata_json_cannot_hold_is_refused_not_changed(value: Any) -> None:
    corpus = [{"doc_id": "a", "text": "bread in the oven", "when": value}]
    options = {"retrieve_backend": "bm25s", "query_text": "bread", "corpus": corpus, "return_metadata": True}
    with pytest.raises(InvalidOptionError, match="metadata"):
        native("PyArrowTable", "retrieved_passages", options, Bm25sRetriever)
    rows = run_feature("retrieved_passages", options, {Bm25sRetriever})
    if value == value:  # NaN aside, PythonDict carries any value as it is
        assert rows[0][0]["metadata"]["when"] == value


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_knowledge_graph_and_graph_rag_chain_on_every_framework(framework_name: str) -> None:
    graph = {"kg_backend": "triples", "triples": TRIPLES}
    expected = run_feature("knowledge_graph", graph, {TriplesKnowledgeGraph})
    framework = framework_class(framework_name)
    assert run_feature("knowledge_graph", graph, {TriplesKnowledgeGraph}, framework=framework) == expected
    chain = {"graph_backend": "adjacency", "query_text": "Marie Curie", "graph_source": "knowledge_graph"}
    groups = {TriplesKnowledgeGraph, AdjacencyGraphRag}
    baseline = run_feature("graph_passages", {**graph, **chain}, groups)
    assert baseline[0] and run_feature("graph_passages", {**graph, **chain}, groups, framework=framework) == baseline


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_structured_rows_keep_their_types(framework_name: str) -> None:
    options = {"structured_backend": "aggregate", "table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES}
    options["question"] = ["average salary by city", "list employees in Munich"]
    expected = run_feature("structured_rows", options, {AggregateSql})
    rows = run_feature("structured_rows", options, {AggregateSql}, framework=framework_class(framework_name))
    assert rows == expected and any(row["rating"] is None for row in rows[1]["rows"])


def test_a_framework_no_connector_serves_is_refused_by_name() -> None:
    options = {"rerank_backend": "lexical", "query_text": "cat", "candidates": CORPUS}
    with pytest.raises(ValueError, match="compute framework"):
        mlodaAPI.run_all(
            [Feature("reranked_passages", options=Options(context=options))],
            compute_frameworks=[DuckDBFramework],
            plugin_collector=PluginCollector.enabled_feature_groups({LexicalReranker}),
        )


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_corpus_source_reads_documents_from_a_native_frame(framework_name: str) -> None:
    options = {
        "retrieve_backend": "tfidf",
        "query_text": ["lava", "bread oven"],
        "corpus_source": kit_rows_feature(CORPUS),
    }
    options["return_metadata"] = True
    groups = {TfidfRetriever, KitItemRows}
    expected = run_feature("retrieved_passages", options, groups)
    assert [ranking[0]["doc_id"] for ranking in expected] == ["volcano", "bread"]
    assert run_feature("retrieved_passages", options, groups, framework=framework_class(framework_name)) == expected


@pytest.mark.parametrize("framework_name", FRAMEWORKS)
def test_retrieve_rerank_generate_chain_with_metadata(framework_name: str) -> None:
    queries = ["engine oil for the car", "moon tide"]
    retrieve = Feature(
        "retrieved_passages",
        options=Options(
            context={
                "retrieve_backend": "bm25s",
                "query_text": queries,
                "corpus": MIXED,
                "top_k": 3,
                "return_metadata": True,
            }
        ),
    )
    rerank = Feature(
        "reranked_passages",
        options=Options(
            context={
                "rerank_backend": "lexical",
                "query_text": queries,
                "candidates_source": retrieve,
                "top_k": 2,
                "return_metadata": True,
            }
        ),
    )
    options = {"generate_backend": "template", "query_text": queries, "passages_source": rerank}
    groups = {Bm25sRetriever, LexicalReranker, TemplateResponder}
    expected = run_feature("generated_answer", options, groups)
    assert expected[0]["citations"][0] == "engine"
    assert run_feature("generated_answer", options, groups, framework=framework_class(framework_name)) == expected


def test_stages_run_on_python_dict_and_the_store_answers_on_another_framework(tmp_path: Path) -> None:
    documents = [dict(doc, year=2020 if position % 2 else "unknown") for position, doc in enumerate(CORPUS)]
    stage_options = {"document_source": "inline", "documents": documents, "chunker": "sentence"}
    stage_options.update(embedding_model="hash", vector_store="faiss", index_dir=str(tmp_path))
    frameworks = [framework_class("PyArrowTable"), PythonDictFramework]
    built = mlodaAPI.run_all(
        [Feature("docs__chunked__embedded__indexed", options=Options(context=stage_options))],
        compute_frameworks=frameworks,
        plugin_collector=PluginCollector.enabled_feature_groups(set(STAGES)),
    )
    assert isinstance(built[0], dict)  # the stages declare PythonDict alone
    options = {"retrieve_backend": "vector_store", "index_dir": str(tmp_path), "query_text": "engine oil"}
    options["embedding_model"] = "hash"
    options["return_metadata"] = True
    table = mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=options))],
        compute_frameworks=frameworks,
        plugin_collector=PluginCollector.enabled_feature_groups({VectorStoreRetriever}),
    )[0]
    passage = table.column("retrieved_passages").to_pylist()[0][0]
    assert passage["doc_id"] == "engine#0" and json.loads(passage["metadata"])["year"] == "unknown"
