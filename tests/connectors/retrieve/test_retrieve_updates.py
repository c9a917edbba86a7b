"""A corpus that changes answers as a corpus built from scratch: whatever a process (or index_dir) remembers from
earlier versions of a corpus, each ranking equals a cold build's, for random sequences of edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_edits import apply_edits, edit_strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_integration.core.indexes.memory import forget_built
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.testing.runner import run_feature

WORDS = [
    "cat",
    "dog",
    "oil",
    "engine",
    "moon",
    "tide",
    "lava",
    "bread",
    "oven",
    "river",
    "stone",
    "garden",
    "window",
    "market",
    "train",
]
BACKENDS: list[tuple[type[Any], dict[str, Any]]] = [
    (Bm25sRetriever, {}),
    (Bm25sRetriever, {"bm25_method": "bm25+", "stemmer": False}),
    (TfidfRetriever, {}),
    (FaissDenseRetriever, {"embedding_model": "hash"}),
    (HybridRrfRetriever, {"embedding_model": "hash"}),
]
QUERIES = ["cat in the garden", "engine oil", "moon and tide", "bread oven river"]

text, edit = edit_strategies(WORDS)


def ranked(connector: type[Any], extra: dict[str, Any], corpus: list[dict[str, str]], folder: Path | None) -> Any:
    options = {"retrieve_backend": connector.BACKEND, "corpus": corpus, "query_text": QUERIES, "top_k": 5, **extra}
    if folder is not None:
        options["index_dir"] = str(folder)
    rows = run_feature("retrieved_passages", options, {connector})
    return [[(hit["doc_id"], round(hit["score"], 5)) for hit in row] for row in rows]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    start=st.lists(text, min_size=1, max_size=12),
    steps=st.lists(st.lists(edit, min_size=1, max_size=4), min_size=1, max_size=3),
)
def test_every_version_of_a_changing_corpus_ranks_as_a_cold_build(
    tmp_path_factory: Any, start: list[str], steps: list[list[tuple[str, int, str]]]
) -> None:
    folder = tmp_path_factory.mktemp("index")
    versions = [[{"doc_id": f"d{position}", "text": words} for position, words in enumerate(start)]]
    for step, edits in enumerate(steps):
        versions.append(apply_edits(versions[-1], edits, step))
    cold = []
    for corpus in versions:
        for connector, extra in BACKENDS:
            forget_built()
            cold.append(ranked(connector, extra, corpus, None))
    forget_built()
    warm = [
        ranked(connector, extra, corpus, folder)  # the cache, the memo and index_dir hold the earlier versions
        for corpus in versions
        for connector, extra in BACKENDS
    ]
    assert warm == cold
    forget_built()  # a later process: only index_dir remembers
    assert [ranked(connector, extra, versions[-1], folder) for connector, extra in BACKENDS] == cold[-len(BACKENDS) :]
