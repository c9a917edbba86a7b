"""The stage pipeline's store answers every version of a changing corpus as a store built from scratch: for random
sequences of additions, removals and edits, the store in ``index_dir`` (rewritten from remembered embeddings) ranks
exactly as a cold store in a fresh folder, in this process and after it forgets everything but the folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_edits import apply_edits, edit_strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.memory import forget_built
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

WORDS = ["cat", "dog", "oil", "engine", "moon", "tide", "lava", "bread", "oven", "river", "stone", "garden"]
QUERIES = ["cat in the garden", "engine oil", "moon and tide"]
INDEXED = "docs__embedded__indexed"

text, edit = edit_strategies(WORDS)


def index_and_search(documents: list[dict[str, str]], folder: Path) -> Any:
    options = {
        "document_source": "inline",
        "documents": documents,
        "embedding_model": "hash",
        "vector_store": "faiss",
        "index_dir": str(folder),
    }
    run_feature(INDEXED, options, set(STAGES))
    query = {"retrieve_backend": "vector_store", "embedding_model": "hash", "index_dir": str(folder), "top_k": 4}
    rows = run_feature("retrieved_passages", {**query, "query_text": QUERIES}, set(STAGES))
    return [[(hit["doc_id"], round(hit["score"], 5)) for hit in row] for row in rows]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    start=st.lists(text, min_size=1, max_size=10),
    steps=st.lists(st.lists(edit, min_size=1, max_size=4), min_size=1, max_size=3),
)
def test_every_version_of_a_changing_store_ranks_as_a_cold_store(
    tmp_path_factory: Any, start: list[str], steps: list[list[tuple[str, int, str]]]
) -> None:
    versions = [[{"doc_id": f"d{position}", "text": words} for position, words in enumerate(start)]]
    for step, edits in enumerate(steps):
        versions.append(apply_edits(versions[-1], edits, step, fewest=2))
    cold = []
    for documents in versions:
        forget_built()
        cold.append(index_and_search(documents, tmp_path_factory.mktemp("cold")))
    embedder = get_embedder("hash")
    folder = tmp_path_factory.mktemp("store")
    forget_built()
    warm = []
    for documents in versions:
        forget_built()  # each version indexed by a new process: only the folder remembers
        before = embedder.texts_embedded
        warm.append(index_and_search(documents, folder))
        fresh = {row["text"] for row in documents} - {row["text"] for row in versions[len(warm) - 2]}
        if len(warm) > 1:  # only texts the previous version lacked are embedded (and the queries)
            assert embedder.texts_embedded - before <= len(fresh) + len(QUERIES)
    assert warm == cold
