"""``eval``: retrieve backends (each optionally followed by a reranker) scored on a test collection."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.application.arguments import backend, literal
from rag_integration.core.errors import ArgumentError, ConnectorError
from rag_integration.core.progress import progress_display, step
from rag_integration.evaluation import EvaluationResult, evaluate, load_dataset
from rag_integration.evaluation.metrics import read_metrics
from rag_integration.evaluation.run import default_index_dir


@dataclass(frozen=True)
class EvaluationReport:
    """Each backend's metrics on one collection."""

    dataset: str
    split: str
    documents: int
    queries: int
    top_k: int
    rerank: str | None
    metric_names: list[str]
    results: dict[str, EvaluationResult]

    def as_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "documents": self.documents,
            "queries": self.queries,
            "top_k": self.top_k,
            "rerank": self.rerank,
            "results": {label: result.metrics for label, result in self.results.items()},
            "seconds": {label: round(result.seconds, 3) for label, result in self.results.items()},
        }

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")

    def plot(self, path: Path) -> None:
        """A bar chart (PNG) of every backend's metrics."""
        from rag_integration.evaluation.plot import plot_metrics

        title = f"{self.dataset} ({self.queries} queries)"
        plot_metrics({label: result.metrics for label, result in self.results.items()}, path, title)


def evaluate_backends(
    dataset: Path,
    backends: Sequence[str],
    *,
    rerank: str | None = None,
    split: str = "test",
    metrics: Sequence[str] = ("nDCG@10", "Recall@100", "MRR@10", "MAP"),
    top_k: int = 100,
    index_dir: Path | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> EvaluationReport:
    """Evaluate each of ``backends`` (followed by ``rerank`` when given) on the collection in ``dataset``; indexes
    persist in ``index_dir`` (default: the user cache folder)."""
    try:
        read_metrics(list(metrics), "metrics")
    except ConnectorError as error:
        raise ArgumentError("metrics", literal(str(error))) from error
    for name in backends:
        backend("retrieve", "backends", name)
    if rerank is not None:
        backend("rerank", "rerank", rerank)
    folder = index_dir if index_dir is not None else default_index_dir()
    results: dict[str, EvaluationResult] = {}
    with progress_display(progress):
        with step(f"loading {dataset}"):
            collection = load_dataset(dataset, split)
        for name in backends:
            label = name if rerank is None else f"{name}+{rerank}"
            with step(f"evaluating {label} on {collection.name} ({len(collection.queries)} queries)"):
                results[label] = evaluate(
                    collection,
                    name,
                    options=options,
                    rerank_backend=rerank,
                    metrics=metrics,
                    top_k=top_k,
                    index_dir=folder,
                    show_progress=progress,
                )
    return EvaluationReport(
        collection.name,
        split,
        len(collection.documents),
        len(collection.queries),
        top_k,
        rerank,
        list(metrics),
        results,
    )
