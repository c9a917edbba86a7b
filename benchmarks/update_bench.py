"""What a 1% change of a corpus costs against a full build: a third of the change added, a third removed, a third
edited, in one process (the index cache and the analysis and embedding memos warm) and through ``index_dir`` in a
second process (both timed after one tiny request has imported what every request needs).

    uv run --all-extras python benchmarks/update_bench.py [--scifact ../shared/data/scifact] [--documents N]

Prints, per backend, the full build's seconds, the changed corpus's seconds and their ratio, and whether the
changed corpus's rankings equal a from-scratch build's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import synthetic_corpus

from rag_integration import Corpus
from rag_integration.core.indexes.memory import forget_built
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever
from rag_integration.testing.runner import run_feature

BACKENDS = {"bm25s": Bm25sRetriever, "faiss": FaissDenseRetriever}


def changed(corpus: list[dict[str, str]], share: float = 0.01) -> list[dict[str, str]]:
    """The corpus with ``share`` of it changed: a third removed, a third edited, a third added."""
    step = max(1, round(len(corpus) * share / 3))
    kept = corpus[step:]
    edited = [{**row, "text": row["text"] + " (revised)"} for row in kept[:step]]
    added = [{"doc_id": f"added-{position}", "text": row["text"][::-1]} for position, row in enumerate(corpus[:step])]
    return edited + kept[step:] + added


def request(backend: str, corpus: list[dict[str, str]], queries: list[str], index_dir: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {
        "retrieve_backend": backend,
        "corpus": Corpus(corpus),  # as README advises for a large corpus: validated once, copied by mloda in O(1)
        "query_text": queries,
        "top_k": 10,
    }
    if index_dir is not None:
        options["index_dir"] = index_dir
    return options


def timed(
    backend: str, corpus: list[dict[str, str]], queries: list[str], index_dir: str | None = None
) -> tuple[float, Any]:
    started = time.perf_counter()
    rows = run_feature("retrieved_passages", request(backend, corpus, queries, index_dir), {BACKENDS[backend]})
    return time.perf_counter() - started, rows


def warm_up(backend: str) -> None:
    """One tiny request, so the timings that follow leave out what a process's first request imports."""
    timed(backend, [{"doc_id": "warm", "text": "a first request imports what every request needs"}], ["request"])


def cold() -> None:
    forget_built()


def ranking(rows: Any) -> list[list[str]]:
    return [[hit["doc_id"] for hit in row] for row in rows]


def second_process(backend: str, corpus_file: Path, queries: list[str], index_dir: str) -> tuple[float, list[Any]]:
    """The seconds a fresh process takes to answer, after one warm-up request, and its ranking."""
    script = (
        "import json, sys\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "from update_bench import ranking, timed, warm_up\n"
        "warm_up(sys.argv[1])\n"
        "corpus = json.loads(open(sys.argv[2]).read())\n"
        "seconds, rows = timed(sys.argv[1], corpus, json.loads(sys.argv[3]), sys.argv[4])\n"
        "print(json.dumps([seconds, ranking(rows)]))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, backend, str(corpus_file), json.dumps(queries), index_dir],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, rows = json.loads(completed.stdout.strip().splitlines()[-1])
    return float(seconds), rows


def measure(label: str, backend: str, corpus: list[dict[str, str]], queries: list[str]) -> None:
    edited = changed(corpus)
    cold()
    full, _ = timed(backend, corpus, queries)
    update, rows = timed(backend, edited, queries)
    cold()
    _, rebuilt = timed(backend, edited, queries)
    same = ranking(rows) == ranking(rebuilt)
    print(
        f"{label:<28} in process      full {full:7.2f} s  1% change {update:7.2f} s  ratio {update / full:5.2f}  same ranking {same}"
    )
    with tempfile.TemporaryDirectory() as folder:
        cold()
        timed(backend, corpus, queries, folder)
        corpus_file = Path(folder) / "edited.json"
        corpus_file.write_text(json.dumps(edited), encoding="utf-8")
        full_file = Path(folder) / "full.json"
        full_file.write_text(json.dumps(corpus), encoding="utf-8")
        with tempfile.TemporaryDirectory() as empty:
            first, _ = second_process(backend, full_file, queries, empty)
        again, stored_rows = second_process(backend, corpus_file, queries, folder)
    same = stored_rows == ranking(rebuilt)
    print(
        f"{label:<28} from index_dir  full {first:7.2f} s  1% change {again:7.2f} s  ratio {again / first:5.2f}  same ranking {same}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--documents", type=int, default=0, help="SciFact documents to use (0: all)")
    parser.add_argument("--synthetic", type=int, default=50_000)
    parser.add_argument("--only", action="append")
    arguments = parser.parse_args()
    for backend in BACKENDS:
        warm_up(backend)
    if not arguments.only or "bm25s" in arguments.only:
        corpus, queries = synthetic_corpus(arguments.synthetic, 100, 20_000)
        measure(f"bm25s, {len(corpus):,} synthetic", "bm25s", corpus, queries)
    if (not arguments.only or "faiss" in arguments.only) and (arguments.scifact / "corpus.jsonl").is_file():
        rows = [json.loads(line) for line in (arguments.scifact / "corpus.jsonl").open(encoding="utf-8")]
        rows = rows[: arguments.documents or len(rows)]
        corpus = [{"doc_id": row["_id"], "text": f"{row.get('title', '')} {row['text']}".strip()} for row in rows]
        queries = [json.loads(line)["text"] for line in (arguments.scifact / "queries.jsonl").open(encoding="utf-8")][
            :50
        ]
        measure(f"faiss minilm, {len(corpus):,} SciFact", "faiss", corpus, queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
