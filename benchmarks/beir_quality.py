"""nDCG@10 of every retrieve backend on a BEIR-format dataset, all test queries in one batched ``run_all``.

    uv run --all-extras python benchmarks/beir_quality.py ../shared/data/scifact

Metrics come from ``rag_integration.evaluation`` (ir-measures). The dense index is persisted under ``--index-dir``
(default ``.bench-cache/``), so a second run does not re-embed. ``benchmarks/publish.py`` gives the fuller
published figures (two collections, Recall@100, speed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rag_integration.core.errors import BackendUnavailableError
from rag_integration.evaluation import evaluate, load_beir
from rag_integration.evaluation.run import backend_class

CONFIGURATIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("bm25s", "bm25s", {}),
    ("bm25s (no stemmer)", "bm25s", {"stemmer": False}),
    ("tfidf", "tfidf", {}),
    ("faiss minilm", "faiss", {"embedding_model": "minilm"}),
    ("faiss hash", "faiss", {"embedding_model": "hash"}),
    ("hybrid_rrf minilm", "hybrid_rrf", {"embedding_model": "minilm"}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dir", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--index-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--only", action="append", help="run only configurations whose label contains this")
    arguments = parser.parse_args()
    dataset = load_beir(arguments.dataset_dir, arguments.split)
    print(f"{dataset.name}: {len(dataset.documents)} documents, {len(dataset.queries)} {arguments.split} queries")
    print(f"{'backend':<22} {'nDCG@10':>8} {'seconds':>9}")
    for label, backend, options in CONFIGURATIONS:
        if arguments.only and not any(fragment in label for fragment in arguments.only):
            continue
        try:
            backend_class("retrieve", "retrieve_backend", backend)
        except BackendUnavailableError:
            print(f"{label:<22} {'n/a':>8} {'(extra not installed)':>9}")
            continue
        result = evaluate(
            dataset,
            backend,
            options=options,
            metrics=["nDCG@10"],
            top_k=10,
            index_dir=arguments.index_dir / dataset.name,
        )
        print(f"{label:<22} {result.metrics['nDCG@10']:8.4f} {result.seconds:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
