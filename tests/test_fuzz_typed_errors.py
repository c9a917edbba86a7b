"""Hypothesis fuzz: whatever options and documents a caller sends, every error is a typed ``ConnectorError``.

Each family's backends (and the stage pipeline's chunkers and dedup) get option dicts that mix a valid request with hostile values (wrong types, huge ints,
NaN and infinities, empty and long strings, nested structures, None) and document lists with missing text, odd
doc_ids and weird metadata, run through ``mlodaAPI.run_all`` on PythonDict, as context or as group options
(``FUZZ_EXAMPLES`` sets the examples per backend; 25 keeps the suite fast). A request may succeed or fail; a
failure must be a ``ConnectorError`` subclass, never a bare exception from a library or from mloda's planning.

Left out on purpose: the selector and the ``*_source`` options (naming a backend or feature that does not exist is
mloda's resolution, covered by the declared-options tests), and options that point at files, folders or servers
(``index_dir``, ``r2r_fixture``, ``r2r_base_url``, ``flashrank_model_dir``), which would touch the machine.
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis import strategies as st
from mloda.provider import FeatureGroup

from rag_integration.core.errors import ConnectorError, short_repr
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.connectors.graph_rag import AdjacencyGraphRag, NetworkxGraphRag
from rag_integration.feature_groups.connectors.orchestrator import R2RFixtureOrchestrator
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.feature_groups.connectors.structured import AggregateSql, RuleBasedSql
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

HUGE = 10**5000
"""Past Python's int/str conversion limit: ``str`` and ``repr`` of it raise a bare ``ValueError``."""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 10**12]),
    st.sampled_from([1, -1]).map(lambda sign: sign * HUGE),  # mapped, so the strategy's repr never writes HUGE
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -0.0, 5e-324]),
    st.text(max_size=12),
    st.sampled_from(["", " ", "\x00", "\ud800", "x" * 100_000, "cat", "1", "text", "doc_id"]),
    st.binary(max_size=4),
    st.just(datetime.date(2024, 2, 29)),
)
hostile = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.none()), inner, max_size=3),
        st.frozensets(st.integers(max_value=9), max_size=2),
    ),
    max_leaves=6,
)

TEXTS = ["The cat sat on the mat.", "Engine oil wears out. Change it every year.", "The moon pulls the tide."]


@st.composite
def document(draw: Any, position: int) -> Any:
    """A valid document most of the time; otherwise one with a missing or odd text, doc_id or metadata."""
    item: dict[Any, Any] = {"doc_id": f"d{position}", "text": TEXTS[position % len(TEXTS)]}
    if draw(st.booleans()):
        return item
    choice = draw(st.sampled_from(["text", "doc_id", "metadata", "missing", "not a dict"]))
    if choice == "text":
        item["text"] = draw(hostile)
    elif choice == "doc_id":
        item["doc_id"] = draw(hostile)
    elif choice == "metadata":
        item[draw(st.sampled_from(["source", "year", "metadata", "score", "rank", "", "text2"]))] = draw(hostile)
    elif choice == "missing":
        del item[draw(st.sampled_from(["doc_id", "text"]))]
    else:
        return draw(hostile)
    return item


@st.composite
def documents(draw: Any) -> Any:
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return draw(hostile)
    count = draw(st.integers(min_value=0, max_value=4))
    return [draw(document(position)) for position in range(count)]


@st.composite
def table_rows(draw: Any) -> Any:
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return draw(hostile)
    rows = []
    for position in range(draw(st.integers(min_value=0, max_value=3))):
        row: dict[Any, Any] = {"city": ["Berlin", "Paris", "Rome"][position % 3], "people": 10 * position}
        if draw(st.booleans()):
            row[draw(st.sampled_from(["city", "people", "founded", "other"]))] = draw(hostile)
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Family:
    """One family's fuzz target: a valid request, the options to make hostile, which of them hold documents."""

    feature: str
    base: Mapping[str, Any]
    options: tuple[str, ...]
    document_options: tuple[str, ...] = ()


CORPUS = [{"doc_id": f"d{position}", "text": text} for position, text in enumerate(TEXTS)]
RANKED = ("top_k", "return_metadata", "filters", "index_cache_size")
RETRIEVE = Family(
    "retrieved_passages",
    {"query_text": "engine oil", "corpus": CORPUS},
    ("query_text", "corpus", *RANKED, "bm25_k1", "bm25_b", "bm25_method", "stemmer", "search_threads"),
    ("corpus",),
)
DENSE = ("embedding_model", "faiss_index", "hnsw_m", "hnsw_ef_search", "ivf_nlist", "ivf_nprobe")
CHUNKED = Family(
    "docs__chunked__deduped",
    {"document_source": "inline", "documents": CORPUS},
    ("documents", "sentences_per_chunk", "sentence_overlap", "chunk_size", "chunk_overlap", "chunk_unit"),
    ("documents",),
)
PIPELINE: set[type[FeatureGroup]] = set(STAGES)
FAMILIES: dict[str, tuple[Family, type[FeatureGroup] | set[type[FeatureGroup]], Mapping[str, Any]]] = {
    "sentence chunker": (CHUNKED, PIPELINE, {"chunker": "sentence", "dedup": "exact"}),
    "fixed chunker": (CHUNKED, PIPELINE, {"chunker": "fixed", "dedup": "normalized"}),
    "paragraph chunker": (
        Family(CHUNKED.feature, CHUNKED.base, ("documents", "paragraphs_per_chunk"), CHUNKED.document_options),
        PIPELINE,
        {"chunker": "paragraph", "dedup": "exact"},
    ),
    "bm25s": (RETRIEVE, Bm25sRetriever, {"retrieve_backend": "bm25s"}),
    "tfidf": (
        Family(
            RETRIEVE.feature,
            RETRIEVE.base,
            (*RETRIEVE.options, "tfidf_sublinear_tf", "tfidf_ngram_max"),
            RETRIEVE.document_options,
        ),
        TfidfRetriever,
        {"retrieve_backend": "tfidf"},
    ),
    "faiss": (
        Family(RETRIEVE.feature, RETRIEVE.base, (*RETRIEVE.options, *DENSE), RETRIEVE.document_options),
        FaissDenseRetriever,
        {"retrieve_backend": "faiss", "embedding_model": "hash"},
    ),
    "hybrid_rrf": (
        Family(
            RETRIEVE.feature,
            RETRIEVE.base,
            (*RETRIEVE.options, "rrf_k", "rrf_weights", "rrf_candidates"),
            RETRIEVE.document_options,
        ),
        HybridRrfRetriever,
        {"retrieve_backend": "hybrid_rrf", "embedding_model": "hash"},
    ),
    "lexical": (
        Family(
            "reranked_passages",
            {"query_text": "engine oil", "candidates": CORPUS},
            ("query_text", "candidates", "top_k", "return_metadata", "lexical_k1", "lexical_b"),
            ("candidates",),
        ),
        LexicalReranker,
        {"rerank_backend": "lexical"},
    ),
    "extractive": (
        Family(
            "generated_answer",
            {"query_text": "engine oil", "passages": CORPUS},
            ("query_text", "passages", "max_sentences"),
            ("passages",),
        ),
        ExtractiveResponder,
        {"generate_backend": "extractive"},
    ),
    "template": (
        Family(
            "generated_answer",
            {"query_text": "engine oil", "passages": CORPUS},
            ("query_text", "passages", "max_sentences"),
            ("passages",),
        ),
        TemplateResponder,
        {"generate_backend": "template"},
    ),
    "adjacency": (
        Family(
            "graph_passages",
            {"query_text": "engine oil", "nodes": CORPUS, "edges": [["d0", "d1"], ["d1", "d2"]]},
            (
                "query_text",
                "nodes",
                "edges",
                "top_k",
                "return_metadata",
                "graph_scoring",
                "graph_hops",
                "graph_damping",
            ),
            ("nodes",),
        ),
        AdjacencyGraphRag,
        {"graph_backend": "adjacency"},
    ),
    "networkx": (
        Family(
            "graph_passages",
            {"query_text": "engine oil", "nodes": CORPUS, "edges": [{"source": "d0", "target": "d1", "weight": 2.0}]},
            ("query_text", "nodes", "edges", "top_k", "graph_scoring", "graph_hops", "pagerank_alpha"),
            ("nodes",),
        ),
        NetworkxGraphRag,
        {"graph_backend": "networkx"},
    ),
    "rule_based": (
        Family(
            "structured_rows",
            {"question": "how many rows", "table_name": "cities", "columns": ["city", "people"], "rows": []},
            ("question", "table_name", "columns", "rows", "sql_time_limit", "max_result_rows"),
        ),
        RuleBasedSql,
        {"structured_backend": "rule_based"},
    ),
    "aggregate": (
        Family(
            "structured_rows",
            {"question": "total people per city", "table_name": "cities", "columns": ["city", "people"], "rows": []},
            ("question", "table_name", "columns", "rows", "sql_time_limit", "max_result_rows"),
        ),
        AggregateSql,
        {"structured_backend": "aggregate"},
    ),
    "r2r": (
        Family(
            "orchestrated_answer",
            {"query_text": "engine oil", "corpus": CORPUS},
            ("query_text", "corpus", "top_k", "filters", "r2r_timeout", "r2r_doc_id_field"),
            ("corpus",),
        ),
        R2RFixtureOrchestrator,
        {"orchestrator_backend": "r2r"},
    ),
}


@st.composite
def request_options(draw: Any, family: Family, selector: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {**family.base, **selector}
    for key in draw(st.lists(st.sampled_from(family.options), unique=True, min_size=1, max_size=3)):
        if key in family.document_options:
            options[key] = draw(documents())
        elif key == "rows":
            options[key] = draw(table_rows())
        else:
            options[key] = draw(hostile)
    return options


@pytest.mark.parametrize("backend", sorted(FAMILIES))
def test_every_error_is_typed(backend: str) -> None:
    family, feature_groups, selector = FAMILIES[backend]
    groups = feature_groups if isinstance(feature_groups, set) else {feature_groups}

    # quiet: hypothesis's own report would write the example with repr, which fails on HUGE; the assertion
    # message carries it cut short instead
    @settings(
        max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        verbosity=Verbosity.quiet,
    )
    @given(options=request_options(family, selector), in_group=st.booleans())
    def run(options: dict[str, Any], in_group: bool) -> None:
        try:
            run_feature(family.feature, options, groups, in_group=in_group)
        except ConnectorError:
            pass
        except Exception as error:
            raise AssertionError(
                f"untyped {type(error).__name__}: {short_repr(str(error))} for {short_repr(options)}"
            ) from error

    run()
