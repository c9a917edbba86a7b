"""From a folder of files to a cited answer: chunks and a FAISS store built in one run_all, then a new process
loads the store from disk (embedding only its queries) and retrieves, reranks and answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_integration.cli import main as cli_main
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

FILES = {
    "cars/oil.md": "# Engine oil\n\nChange the engine oil every 10,000 km. Use 4.5 litres for a small car.\n",
    "cars/tyres.txt": "Check the tyre pressure every month. Worn tyres lengthen the braking distance.",
    "home/bread.txt": "Sourdough bread needs a starter, flour and water. Bake it in a hot oven.",
}
QUERIES = ["How often should I change the engine oil?", "What does sourdough bread need?"]

NEW_PROCESS = """
import json, sys
from mloda.user import Feature, Options
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.feature_groups.connectors.generate import TemplateResponder
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.rag_pipeline import VectorStoreRetriever
from rag_integration.testing.runner import run_feature

index_dir, queries = sys.argv[1], json.loads(sys.argv[2])
retrieve = Feature("retrieved_passages", options=Options(context={
    "retrieve_backend": "vector_store", "embedding_model": "hash", "index_dir": index_dir, "query_text": queries,
    "top_k": 4, "return_metadata": True}))
rerank = Feature("reranked_passages", options=Options(context={
    "rerank_backend": "lexical", "query_text": queries, "candidates_source": retrieve, "top_k": 2}))
answers = run_feature("generated_answer", {"generate_backend": "template", "query_text": queries,
                      "passages_source": rerank}, {VectorStoreRetriever, LexicalReranker, TemplateResponder})
print(json.dumps({"answers": answers, "texts_embedded": get_embedder("hash").texts_embedded}))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "docs"


def test_files_to_cited_answer_across_processes(folder: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    EMBEDDING_MEMO.clear()  # rows embedded by earlier tests would not be embedded again
    embedder = get_embedder("hash")
    embedded_before = embedder.texts_embedded
    chunks = run_feature(
        "docs__chunked__deduped__embedded__indexed",
        {
            "document_source": "files",
            "paths": str(folder),
            "chunker": "sentence",
            "sentences_per_chunk": 1,
            "dedup": "exact",
            "embedding_model": "hash",
            "vector_store": "faiss",
            "index_dir": str(index_dir),
        },
        set(STAGES),
    )
    assert embedder.texts_embedded - embedded_before == len(chunks)
    sources = {chunk["doc_id"]: chunk["source"] for chunk in chunks}
    assert "cars/oil.md#1" in sources and sources["cars/oil.md#1"].endswith("oil.md")

    completed = subprocess.run(
        [sys.executable, "-c", NEW_PROCESS, str(index_dir), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        check=True,
    )
    reply = json.loads(completed.stdout.strip().splitlines()[-1])
    assert reply["texts_embedded"] == len(QUERIES)  # the queries only: the store was not re-embedded
    oil, bread = reply["answers"]
    assert oil["citations"][0] == "cars/oil.md#1" and "every 10,000 km. [1]" in oil["answer"]
    assert bread["citations"][0].startswith("home/bread.txt#")
    for answer in reply["answers"]:
        assert answer["citations"] and set(answer["citations"]) <= set(sources)
        chunk_texts = {chunk["doc_id"]: chunk["text"] for chunk in chunks}
        first_sentence = answer["answer"].split(" [1]")[0]
        assert first_sentence in chunk_texts[answer["citations"][0]]


def test_swap_demo_runs_every_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["swap-demo", "--embedding-model", "hash"]) == 0
    output = capsys.readouterr().out
    for backend in ("bm25s", "tfidf", "faiss", "hybrid_rrf", "vector_store"):
        assert f"retrieve_backend={backend!r}" in output
    assert "generate_backend='template'" in output and "engine-oil#0" in output
