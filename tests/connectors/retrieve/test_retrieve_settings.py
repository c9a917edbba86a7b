"""Typed retrieve settings, ``search_threads``, and indexes that pickle into another process and rank the same."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import faiss
import pytest

from rag_integration.core.documents.corpus import Corpus
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexCache, IndexKey
from rag_integration.core.indexes.store import current_version
from rag_integration.core.options import OptionReader
from rag_integration.core.text.analysis import ANALYSIS_VERSION
from rag_integration.feature_groups.connectors.retrieve import (
    BaseRetrieveConnector,
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.feature_groups.connectors.retrieve.base import RetrieveRequest
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import Bm25sIndexSettings, Bm25sSettings
from rag_integration.feature_groups.connectors.retrieve.hybrid_rrf_retriever import HybridSettings
from rag_integration.feature_groups.connectors.retrieve.tfidf_retriever import TfidfSettings
from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature

BACKENDS: list[tuple[type[BaseRetrieveConnector], dict[str, Any]]] = [
    (Bm25sRetriever, {}),
    (Bm25sRetriever, {"stemmer": False, "bm25_method": "bm25+"}),
    (TfidfRetriever, {"tfidf_ngram_max": 2}),
    (FaissDenseRetriever, {"embedding_model": "hash"}),
    (FaissDenseRetriever, {"embedding_model": "hash", "faiss_index": "hnsw"}),
    (FaissDenseRetriever, {"embedding_model": "hash", "faiss_index": "ivf", "ivf_nprobe": 4}),
    (HybridRrfRetriever, {"embedding_model": "hash"}),
]
QUERIES = ["the cat purring on the windowsill", "oil for the car engine", "moon and tide", "lava"]
WORDS = ["cat", "dog", "oil", "engine", "tide", "moon", "lava", "bread", "flour", "garden", "ball", "comet", "orbit"]


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()


def settings_of(connector: type[BaseRetrieveConnector], **options: Any) -> Any:
    return connector.read_settings(OptionReader(options))


def request(connector: type[BaseRetrieveConnector], extra: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"retrieve_backend": connector.BACKEND, **extra, **options}


def test_settings_are_frozen_typed_and_picklable() -> None:
    bm25 = settings_of(Bm25sRetriever, bm25_k1=1.2, search_threads=3)
    assert bm25 == Bm25sSettings(Bm25sIndexSettings(k1=1.2, b=0.75, method="lucene", stemmer=True), threads=3)
    assert settings_of(TfidfRetriever) == TfidfSettings(sublinear_tf=True, ngram_max=1)
    hybrid = settings_of(HybridRrfRetriever, embedding_model="hash", rrf_weights=[2, 1])
    assert isinstance(hybrid, HybridSettings) and hybrid.weights == (2.0, 1.0) and hybrid.fusion.rrf_k == 60.0
    assert settings_of(HybridRrfRetriever, embedding_model="hash").weights == (1.0, 1.0)
    for connector, extra in [*BACKENDS, (VectorStoreRetriever, {})]:
        settings = settings_of(connector, **extra)
        assert dataclasses.is_dataclass(settings)
        assert pickle.loads(pickle.dumps(settings)) == settings
        with pytest.raises(dataclasses.FrozenInstanceError):
            settings.__setattr__(dataclasses.fields(settings)[0].name, None)


def test_index_key_is_canonical_json_of_the_index_settings() -> None:
    documents = Corpus(CORPUS)
    settings = settings_of(Bm25sRetriever, stemmer=False)
    key = Bm25sRetriever.index_key(documents, settings)
    assert key == IndexKey.of("bm25s", Bm25sRetriever.index_settings(settings), documents.fingerprint)
    assert json.loads(key.settings) == {
        "k1": 1.5,
        "b": 0.75,
        "method": "lucene",
        "stemmer": False,
        "language": "auto",
        "analysis": ANALYSIS_VERSION,
    }
    assert IndexKey.of("x", {"b": 1, "a": 2}, "f").settings == '{"a": 2, "b": 1}'
    with pytest.raises(TypeError, match="dataclass"):
        IndexKey.of("x", ["not", "settings"], "f")


@pytest.mark.parametrize(
    ("connector", "extra", "search_only"),
    [
        (Bm25sRetriever, {}, {"search_threads": 4}),
        (FaissDenseRetriever, {"embedding_model": "hash"}, {"search_threads": 2, "hnsw_ef_search": 7, "ivf_nprobe": 3}),
        (HybridRrfRetriever, {"embedding_model": "hash"}, {"search_threads": 2, "rrf_k": 5, "rrf_candidates": 3}),
    ],
)
def test_search_only_settings_are_not_part_of_the_index_key(
    connector: type[BaseRetrieveConnector], extra: dict[str, Any], search_only: dict[str, Any]
) -> None:
    documents = Corpus(CORPUS)
    key = connector.index_key(documents, settings_of(connector, **extra))
    assert connector.index_key(documents, settings_of(connector, **extra, **search_only)) == key
    changed = {"bm25_k1": 1.0} if connector is Bm25sRetriever else {"faiss_index": "hnsw"}
    assert connector.index_key(documents, settings_of(connector, **extra, **changed)) != key


@pytest.mark.parametrize("threads", [0, -1, True, 1.5, "2"])
@pytest.mark.parametrize("connector", [Bm25sRetriever, FaissDenseRetriever, VectorStoreRetriever])
def test_bad_search_threads_is_a_typed_error(connector: type[BaseRetrieveConnector], threads: Any) -> None:
    with pytest.raises(InvalidOptionError, match="search_threads"):
        settings_of(connector, embedding_model="hash", search_threads=threads)


def synthetic_corpus(count: int) -> list[dict[str, Any]]:
    """Short documents over a tiny vocabulary: many equal scores, so thread scheduling would show if it mattered."""
    return [
        {"doc_id": f"d{n:03d}", "text": " ".join(WORDS[(n * k) % len(WORDS)] for k in (1, 3, 7)[: 1 + n % 3])}
        for n in range(count)
    ]


@pytest.mark.parametrize(
    ("connector", "extra"),
    [(connector, extra) for connector, extra in BACKENDS if "search_threads" in connector.declared_options()],
)
def test_rankings_are_identical_for_any_thread_count(
    connector: type[BaseRetrieveConnector], extra: dict[str, Any]
) -> None:
    corpus = synthetic_corpus(240)
    queries = [f"{WORDS[n % len(WORDS)]} {WORDS[(5 * n) % len(WORDS)]}" for n in range(40)]
    options = request(connector, extra, query_text=queries, corpus=corpus, top_k=7)
    one = run_feature("retrieved_passages", dict(options, search_threads=1), {connector})
    builds = INDEX_CACHE.stats.builds
    threads_before = faiss.omp_get_max_threads()
    for threads in (2, 4):
        assert run_feature("retrieved_passages", dict(options, search_threads=threads), {connector}) == one
    assert INDEX_CACHE.stats.builds == builds  # a search-only setting reuses the index
    assert faiss.omp_get_max_threads() == threads_before  # FAISS's thread count is restored after the search


INSTALL_AND_ANSWER = """
import json, pickle, sys
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.testing.runner import run_feature
with open(sys.argv[1], "rb") as shipped:
    payloads = pickle.load(shipped)
replies = []
for payload in payloads:
    INDEX_CACHE.clear()
    INDEX_CACHE.install(payload["key"], payload["index"])
    rows = run_feature("retrieved_passages", payload["options"], {payload["connector"]})
    stats = INDEX_CACHE.stats
    replies.append({"rows": rows, "builds": stats.builds, "loads": stats.loads, "installs": stats.installs})
print(json.dumps(replies))
"""


def answer_in_fresh_process(folder: Path, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ship ``payloads`` pickled to one new interpreter; there each index is installed and its request answered."""
    shipped = folder / "shipped.pickle"
    shipped.write_bytes(pickle.dumps(payloads))
    completed = subprocess.run(
        [sys.executable, "-c", INSTALL_AND_ANSWER, str(shipped)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="4242"),
        check=True,
    )
    replies: list[dict[str, Any]] = json.loads(completed.stdout.strip().splitlines()[-1])
    return replies


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[list[Any], bool, dict[str, Any]]]:
    """Per backend: the rows answered here, whether ``index_key`` named the cached index (the one ``indexes_for``
    ships), the other process's reply
    (one interpreter for every backend, since starting one costs more than the test)."""
    local = []
    payloads = []
    documents = Corpus(CORPUS)
    for connector, extra in BACKENDS:
        INDEX_CACHE.clear()
        options = request(connector, extra, query_text=QUERIES, corpus=CORPUS, top_k=4, filters={"lang": ["en", "de"]})
        rows = run_feature("retrieved_passages", options, {connector})
        settings = settings_of(connector, **extra)
        key = connector.index_key(documents, settings)
        index = connector.cached_index(documents, settings, None)
        [(shipped_key, shipped_index)] = connector.indexes_for(
            RetrieveRequest.read(OptionReader(options), None), settings
        )
        local.append((rows, key in INDEX_CACHE and shipped_key == key and shipped_index is index))
        payloads.append({"key": key, "index": index, "options": options, "connector": connector})
    replies = answer_in_fresh_process(tmp_path_factory.mktemp("shipped"), payloads)
    return [(rows, cached, reply) for (rows, cached), reply in zip(local, replies, strict=True)]


@pytest.mark.parametrize("position", range(len(BACKENDS)), ids=[f"{c.BACKEND}-{e}" for c, e in BACKENDS])
def test_a_pickled_index_ranks_identically_in_another_process(
    shipped: list[tuple[list[Any], bool, dict[str, Any]]], position: int
) -> None:
    rows, key_was_cached, reply = shipped[position]
    assert key_was_cached  # index_key is the key cached_index used, and indexes_for ships that pair
    assert reply["rows"] == rows and rows[0]
    assert reply["builds"] == 0 and reply["installs"] == 1


def test_a_pickled_stemming_index_still_stems_its_queries() -> None:
    index = Bm25sRetriever.build_index(Corpus(CORPUS), Bm25sIndexSettings(1.5, 0.75, "lucene", stemmer=True))
    restored = pickle.loads(pickle.dumps(index))
    assert restored.query_terms("the purrs of cats") == index.query_terms("purr cat") != []
    search_settings = Bm25sSettings(index.settings, threads=1)
    for query in (["purring cats"], ["the engines"]):
        assert Bm25sRetriever.search(restored, query, 3, None, search_settings) == Bm25sRetriever.search(
            index, query, 3, None, search_settings
        )
        assert Bm25sRetriever.search(restored, query, 3, None, search_settings)[0]


def test_a_pickled_minilm_index_carries_no_onnx_session(tmp_path: Path) -> None:
    options = request(FaissDenseRetriever, {}, query_text=["a young cat", "car maintenance"], corpus=CORPUS, top_k=3)
    rows = run_feature("retrieved_passages", options, {FaissDenseRetriever})
    documents = Corpus(CORPUS)
    settings = settings_of(FaissDenseRetriever)
    index = FaissDenseRetriever.cached_index(documents, settings, None)
    assert b"onnxruntime" not in pickle.dumps(index)
    payload = {
        "key": FaissDenseRetriever.index_key(documents, settings),
        "index": index,
        "options": options,
        "connector": FaissDenseRetriever,
    }
    [reply] = answer_in_fresh_process(tmp_path, [payload])
    assert reply["rows"] == rows and reply["builds"] == 0


def test_a_pickled_vector_store_answers_in_another_process_without_reading_it(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    stage = {
        "document_source": "inline",
        "documents": CORPUS,
        "embedding_model": "hash",
        "vector_store": "faiss",
        "index_dir": str(folder),
    }
    run_feature("docs__embedded__indexed", stage, set(STAGES))
    options = {
        "retrieve_backend": "vector_store",
        "embedding_model": "hash",
        "index_dir": str(folder),
        "query_text": QUERIES,
        "top_k": 3,
    }
    rows = run_feature("retrieved_passages", options, {VectorStoreRetriever})
    settings = settings_of(VectorStoreRetriever, embedding_model="hash")
    store_request = RetrieveRequest.read(OptionReader(options), None, corpus_required=False)
    [(key, index)] = VectorStoreRetriever.indexes_for(store_request, settings)
    version = current_version(folder)
    assert version is not None and key == VectorStoreRetriever.store_key(folder, version.name)
    store = pickle.loads(pickle.dumps(index.store))
    assert store.documents == index.store.documents
    assert all(isinstance(document.metadata, MappingProxyType) for document in store.documents)
    empty = RetrieveRequest.read(OptionReader({"query_text": "cat", "corpus": []}), None)
    assert VectorStoreRetriever.indexes_for(empty, settings) == []
    payload = {"key": key, "index": index, "options": options, "connector": VectorStoreRetriever}
    [reply] = answer_in_fresh_process(tmp_path, [payload])
    assert reply["rows"] == rows and rows[0]
    assert reply["loads"] == 0 and reply["installs"] == 1


def test_install_counts_no_build_and_respects_capacity() -> None:
    cache = IndexCache(capacity=2)
    key = IndexKey.of("b", {"n": 1}, "f")
    shipped = object()
    cache.install(key, shipped)
    assert cache.get_or_build(key, lambda: object()) is shipped
    assert (cache.stats.builds, cache.stats.installs, cache.stats.hits) == (0, 1, 1)
    cache.resize(0)
    cache.install(key, shipped)
    assert key not in cache and cache.stats.installs == 2
