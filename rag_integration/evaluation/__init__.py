"""Evaluation on IR test collections: loaders, metrics (ir-measures), the ``retrieval_metrics`` feature and
``evaluate`` for one retrieve (+ rerank) configuration in one batched ``run_all``."""

from rag_integration.evaluation.datasets import Dataset, load_beir, load_dataset, load_smart
from rag_integration.evaluation.feature import RetrievalMetrics
from rag_integration.evaluation.metrics import DEFAULT_METRICS, mean_scores, per_query_scores
from rag_integration.evaluation.run import EvaluationResult, evaluate

__all__ = [
    "DEFAULT_METRICS",
    "Dataset",
    "EvaluationResult",
    "RetrievalMetrics",
    "evaluate",
    "load_beir",
    "load_dataset",
    "load_smart",
    "mean_scores",
    "per_query_scores",
]
