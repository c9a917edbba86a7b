"""nDCG@10 of every retrieve backend on a BEIR-format dataset, all test queries in one batched ``run_all``.

    uv run --all-extras python benchmarks/beir_quality.py ../shared/data/scifact

The dense index is persisted under ``--index-dir`` (default ``.bench-cache/``), so a second run does not re-embed.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration.feature_groups.connectors.retrieve import (
    BaseRetrieveConnector,
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)

CONFIGURATIONS: list[tuple[str, type[BaseRetrieveConnector], dict[str, Any]]] = [
    ("bm25s", Bm25sRetriever, {}),
    ("bm25s (no stemmer)", Bm25sRetriever, {"stemmer": False}),
    ("tfidf", TfidfRetriever, {}),
    ("faiss minilm", FaissDenseRetriever, {"embedding_model": "minilm"}),
    ("faiss hash", FaissDenseRetriever, {"embedding_model": "hash"}),
    ("hybrid_rrf minilm", HybridRrfRetriever, {"embedding_model": "minilm"}),
]


def load_beir(folder: Path, split: str) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    corpus = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            corpus.append({"doc_id": str(record["_id"]), "text": f"{record.get('title', '')} {record['text']}".strip()})
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[str(record["_id"])] = record["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as table:
        for row in csv.DictReader(table, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return corpus, {query_id: queries[query_id] for query_id in sorted(qrels)}, qrels


def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    gains = [relevant.get(doc_id, 0) for doc_id in ranked[:k]]
    dcg = sum((2**gain - 1) / math.log2(position + 2) for position, gain in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**gain - 1) / math.log2(position + 2) for position, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def evaluate(
    connector: type[BaseRetrieveConnector],
    extra: dict[str, Any],
    corpus: list[dict[str, Any]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    index_dir: Path,
) -> tuple[float, float]:
    options = {
        "retrieve_backend": connector.BACKEND,
        "query_text": list(queries.values()),
        "corpus": corpus,
        "top_k": 10,
        "index_dir": str(index_dir),
        **extra,
    }
    started = time.perf_counter()
    result = mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=options))],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({connector}),
    )
    seconds = time.perf_counter() - started
    rankings = result[0]["retrieved_passages"]
    scores = [
        ndcg_at_k([passage["doc_id"] for passage in ranking], qrels[query_id])
        for query_id, ranking in zip(queries, rankings, strict=True)
    ]
    return sum(scores) / len(scores), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dir", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--index-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--only", action="append", help="run only configurations whose label contains this")
    arguments = parser.parse_args()
    corpus, queries, qrels = load_beir(arguments.dataset_dir, arguments.split)
    print(f"{arguments.dataset_dir.name}: {len(corpus)} documents, {len(queries)} {arguments.split} queries")
    print(f"{'backend':<22} {'nDCG@10':>8} {'seconds':>9}")
    for label, connector, extra in CONFIGURATIONS:
        if arguments.only and not any(fragment in label for fragment in arguments.only):
            continue
        if not connector.is_installed():
            print(f"{label:<22} {'n/a':>8} {'(extra not installed)':>9}")
            continue
        score, seconds = evaluate(
            connector, extra, corpus, queries, qrels, arguments.index_dir / arguments.dataset_dir.name
        )
        print(f"{label:<22} {score:8.4f} {seconds:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
