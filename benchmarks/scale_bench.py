"""Retrieve at scale: the bm25s connector against raw bm25s in time and peak memory, each run in its own process.

    uv run --all-extras python benchmarks/scale_bench.py [--size small|large|dense|both] [--quick] [--only-threads N] [--no-spark]

small is 50,000 documents x 20,000 queries, large 200,000 x 100,000 (default: both); ``--quick`` is 2,000 x 500,
a smoke test. Documents (30-80 words) and queries (2-6 words) are drawn Zipf-like from a 20,000-word vocabulary;
dense is 50,000 x 20,000 with documents of 30-60 words and queries of 3-6 from 5,000 words (Zipf 1.07). All use
a fixed seed, written to a file once and read by every measured subprocess, so each process's peak RSS
(``ru_maxrss``) is its own. A process loads the data, runs the same request over one document and one query (the
fixed cost: imports, mloda's first ``run_all``), then measures tokenize + index + one batched top-10 retrieve of
every query:

- raw bm25s, on 1 thread and on all threads (``n_threads``);
- the connector on PythonDict (corpus as ``rag_integration.Corpus``, queries as a list in ``query_text``) with the
  same thread count (option ``search_threads``): in an environment with only the ``connectors`` extra (what a
  bm25s-on-PythonDict user installs), in this one (all extras: mloda's first ``run_all`` then imports every
  installed compute framework's transformers, pandas, pyarrow, polars and pyspark, whatever the request uses), and
  in this one after ``load_transformers_only_for([PythonDictFramework])``;
- the connector on Spark ``local[2]``, queries from an upstream feature (``queries_source``); driver RSS only.

Ratios are to raw bm25s at the same thread count; wall time is what the goal is about, CPU time is printed too
because it is less disturbed by other work on a shared machine (``--repeat N`` runs N rounds of every run and
keeps the fastest of each).
"net MiB" is the measured run's peak above the one-document run's (the part that grows with the data; its ratio
is "net"); "1-doc s" and "1-doc MiB" are the one-document run's time and what it added to the loaded data (the
fixed cost); "score sum" checks the runs agree.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

SHAPES: dict[str, dict[str, Any]] = {
    "quick": {"documents": 2_000, "queries": 500, "vocabulary": 20_000},
    "small": {"documents": 50_000, "queries": 20_000, "vocabulary": 20_000},
    "large": {"documents": 200_000, "queries": 100_000, "vocabulary": 20_000},
    "dense": {
        "documents": 50_000,
        "queries": 20_000,
        "vocabulary": 5_000,
        "exponent": 1.07,
        "document_words": (30, 60),
        "query_words": (3, 6),
    },
}
"""dense is issue 34's shape: a 5,000-word vocabulary, so most documents hold a query's frequent words and nearly
every score of a query is positive (selection and scoring, not postings, are what cost)."""
TOP_K = 10


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def raw_run(corpus: list[dict[str, str]], queries: list[str], threads: int) -> Callable[[], float]:
    from _common import raw_bm25s

    n_threads = 0 if threads == 1 else threads
    raw_bm25s(corpus[:1], queries[:1], n_threads)
    return lambda: float(raw_bm25s(corpus, queries, n_threads).scores.astype("float64").sum())


def retrieve(framework: Any, groups: set[Any], documents: list[dict[str, str]], threads: int, **queries: Any) -> Any:
    """One ``run_all`` of the bm25s connector over ``documents`` (as a ``Corpus``); the frame with its column."""
    from mloda.user import Feature, Options, PluginCollector, mlodaAPI

    from rag_integration import Corpus
    from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

    threaded = {"search_threads": threads} if threads > 1 else {}
    context = {"retrieve_backend": "bm25s", "corpus": Corpus(documents), "top_k": TOP_K, **threaded, **queries}
    result = mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=context))],
        compute_frameworks=[framework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, *groups}),
    )
    return next(frame for frame in result if "retrieved_passages" in getattr(frame, "columns", frame))


def connector_run(
    corpus: list[dict[str, str]], queries: list[str], threads: int, lean: bool = False
) -> Callable[[], float]:
    from mloda.user.python_dict import PythonDictFramework

    if lean:
        from rag_integration import load_transformers_only_for

        load_transformers_only_for([PythonDictFramework])

    def run(documents: list[dict[str, str]], texts: list[str]) -> float:
        rows = retrieve(PythonDictFramework, set(), documents, threads, query_text=texts)["retrieved_passages"]
        assert len(rows) == len(texts), f"{len(rows)} answers for {len(texts)} queries"
        return sum(row["score"] for query_rows in rows for row in query_rows)

    run(corpus[:1], queries[:1])
    return lambda: run(corpus, queries)


def spark_run(corpus: list[dict[str, str]], queries: list[str], threads: int) -> Callable[[], float]:
    import pyarrow as pa
    from mloda.provider import FeatureGroup, FeatureSet
    from mloda.user.spark import SparkFramework
    from pyspark.sql import SparkSession

    from rag_integration.core.contract.frames import adapter_for

    SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()

    class BenchQueries(FeatureGroup):
        """The upstream feature ``bench_queries``: the queries as a string column of the run's framework."""

        texts: ClassVar[list[str]] = []

        @classmethod
        def match_feature_group_criteria(cls, feature_name: Any, options: Any, data_access: Any = None) -> bool:
            return str(feature_name) == "bench_queries"

        def input_features(self, options: Any, feature_name: Any) -> None:
            return None

        @classmethod
        def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
            framework = next(iter(features.features)).get_compute_framework().get_class_name()
            return adapter_for(framework).attach("bench_queries", pa.array(cls.texts, pa.string()), None)

    def run(documents: list[dict[str, str]], texts: list[str]) -> float:
        BenchQueries.texts = texts
        frame = retrieve(SparkFramework, {BenchQueries}, documents, 1, queries_source="bench_queries")
        summed = "aggregate(retrieved_passages, 0D, (total, passage) -> total + passage.score)"
        answered, total = frame.selectExpr("count(*)", f"sum({summed})").first()
        assert answered == len(texts), f"{answered} answers for {len(texts)} queries"
        return float(total)

    run(corpus[:1], queries[:1])
    return lambda: run(corpus, queries)


def child(mode: str, data: str, threads: int) -> None:
    """Load the data, run the same request over one document (the fixed cost: imports, mloda's first run), then
    measure the full run; print one JSON line. Raw bm25s never imports the connector."""
    with open(data, "rb") as handle:
        corpus, queries = pickle.load(handle)
    loaded, started = peak_mib(), time.perf_counter()
    runs = {"raw": raw_run, "connector": connector_run, "lean": partial(connector_run, lean=True), "spark": spark_run}
    measured = runs[mode](corpus, queries, threads)
    fixed_seconds = time.perf_counter() - started
    stats = None if mode == "raw" else importlib.import_module("rag_integration.core.indexes.cache").INDEX_CACHE.stats
    builds = stats.builds if stats else 0
    before, wall, cpu = peak_mib(), time.perf_counter(), time.process_time()
    total = measured()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    figures = {"wall": wall, "cpu": cpu, "peak": peak_mib(), "before": before, "score_sum": total}
    figures |= {"net": figures["peak"] - before, "fixed": before - loaded, "fixed_seconds": fixed_seconds}
    print(json.dumps({**figures, "builds": stats.builds - builds if stats else None}))


def lean_python(folder: Path) -> str | None:
    """A Python whose environment holds this project with only the ``connectors`` extra, or None without uv."""
    environment = folder / "connectors-only"
    command = ["uv", "sync", "--quiet", "--frozen", "--no-dev", "--extra", "connectors"]
    try:
        subprocess.run(
            command,
            check=True,
            cwd=Path(__file__).parent.parent,
            env={**os.environ, "UV_PROJECT_ENVIRONMENT": str(environment)},
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return str(environment / "bin" / "python")


def measure(mode: str, data: Path, threads: int, python: str) -> dict[str, Any] | str:
    """One run in a fresh process, or the line saying why it failed."""
    command = [python, __file__, "--child", mode, "--data", str(data), "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        return errors[-1] if errors else f"exit code {done.returncode}, no output"
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def bench(size: str, folder: Path, repeat: int, lean: str | None, threads_only: int | None, spark: bool) -> None:
    from _common import synthetic_corpus

    shape = SHAPES[size]
    documents, queries = shape["documents"], shape["queries"]
    data = folder / f"{size}.pickle"
    with open(data, "wb") as handle:
        pickle.dump(synthetic_corpus(**shape), handle, protocol=pickle.HIGHEST_PROTOCOL)
    everything = os.cpu_count() or 1
    print(f"\n{size}: {documents:,} documents x {queries:,} queries, top {TOP_K}, {everything} cores")
    full = sys.executable
    thread_counts = [threads_only] if threads_only else [1, everything] if everything > 1 else [1]
    runs: list[tuple[str, str, int, str]] = []
    for threads in thread_counts:
        runs.append(("raw bm25s", "raw", threads, full))
        if lean:
            runs.append(("connector, connectors extra", "connector", threads, lean))
        runs.append(("connector, all extras", "connector", threads, full))
        runs.append(("  + load_transformers_only_for", "lean", threads, full))
    if spark:
        runs.append(("connector Spark local[2]", "spark", 2, full))
    if not lean:
        print("  (uv not found: the connectors-only environment is skipped)")
    header = f"  {'run':<31}{'threads':>7}{'wall s':>8}{'cpu s':>8}{'peak MiB':>9}{'net MiB':>8}{'1-doc s':>8}"
    print(header + f"{'1-doc MiB':>10}{'builds':>7}{'time':>8}{'cpu':>7}{'net':>7}  score sum")
    # Rounds of every run, the fastest of each kept: a machine whose speed drifts over minutes slows all runs of
    # a round alike, not the runs of one thread count.
    measured: list[list[dict[str, Any]] | str] = [[] for _ in runs]
    for _ in range(repeat):
        for position, (_, mode, threads, python) in enumerate(runs):
            found = measured[position]
            if isinstance(found, list):
                figures = measure(mode, data, threads, python)
                measured[position] = figures if isinstance(figures, str) else [*found, figures]
    raw: dict[int, dict[str, Any]] = {}
    fastest: dict[tuple[str, int], float] = {}
    for (label, mode, threads, _), found in zip(runs, measured, strict=True):
        if isinstance(found, str):
            print(f"  {label:<30}{threads:>8}  failed: {found}")
            continue
        figures = min(found, key=lambda run: run["wall"])
        fastest[label, threads] = figures["wall"]
        if mode == "raw":
            raw[threads] = figures
        base = raw.get(threads) or raw.get(1)
        ratios = "".join(f"{figures[key] / base[key]:>6.2f}x" if base else "     -" for key in ("wall", "cpu", "net"))
        builds = "-" if figures["builds"] is None else str(figures["builds"])
        line = f"  {label:<31}{threads:>7}{figures['wall']:>8.2f}{figures['cpu']:>8.2f}{figures['peak']:>9.0f}"
        line += f"{figures['net']:>8.0f}{figures['fixed_seconds']:>8.2f}{figures['fixed']:>10.0f}{builds:>7}"
        print(line + f"{ratios:>22}  {figures['score_sum']:.2f}", flush=True)
    for label, threads in fastest:
        if threads > 1 and (label, 1) in fastest and not label.startswith("raw"):
            ratio = fastest[label, threads] / fastest[label, 1]
            print(f"  {label.strip()}: {threads} threads take {ratio:.2f}x the time of one thread")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large", "dense", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="one tiny size, to smoke-test the script")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every run (each in its own process); the fastest is shown"
    )
    parser.add_argument("--only-threads", type=int, help="measure this thread count only (default: 1 and all)")
    parser.add_argument("--no-spark", action="store_true", help="leave out the Spark run")
    parser.add_argument("--child", choices=["raw", "connector", "lean", "spark"], help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.child, arguments.data, arguments.threads)
        return 0
    sizes = ["quick"] if arguments.quick else ["small", "large"] if arguments.size == "both" else [arguments.size]
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as folder:
        lean = lean_python(Path(folder))
        for size in sizes:
            bench(size, Path(folder), arguments.repeat, lean, arguments.only_threads, not arguments.no_spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
