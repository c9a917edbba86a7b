"""nDCG@k, Recall@k, MRR@k and MAP, computed by ir-measures (trec_eval through pytrec-eval-terrier).

A ranking is handed over as its order only: the document at rank r gets the score ``-r``, so trec_eval, which
sorts by score and breaks ties by document id on its own, evaluates exactly the ranking the connector returned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.extras import require_module

DEFAULT_METRICS = ("nDCG@10", "Recall@100", "MRR@10", "MAP")
_METRIC = re.compile(r"^(nDCG|Recall|MRR)@([1-9][0-9]{0,4})$|^MAP$")
_IR_MEASURES_NAME = {"nDCG": "nDCG", "Recall": "R", "MRR": "RR", "MAP": "AP"}


def read_metrics(raw: object, option: str = "metrics") -> tuple[str, ...]:
    """Metric names as given (``nDCG@10``, ``Recall@100``, ``MRR@10``, ``MAP``), checked; None gives the defaults."""
    if raw is None:
        return DEFAULT_METRICS
    expected = "a non-empty list of distinct metric names: nDCG@k, Recall@k, MRR@k (k from 1 to 99999) or MAP"
    if not isinstance(raw, (list, tuple)) or not raw or len(set(raw)) != len(raw):
        raise InvalidOptionError(option, raw, expected)
    for name in raw:
        if not isinstance(name, str) or not _METRIC.match(name):
            raise InvalidOptionError(option, raw, expected)
    return tuple(raw)


def per_query_scores(
    rankings: Sequence[Sequence[str]], judgements: Sequence[Mapping[str, int]], metrics: Sequence[str]
) -> list[dict[str, float]]:
    """Every metric for each query: ``rankings[i]`` (doc_ids, best first) judged by ``judgements[i]``.

    A query without any relevant document scores 0 on every metric (trec_eval leaves it out; here it stays in, so
    that a mean is over the queries asked).
    """
    ir_measures = require_module("ir_measures", "metrics", "eval")
    measures = {name: ir_measures.parse_measure(_ir_measures_name(name)) for name in metrics}
    qrels = [
        ir_measures.Qrel(str(position), doc_id, int(relevance))
        for position, judged in enumerate(judgements)
        for doc_id, relevance in judged.items()
    ]
    run = [
        ir_measures.ScoredDoc(str(position), doc_id, float(-rank))
        for position, ranking in enumerate(rankings)
        for rank, doc_id in enumerate(ranking, start=1)
    ]
    scores: list[dict[str, float]] = [dict.fromkeys(metrics, 0.0) for _ in rankings]
    by_measure = {measure: name for name, measure in measures.items()}
    for metric in ir_measures.iter_calc(list(measures.values()), qrels, run):
        scores[int(metric.query_id)][by_measure[metric.measure]] = float(metric.value)
    return scores


def mean_scores(scores: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, float]:
    """The mean of each metric over the queries (0.0 for none)."""
    return {name: sum(row[name] for row in scores) / len(scores) if scores else 0.0 for name in metrics}


def _ir_measures_name(name: str) -> str:
    family, _, cutoff = name.partition("@")
    return f"{_IR_MEASURES_NAME[family]}@{cutoff}" if cutoff else _IR_MEASURES_NAME[family]
