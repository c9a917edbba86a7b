"""What ``principals`` cost: a request over 50,000 documents labelled in 20 groups, against the same request over
the same documents without labels, printed as ratios in one run.

    uv run --all-extras python benchmarks/visibility_bench.py

The caller belongs to two of the groups (a tenth of the corpus). Both corpora are ``rag_integration.Corpus`` and
both indexes are built before timing: (a) and (b) are the steady state, where the view of what the principals may
read (its own statistics, vocabulary and index) is made once and reused while the corpus does not change; (c) is
the first request of a principal set, which makes its view from the analysed corpus (no text analysed again).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from _common import median_seconds, synthetic_corpus
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration import Corpus
from rag_integration.core.indexes.cache import VIEW_CACHE
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

DOCUMENTS = 50_000
GROUPS = 20
QUERIES = 100
VOCABULARY = 5_000
REPEATS = 10
PRINCIPALS = ["alice", "group-3", "group-11"]


def run(options: Mapping[str, Any]) -> Any:
    return mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=dict(options)))],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever}),
    )


def main() -> int:
    documents, queries = synthetic_corpus(DOCUMENTS, QUERIES, VOCABULARY)
    plain = Corpus(documents)
    labelled = Corpus([dict(doc, readers=[f"group-{position % GROUPS}"]) for position, doc in enumerate(documents)])
    without = {"retrieve_backend": "bm25s", "corpus": plain, "top_k": 10}
    with_principals = {"retrieve_backend": "bm25s", "corpus": labelled, "top_k": 10, "principals": PRINCIPALS}
    started = time.perf_counter()
    run({**without, "query_text": queries[0]})
    run({**with_principals, "query_text": queries[0]})
    print(f"corpus: {DOCUMENTS} documents in {GROUPS} groups; the caller reads 2 groups (a tenth)")
    print(f"both indexes and the view built in {time.perf_counter() - started:.1f} s (not timed below)")

    for label, query in (("(a) one query", [queries[0]]), (f"(b) {QUERIES} queries in one request", queries)):
        base = median_seconds(partial(run, {**without, "query_text": query}), repeats=REPEATS)
        seen = median_seconds(partial(run, {**with_principals, "query_text": query}), repeats=REPEATS)
        print(f"{label}: without principals {base:.4f} s, with {seen:.4f} s   ratio {seen / base:.2f}x")

    analysed = ANALYSIS_MEMO.stats.analysed
    base = median_seconds(lambda: run({**without, "query_text": queries}), repeats=3)
    first = median_seconds(lambda: run({**with_principals, "query_text": queries}), repeats=3, before=VIEW_CACHE.clear)
    print(
        f"(c) first request of a principal set (its view made): {first:.4f} s vs {base:.4f} s   ratio "
        f"{first / base:.2f}x; texts analysed again: {ANALYSIS_MEMO.stats.analysed - analysed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
