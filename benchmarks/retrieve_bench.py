"""Retrieve speed against raw bm25s and against mloda's own floor, printed as ratios in one run.

    uv run --all-extras python benchmarks/retrieve_bench.py

(a) cold: raw bm25s (tokenize + index + one batched retrieve of 100 queries) vs one cold ``run_all`` of the
    bm25s connector with the 100 queries as a list (index cache cleared first).
(b) warm: median of 10 single-query ``run_all`` calls on the unchanged corpus vs a do-nothing FeatureGroup that
    receives the same options; mloda spends ~0.1-0.2 s per run carrying a 10k-document corpus in options.
(c) cold again, with the corpus arriving from an upstream feature (``corpus_source``) instead of options, which
    takes mloda's option copying out of the measurement.
(d) (a) and (b) again with the corpus passed as ``rag_integration.Corpus``, which mloda copies and hashes in O(1).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from _common import median_seconds, raw_bm25s, synthetic_corpus
from mloda.provider import FeatureGroup, FeatureSet
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration import Corpus
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.memory import forget_built
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

DOCUMENTS = 10_000
VOCABULARY = 5_000
QUERIES = 100
REPEATS = 5


class DoNothingRetriever(FeatureGroup):
    """Matches ``retrieved_passages`` with ``retrieve_backend="noop"`` and returns one fixed row: mloda's floor."""

    @classmethod
    def match_feature_group_criteria(
        cls, feature_name: Any, options: Options, data_access_collection: Any = None
    ) -> bool:
        return str(feature_name) == "retrieved_passages" and options.get("retrieve_backend") == "noop"

    def input_features(self, options: Options, feature_name: Any) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        return {"retrieved_passages": [[]]}


class InMemoryCorpus(FeatureGroup):
    """An upstream feature ``bench_corpus`` whose rows are the benchmark's documents."""

    documents: ClassVar[list[dict[str, str]]] = []

    @classmethod
    def match_feature_group_criteria(
        cls, feature_name: Any, options: Options, data_access_collection: Any = None
    ) -> bool:
        return str(feature_name) == "bench_corpus"

    def input_features(self, options: Options, feature_name: Any) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        return {"bench_corpus": cls.documents}


def run(options: Mapping[str, Any], *groups: type[FeatureGroup]) -> Any:
    return mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=dict(options)))],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(set(groups)),
    )


def main() -> int:
    corpus, queries = synthetic_corpus(DOCUMENTS, QUERIES, VOCABULARY)
    run({"retrieve_backend": "bm25s", "query_text": "warm up", "corpus": corpus[:50]}, Bm25sRetriever)
    run({"retrieve_backend": "noop", "query_text": "warm up", "corpus": corpus[:50]}, DoNothingRetriever)

    batch = {"retrieve_backend": "bm25s", "query_text": queries, "corpus": corpus, "top_k": 10}
    raw_cold = median_seconds(lambda: raw_bm25s(corpus, queries))
    ours_cold = median_seconds(lambda: run(batch, Bm25sRetriever), before=forget_built)
    print(f"corpus: {DOCUMENTS} documents, {QUERIES} queries, median of {REPEATS} cold runs")
    print(f"(a) raw bm25s tokenize+index+batched retrieve: {raw_cold:.3f} s")
    print(f"    connector, one cold run_all (100 queries):  {ours_cold:.3f} s   ratio {ours_cold / raw_cold:.2f}x")

    single = {"retrieve_backend": "bm25s", "query_text": queries[0], "corpus": corpus, "top_k": 10}
    run(single, Bm25sRetriever)
    builds = INDEX_CACHE.stats.builds
    ours_warm = median_seconds(lambda: run(single, Bm25sRetriever), repeats=10)
    floor = median_seconds(lambda: run(dict(single, retrieve_backend="noop"), DoNothingRetriever), repeats=10)
    rebuilt = INDEX_CACHE.stats.builds - builds
    print(f"(b) do-nothing FeatureGroup, same options, median of 10: {floor:.3f} s")
    print(
        f"    connector single-query run_all, median of 10:        {ours_warm:.3f} s   ratio {ours_warm / floor:.2f}x"
    )
    print(f"    index builds during the 10 warm calls: {rebuilt}")

    InMemoryCorpus.documents = corpus
    sourced = {"retrieve_backend": "bm25s", "query_text": queries, "corpus_source": "bench_corpus", "top_k": 10}
    ours_sourced = median_seconds(lambda: run(sourced, Bm25sRetriever, InMemoryCorpus), before=forget_built)
    print(
        f"(c) connector, one cold run_all, corpus from an upstream feature: {ours_sourced:.3f} s"
        f"   ratio {ours_sourced / raw_cold:.2f}x"
    )

    wrapped = Corpus(corpus)
    batch_wrapped = dict(batch, corpus=wrapped)
    ours_cold_wrapped = median_seconds(lambda: run(batch_wrapped, Bm25sRetriever), before=forget_built)
    single_wrapped = dict(single, corpus=wrapped)
    run(single_wrapped, Bm25sRetriever)
    ours_warm_wrapped = median_seconds(lambda: run(single_wrapped, Bm25sRetriever), repeats=10)
    floor_wrapped = median_seconds(
        lambda: run(dict(single_wrapped, retrieve_backend="noop"), DoNothingRetriever), repeats=10
    )
    print(
        f"(d) corpus as rag_integration.Corpus: cold batched run_all {ours_cold_wrapped:.3f} s"
        f"   ratio {ours_cold_wrapped / raw_cold:.2f}x of raw bm25s"
    )
    print(
        f"    single-query run_all {ours_warm_wrapped:.4f} s vs do-nothing {floor_wrapped:.4f} s"
        f"   ratio {ours_warm_wrapped / floor_wrapped:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
