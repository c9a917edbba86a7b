"""``retrieval_metrics``: an evaluation as a feature, scoring an upstream ranking against relevance judgements.

Ask for ``retrieval_metrics`` with the options of the ranking it judges (``retrieve_backend``, ``query_text``,
``corpus``, ...) plus ``qrels``; mloda computes ``retrieved_passages`` (or the feature named by ``rankings_source``,
e.g. ``reranked_passages``) first, and each query's row gets a ``{metric name: value}`` struct.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mloda.provider import ComputeFramework, FeatureGroup, FeatureSet
from mloda.user import DataAccessCollection, Feature, FeatureName, Options

from rag_integration.core.contract.feature_group import source_feature_name, upstream_feature
from rag_integration.core.contract.frames import adapter_for, column_values, framework_classes
from rag_integration.core.contract.schema import FLOAT
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader
from rag_integration.core.progress import SHOW_PROGRESS, showing_progress, step
from rag_integration.evaluation.metrics import per_query_scores, read_metrics

DEFAULT_RANKINGS_SOURCE = "retrieved_passages"
OPTION_KEYS = ("rankings_source", "qrels", "metrics", SHOW_PROGRESS.key)
"""Every option ``retrieval_metrics`` reads (the upstream ranking reads its own)."""


class RetrievalMetrics(FeatureGroup):
    """``retrieval_metrics``: per query, nDCG@k / Recall@k / MRR@k / MAP of an upstream ranking (ir-measures).

    Options: ``qrels`` (required: one ``{doc_id: relevance}`` mapping per query, in query order; relevance >= 1 is
    relevant), ``metrics`` (default ``nDCG@10``, ``Recall@100``, ``MRR@10``, ``MAP``), ``rankings_source`` (the
    upstream feature, default ``retrieved_passages``), ``show_progress``.
    """

    FEATURE_NAME: ClassVar[str] = "retrieval_metrics"
    OPTIONS: ClassVar[tuple[str, ...]] = OPTION_KEYS
    """Declared like every group of this package: its options travel up the chain to the ranking, whose strict
    option check accepts the keys any group of the run declares."""

    @classmethod
    def match_feature_group_criteria(
        cls,
        feature_name: FeatureName | str,
        options: Options,
        data_access_collection: DataAccessCollection | None = None,
    ) -> bool:
        return str(feature_name) == cls.FEATURE_NAME

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        """The ranking to judge: a name receives this request's options, a ``Feature`` keeps its own."""
        source = options.get("rankings_source")
        if not isinstance(source, Feature) and not (isinstance(source, str) and source.strip()):
            source = DEFAULT_RANKINGS_SOURCE
        return {upstream_feature(source, options)}

    @classmethod
    def compute_framework_rule(cls) -> set[type[ComputeFramework]] | None:
        return framework_classes()

    @classmethod
    def calculate_feature(cls, data: object, features: FeatureSet) -> Any:
        feature = next(iter(features.features))
        reader = OptionReader(feature.options, owner=f"{cls.__name__} ({cls.FEATURE_NAME})")
        adapter = adapter_for(feature.get_compute_framework().get_class_name())
        readable = adapter.readable(data)
        source = source_feature_name(reader, "rankings_source") or DEFAULT_RANKINGS_SOURCE
        rankings = [
            _doc_ids(row, f"{source}[{position}]")
            for position, row in enumerate(column_values(readable, source, "rankings_source"))
        ]
        judgements = read_qrels(reader.raw("qrels"), len(rankings))
        metrics = read_metrics(reader.raw("metrics"))
        description = f"scoring {len(rankings)} rankings ({', '.join(metrics)})"
        with showing_progress(SHOW_PROGRESS.read(reader)), step(description):
            scores = per_query_scores(rankings, judgements, metrics)
        return adapter.write(cls.FEATURE_NAME, scores, dict.fromkeys(metrics, FLOAT), readable)


def read_qrels(raw: object, rows: int, option: str = "qrels") -> list[dict[str, int]]:
    """One ``{doc_id: relevance}`` mapping per ranking, in order; doc_ids are str, relevances int."""
    expected = f"a list of {rows} mappings {{doc_id (str): relevance (int)}}, one per query, in query order"
    if raw is None:
        raise MissingOptionError(option, expected)
    if not isinstance(raw, (list, tuple)) or len(raw) != rows:
        raise InvalidOptionError(option, raw, expected)
    judgements = []
    for position, judged in enumerate(raw):
        if not isinstance(judged, Mapping):
            raise InvalidOptionError(f"{option}[{position}]", judged, expected)
        for doc_id, relevance in judged.items():
            if not isinstance(doc_id, str) or isinstance(relevance, bool) or not isinstance(relevance, int):
                raise InvalidOptionError(f"{option}[{position}]", judged, expected)
        judgements.append(dict(judged))
    return judgements


def _doc_ids(row: object, where: str) -> list[str]:
    """The doc_ids of one ranked row of passages, best first."""
    if not isinstance(row, (list, tuple)):
        raise InvalidOptionError(where, row, "a ranked list of passages with a 'doc_id' each")
    doc_ids = []
    for passage in row:
        doc_id = passage.get("doc_id") if isinstance(passage, Mapping) else None
        if not isinstance(doc_id, str):
            raise InvalidOptionError(where, passage, "a passage with a str 'doc_id'")
        doc_ids.append(doc_id)
    return doc_ids
