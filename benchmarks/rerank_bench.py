"""Does the lexical reranker keep what the retriever found? nDCG@10 of a retriever's top 100, then the same top 100
reranked by ``lexical`` in each ``lexical_order``, on every collection given (BEIR or SMART folders, as the eval
command reads them).

    uv run --all-extras python benchmarks/rerank_bench.py ../shared/data/scifact ../shared/data/cranfield \
        CISI/ CACM/ [--retrievers bm25s,tfidf] [--orders dominance,fusion]

Prints per collection and retriever the input's nDCG@10, each order's, the difference and whether it holds the
input within 0.005 (the bar docs/rerank.md states).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_integration.evaluation import evaluate, load_dataset

TOLERANCE = 0.005


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collections", type=Path, nargs="+")
    parser.add_argument("--retrievers", default="bm25s")
    parser.add_argument("--orders", default="dominance,fusion")
    arguments = parser.parse_args()
    orders = arguments.orders.split(",")
    print(f"{'collection':12} {'queries':>7} {'retriever':9} {'input':>7} " + " ".join(f"{o:>20}" for o in orders))
    failures = 0
    for folder in arguments.collections:
        dataset = load_dataset(folder)
        for retriever in arguments.retrievers.split(","):
            before = evaluate(dataset, retriever, metrics=["nDCG@10"]).metrics["nDCG@10"]
            cells = []
            for order in orders:
                after = evaluate(
                    dataset, retriever, rerank_backend="lexical", options={"lexical_order": order}, metrics=["nDCG@10"]
                ).metrics["nDCG@10"]
                holds = after >= before - TOLERANCE
                failures += not holds and order == "dominance"
                cells.append(f"{after:.4f} ({after - before:+.4f}){' ' if holds else '!'}")
            print(
                f"{folder.name:12} {len(dataset.queries):7} {retriever:9} {before:7.4f} "
                + " ".join(f"{c:>20}" for c in cells)
            )
    print(f"dominance below its input by more than {TOLERANCE}: {failures} case(s)  ('!' marks any order that is)")


if __name__ == "__main__":
    main()
