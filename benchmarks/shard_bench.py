"""A corpus as a Spark frame built in shards on the executors (``index_shards``) against today's driver build and
raw bm25s, on ``local[2]``, each measured run in its own process (so its peak RSS is its own).

    uv run --all-extras python benchmarks/shard_bench.py [--documents 1000000] [--queries 2000] [--quick]

Documents of 30-60 words are drawn Zipf-like (1.07) from 5,000 random words by a hash of (doc_id, position) on the
executors, so the corpus never exists on the driver (only raw bm25s, which needs it in its own process, makes
it there). Printed: build seconds of raw bm25s (tokenize + index), of the driver build (``index_shards=1``:
the frame collected, indexed on the driver) and of 2 and 4 shards; the driver process's peak RSS in each, and
with 4 shards at 1x (a quarter of the documents) and 4x; queries per second once built; whether 4 shards answer
exactly as the driver's one index; and a 1% change (every hundredth document edited) against the full build,
with its answers checked against a fresh build of the changed corpus. The 1% change is measured twice: each
request in a fresh process (a batch job: the JVM and Python workers start cold in both), and in one session that
stays up (a service: after a 2,000-document build on other texts warms the JVM and workers, a full build, a
request with no change, the 1% change and a change back, each timed).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

VOCABULARY, EXPONENT, SEED = 5_000, 1.07, 20261206
COLUMN = "corpus_rows"


def _mixed(values: np.ndarray) -> np.ndarray:
    """splitmix64: a well-spread 64-bit hash of each value (wrapping uint64 arithmetic)."""
    values = values + np.uint64(0x9E3779B97F4A7C15)
    values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def _words() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(SEED)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = sorted({"".join(generator.choice(letters, generator.integers(4, 10))) for _ in range(2 * VOCABULARY)})
    chosen = np.array(words[:VOCABULARY], dtype=object)
    cumulative = np.cumsum(1.0 / np.arange(1, VOCABULARY + 1) ** EXPONENT)
    return chosen, cumulative / cumulative[-1]


def texts_of(ids: np.ndarray, edited: bool = False) -> list[str]:
    """The texts of documents ``ids``, a function of the id alone; ``edited`` changes every hundredth one."""
    words, cumulative = _words()
    ids = ids.astype(np.uint64)
    lengths = 30 + (_mixed(ids) % np.uint64(31)).astype(np.int64)
    positions = np.repeat(ids * np.uint64(64), lengths) + np.concatenate([np.arange(n) for n in lengths]).astype(
        np.uint64
    )
    uniform = (_mixed(positions) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    drawn = words[np.searchsorted(cumulative, uniform)]
    ends = np.cumsum(lengths)
    texts = [" ".join(drawn[end - length : end]) for end, length in zip(ends.tolist(), lengths.tolist())]
    if edited:
        texts = [text + " changed" if number % 100 == 0 else text for number, text in zip(ids.tolist(), texts)]
    return texts


def corpus_frame(spark: Any, documents: int, edited: bool = False, first: int = 0) -> Any:
    import pyarrow as pa

    def made(batches: Any) -> Any:
        for batch in batches:
            ids = batch.column(0).to_numpy()
            rows = [
                {"doc_id": f"doc-{number:07d}", "text": text}
                for number, text in zip(ids.tolist(), texts_of(ids, edited))
            ]
            yield pa.RecordBatch.from_pydict({COLUMN: rows})

    schema = f"{COLUMN} struct<doc_id:string,text:string>"
    return spark.range(first, first + documents, numPartitions=max(2, documents // 50_000)).mapInArrow(made, schema)


def queries_of(count: int) -> list[str]:
    return [" ".join(text.split()[:4]) for text in texts_of(np.arange(10**8, 10**8 + count))]


def spark_session() -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    spark = builder.config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "6g").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def make_corpora(documents: int, folder: str) -> None:
    """The corpus, a quarter of it and the corpus with every hundredth document changed, as Parquet files: what a
    data lake holds, read by each measured run."""
    spark = spark_session()
    for name, size, edited in (
        ("full", documents, False),
        ("quarter", documents // 4, False),
        ("edited", documents, True),
    ):
        corpus_frame(spark, size, edited).write.parquet(f"{folder}/{name}.parquet")


def run(mode: str, corpus: str, queries: int, folder: str) -> dict[str, Any]:
    """One measured run in this process: ``raw`` or ``<shards>``, over the Parquet corpus ``corpus``."""
    if mode == "raw":
        import bm25s
        import pyarrow.parquet as pq
        import Stemmer

        texts = [row["text"] for row in pq.read_table(corpus).column(COLUMN).to_pylist()]
        started = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)
        bm25s.BM25(method="lucene").index(tokens, show_progress=False)
        return {"build": time.perf_counter() - started, "rss": _rss()}
    from rag_integration.core.contract.frames import SparkAdapter
    from rag_integration.core.options import OptionReader
    from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

    frame = spark_session().read.parquet(corpus)
    options = {"retrieve_backend": "bm25s", "corpus_source": COLUMN, "index_shards": int(mode), "top_k": 10}
    options["index_dir"] = folder

    def answer(texts: list[str]) -> list[Any]:
        found = Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader({**options, "query_text": texts}))
        return [[(p["doc_id"], p["score"]) for p in row["retrieved_passages"]] for row in found.collect()]

    started = time.perf_counter()
    answer(["warm"])
    build = time.perf_counter() - started
    built = _worker_rss()
    asked = queries_of(queries)
    started = time.perf_counter()
    answers = answer(asked)
    seconds = time.perf_counter() - started
    return {
        "build": build,
        "request": seconds,
        "rss": _rss(),
        "built": built,
        "workers": _worker_rss(),
        "answers": answers,
    }


def warm_session(corpora: dict[str, str], folder: str) -> dict[str, float]:
    """The full build, a request with no change and the 1% change (then the change undone) in one process."""
    from rag_integration.core.contract.frames import SparkAdapter
    from rag_integration.core.options import OptionReader
    from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

    spark = spark_session()

    def seconds(frame: Any, index_dir: str) -> float:
        options = {"retrieve_backend": "bm25s", "corpus_source": COLUMN, "index_shards": 4, "top_k": 10}
        options.update(index_dir=index_dir, query_text=["warm"])
        started = time.perf_counter()
        Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader(options)).collect()
        return time.perf_counter() - started

    warm_up = corpus_frame(spark, 2_000).cache()
    for _ in range(2):
        seconds(
            warm_up.selectExpr(
                f"named_struct('doc_id', concat('w', {COLUMN}.doc_id), 'text', {COLUMN}.text) AS {COLUMN}"
            ),
            f"{folder}/warm-up",
        )
    full, edited = (spark.read.parquet(corpora[name]) for name in ("full", "edited"))
    index = f"{folder}/warm"
    return {
        "build": seconds(full, index),
        "same": seconds(full, index),
        "change": seconds(edited, index),
        "back": seconds(full, index),
    }


def _worker_rss() -> float:
    """The largest peak RSS among the Spark Python workers that run Arrow tasks (reused across tasks: the ones that
    built and answered the shards)."""
    import pyarrow as pa

    def peak(batches: Any) -> Any:
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"rss": [_rss()]})

    return max(row[0] for row in spark_session().range(0, 8, 1, 8).mapInArrow(peak, "rss double").collect())


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measured(mode: str, corpus: str, queries: int, folder: str) -> dict[str, Any]:
    arguments = [sys.executable, __file__, "--run", mode, "--corpus", corpus, "--queries", str(queries)]
    done = subprocess.run([*arguments, "--folder", folder], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--quick", action="store_true", help="20,000 documents and 200 queries: a smoke test")
    parser.add_argument("--make", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    documents, queries = (20_000, 200) if arguments.quick else (arguments.documents, arguments.queries)
    if arguments.make:
        make_corpora(arguments.make, arguments.folder)
        return
    if arguments.warm:
        corpora = {name: f"{arguments.folder}/{name}.parquet" for name in ("full", "edited")}
        print(json.dumps(warm_session(corpora, arguments.folder)))
        return
    if arguments.run:
        print(json.dumps(run(arguments.run, arguments.corpus, queries, arguments.folder)))
        return
    print(f"{documents:,} documents of 30-60 words, {queries:,} queries of 4 words, top 10, Spark local[2]")
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, __file__, "--make", str(documents), "--folder", scratch], check=True)
        full, quarter_corpus, edited = (f"{scratch}/{name}.parquet" for name in ("full", "quarter", "edited"))
        raw = measured("raw", full, queries, scratch)
        raw_shard = measured("raw", quarter_corpus, queries, scratch)
        driver = measured("1", full, queries, f"{scratch}/driver")
        two = measured("2", full, queries, f"{scratch}/two")
        four = measured("4", full, queries, f"{scratch}/four")
        quarter = measured("4", quarter_corpus, queries, f"{scratch}/quarter")
        change = measured("4", edited, queries, f"{scratch}/four")
        rebuilt = measured("4", edited, queries, f"{scratch}/rebuilt")
        warm_run = subprocess.run(
            [sys.executable, __file__, "--warm", "--folder", scratch], capture_output=True, text=True, check=True
        )
        warm = json.loads(warm_run.stdout.strip().splitlines()[-1])
    print(f"{'build':<28}{'seconds':>9}{'vs driver':>11}{'driver MiB':>12}{'queries/s':>11}")
    print(f"{'raw bm25s, one process':<28}{raw['build']:>9.1f}{'':>11}{raw['rss']:>12.0f}{'':>11}")
    for name, result in (("driver (index_shards=1)", driver), ("2 shards", two), ("4 shards", four)):
        speed = driver["build"] / result["build"]
        print(
            f"{name:<28}{result['build']:>9.1f}{speed:>10.2f}x{result['rss']:>12.0f}{queries / result['request']:>11.0f}"
        )
    built, workers, alone = four["built"], four["workers"], raw_shard["rss"]
    print(
        f"largest Spark Python worker peak with 4 shards, having built 2 of them: {built:.0f} MiB, after also serving "
        f"the queries from both: {workers:.0f} MiB; raw bm25s over one shard's documents ({documents // 4:,}): "
        f"{alone:.0f} MiB ({built / alone:.2f}x, {workers / alone:.2f}x)"
    )
    growth = four["rss"] / quarter["rss"] - 1
    print(f"driver peak RSS with 4 shards: {quarter['rss']:.0f} MiB at 1x, {four['rss']:.0f} MiB at 4x ({growth:+.1%})")
    print(f"4 shards answer exactly as one index: {four['answers'] == driver['answers']}")
    share = change["build"] / four["build"]
    same = change["answers"] == rebuilt["answers"]
    print(
        f"1% change with 4 shards: {change['build']:.1f} s, {share:.0%} of the full build; equal to a rebuild: {same}"
    )
    print(
        f"in one session that stays up: full build {warm['build']:.1f} s, no change {warm['same']:.1f} s "
        f"({warm['same'] / warm['build']:.0%}), 1% change {warm['change']:.1f} s ({warm['change'] / warm['build']:.0%}), "
        f"the change undone {warm['back']:.1f} s ({warm['back'] / warm['build']:.0%})"
    )
    print("(request seconds include each request's pass over the corpus frame: reading it, checking its shards)")


if __name__ == "__main__":
    main()
