"""Evaluate a retrieve configuration (optionally followed by a rerank) on a dataset: one ``run_all``, every query in
one batch, the metrics computed by the ``retrieval_metrics`` feature."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_integration.core.contract.run import run_feature
from rag_integration.core.documents.corpus import Corpus
from rag_integration.evaluation.datasets import Dataset
from rag_integration.evaluation.feature import RetrievalMetrics
from rag_integration.evaluation.metrics import mean_scores, read_metrics
from rag_integration.registry import backend_class

DEFAULT_DEPTH = 100
"""Passages retrieved per query: deep enough for Recall@100 and MAP over the first 100."""


@dataclass(frozen=True)
class EvaluationResult:
    """The mean of each metric over the dataset's queries, each query's own values, and the run's wall time."""

    label: str
    dataset: str
    queries: int
    metrics: dict[str, float]
    per_query: list[dict[str, float]] = field(repr=False)
    seconds: float


def evaluate(
    dataset: Dataset,
    retrieve_backend: str,
    *,
    options: Mapping[str, Any] | None = None,
    rerank_backend: str | None = None,
    metrics: Sequence[str] | None = None,
    top_k: int = DEFAULT_DEPTH,
    index_dir: str | Path | None = None,
    show_progress: bool = False,
) -> EvaluationResult:
    """Retrieve (and rerank) the top ``top_k`` for every query of ``dataset`` in one ``run_all`` and score them.

    ``options`` go to every feature of the run (backend settings such as ``stemmer`` or ``embedding_model``);
    ``index_dir`` persists the indexes, so a second evaluation on the same corpus loads instead of rebuilding.
    """
    chosen = read_metrics(list(metrics) if metrics is not None else None)
    groups: set[type[Any]] = {RetrievalMetrics, backend_class("retrieve", "retrieve_backend", retrieve_backend)}
    request: dict[str, Any] = {
        **(options or {}),
        "retrieve_backend": retrieve_backend,
        "query_text": list(dataset.queries.values()),
        "corpus": Corpus(dataset.documents),
        "top_k": top_k,
        "qrels": dataset.judgements(),
        "metrics": list(chosen),
        "show_progress": show_progress,
    }
    if index_dir is not None:
        request["index_dir"] = str(index_dir)
    if rerank_backend is not None:
        groups.add(backend_class("rerank", "rerank_backend", rerank_backend))
        request.update(
            rerank_backend=rerank_backend, candidates_source="retrieved_passages", rankings_source="reranked_passages"
        )
    label = retrieve_backend if rerank_backend is None else f"{retrieve_backend}+{rerank_backend}"
    started = time.perf_counter()
    per_query = run_feature(RetrievalMetrics.FEATURE_NAME, request, groups)
    seconds = time.perf_counter() - started
    return EvaluationResult(label, dataset.name, len(per_query), mean_scores(per_query, chosen), per_query, seconds)


def default_index_dir() -> Path:
    """Where the command line persists indexes unless told otherwise: ``$XDG_CACHE_HOME/rag-integration/indexes``
    (``~/.cache/...``), so a dense index is embedded once per corpus and model, not once per run."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "rag-integration" / "indexes"
