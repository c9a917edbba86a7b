"""Forgetting: once ``forget`` returns, nothing under ``index_dir`` holds a forgotten document's text, words or vector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rag_integration.application import ArgumentError, forget
from rag_integration.cli import app
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO, text_key
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.testing.runner import run_feature

RUNNER = CliRunner()
SECRET = "The quixotelium merger with Zürichblau closes on Friday."
UNIQUE = ("quixotel", "zürichbl")
CORPUS: list[dict[str, Any]] = [
    {"doc_id": "oil", "text": "Change the engine oil every 10,000 km."},
    {"doc_id": "secret", "text": SECRET},
    {"doc_id": "bread", "text": "Bake the bread in a hot oven for the merger party."},
]


def traces(folder: Path) -> list[str]:
    """Files under ``folder`` holding a unique word of the secret (as UTF-8, UTF-16 or JSON's ASCII escapes, any
    case) or the digest its vector is kept under."""
    needles = [text_key(SECRET)]
    for word in UNIQUE:
        needles += [word.encode("utf-8"), word.encode("utf-16-le"), json.dumps(word).strip('"').encode("ascii")]
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(needle in data or needle in data.lower() for needle in needles):
                found.append(str(path.relative_to(folder)))
    return found


def test_index_forget_leaves_no_trace_of_the_document(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "team.jsonl").write_text("\n".join(json.dumps(doc) for doc in CORPUS), encoding="utf-8")
    store = tmp_path / "store"
    built = RUNNER.invoke(app, ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash"])
    assert built.exit_code == 0, built.output
    again = RUNNER.invoke(app, ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash"])
    assert again.exit_code == 0, again.output  # two versions now, both holding the secret
    assert traces(store)
    forgotten = RUNNER.invoke(app, ["index", "--index-dir", str(store), "--forget", "secret", "--forget", "nope"])
    assert forgotten.exit_code == 0, forgotten.output
    assert "forgot 1 document" in forgotten.output and "1 id(s) not found" in forgotten.output
    assert traces(store) == []
    assert (get_embedder("hash").model_id, text_key(SECRET)) not in EMBEDDING_MEMO._rows
    search = ["search", "merger quixotelium", "--index-dir", str(store), "--embedding-model", "hash", "--json"]
    found = RUNNER.invoke(app, search)
    assert found.exit_code == 0, found.output
    ids = [passage["metadata"]["parent_id"] for passage in json.loads(found.stdout)[0]["passages"]]
    assert "secret" not in ids and "bread" in ids


def test_forget_in_a_retrieve_backends_index_dir(tmp_path: Path) -> None:
    for backend in (Bm25sRetriever, TfidfRetriever, FaissDenseRetriever, HybridRrfRetriever):
        request = {
            "retrieve_backend": backend.BACKEND,
            "corpus": CORPUS,
            "query_text": "merger",
            "index_dir": str(tmp_path),
        }
        run_feature(
            "retrieved_passages",
            {**request, "embedding_model": "hash"} if backend.BACKEND in ("faiss", "hybrid_rrf") else request,
            {backend},
        )
    assert traces(tmp_path)
    with pytest.raises(ArgumentError, match="documents"):
        forget(tmp_path, ["secret"])
    report = forget(tmp_path, ["secret"], documents=CORPUS)
    assert report.forgotten == 1 and report.vectors >= 1 and report.analyses >= 1 and report.indexes >= 1
    assert traces(tmp_path) == []
    remaining = [doc for doc in CORPUS if doc["doc_id"] != "secret"]
    rows = run_feature(
        "retrieved_passages",
        {"retrieve_backend": "bm25s", "corpus": remaining, "query_text": "merger", "index_dir": str(tmp_path)},
        {Bm25sRetriever},
    )
    assert [row["doc_id"] for row in rows[0]] == ["bread"]
    assert traces(tmp_path) == []


def test_forget_refuses_a_lone_string(tmp_path: Path) -> None:
    with pytest.raises(ArgumentError, match="doc_ids"):
        forget(tmp_path, "secret")


def test_a_document_gone_from_an_update_leaves_no_trace_once_older_versions_are_pruned(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    for doc in CORPUS:
        (documents / f"{doc['doc_id']}.txt").write_text(doc["text"], encoding="utf-8")
    store = tmp_path / "store"
    index = ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash", "--keep", "1"]
    assert RUNNER.invoke(app, index).exit_code == 0
    assert traces(store)
    (documents / "secret.txt").unlink()
    updated = RUNNER.invoke(app, index)
    assert updated.exit_code == 0 and "1 removed" in updated.output, updated.output
    assert traces(store) == []
