"""Run every installed retrieve backend over the demo corpus through ``mlodaAPI.run_all`` (``core.contract.run``) and print a table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_integration.console import print_table
from rag_integration.core.contract.run import run_feature
from rag_integration.demo.corpus import DEMO_CORPUS, DEMO_QUERIES
from rag_integration.feature_groups.connectors.retrieve import (
    BaseRetrieveConnector,
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)

RETRIEVERS: tuple[type[BaseRetrieveConnector[Any, Any, Any]], ...] = (
    Bm25sRetriever,
    TfidfRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
)


def run_demo(backends: Sequence[str] | None, top_k: int) -> int:
    chosen = [cls for cls in RETRIEVERS if (backends is None or cls.BACKEND in backends) and cls.is_installed()]
    if not chosen:
        print("no installed retrieve backend matches; see `rag-integration backends`")
        return 1
    print(f"Demo corpus: {len(DEMO_CORPUS)} documents; {len(DEMO_QUERIES)} queries answered in one batched call.\n")
    for cls in chosen:
        options = {"retrieve_backend": cls.BACKEND, "query_text": DEMO_QUERIES, "corpus": DEMO_CORPUS, "top_k": top_k}
        rankings = run_feature("retrieved_passages", options, {cls})
        print(f"retrieve_backend = {cls.BACKEND!r} ({cls.__name__})")
        rows = [
            [query if passage["rank"] == 1 else "", str(passage["rank"]), passage["doc_id"], f"{passage['score']:.4f}"]
            for query, passages in zip(DEMO_QUERIES, rankings)
            for passage in passages
        ]
        print_table(["query", "rank", "doc_id", "score"], rows)
        print()
    return 0
