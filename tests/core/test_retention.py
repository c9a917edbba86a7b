"""One family of caches (``core.indexes.retention``): the bounded LRU every process cache uses, the stored mark, and
the pruning that keeps an ``index_dir`` to a bounded number of corpus versions per backend, never touching a folder
the store did not write nor a store a reader is loading."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes import store as index_store
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexCache, IndexKey
from rag_integration.core.indexes.retention import (
    DEFAULT_KEEP_VERSIONS,
    BoundedLru,
    StoreMarks,
    keeping_versions,
    prune_index_stores,
    versions_kept,
)
from rag_integration.core.indexes.store import POINTER_FILE, StoreClaim, current_version, write_store
from rag_integration.core.indexes.term_counts import ANALYSIS_FOLDER, ANALYSIS_MEMO
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()


def test_the_lru_keeps_the_most_recently_used_within_entries_and_bytes() -> None:
    lru: BoundedLru[str, str] = BoundedLru(max_entries=3, max_bytes=100)
    for key in "abc":
        lru.put(key, key.upper(), 10)
    assert lru.get("a") == "A"  # now the most recently used
    lru.put("d", "D", 10)
    assert "b" not in lru and list(lru.values()) == ["C", "A", "D"] and lru.total_bytes == 30
    assert lru.peek("c") == "C"  # a peek is not a use
    lru.put("e", "E", 75)
    assert "c" not in lru and list(lru.values()) == ["A", "D", "E"] and lru.total_bytes == 95
    assert not lru.put("f", "F", 101)  # larger than the whole bound: used, not kept
    assert "f" not in lru and len(lru) == 3
    lru.put("d", "D", 500)
    assert "d" not in lru and len(lru) == 2  # a value replaced by one too large to keep goes
    lru.resize(0, 100)
    assert len(lru) == 0 and not lru.put("g", "G", 1)


def test_many_values_are_read_and_kept_under_one_bound() -> None:
    lru: BoundedLru[int, int] = BoundedLru(max_bytes=40)
    lru.put_many((n, n * n, 8) for n in range(10))
    assert sorted(lru.get_many(range(10))) == [5, 6, 7, 8, 9] and lru.total_bytes == 40


def test_a_mark_holds_only_while_current_is_unchanged(tmp_path: Path) -> None:
    marks = StoreMarks()
    store = tmp_path / "store"
    state = index_store.pointer_state(store)
    version = write_store(store, StoreClaim("test", {}, "one"), lambda folder: (folder / "x").write_text("1"))
    marks.note(store, "one", version, state)
    assert not marks.holds(store, "one")  # CURRENT changed after the state was taken: another writer may have won
    marks.note(store, "one", version, index_store.pointer_state(store))
    assert marks.holds(store, "one") and not marks.holds(store, "two")
    time.sleep(0.01)
    write_store(store, StoreClaim("test", {}, "two"), lambda folder: (folder / "x").write_text("2"))
    assert not marks.holds(store, "one")


def write_index_store(parent: Path, backend: str, number: int) -> Path:
    key = IndexKey.of(backend, {"n": number}, "corpus")
    store = parent / key.folder_name()
    write_store(store, key.claim(), lambda folder: (folder / "x").write_text(str(number)))
    pointer = store / POINTER_FILE
    os.utime(pointer, ns=(number * 10**9, number * 10**9))  # written in this order
    return store


def test_an_index_dir_keeps_the_latest_stores_of_each_backend_and_nothing_else_is_touched(tmp_path: Path) -> None:
    faiss = [write_index_store(tmp_path, "faiss", number) for number in range(6)]
    tfidf = [write_index_store(tmp_path, "tfidf", number) for number in range(2)]
    users = tmp_path / ("faiss-" + "0" * 20)  # a user's folder named like a store, without one in it
    users.mkdir()
    (users / POINTER_FILE).write_text("v-1\n")
    shared = [tmp_path / "embeddings", tmp_path / ANALYSIS_FOLDER]
    for folder in shared:
        folder.mkdir()
    assert prune_index_stores(tmp_path, 3, backend="faiss", spare=faiss[0].name) == 3
    assert [store.exists() for store in faiss] == [True, False, False, False, True, True]
    assert all(store.exists() for store in [*tfidf, users, *shared])
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".removed-")]
    assert prune_index_stores(tmp_path, 2) == 3  # every backend together (the command line's files cache)
    assert {store.name for store in tmp_path.iterdir()} == {
        faiss[5].name,
        faiss[4].name,
        users.name,
        "embeddings",
        ANALYSIS_FOLDER,
    }


def test_a_store_a_reader_is_loading_is_left_for_a_later_prune(tmp_path: Path) -> None:
    stores = [write_index_store(tmp_path, "faiss", number) for number in range(3)]
    version = current_version(stores[0])
    assert version is not None
    with index_store._version_lock(version.folder) as held:
        assert held
        assert prune_index_stores(tmp_path, 1, backend="faiss") == 1
        assert stores[0].exists() and not stores[1].exists()
    assert prune_index_stores(tmp_path, 1, backend="faiss") == 1
    assert [store.exists() for store in stores] == [False, False, True]


def test_the_cache_prunes_a_backends_stores_when_it_writes_one(tmp_path: Path) -> None:
    cache = IndexCache()
    for number in range(DEFAULT_KEEP_VERSIONS + 2):
        key = IndexKey.of("test", {"n": number}, "corpus")
        cache.get_or_build(
            key, lambda number=number: number, index_dir=tmp_path, save=lambda _, f: (f / "x").write_text("x")
        )
    assert len(list(tmp_path.glob("test-*"))) == DEFAULT_KEEP_VERSIONS
    key = IndexKey.of("test", {"n": 99}, "corpus")
    cache.get_or_build(
        key, lambda: 99, index_dir=tmp_path, save=lambda _, f: (f / "x").write_text("x"), keep_versions=2
    )
    assert {path.name for path in tmp_path.glob("test-*")} >= {key.folder_name()}
    assert len(list(tmp_path.glob("test-*"))) == 2


def test_keeping_versions_is_scoped_to_the_build() -> None:
    assert versions_kept() == DEFAULT_KEEP_VERSIONS
    with keeping_versions(2):
        assert versions_kept() == 2
        with keeping_versions(None):
            assert versions_kept() == DEFAULT_KEEP_VERSIONS
    assert versions_kept() == DEFAULT_KEEP_VERSIONS


def corpus_version(number: int) -> list[dict[str, Any]]:
    return [{**row, "text": f"{row['text']} version {number}"} for row in CORPUS]


def retrieve(connector: type[Any], extra: dict[str, Any], index_dir: Path, corpus: Any) -> list[Any]:
    options = {
        "retrieve_backend": connector.BACKEND,
        "query_text": ["cat"],
        "corpus": corpus,
        "index_dir": str(index_dir),
    }
    return run_feature("retrieved_passages", {**options, **extra}, {connector})


def test_a_library_callers_index_dir_keeps_a_bounded_number_of_corpus_versions(tmp_path: Path) -> None:
    for number in range(DEFAULT_KEEP_VERSIONS + 2):
        retrieve(FaissDenseRetriever, {"embedding_model": "hash"}, tmp_path / "default", corpus_version(number))
    assert len(list((tmp_path / "default").glob("faiss-*"))) == DEFAULT_KEEP_VERSIONS
    for number in range(4):
        retrieve(
            FaissDenseRetriever,
            {"embedding_model": "hash", "keep_versions": 2},
            tmp_path / "two",
            corpus_version(number),
        )
        retrieve(Bm25sRetriever, {"keep_versions": 2}, tmp_path / "two", corpus_version(number))
    assert len(list((tmp_path / "two").glob("faiss-*"))) == 2
    assert len(list((tmp_path / "two" / ANALYSIS_FOLDER).glob("*/*"))) == 2  # bm25s's analysed corpora alike
    expected = retrieve(Bm25sRetriever, {}, tmp_path / "fresh", corpus_version(3))
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()  # as a new process: only the folder remembers
    assert retrieve(Bm25sRetriever, {"keep_versions": 2}, tmp_path / "two", corpus_version(3)) == expected
    assert ANALYSIS_MEMO.stats.analysed == 0  # the latest stayed


def test_keep_versions_is_checked(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="keep_versions"):
        retrieve(Bm25sRetriever, {"keep_versions": 0}, tmp_path, CORPUS)
    assert not list(tmp_path.iterdir())
