"""Retrieve (bm25s) -> rerank -> generate in one ``run_all``, each step reading the one before via ``*_source``.

The examples in docs/pipeline_example.md are executed as written, so the documentation cannot drift.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mloda.provider import FeatureGroup
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.connectors.rerank import FlashRankReranker, LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.generate import assert_grounded
from rag_integration.testing.tiny_flashrank import build_tiny_flashrank_model

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "pipeline_example.md"
CORPUS: list[dict[str, Any]] = [
    {"doc_id": "oil", "lang": "en", "text": "Change the engine oil every 10,000 km. Use 4.5 litres for a small car."},
    {"doc_id": "tyres", "lang": "en", "text": "Check the tyre pressure monthly. Worn tyres brake badly."},
    {"doc_id": "filter", "lang": "en", "text": "Replace the oil filter whenever you change the engine oil."},
    {"doc_id": "oil-de", "lang": "de", "text": "Engine oil engine oil: change the engine oil, the engine oil!"},
    {"doc_id": "bread", "lang": "en", "text": "Sourdough bread needs a starter and a hot oven."},
]


def example_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", EXAMPLE.read_text(encoding="utf-8"), re.S)


def run_pipeline(
    queries: list[str],
    rerank_options: dict[str, Any],
    generate_backend: str,
    groups: set[type[FeatureGroup]],
    **retrieve_options: Any,
) -> tuple[list[Any], list[Any], list[Any]]:
    """One ``run_all`` over all three steps; returns (retrieved, reranked, answers) rows."""
    retrieve = Feature(
        "retrieved_passages",
        options=Options(
            context={
                "retrieve_backend": "bm25s",
                "query_text": queries,
                "corpus": CORPUS,
                "top_k": 4,
                **retrieve_options,
            }
        ),
    )
    rerank = Feature(
        "reranked_passages",
        options=Options(context={"query_text": queries, "candidates_source": retrieve, **rerank_options}),
    )
    answer = Feature(
        "generated_answer",
        options=Options(
            context={"generate_backend": generate_backend, "query_text": queries, "passages_source": rerank}
        ),
    )
    result = mlodaAPI.run_all(
        [answer, rerank, retrieve],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, *groups}),
    )
    frames = {name: frame[name] for frame in result for name in frame}
    return frames["retrieved_passages"], frames["reranked_passages"], frames["generated_answer"]


def cited_only_what_came_through(retrieved: list[Any], reranked: list[Any], answers: list[Any]) -> None:
    assert len(retrieved) == len(reranked) == len(answers)
    for retrieved_row, reranked_row, answer in zip(retrieved, reranked, answers):
        retrieved_ids = {passage["doc_id"] for passage in retrieved_row}
        reranked_ids = {passage["doc_id"] for passage in reranked_row}
        assert reranked_ids <= retrieved_ids
        assert answer["citations"] and set(answer["citations"]) <= reranked_ids
        assert_grounded(answer, CORPUS)


def test_documented_pipelines_run_as_written() -> None:
    namespace: dict[str, Any] = {}
    first, second = example_blocks()
    exec(first, namespace)
    answers, retrieved = namespace["answers"], namespace["retrieved"]
    assert [row["citations"][0] for row in answers] == ["oil", "filter"]
    for answer, passages in zip(answers, retrieved):
        assert set(answer["citations"]) <= {passage["doc_id"] for passage in passages}
        assert_grounded(answer, namespace["corpus"])
    exec(second, namespace)
    assert [row["citations"] for row in namespace["answers"]] == [["oil"], ["filter"]]


@pytest.mark.parametrize("generate_backend", ["extractive", "template"])
def test_answers_cite_only_retrieved_and_reranked_passages(generate_backend: str) -> None:
    queries = ["engine oil change every how many km", "tyre pressure", "sourdough starter"]
    retrieved, reranked, answers = run_pipeline(
        queries,
        {"rerank_backend": "lexical", "top_k": 2},
        generate_backend,
        {LexicalReranker, ExtractiveResponder, TemplateResponder},
        filters={"lang": "en"},
    )
    assert all(len(row) <= 2 for row in reranked)
    assert [answer["citations"][0] for answer in answers] == ["oil", "tyres", "bread"]
    cited_only_what_came_through(retrieved, reranked, answers)


def test_a_passage_retrieve_filtered_out_is_never_cited() -> None:
    """The German document matches best, but retrieve's filter removes it; generate only sees the chain's output."""
    retrieved, reranked, answers = run_pipeline(
        ["engine oil"],
        {"rerank_backend": "lexical"},
        "template",
        {LexicalReranker, TemplateResponder},
        filters={"lang": "en"},
    )
    assert "oil-de" not in {passage["doc_id"] for passage in retrieved[0]}
    assert "oil-de" not in answers[0]["citations"]
    cited_only_what_came_through(retrieved, reranked, answers)


def test_rerank_top_k_bounds_what_generate_sees() -> None:
    retrieved, reranked, answers = run_pipeline(
        ["engine oil filter"],
        {"rerank_backend": "lexical", "top_k": 1},
        "template",
        {LexicalReranker, TemplateResponder},
    )
    assert len(retrieved[0]) > 1 and len(reranked[0]) == 1
    assert answers[0]["citations"] == [reranked[0][0]["doc_id"]]


def test_flashrank_cross_encoder_in_the_chain(tmp_path: Path) -> None:
    build_tiny_flashrank_model(tmp_path, [document["text"] for document in CORPUS])
    queries = ["replace the oil filter", "tyre pressure"]
    retrieved, reranked, answers = run_pipeline(
        queries,
        {"rerank_backend": "flashrank", "flashrank_model_dir": str(tmp_path), "top_k": 2},
        "extractive",
        {FlashRankReranker, ExtractiveResponder},
    )
    assert [row[0]["doc_id"] for row in reranked] == ["filter", "tyres"]
    assert all(0.0 < passage["score"] < 1.0 for row in reranked for passage in row)
    cited_only_what_came_through(retrieved, reranked, answers)


FRESH_PROCESS_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_end_to_end_rag import run_pipeline
from rag_integration.feature_groups.connectors.generate import TemplateResponder
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
print(json.dumps(run_pipeline(json.loads(sys.argv[2]), {"rerank_backend": "lexical"}, "template",
                              {LexicalReranker, TemplateResponder})))
"""


def test_same_answers_in_fresh_processes() -> None:
    queries = ["engine oil filter change", "tyre pressure brake", "bread oven"]
    expected = json.loads(
        json.dumps(
            run_pipeline(queries, {"rerank_backend": "lexical"}, "template", {LexicalReranker, TemplateResponder})
        )
    )
    for seed in ("1", "2"):
        completed = subprocess.run(
            [sys.executable, "-c", FRESH_PROCESS_SCRIPT, str(Path(__file__).parent), json.dumps(queries)],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONHASHSEED=seed),
            check=True,
        )
        assert json.loads(completed.stdout.strip().splitlines()[-1]) == expected
