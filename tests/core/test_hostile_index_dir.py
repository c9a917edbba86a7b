"""A query answers from its in-memory index whatever happens to ``index_dir`` afterwards: re-writing the store is
best effort once the index is in memory, so a process deleting the folder fails no query (issue 17, item 5)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes import cache as index_cache
from rag_integration.core.indexes import term_counts
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.embedding_memo import EMBEDDINGS_FOLDER
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever, TfidfRetriever
from rag_integration.testing.runner import run_feature

CORPUS = [
    {"doc_id": "oil", "text": "Change the engine oil every 10,000 km."},
    {"doc_id": "bread", "text": "Sourdough bread needs a starter and time."},
    {"doc_id": "tyres", "text": "Check the tyre pressure once a month."},
]
BACKENDS = {
    "bm25s": (Bm25sRetriever, {}),
    "tfidf": (TfidfRetriever, {}),
    "faiss": (FaissDenseRetriever, {"embedding_model": "hash"}),
}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    INDEX_CACHE.clear()
    yield
    INDEX_CACHE.clear()


def query(backend: str, index_dir: Path, text: str = "engine oil") -> list[str]:
    group, options = BACKENDS[backend]
    request = {
        "retrieve_backend": backend,
        "corpus": CORPUS,
        "query_text": text,
        "index_dir": str(index_dir),
        **options,
    }
    [ranking] = run_feature("retrieved_passages", request, {group})
    return [hit["doc_id"] for hit in ranking]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_folder_deleted_between_queries_is_written_again(backend: str, tmp_path: Path) -> None:
    index_dir = tmp_path / "indexes"
    expected = query(backend, index_dir)
    assert expected[0] == "oil"
    shutil.rmtree(index_dir)
    assert query(backend, index_dir) == expected
    assert any(entry.name != EMBEDDINGS_FOLDER for entry in index_dir.iterdir())  # the kept index was stored again
    assert INDEX_CACHE.stats.builds == 1


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_folder_deleted_while_the_store_is_rewritten_fails_no_query(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The race made deterministic: the folder vanishes in the middle of re-writing the store of an index that is
    already in memory (what another process's ``rm -rf`` does between two of our file writes)."""
    index_dir = tmp_path / "indexes"
    expected = query(backend, index_dir)
    shutil.rmtree(index_dir)
    writer = term_counts if backend == "bm25s" else index_cache  # bm25s stores its analysed corpus, not its index
    real_write_store = writer.write_store
    deleted: list[Path] = []

    def write_store_while_deleted(folder: Path, claim: Any, save: Callable[[Path], None]) -> str:
        def save_after_deletion(staging: Path) -> None:
            shutil.rmtree(index_dir)
            deleted.append(staging)
            save(staging)

        return real_write_store(folder, claim, save_after_deletion)

    monkeypatch.setattr(writer, "write_store", write_store_while_deleted)
    with caplog.at_level("WARNING", logger="rag_integration"):
        assert query(backend, index_dir) == expected
    assert deleted, "the store was not re-written, so the race was not exercised"
    assert "could not store the" in caplog.text and "again" in caplog.text
    monkeypatch.setattr(writer, "write_store", real_write_store)
    assert query(backend, index_dir) == expected  # the next hit stores it again
    assert any(entry.name != EMBEDDINGS_FOLDER for entry in index_dir.iterdir())
    assert INDEX_CACHE.stats.builds == 1


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_concurrent_queries_survive_the_folder_being_deleted(backend: str, tmp_path: Path) -> None:
    """Threads query while another deletes ``index_dir`` over and over; whatever the interleaving, every query
    answers with the same ranking (the assertion holds for every schedule, so it is not timing-based)."""
    index_dir = tmp_path / "indexes"
    expected = query(backend, index_dir)
    stop = threading.Event()
    errors: list[BaseException] = []
    answers: list[list[str]] = []

    def delete_repeatedly() -> None:
        while not stop.is_set():
            shutil.rmtree(index_dir, ignore_errors=True)

    def ask_repeatedly() -> None:
        for _ in range(15):
            try:
                answers.append(query(backend, index_dir))
            except BaseException as error:  # every failure is collected and asserted on below
                errors.append(error)

    deleter = threading.Thread(target=delete_repeatedly)
    askers = [threading.Thread(target=ask_repeatedly) for _ in range(4)]
    deleter.start()
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    stop.set()
    deleter.join()
    assert errors == []
    assert answers == [expected] * 60
    assert INDEX_CACHE.stats.builds == 1


def test_an_unwritable_index_dir_on_a_cold_build_is_still_reported(tmp_path: Path) -> None:
    """Best effort applies only to an index already in memory: a folder that cannot be written when the index is
    first built is the request's mistake and is named."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="index_dir"):
        query("bm25s", blocker / "indexes")
