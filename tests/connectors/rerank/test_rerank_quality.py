"""The lexical reranker never lowers a good ranking by default: bm25s top 100 -> lexical -> nDCG@10 at least the
input's minus 0.005 on SciFact and Cranfield (docs/rerank.md has the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_integration.evaluation import evaluate, load_dataset

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


@pytest.mark.skipif(not (DATA / "scifact").is_dir(), reason="shared evaluation data not present")
@pytest.mark.parametrize("collection", ["scifact", "cranfield"])
def test_lexical_reranking_keeps_the_input_quality(collection: str) -> None:
    dataset = load_dataset(DATA / collection)
    before = evaluate(dataset, "bm25s", metrics=["nDCG@10"], top_k=100).metrics["nDCG@10"]
    after = evaluate(dataset, "bm25s", rerank_backend="lexical", metrics=["nDCG@10"], top_k=100).metrics["nDCG@10"]
    assert after >= before - 0.005, (before, after)
