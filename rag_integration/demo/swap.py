"""``rag-integration swap-demo``: the same inputs through several backends of one family and across families.

Every run enables the same plugins; the only thing that changes between rows is the option shown.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from typing import Any

from rag_integration.console import print_table
from rag_integration.core.contract.run import run_feature
from rag_integration.demo.corpus import DEMO_CORPUS, DEMO_QUERIES
from rag_integration.registry import installed_backends

STAGED_CORPUS = "docs__chunked__embedded__indexed"


def run_one(feature_name: str, options: Mapping[str, Any]) -> list[Any]:
    return run_feature(feature_name, options, installed_backends())


def run_swap_demo(embedding_model: str = "minilm") -> int:
    queries = DEMO_QUERIES[:3]
    with tempfile.TemporaryDirectory(prefix="rag-swap-demo-") as index_dir:
        shared = {
            "query_text": queries,
            "corpus": DEMO_CORPUS,
            "top_k": 3,
            "embedding_model": embedding_model,
            # what the stage pipeline needs to build the same corpus into a FAISS store on disk
            "document_source": "inline",
            "documents": DEMO_CORPUS,
            "chunker": "paragraph",
            "vector_store": "faiss",
            "index_dir": index_dir,
        }
        print("One family, several backends: `retrieved_passages`; every row changes one option only.\n")
        variants: list[dict[str, Any]] = [
            {"retrieve_backend": "bm25s"},
            {"retrieve_backend": "tfidf"},
            {"retrieve_backend": "faiss"},
            {"retrieve_backend": "hybrid_rrf"},
            {"retrieve_backend": "vector_store", "corpus": None, "corpus_source": STAGED_CORPUS},
        ]
        rows = []
        for change in variants:
            rankings = run_one("retrieved_passages", _merged(shared, change))
            for query, ranking in zip(queries, rankings, strict=True):
                rows.append([_describe(change), query, ", ".join(passage["doc_id"] for passage in ranking)])
        print_table(["options changed", "query", "top 3 doc_id"], rows)

        print("\nAcross families: retrieve -> rerank -> generate in one run_all; swap any step by its selector.\n")
        chain = {
            **shared,
            "retrieve_backend": "bm25s",
            "rerank_backend": "lexical",
            "generate_backend": "extractive",
            "candidates_source": "retrieved_passages",
            "passages_source": "reranked_passages",
        }
        steps: list[dict[str, Any]] = [
            {},
            {"generate_backend": "template"},
            {"retrieve_backend": "hybrid_rrf"},
            {"retrieve_backend": "vector_store", "corpus": None, "corpus_source": STAGED_CORPUS},
        ]
        rows = []
        for change in steps:
            answers = run_one("generated_answer", _merged(chain, change))
            for query, answer in zip(queries, answers, strict=True):
                rows.append(
                    [_describe(change) or "(baseline)", query, answer["answer"], ", ".join(answer["citations"])]
                )
        print_table(["options changed", "query", "answer", "citations"], rows)
    return 0


def _merged(base: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**base, **change}
    return {key: value for key, value in merged.items() if value is not None}


def _describe(change: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in change.items() if value is not None)
