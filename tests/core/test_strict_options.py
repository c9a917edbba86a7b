"""Strict options through ``mlodaAPI.run_all``: declared keys, selectors, ``deadline_ms``, the index cache as a
process setting, and no repeated mloda traceback for our typed errors."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mloda.provider import DefaultOptionKeys, FeatureGroup, PropertySpec, property_spec
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

import rag_integration
from rag_integration.core import deadline as deadline_module
from rag_integration.core.contract.declarations import check_request_options
from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.mloda_logging import MLODA_RUN_LOGGER, ConnectorErrorTracebackFilter
from rag_integration.core.deadline import Budget, Deadline, deadline_scope, within_deadline
from rag_integration.core.indexes import retention
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexCache, IndexKey
from rag_integration.feature_groups.connectors.errors import (
    ConnectorError,
    DeadlineExceededError,
    InvalidOptionError,
    MissingOptionError,
    UnknownBackendError,
    UnknownOptionError,
)
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder
from rag_integration.feature_groups.connectors.graph_rag import AdjacencyGraphRag, TriplesKnowledgeGraph
from rag_integration.feature_groups.connectors.orchestrator import HaystackOrchestrator, R2RFixtureOrchestrator
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever, TfidfRetriever
from rag_integration.feature_groups.connectors.structured import RuleBasedSql
from rag_integration.feature_groups.rag_pipeline.chunking import SentenceChunker
from rag_integration.feature_groups.rag_pipeline.documents import InlineDocumentSource
from rag_integration.testing.runner import run_feature

CORPUS = [
    {"doc_id": "a", "text": "Cats sit on warm mats."},
    {"doc_id": "b", "text": "Dogs run in the park."},
]
RETRIEVE = {"retrieve_backend": "bm25s", "query_text": "cats", "corpus": CORPUS}
STRUCTURED = {
    "structured_backend": "rule_based",
    "question": "how many rows",
    "table_name": "pets",
    "columns": ["name"],
    "rows": [{"name": "Tom"}],
}


@pytest.mark.parametrize(
    ("feature", "options", "groups", "typo", "suggestion"),
    [
        ("retrieved_passages", {**RETRIEVE, "top_K": 1}, {Bm25sRetriever}, "top_K", "top_k"),
        (
            "retrieved_passages",
            {**RETRIEVE, "retrieve_backend": "faiss", "embeding_model": "hash"},
            {FaissDenseRetriever},
            "embeding_model",
            "embedding_model",
        ),
        ("structured_rows", {**STRUCTURED, "max_rows": 5}, {RuleBasedSql}, "max_rows", "max_result_rows"),
        (
            "docs__chunked",
            {"document_source": "inline", "documents": CORPUS, "chunker": "sentence", "sentence_per_chunk": 2},
            {InlineDocumentSource, SentenceChunker},
            "sentence_per_chunk",
            "sentences_per_chunk",
        ),
    ],
)
def test_a_misspelt_key_is_refused_with_a_suggestion(
    feature: str, options: dict[str, Any], groups: set[type[FeatureGroup]], typo: str, suggestion: str
) -> None:
    with pytest.raises(UnknownOptionError, match=f"'{typo}'.*did you mean '{suggestion}'") as caught:
        run_feature(feature, options, groups)
    assert caught.value.option == typo
    assert isinstance(caught.value, InvalidOptionError)


def test_a_key_of_a_backend_that_is_not_selected_is_refused() -> None:
    with pytest.raises(UnknownOptionError, match="tfidf_ngram_max"):
        run_feature("retrieved_passages", {**RETRIEVE, "tfidf_ngram_max": 2}, {Bm25sRetriever, TfidfRetriever})


def test_an_explicit_none_is_an_error_not_the_default() -> None:
    with pytest.raises(InvalidOptionError, match="top_k") as caught:
        run_feature("retrieved_passages", {**RETRIEVE, "top_k": None}, {Bm25sRetriever})
    assert not isinstance(caught.value, UnknownOptionError)


@pytest.mark.parametrize("in_group", [False, True])
def test_a_misspelt_backend_value_lists_the_enabled_ones(in_group: bool) -> None:
    with pytest.raises(UnknownBackendError, match=r"'bm25z'.*'bm25s', 'tfidf'.*did you mean 'bm25s'") as caught:
        run_feature("retrieved_passages", {**RETRIEVE, "retrieve_backend": "bm25z"}, {Bm25sRetriever, TfidfRetriever})
    assert caught.value.valid == ("bm25s", "tfidf")


def test_a_backend_left_out_of_the_plugin_collector_is_named() -> None:
    with pytest.raises(
        UnknownBackendError, match="TfidfRetriever, which exists but is not enabled in the PluginCollector"
    ):
        run_feature("retrieved_passages", {**RETRIEVE, "retrieve_backend": "tfidf"}, {Bm25sRetriever})


def test_a_misspelt_selector_key_is_a_missing_selector_with_a_hint() -> None:
    options = {"retrieve_backnd": "bm25s", "query_text": "cats", "corpus": CORPUS}
    with pytest.raises(MissingOptionError, match=r"retrieve_backend.*'bm25s'.*'retrieve_backnd' looks like"):
        run_feature("retrieved_passages", options, {Bm25sRetriever})


def test_a_missing_selector_lists_the_backends() -> None:
    with pytest.raises(MissingOptionError, match=r"'retrieve_backend' is required.*'bm25s', 'tfidf'"):
        run_feature("retrieved_passages", {"query_text": "cats", "corpus": CORPUS}, {Bm25sRetriever, TfidfRetriever})


def test_keys_forwarded_along_a_chain_are_checked_against_the_whole_chain() -> None:
    options = {
        **RETRIEVE,
        "stemmer": False,  # read by the upstream retriever only
        "rerank_backend": "lexical",
        "candidates_source": "retrieved_passages",
        "lexical_k1": 1.0,  # read by the reranker only
        "top_k": 2,
    }
    rows = run_feature("reranked_passages", options, {Bm25sRetriever, LexicalReranker})
    assert rows[0][0]["doc_id"] == "a"


def test_stage_keys_pass_through_a_pipeline_chain() -> None:
    options = {
        "document_source": "inline",
        "documents": CORPUS,
        "chunker": "sentence",
        "sentences_per_chunk": 1,
        "retrieve_backend": "bm25s",
        "query_text": "cats",
        "corpus_source": "docs__chunked",
    }
    rows = run_feature("retrieved_passages", options, {InlineDocumentSource, SentenceChunker, Bm25sRetriever})
    assert rows[0][0]["doc_id"].startswith("a")


class UserQueries(FeatureGroup):
    """A user's own upstream group; it declares the option it reads in mloda's ``PROPERTY_MAPPING``."""

    PROPERTY_MAPPING: ClassVar[dict[str, PropertySpec] | None] = {"user_query_list": property_spec("the queries")}

    @classmethod
    def match_feature_group_criteria(cls, feature_name: Any, options: Any, data_access_collection: Any = None) -> bool:
        return str(feature_name) == "user_queries"

    def input_features(self, options: Any, feature_name: Any) -> None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: Any) -> Any:
        return {"user_queries": list(next(iter(features.features)).options.get("user_query_list"))}


def test_a_key_declared_by_a_user_group_in_the_chain_is_accepted() -> None:
    options = {"retrieve_backend": "bm25s", "queries_source": "user_queries", "corpus": CORPUS, "top_k": 1}
    rows = run_feature("retrieved_passages", {**options, "user_query_list": ["dogs"]}, {Bm25sRetriever, UserQueries})
    assert rows[0][0]["doc_id"] == "b"
    with pytest.raises(UnknownOptionError, match=r"user_query_lst.*did you mean 'user_query_list'"):
        run_feature("retrieved_passages", {**options, "user_query_lst": ["dogs"]}, {Bm25sRetriever, UserQueries})


def test_mloda_own_keys_are_never_refused() -> None:
    mloda_keys = {key.value: "x" for key in DefaultOptionKeys}
    options = Options(group={"retrieve_backend": "bm25s", **mloda_keys}, context={"query_text": "q"})
    check_request_options(options, SelectorFeatureGroup.loaded_backends())


@pytest.fixture
def clock_jumps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reading of the deadline clock is 10 s after the last, so any deadline_ms passes at its first check."""
    ticks = itertools.count(0.0, 10.0)
    monkeypatch.setattr(deadline_module, "_clock", lambda: next(ticks))


KG = {"kg_backend": "triples", "triples": [["Marie Curie", "discovered", "polonium"]]}
FAMILIES = [
    ("retrieved_passages", RETRIEVE, {Bm25sRetriever}),
    ("reranked_passages", {"rerank_backend": "lexical", "query_text": "cats", "candidates": CORPUS}, {LexicalReranker}),
    (
        "generated_answer",
        {"generate_backend": "extractive", "query_text": "cats", "passages": CORPUS},
        {ExtractiveResponder},
    ),
    ("graph_passages", {"graph_backend": "adjacency", "query_text": "cats", "nodes": CORPUS}, {AdjacencyGraphRag}),
    ("structured_rows", STRUCTURED, {RuleBasedSql}),
    (
        "orchestrated_answer",
        {"orchestrator_backend": "r2r", "query_text": "q", "corpus": CORPUS},
        {R2RFixtureOrchestrator},
    ),
    (
        "orchestrated_answer",
        {"orchestrator_backend": "haystack", "query_text": "cats", "corpus": CORPUS},
        {HaystackOrchestrator},
    ),
    ("knowledge_graph", KG, {TriplesKnowledgeGraph}),
    (
        "docs__chunked",
        {"document_source": "inline", "documents": CORPUS, "chunker": "sentence"},
        {InlineDocumentSource, SentenceChunker},
    ),
]


@pytest.mark.parametrize(("feature", "options", "groups"), FAMILIES, ids=lambda value: str(value)[:30])
def test_deadline_ms_stops_every_family(
    clock_jumps: None, feature: str, options: dict[str, Any], groups: set[type[FeatureGroup]]
) -> None:
    with pytest.raises(DeadlineExceededError, match="deadline_ms"):
        run_feature(feature, {**options, "deadline_ms": 1}, groups)


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100"])
def test_deadline_ms_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="deadline_ms"):
        run_feature("retrieved_passages", {**RETRIEVE, "deadline_ms": bad}, {Bm25sRetriever})


def test_a_generous_deadline_changes_nothing() -> None:
    with_deadline = run_feature("retrieved_passages", {**RETRIEVE, "deadline_ms": 60_000}, {Bm25sRetriever})
    assert with_deadline == run_feature("retrieved_passages", RETRIEVE, {Bm25sRetriever})


def test_a_family_time_limit_is_cut_to_the_deadline_and_reported_against_it() -> None:
    seen: list[float] = []

    def slow_step(limit: float) -> None:
        seen.append(limit)
        raise DeadlineExceededError("option 'sql_time_limit' ran out")

    deadline = Deadline(limit_ms=50, started=deadline_module._clock())
    with deadline_scope(deadline), pytest.raises(DeadlineExceededError, match="deadline_ms"):
        within_deadline(5.0, slow_step, "running the SQL")
    assert 0 < seen[0] <= 0.05
    with pytest.raises(DeadlineExceededError, match="sql_time_limit"):
        within_deadline(5.0, slow_step, "running the SQL")  # no request deadline: the family's own limit
    assert seen[1] == 5.0


def test_a_request_cannot_resize_the_process_wide_cache() -> None:
    capacity, max_bytes = INDEX_CACHE.capacity, INDEX_CACHE.max_bytes
    with pytest.raises(UnknownOptionError, match="configure_index_cache"):
        run_feature("retrieved_passages", {**RETRIEVE, "index_cache_size": 0}, {Bm25sRetriever})
    assert (INDEX_CACHE.capacity, INDEX_CACHE.max_bytes) == (capacity, max_bytes)


def test_configure_index_cache_bounds_entries_and_bytes() -> None:
    capacity, max_bytes = INDEX_CACHE.capacity, INDEX_CACHE.max_bytes
    try:
        rag_integration.configure_index_cache(max_entries=3)
        assert (INDEX_CACHE.capacity, INDEX_CACHE.max_bytes) == (3, max_bytes)
        rag_integration.configure_index_cache(max_bytes=1000)
        assert (INDEX_CACHE.capacity, INDEX_CACHE.max_bytes) == (3, 1000)
        for bad in ({"max_entries": -1}, {"max_bytes": 1.5}, {"max_entries": True}):
            with pytest.raises(InvalidOptionError):
                rag_integration.configure_index_cache(**bad)
    finally:
        rag_integration.configure_index_cache(max_entries=capacity, max_bytes=max_bytes)


def test_the_cache_bounds_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_INDEX_CACHE_ENTRIES", " 3 ")
    assert retention.bound_from_environment("RAG_INDEX_CACHE_ENTRIES", 8) == 3
    monkeypatch.delenv("RAG_INDEX_CACHE_ENTRIES")
    assert retention.bound_from_environment("RAG_INDEX_CACHE_ENTRIES", 8) == 8
    for bad in ("-1", "lots", "1e9"):
        monkeypatch.setenv("RAG_INDEX_CACHE_BYTES", bad)
        with pytest.raises(InvalidOptionError, match="RAG_INDEX_CACHE_BYTES"):
            retention.bound_from_environment("RAG_INDEX_CACHE_BYTES", 1)


def test_the_byte_bound_evicts_least_recently_used_and_skips_an_oversized_index() -> None:
    cache = IndexCache(capacity=10, max_bytes=2_500)
    keys = [IndexKey.of("test", {"n": n}, "corpus") for n in range(3)]
    for key in keys:
        cache.install(key, b"x" * 1_000)
    assert keys[0] not in cache and keys[1] in cache and keys[2] in cache
    big = IndexKey.of("test", {"n": 9}, "corpus")
    assert cache.get_or_build(big, lambda: b"y" * 5_000) == b"y" * 5_000
    assert big not in cache and len(cache) == 2


@pytest.fixture
def mloda_errors(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.ERROR, logger=MLODA_RUN_LOGGER):
        yield caplog


def test_mloda_does_not_log_a_traceback_for_our_typed_errors(mloda_errors: pytest.LogCaptureFixture) -> None:
    with pytest.raises(InvalidOptionError, match="top_k"):
        run_feature("retrieved_passages", {**RETRIEVE, "top_k": 0}, {Bm25sRetriever})
    assert [record for record in mloda_errors.records if record.name == MLODA_RUN_LOGGER] == []


class Explodes(FeatureGroup):
    """A feature group with a real bug: its traceback must still reach mloda's log."""

    @classmethod
    def calculate_feature(cls, data: Any, features: Any) -> Any:
        raise RuntimeError("a bug")


def test_other_errors_still_get_mloda_traceback(mloda_errors: pytest.LogCaptureFixture) -> None:
    with pytest.raises(RuntimeError):
        mlodaAPI.run_all(
            [Feature("Explodes")],
            compute_frameworks=[PythonDictFramework],
            plugin_collector=PluginCollector.enabled_feature_groups({Explodes}),
        )
    assert any(record.name == MLODA_RUN_LOGGER for record in mloda_errors.records)


def test_the_filter_only_drops_connector_error_tracebacks() -> None:
    drop = ConnectorErrorTracebackFilter()

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord(MLODA_RUN_LOGGER, logging.ERROR, __file__, 1, message, None, None)

    assert not drop.filter(
        record("Traceback (most recent call last):\n  ...\nrag_integration.core.errors.GroundingError\n")
    )
    assert drop.filter(record("Traceback (most recent call last):\n  ...\nRuntimeError\n"))
    assert drop.filter(record("something else went wrong"))
    assert issubclass(UnknownBackendError, ConnectorError)


def test_a_budget_ends_at_the_nearer_limit_and_names_its_option() -> None:
    near = Deadline(limit_ms=50, started=deadline_module._clock()).budget(5.0, "r2r_timeout")
    assert near.option == "deadline_ms" and 0 < near.seconds <= 0.05
    assert "deadline_ms" in str(near.exceeded("reading")) and "r2r_timeout" not in str(near.exceeded("reading"))
    far = Deadline(limit_ms=60_000, started=deadline_module._clock()).budget(5.0, "r2r_timeout")
    assert (far.option, far.seconds) == ("r2r_timeout", 5.0)
    assert "option 'r2r_timeout' (5.0 s) ran out reading" in str(far.exceeded("reading"))
    spent = Budget(1.0, deadline_module._clock() - 1, "sql_time_limit", Deadline())
    with pytest.raises(DeadlineExceededError, match="sql_time_limit"):
        spent.check("while planning")


def test_every_page_gives_deadline_ms_the_same_scope() -> None:
    """The budget is one feature group's answer (a chain gets one per step); no page may promise the whole request."""
    docs = Path(rag_integration.__file__).parents[1] / "docs"
    rows = {
        page.name: line
        for page in sorted(docs.glob("*.md"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `deadline_ms`")
    }
    assert len(rows) >= 6, rows
    assert all("feature group's answer" in row for row in rows.values()), rows
    assert "one `deadline_ms` per step" in (docs / "options.md").read_text(encoding="utf-8")
    assert "one feature group's answer" in (deadline_module.__doc__ or "")


def test_an_error_never_quotes_the_value_of_an_option_that_names_a_secret() -> None:
    from rag_integration.core.errors import InvalidOptionError, UnknownOptionError
    from rag_integration.feature_groups.connectors.generate import LlmResponder

    canary = "sk-live-CANARY0123456789"
    for error in (
        InvalidOptionError("llm_api_key_env", canary, "the name of an environment variable"),
        InvalidOptionError("auth_token", canary, "a str"),
        UnknownOptionError("api_key", canary),
        UnknownOptionError("llm_api_kye", canary, ["llm_api_key_env"]),  # a typo of a secret's key
    ):
        assert canary not in str(error) and canary not in repr(error.value) and "<hidden> (str)" in str(error)
    assert "'abc' (str)" in str(InvalidOptionError("top_k", "abc", "an int"))
    request = {"generate_backend": "llm", "query_text": "q", "passages": [], "llm_api_kye": canary}
    with pytest.raises(UnknownOptionError) as caught:
        run_feature("generated_answer", request, {LlmResponder})
    assert canary not in str(caught.value) and "llm_api_key_env" in str(caught.value)
