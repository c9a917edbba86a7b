"""Persisted indexes are untrusted: one store format (``core.indexes.store``) for the retrieve indexes and the vector
store, every file checked against its manifest and every shape against the request before anything is read.

A broken retrieve index is rebuilt from the corpus and written again (with a logged warning); a broken vector store,
which has no corpus to be rebuilt from, is an ``IndexMismatchError``. Two writers and a reader at once never see a
store that mixes two corpora.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_integration.core.documents.files import FileTooLargeError, NotRegularFileError, read_regular_file
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.indexes import store as index_store
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexCache, IndexKey
from rag_integration.core.indexes.embedding_memo import EMBEDDINGS_FOLDER
from rag_integration.core.indexes.store import MANIFEST_FILE, POINTER_FILE, StoreClaim, current_version, write_store
from rag_integration.core.indexes.term_counts import ANALYSIS_FOLDER, ANALYSIS_MEMO
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature

OTHER_CORPUS = [{"doc_id": f"o{n}", "text": f"another corpus line {n} about trains"} for n in range(len(CORPUS))]
QUERIES = ["cat", "engine oil"]
RETRIEVERS: list[tuple[type[Any], dict[str, Any]]] = [
    (Bm25sRetriever, {}),
    (Bm25sRetriever, {"bm25_method": "bm25+"}),
    (TfidfRetriever, {}),
    (FaissDenseRetriever, {"embedding_model": "hash"}),
    (FaissDenseRetriever, {"embedding_model": "hash", "faiss_index": "hnsw"}),
    (FaissDenseRetriever, {"embedding_model": "hash", "faiss_index": "ivf"}),
    (HybridRrfRetriever, {"embedding_model": "hash"}),
]
STORING_RETRIEVERS = [(connector, extra) for connector, extra in RETRIEVERS if connector.stores_index()]
"""bm25s keeps only its analysed corpus in ``index_dir`` (tested below and by the kit), not its index; hybrid_rrf
nothing beyond its rankers' own stores."""


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()


def retrieve(connector: type[Any], extra: dict[str, Any], index_dir: Path, corpus: Any = CORPUS) -> list[Any]:
    options = {"retrieve_backend": connector.BACKEND, "query_text": QUERIES, "corpus": corpus, "top_k": 3}
    return run_feature("retrieved_passages", {**options, **extra, "index_dir": str(index_dir)}, {connector})


def live_version(store: Path) -> Path:
    version = current_version(store)
    assert version is not None
    return version.folder


def forge_manifest(version: Path) -> None:
    """What an attacker who rewrites files would also do: make the manifest's sizes and hashes match them again."""
    manifest = json.loads((version / MANIFEST_FILE).read_text())
    files = sorted(p for p in version.rglob("*") if p.is_file() and p.name != MANIFEST_FILE)
    manifest["files"] = {
        p.relative_to(version).as_posix(): {
            "bytes": p.stat().st_size,
            "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
        }
        for p in files
    }
    (version / MANIFEST_FILE).write_text(json.dumps(manifest))


def largest_file(version: Path) -> Path:
    return max(
        (p for p in version.rglob("*") if p.is_file() and p.name != MANIFEST_FILE), key=lambda p: p.stat().st_size
    )


def first_npy(version: Path) -> Path:
    return sorted(version.rglob("*.npy"))[0]


def truncate(version: Path, other: Path) -> None:
    path = largest_file(version)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def swap_file(version: Path, other: Path) -> None:
    """Another corpus's file of the same name put in place (the manifest still lists the original's hash)."""
    path = largest_file(version)
    shutil.copy(other / path.relative_to(version), path)


def swap_file_and_manifest(version: Path, other: Path) -> None:
    """Another corpus's whole version put in place, manifest and all: its corpus fingerprint gives it away."""
    shutil.rmtree(version)
    shutil.copytree(other, version)


def wrong_dimension(version: Path, other: Path) -> None:
    path = first_npy(version)
    array = np.load(path)
    np.save(path, np.zeros((*array.shape[:-1], array.shape[-1] + 1), dtype=array.dtype) if array.ndim else array)
    forge_manifest(version)


def oversize_header(version: Path, other: Path) -> None:
    """A 53-byte-ish .npy declaring 2^29 floats: refused from its header, before anything is allocated."""
    path = first_npy(version)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (536870912,), }"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x00" * 8)
    forge_manifest(version)


def garbage_manifest(version: Path, other: Path) -> None:
    (version / MANIFEST_FILE).write_text("{not json")


def manifest_with_other_keys(version: Path, other: Path) -> None:
    (version / MANIFEST_FILE).write_text(json.dumps({"format_version": 1, "backend": "bm25s"}))


def missing_file(version: Path, other: Path) -> None:
    largest_file(version).unlink()


def extra_file(version: Path, other: Path) -> None:
    (version / "extra.npy").write_bytes(b"\x93NUMPY")


def linked_file(version: Path, other: Path) -> None:
    path = largest_file(version)
    path.unlink()
    path.symlink_to(largest_file(other))


def pointer_outside(version: Path, other: Path) -> None:
    (version.parent / POINTER_FILE).write_text("../" + other.name)


def manifest_naming_a_model_path(version: Path, other: Path) -> None:
    """A manifest whose settings point at a model folder: never loaded, only compared with the request's."""
    model = version.parent.parent / "evil-model"
    model.mkdir(exist_ok=True)
    (model / "model.onnx").write_bytes(b"not a model")
    (model / "tokenizer.json").write_text("{}")
    manifest = json.loads((version / MANIFEST_FILE).read_text())
    manifest["settings"]["embedding_model"] = str(model)
    (version / MANIFEST_FILE).write_text(json.dumps(manifest))


BREAKAGES: list[Callable[[Path, Path], None]] = [
    truncate,
    swap_file,
    swap_file_and_manifest,
    wrong_dimension,
    oversize_header,
    garbage_manifest,
    manifest_with_other_keys,
    missing_file,
    extra_file,
    linked_file,
    pointer_outside,
    manifest_naming_a_model_path,
]


def stores(index_dir: Path) -> list[Path]:
    """The stored indexes of an ``index_dir`` (a dense backend also keeps its embeddings there, a lexical one its
    analysed corpus)."""
    return [entry for entry in index_dir.iterdir() if entry.name not in (EMBEDDINGS_FOLDER, ANALYSIS_FOLDER)]


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__)
def test_a_broken_analysed_corpus_is_ignored_and_the_update_ranks_as_a_fresh_build(
    tmp_path: Path, breakage: Callable[[Path, Path], None]
) -> None:
    """The analysed corpus an update starts from is a cache someone else may have written: broken, it is ignored
    (logged) and the corpus analysed again; another corpus's, it lends only the rows of texts it really holds."""
    edited = [{**CORPUS[0], "text": "a cat and a dog share the engine oil"}, *CORPUS[1:]]
    expected = retrieve(Bm25sRetriever, {}, tmp_path / "fresh", edited)
    retrieve(Bm25sRetriever, {}, tmp_path / "index")
    retrieve(Bm25sRetriever, {}, tmp_path / "other", OTHER_CORPUS)
    [store] = (tmp_path / "index" / ANALYSIS_FOLDER).glob("*/*")
    [other_store] = (tmp_path / "other" / ANALYSIS_FOLDER).glob("*/*")
    breakage(live_version(store), live_version(other_store))
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()
    assert retrieve(Bm25sRetriever, {}, tmp_path / "index", edited) == expected
    assert ANALYSIS_MEMO.stats.analysed >= 1


@pytest.mark.parametrize(
    ("connector", "extra"), STORING_RETRIEVERS, ids=lambda v: getattr(v, "BACKEND", None) or str(v)
)
@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__)
def test_a_broken_retrieve_index_is_rebuilt_and_rewritten(
    tmp_path: Path,
    connector: type[Any],
    extra: dict[str, Any],
    breakage: Callable[[Path, Path], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    expected = retrieve(connector, extra, tmp_path / "index")
    [store] = stores(tmp_path / "index")
    retrieve(connector, extra, tmp_path / "other", OTHER_CORPUS)
    [other_store] = stores(tmp_path / "other")
    # the other corpus's version, under the same backend and settings: what a swap would put in place
    breakage(live_version(store), live_version(other_store))
    INDEX_CACHE.clear()
    with caplog.at_level(logging.WARNING, logger="rag_integration.core.indexes.cache"):
        assert retrieve(connector, extra, tmp_path / "index") == expected
    assert INDEX_CACHE.stats.builds >= 1 and INDEX_CACHE.stats.loads == 0
    assert "rebuilding" in caplog.text
    INDEX_CACHE.clear()
    assert retrieve(connector, extra, tmp_path / "index") == expected  # the rewritten index loads
    assert INDEX_CACHE.stats.loads == 1 and INDEX_CACHE.stats.builds == 0


def test_a_stored_index_loads_without_rebuilding_and_ranks_the_same(tmp_path: Path) -> None:
    for connector, extra in STORING_RETRIEVERS:
        INDEX_CACHE.clear()
        expected = retrieve(connector, extra, tmp_path / str(connector.BACKEND))
        INDEX_CACHE.clear()
        assert retrieve(connector, extra, tmp_path / str(connector.BACKEND)) == expected
        assert INDEX_CACHE.stats.loads == 1 and INDEX_CACHE.stats.builds == 0, connector


@pytest.mark.parametrize("extra", [{}, {"bm25_method": "bm25+"}])
def test_bm25s_stores_its_analysed_corpus_alone_and_a_new_process_analyses_nothing(
    tmp_path: Path, extra: dict[str, Any]
) -> None:
    expected = retrieve(Bm25sRetriever, extra, tmp_path)
    assert [entry.name for entry in tmp_path.iterdir()] == [ANALYSIS_FOLDER]
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()
    assert retrieve(Bm25sRetriever, extra, tmp_path) == expected
    assert ANALYSIS_MEMO.stats.analysed == 0 and ANALYSIS_MEMO.stats.reused == len(CORPUS)


def test_corpora_sharing_an_index_dir_each_find_their_own_analysis_and_only_the_latest_four_stay(
    tmp_path: Path,
) -> None:
    corpora = [[{**row, "text": f"{row['text']} version {number}"} for row in CORPUS] for number in range(5)]
    expected = [retrieve(Bm25sRetriever, {}, tmp_path / "fresh", corpus) for corpus in corpora]
    for corpus in corpora[:2]:
        retrieve(Bm25sRetriever, {}, tmp_path / "shared", corpus)
    for corpus, ranking in zip(corpora[:2], expected, strict=False):
        INDEX_CACHE.clear()
        ANALYSIS_MEMO.clear()
        assert retrieve(Bm25sRetriever, {}, tmp_path / "shared", corpus) == ranking
        assert ANALYSIS_MEMO.stats.analysed == 0
    for corpus in corpora[2:]:
        retrieve(Bm25sRetriever, {}, tmp_path / "shared", corpus)
    assert len(list((tmp_path / "shared" / ANALYSIS_FOLDER).glob("*/*"))) == 4
    INDEX_CACHE.clear()
    ANALYSIS_MEMO.clear()
    assert retrieve(Bm25sRetriever, {}, tmp_path / "shared", corpora[0]) == expected[0]
    assert ANALYSIS_MEMO.stats.analysed == len(CORPUS)  # the oldest was removed; its texts are analysed again


def build_vector_store(folder: Path, corpus: list[dict[str, Any]]) -> None:
    stage = {
        "document_source": "inline",
        "documents": corpus,
        "embedding_model": "hash",
        "vector_store": "faiss",
        "index_dir": str(folder),
    }
    run_feature("docs__embedded__indexed", stage, set(STAGES))


def search_store(folder: Path, **extra: Any) -> list[Any]:
    options = {"retrieve_backend": "vector_store", "embedding_model": "hash", "index_dir": str(folder)}
    return run_feature("retrieved_passages", {**options, "query_text": QUERIES, **extra}, {VectorStoreRetriever})


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__)
def test_a_broken_vector_store_is_a_typed_error(tmp_path: Path, breakage: Callable[[Path, Path], None]) -> None:
    build_vector_store(tmp_path / "store", CORPUS)
    build_vector_store(tmp_path / "other", OTHER_CORPUS)
    assert search_store(tmp_path / "store", corpus=CORPUS)[0]
    breakage(live_version(tmp_path / "store"), live_version(tmp_path / "other"))
    INDEX_CACHE.clear()
    with pytest.raises(IndexMismatchError, match=r"index_dir|embedding_model"):
        search_store(tmp_path / "store", corpus=CORPUS)


def test_running_the_stage_again_rewrites_a_broken_store(tmp_path: Path) -> None:
    build_vector_store(tmp_path / "store", CORPUS)
    expected = search_store(tmp_path / "store")
    truncate(live_version(tmp_path / "store"), live_version(tmp_path / "store"))
    INDEX_CACHE.clear()
    with pytest.raises(IndexMismatchError):
        search_store(tmp_path / "store")
    build_vector_store(tmp_path / "store", CORPUS)  # the same claim, but its files are broken: written again
    assert search_store(tmp_path / "store") == expected


def test_an_oversize_header_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    build_vector_store(tmp_path / "store", CORPUS)
    version = live_version(tmp_path / "store")
    oversize_header(version, version)
    stored = current_version(tmp_path / "store")
    assert stored is not None
    tracemalloc.start()
    try:
        with pytest.raises(IndexMismatchError, match="declared shape"):
            index_store.load_version(stored, lambda folder: index_store.load_npy(folder / "vectors.npy"))
        assert tracemalloc.get_traced_memory()[1] < 16 * 1024 * 1024
    finally:
        tracemalloc.stop()


def test_the_request_chooses_the_model_and_the_manifest_is_only_compared(tmp_path: Path) -> None:
    build_vector_store(tmp_path / "store", CORPUS)
    with pytest.raises(IndexMismatchError, match="embedding_model"):
        search_store(tmp_path / "store", embedding_model="minilm")
    assert search_store(tmp_path / "store", embedding_model="hash-512")[0]


def test_a_failed_write_leaves_the_existing_store_as_it_was(tmp_path: Path) -> None:
    claim = StoreClaim("test", {"n": 1}, "fingerprint")
    write_store(tmp_path, claim, lambda staging: (staging / "a.txt").write_text("first"))
    before = current_version(tmp_path)

    def failing(staging: Path) -> None:
        (staging / "a.txt").write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(InvalidOptionError, match="index_dir"):
        write_store(tmp_path, StoreClaim("test", {"n": 2}, "fingerprint"), failing)
    after = current_version(tmp_path)
    assert before is not None and after is not None and after.name == before.name
    assert index_store.load_version(after, lambda folder: (folder / "a.txt").read_text()) == "first"
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".staging-")]


def test_a_store_folder_removed_while_a_version_is_written_is_made_again(tmp_path: Path) -> None:
    """Another process removing the folder mid-write (a forget, a cleanup) is not the caller's unwritable folder."""
    folder = tmp_path / "store"
    calls = []

    def removed_once(staging: Path) -> None:
        calls.append(staging)
        if len(calls) == 1:
            shutil.rmtree(folder)
        (staging / "a.txt").write_text("written")

    write_store(folder, StoreClaim("test", {"n": 1}, "f"), removed_once)
    live = current_version(folder)
    assert len(calls) == 2 and live is not None
    assert index_store.load_version(live, lambda version: (version / "a.txt").read_text()) == "written"

    def always_removed(staging: Path) -> None:
        shutil.rmtree(folder)
        (staging / "a.txt").write_text("x")

    with pytest.raises(InvalidOptionError, match="no other process removes"):
        write_store(folder, StoreClaim("test", {"n": 2}, "f"), always_removed)


def test_replaced_versions_are_removed_once_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3):
        write_store(tmp_path, StoreClaim("test", {"n": n}, "f"), lambda staging: (staging / "a").write_text("x"))
    assert len([entry for entry in tmp_path.iterdir() if entry.name.startswith("v-")]) == 3  # all recent: kept
    monkeypatch.setattr(index_store, "STALE_SECONDS", -1.0)
    write_store(tmp_path, StoreClaim("test", {"n": 9}, "f"), lambda staging: (staging / "a").write_text("x"))
    [version] = [entry for entry in tmp_path.iterdir() if entry.name.startswith("v-")]
    live = current_version(tmp_path)
    assert live is not None and live.name == version.name and live.claim.settings == {"n": 9}


def test_keep_removes_all_but_the_newest_versions_at_once_unless_a_reader_holds_one(tmp_path: Path) -> None:
    def write(n: int, keep: int) -> str:
        return write_store(
            tmp_path, StoreClaim("test", {"n": n}, "f"), lambda staging: (staging / "a").write_text("x"), keep=keep
        )

    names = [write(n, keep=2) for n in range(4)]
    assert sorted(entry.name for entry in tmp_path.iterdir() if entry.name.startswith("v-")) == sorted(names[-2:])
    held = tmp_path / names[-1]
    with index_store._version_lock(held) as locked:  # a reader checking and loading it
        assert locked
        newest = write(9, keep=1)
        assert held.is_dir()  # replaced, but still read: left in place
    assert {entry.name for entry in tmp_path.iterdir() if entry.name.startswith(("v-", ".removed-"))} == {
        names[-1],
        newest,
    }
    last = write(10, keep=1)
    assert [entry.name for entry in tmp_path.iterdir() if entry.name.startswith(("v-", ".removed-"))] == [last]


WRITER = textwrap.dedent(
    """
    import sys, time
    from rag_integration.core.documents.corpus import Document
    from rag_integration.core.indexes.embedders import get_embedder
    from rag_integration.core.indexes.vector_index import FaissSettings
    from rag_integration.core.options import OptionReader
    from rag_integration.feature_groups.rag_pipeline.vector_store.store import store_claim, write_store
    folder, prefix, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    docs = [Document(f"{prefix}{n}", f"{prefix} text number {n} " * (n + 1)) for n in range(40 if prefix == "a" else 25)]
    embedder = get_embedder("hash")
    vectors = embedder.embed([d.text for d in docs])
    claim = store_claim(docs, embedder.model_id, embedder.dimension, FaissSettings.read(OptionReader({})).manifest())
    writes = 0
    print("ready", flush=True)
    sys.stdin.readline()
    until = time.time() + seconds
    while time.time() < until:
        write_store(__import__("pathlib").Path(folder), vectors, docs, claim)
        writes += 1
    print(writes)
    """
)

READER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from pathlib import Path
    from rag_integration.core.indexes.embedders import get_embedder
    from rag_integration.core.indexes.store import read_store
    from rag_integration.feature_groups.rag_pipeline.vector_store.store import check_store_claim, load_store
    folder, seconds = Path(sys.argv[1]), float(sys.argv[2])
    embedder = get_embedder("hash")
    reads, corpora = 0, set()
    print("ready", flush=True)
    sys.stdin.readline()
    until = time.time() + seconds
    while time.time() < until:
        found = read_store(folder, lambda claim: check_store_claim(claim, folder), load_store)
        if found is None:
            continue
        store = found[1]
        prefixes = {doc.doc_id[0] for doc in store.documents}
        assert len(prefixes) == 1, prefixes
        assert store.index.ntotal == len(store.documents) == (40 if prefixes == {"a"} else 25)
        stored = store.index.reconstruct_n(0, store.index.ntotal)
        assert np.array_equal(stored, embedder.embed([doc.text for doc in store.documents])), "vectors of another corpus"
        corpora |= prefixes
        reads += 1
    print(reads, "".join(sorted(corpora)))
    """
)


def test_two_writers_and_a_reader_never_see_two_corpora_mixed(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    scripts = [[WRITER, str(folder), "a", "1.5"], [WRITER, str(folder), "b", "1.5"], [READER, str(folder), "2.0"]]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", *script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in scripts
    ]
    try:
        for process in processes:  # every process has done its imports: they start together
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        replies = [process.communicate(timeout=60) for process in processes]
    finally:
        for process in processes:
            process.kill()
    assert all(process.returncode == 0 for process in processes), [errors[-2000:] for _, errors in replies]
    writes = [int(output) for output, _ in replies[:2]]
    reads, corpora = replies[2][0].split()
    assert all(count > 0 for count in writes) and int(reads) > 0
    assert set(corpora) <= {"a", "b"}, replies


def write_text_store(folder: Path, n: int) -> str:
    write_store(folder, StoreClaim("test", {"n": n}, "f"), lambda staging: (staging / "a").write_text(str(n)))
    return live_version(folder).name


def test_a_version_removed_while_it_is_read_is_read_again_from_the_new_pointer(tmp_path: Path) -> None:
    first = write_text_store(tmp_path, 1)

    def replace_and_remove(claim: StoreClaim) -> None:
        if claim.settings == {"n": 1}:  # a writer moves CURRENT on and removes the version being checked
            write_text_store(tmp_path, 2)
            shutil.rmtree(tmp_path / first)

    found = index_store.read_store(
        tmp_path, replace_and_remove, lambda v: index_store.load_version(v, lambda f: (f / "a").read_text())
    )
    assert found is not None and found[1] == "2"


def test_a_vanished_version_is_a_mismatch_not_an_os_error(tmp_path: Path) -> None:
    write_text_store(tmp_path, 1)
    version = current_version(tmp_path)
    assert version is not None
    shutil.rmtree(version.folder)
    with pytest.raises(IndexMismatchError):
        index_store.load_version(version, lambda folder: None)
    assert index_store.intact_claim(tmp_path) is None


def test_a_replaced_version_ages_from_when_it_stopped_being_live(tmp_path: Path) -> None:
    first = write_text_store(tmp_path, 1)
    long_ago = time.time() - 3600
    os.utime(tmp_path / first, (long_ago, long_ago))  # written an hour ago, live until the next write
    write_text_store(tmp_path, 2)
    write_text_store(tmp_path, 3)
    assert (tmp_path / first).is_dir()  # replaced just now: a reader may still be reading it


def test_a_slow_writers_staging_folder_is_left_and_a_crashed_ones_removed(tmp_path: Path) -> None:
    slow, crashed = tmp_path / ".staging-slow0001", tmp_path / ".staging-crash001"  # named as mkdtemp names them
    for folder, age in ((slow, 600), (crashed, 2 * 24 * 3600)):
        folder.mkdir()
        (folder / "a").write_text("partial")
        os.utime(folder, (time.time() - age, time.time() - age))
    write_text_store(tmp_path, 1)
    assert slow.is_dir() and not crashed.exists()


def test_a_fifo_pointer_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / POINTER_FILE)
    with pytest.raises(IndexMismatchError, match=POINTER_FILE):
        current_version(tmp_path)


def test_a_linked_manifest_is_refused(tmp_path: Path) -> None:
    write_text_store(tmp_path, 1)
    manifest = live_version(tmp_path) / MANIFEST_FILE
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(manifest, elsewhere)
    manifest.symlink_to(elsewhere)
    with pytest.raises(IndexMismatchError, match=MANIFEST_FILE):
        current_version(tmp_path)


def test_read_regular_file_refuses_special_and_oversize_files(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(NotRegularFileError):
        read_regular_file(tmp_path / "fifo", 10)
    with pytest.raises(FileTooLargeError):
        read_regular_file(tmp_path / "big", 10)
    assert read_regular_file(tmp_path / "big", 11) == b"x" * 11


def cached_text_index(cache: IndexCache, folder: Path, key: IndexKey) -> Any:
    return cache.get_or_build(
        key,
        lambda: "built",
        index_dir=folder,
        save=lambda index, staging: (staging / "a").write_text(index),
        load=lambda version: (version / "a").read_text(),
    )


def test_a_cache_hit_verifies_the_store_only_when_current_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, key = IndexCache(), IndexKey.of("test", {"n": 1}, "f")
    assert cached_text_index(cache, tmp_path, key) == "built"
    hashed: list[Path] = []
    real_record = index_store._file_record
    monkeypatch.setattr(index_store, "_file_record", lambda path: hashed.append(path) or real_record(path))
    for _ in range(5):
        assert cached_text_index(cache, tmp_path, key) == "built"
    assert hashed == [] and cache.stats.hits == 5
    store = tmp_path / key.folder_name()
    write_store(store, StoreClaim("other", {}, "g"), lambda staging: (staging / "a").write_text("other"))
    assert cached_text_index(cache, tmp_path, key) == "built"  # CURRENT changed: verified, written again
    live = current_version(store)
    assert hashed and live is not None and live.claim.same_as(key.claim())
    hashed.clear()
    assert cached_text_index(cache, tmp_path, key) == "built"
    assert hashed == []


def test_a_cold_build_blocks_neither_other_keys_nor_builds_one_key_twice() -> None:
    cache = IndexCache()
    warm, cold = IndexKey.of("test", {"n": 1}, "f"), IndexKey.of("test", {"n": 2}, "f")
    cache.get_or_build(warm, lambda: "warm")
    started, release = threading.Event(), threading.Event()

    def slow_build() -> str:
        started.set()
        assert release.wait(30)
        return "cold"

    results: list[Any] = []
    builders = [threading.Thread(target=lambda: results.append(cache.get_or_build(cold, slow_build)))]
    builders[0].start()
    assert started.wait(30)
    hit = threading.Thread(target=lambda: results.append(cache.get_or_build(warm, lambda: "rebuilt")))
    hit.start()
    hit.join(30)
    assert results == ["warm"]  # served while the other key was still building
    builders.append(threading.Thread(target=lambda: results.append(cache.get_or_build(cold, slow_build))))
    builders[1].start()
    release.set()
    for builder in builders:
        builder.join(30)
    assert results == ["warm", "cold", "cold"]
    assert cache.stats.builds == 2 and cache.stats.hits == 2  # the second cold request waited and hit


def test_an_index_measures_itself_without_serialising(monkeypatch: pytest.MonkeyPatch) -> None:
    import faiss

    from rag_integration.core.documents.corpus import Document
    from rag_integration.core.indexes.cache import approximate_bytes
    from rag_integration.core.indexes.vector_index import FaissIndexSettings, build_faiss_index
    from rag_integration.feature_groups.connectors.retrieve.faiss_retriever import FaissIndex
    from rag_integration.feature_groups.connectors.retrieve.hybrid_rrf_retriever import HybridIndex
    from rag_integration.feature_groups.rag_pipeline.vector_store.store import VectorStore

    vectors = np.random.default_rng(0).random((50, 16), dtype=np.float32)
    flat = build_faiss_index(vectors, FaissIndexSettings("flat", 8, 4), "faiss")
    hnsw = build_faiss_index(vectors, FaissIndexSettings("hnsw", 8, 4), "faiss")

    def refuse(index: Any) -> Any:
        raise AssertionError("serialize_index copies the whole index")

    monkeypatch.setattr(faiss, "serialize_index", refuse)
    assert approximate_bytes(FaissIndex(flat, None, None)) == 50 * 16 * 4  # type: ignore[arg-type]
    assert approximate_bytes(FaissIndex(hnsw, None, None)) > 50 * 16 * 4  # type: ignore[arg-type]
    hybrid = HybridIndex((FaissIndex(hnsw, None, None), "ranker"), ("d",))  # type: ignore[arg-type]
    assert approximate_bytes(hybrid) > 50 * 16 * 4
    store = VectorStore(flat, [Document("d", "text")], {}, "v-1")
    assert approximate_bytes(store) == 50 * 16 * 4 + len("d") + len("text")


def test_a_store_never_removes_folders_it_did_not_write(tmp_path: Path) -> None:
    """``--index-dir`` may name a project folder: its own ``v-2`` or ``v-1.0`` folders are not old versions."""
    mine = [tmp_path / "v-2", tmp_path / "v-1.0", tmp_path / "v-notes", tmp_path / ".staging-x"]
    for folder in mine:
        folder.mkdir()
        (folder / "NOTES.txt").write_text("release notes")
    (tmp_path / "v-notes" / MANIFEST_FILE).write_text('{"format": "someone-else"}')
    old = time.time() - 10 * 24 * 3600
    for folder in mine:
        os.utime(folder, (old, old))
    for n in range(3):
        write_store(
            tmp_path, StoreClaim("test", {"n": n}, "f"), lambda staging: (staging / "a").write_text("x"), keep=1
        )
    assert all((folder / "NOTES.txt").read_text() == "release notes" for folder in mine)
    ours = [entry.name for entry in tmp_path.iterdir() if (entry / MANIFEST_FILE).is_file() and entry not in mine]
    assert len(ours) == 1 and current_version(tmp_path) is not None


def test_a_settled_file_is_hashed_once_per_process_and_a_later_write_is_still_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version read again is not hashed again while its files are unchanged since they settled; a file rewritten
    in place at the same size after that has new file times, so it is hashed again and refused."""
    name = write_store(tmp_path, StoreClaim("test", {}, "f"), lambda staging: (staging / "a").write_text("x" * 64))
    hashed: list[Path] = []
    record = index_store._file_record

    def counted(path: Path) -> tuple[int, str]:
        hashed.append(path)
        return record(path)

    monkeypatch.setattr(index_store, "_file_record", counted)

    def read() -> str:
        version = index_store.named_version(tmp_path, name)
        return index_store.load_version(version, lambda folder: (folder / "a").read_text())

    assert read() == read() == "x" * 64
    assert len(hashed) == 2  # written just now: not settled, hashed on every read
    monkeypatch.setattr(index_store, "SETTLED_SECONDS", 0.0)
    assert read() == read() == "x" * 64
    assert len(hashed) == 3  # settled: hashed once, then remembered
    time.sleep(0.05)  # past any file time granularity
    (tmp_path / name / "a").write_text("y" * 64)
    with pytest.raises(IndexMismatchError, match="sha256"):
        read()
    assert len(hashed) == 4
