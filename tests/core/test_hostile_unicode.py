"""Text that is not valid Unicode (a lone surrogate) is refused the same way by every component: an
``InvalidTextError`` (an ``InvalidOptionError``) naming the option, raised where the text is read, before any
tokenizer, embedder or database sees it. Valid text in any script passes unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.core.errors import ConnectorError, InvalidOptionError
from rag_integration.core.indexes.embedders import HashEmbedder, get_embedder
from rag_integration.core.unicode_text import InvalidTextError, require_valid_text, surrogate_position
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.connectors.graph_rag import TriplesKnowledgeGraph
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.feature_groups.connectors.structured import AggregateSql
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE

BAD = "engine oil\udc80"
CORPUS = [
    {"doc_id": "oil", "text": "Change the engine oil every 10,000 km."},
    {"doc_id": "bread", "text": "Sourdough bread needs a starter."},
]
BAD_CORPUS = [CORPUS[0], {"doc_id": "bad", "text": "Tyres need air " + BAD}]
RETRIEVERS = {
    "bm25s": (Bm25sRetriever, {}),
    "tfidf": (TfidfRetriever, {}),
    "faiss": (FaissDenseRetriever, {"embedding_model": "minilm"}),
    "hybrid_rrf": (HybridRrfRetriever, {"embedding_model": "minilm"}),
}


def refused(call: Any, option: str) -> InvalidTextError:
    with pytest.raises(InvalidTextError) as caught:
        call()
    assert caught.value.option == option
    assert f"U+{caught.value.code_point:04X}" in str(caught.value) and f"option '{option}'" in str(caught.value)
    assert "errors='replace'" in str(caught.value)
    assert isinstance(caught.value, InvalidOptionError) and isinstance(caught.value, ConnectorError)
    return caught.value


@pytest.mark.parametrize(
    "text",
    ["engine oil", "café crème", "机油更换间隔", "زيت المحرك", "इंजन तेल", "emoji \U0001f600 ok", "", "\ufffd"],
)
def test_valid_text_in_any_script_passes_unchanged(text: str) -> None:
    assert surrogate_position(text) is None
    assert require_valid_text(text, "query_text") is text


@pytest.mark.parametrize(
    ("text", "position"), [(BAD, 10), ("\ud800", 0), ("机油\udfff", 2), ("pair split \ud83d\ude00", 11)]
)
def test_a_lone_surrogate_is_found_where_it_is(text: str, position: int) -> None:
    assert surrogate_position(text) == position
    assert refused(lambda: require_valid_text(text, "x"), "x").position == position


@pytest.mark.parametrize("backend", sorted(RETRIEVERS))
def test_every_retriever_refuses_a_bad_query(backend: str) -> None:
    """Before this check, MiniLM's tokenizer raised a bare ``TypeError`` for faiss and hybrid_rrf."""
    group, options = RETRIEVERS[backend]
    request = {"retrieve_backend": backend, "corpus": CORPUS, **options}
    refused(
        lambda: run_feature("retrieved_passages", {**request, "query_text": ["oil", BAD]}, {group}), "query_text[1]"
    )
    refused(lambda: run_feature("retrieved_passages", {**request, "query_text": BAD}, {group}), "query_text")


@pytest.mark.parametrize("backend", sorted(RETRIEVERS))
def test_every_retriever_refuses_a_bad_document(backend: str) -> None:
    group, options = RETRIEVERS[backend]
    request = {"retrieve_backend": backend, "corpus": BAD_CORPUS, "query_text": "oil", **options}
    refused(lambda: run_feature("retrieved_passages", request, {group}), "corpus[1].text")


def test_a_bad_doc_id_is_refused() -> None:
    corpus = [CORPUS[0], {"doc_id": "id\udc80", "text": "fine"}]
    request = {"retrieve_backend": "bm25s", "corpus": corpus, "query_text": "oil"}
    refused(lambda: run_feature("retrieved_passages", request, {Bm25sRetriever}), "corpus[1].doc_id")


@pytest.mark.parametrize("model", ["minilm", "hash"])
def test_the_pipeline_embedding_stage_refuses_a_bad_document(model: str) -> None:
    options = {"document_source": "inline", "documents": BAD_CORPUS, "embedding_model": model}
    refused(lambda: run_feature("docs__embedded", options, set(STAGES)), "documents[1].text")


@pytest.mark.parametrize("embedder", [get_embedder("minilm"), HashEmbedder()])
def test_the_embedders_themselves_refuse_instead_of_a_bare_type_error(embedder: Any) -> None:
    refused(lambda: embedder.embed(["fine", BAD]), "text to embed[1]")


@pytest.mark.parametrize("group", [ExtractiveResponder, TemplateResponder])
def test_generate_refuses_a_bad_query_or_passage(group: Any) -> None:
    request = {"generate_backend": group.BACKEND, "passages": CORPUS}
    refused(lambda: run_feature("generated_answer", {**request, "query_text": BAD}, {group}), "query_text")
    request = {**request, "passages": BAD_CORPUS, "query_text": "oil"}
    refused(lambda: run_feature("generated_answer", request, {group}), "passages[1].text")


def test_rerank_refuses_a_bad_query_or_candidate() -> None:
    request = {"rerank_backend": "lexical", "candidates": CORPUS}
    refused(lambda: run_feature("reranked_passages", {**request, "query_text": BAD}, {LexicalReranker}), "query_text")
    request = {**request, "candidates": BAD_CORPUS, "query_text": "oil"}
    refused(lambda: run_feature("reranked_passages", request, {LexicalReranker}), "candidates[1].text")


def test_structured_refuses_a_bad_question_with_the_same_error() -> None:
    request = {"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "structured_backend": "aggregate"}
    refused(lambda: run_feature("structured_rows", {**request, "question": BAD}, {AggregateSql}), "question")


def test_structured_refuses_a_bad_table_value_with_the_same_error() -> None:
    rows = [{**EMPLOYEES[0], "city": "Berlin\udc80"}]
    request = {"table_name": TABLE, "columns": COLUMNS, "rows": rows, "structured_backend": "aggregate"}
    refused(
        lambda: run_feature("structured_rows", {**request, "question": "how many employees"}, {AggregateSql}),
        "rows[0].city",
    )


def test_the_knowledge_graph_refuses_a_bad_triple() -> None:
    triples = [["Marie Curie", "discovered", "polonium"], ["Marie Curie", "won", "Nobel\udc80"]]
    refused(
        lambda: run_feature("knowledge_graph", {"kg_backend": "triples", "triples": triples}, {TriplesKnowledgeGraph}),
        "triples[1][2]",
    )
