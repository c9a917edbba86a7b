"""The stage pipeline: files -> documents -> chunks -> dedup -> embeddings -> FAISS store on disk -> retrieval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import DuplicateDocIdError, IndexMismatchError, InvalidOptionError, MissingOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.core.indexes.store import current_version
from rag_integration.core.unicode_text import InvalidTextError
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.retrieve import VectorStoreContractTests
from rag_integration.testing.runner import run_feature

DOCUMENTS = [
    {"doc_id": "pets", "lang": "en", "text": "Cats purr when content. Dogs wag their tails.\n\nFish swim in tanks."},
    {"doc_id": "cars", "lang": "en", "text": "Engines need fresh oil. Tyres need air."},
    {"doc_id": "kochen", "lang": "de", "text": "Brot braucht Mehl, Wasser und Zeit."},
]
INDEXED = "docs__chunked__embedded__indexed"


def stage(feature: str, **options: Any) -> list[Any]:
    return run_feature(feature, options, set(STAGES) | {FaissDenseRetriever, Bm25sRetriever})


def search_store(index_dir: Path, query: str) -> list[Any]:
    return stage(
        "retrieved_passages",
        retrieve_backend="vector_store",
        embedding_model="hash",
        index_dir=str(index_dir),
        query_text=query,
    )


def base_options(index_dir: Path, **extra: Any) -> dict[str, Any]:
    return {
        "document_source": "inline",
        "documents": DOCUMENTS,
        "chunker": "sentence",
        "sentences_per_chunk": 1,
        "embedding_model": "hash",
        "vector_store": "faiss",
        "index_dir": str(index_dir),
        **extra,
    }


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "guide.md").write_text("# Oil\n\nChange the engine oil yearly.\n", encoding="utf-8")
    (root / "notes" / "cats.txt").write_text("Cats purr. Über-cats purr louder.", encoding="utf-8")
    (root / "faq.jsonl").write_text(
        json.dumps({"id": "q1", "text": "How do tides work?", "topic": "sea"})
        + "\n\n"
        + json.dumps({"text": "Why is the sky blue?", "topic": "sky"})
        + "\n",
        encoding="utf-8",
    )
    (root / "table.csv").write_text(
        "doc_id,text,year\nr1,Volcanoes erupt lava,2020\n,Glaciers move slowly,2021\n", encoding="utf-8"
    )
    (root / "ignored.bin").write_bytes(b"\x00\x01")
    return root


def test_file_source_reads_every_supported_format_in_sorted_order(folder: Path) -> None:
    rows = stage("docs", document_source="files", paths=str(folder), id_field="id")
    by_id = {row["doc_id"]: row for row in rows}
    assert list(by_id) == ["q1", "faq.jsonl:2", "guide.md", "notes/cats.txt", "table.csv:1", "table.csv:2"]
    assert by_id["q1"]["topic"] == "sea" and by_id["q1"]["source"].endswith("faq.jsonl")
    assert by_id["notes/cats.txt"]["text"].startswith("Cats purr.")
    assert by_id["guide.md"]["source"] == str(folder / "guide.md")
    csv_rows = stage("docs", document_source="files", paths=str(folder / "table.csv"))
    assert [(row["doc_id"], row["year"]) for row in csv_rows] == [("r1", "2020"), ("table.csv:2", "2021")]


def test_file_source_globs_and_lists(folder: Path) -> None:
    rows = stage("docs", document_source="files", paths=[str(folder / "*.md"), str(folder / "notes")])
    assert [row["doc_id"] for row in rows] == ["guide.md", "cats.txt"]


def test_encoding_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InvalidOptionError, match=r"latin\.txt"):
        stage("docs", document_source="files", paths=str(bad))
    assert stage("docs", document_source="files", paths=str(bad), encoding="latin-1")[0]["text"] == "café"


@pytest.mark.parametrize(
    ("setup", "option"),
    [
        (lambda root: str(root / "missing" / "*.txt"), "paths"),
        (lambda root: str(root / "ignored.bin"), "paths"),
    ],
)
def test_bad_paths_are_typed_errors(folder: Path, setup: Any, option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        stage("docs", document_source="files", paths=setup(folder))


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{not json}\n', encoding="utf-8")
    with pytest.raises(InvalidOptionError, match=r"broken\.jsonl:2"):
        stage("docs", document_source="files", paths=str(tmp_path))


def test_inline_source_validates_documents() -> None:
    with pytest.raises(InvalidOptionError, match=r"documents\[1\]"):
        stage("docs", document_source="inline", documents=[{"text": "a"}, "b"])
    with pytest.raises(DuplicateDocIdError):
        stage("docs", document_source="inline", documents=[{"doc_id": "x", "text": "a"}, {"doc_id": "x", "text": "b"}])
    with pytest.raises(MissingOptionError, match="documents"):
        stage("docs", document_source="inline")


def test_chunks_are_named_and_keep_parent_metadata() -> None:
    rows = stage(
        "docs__chunked", document_source="inline", documents=DOCUMENTS, chunker="sentence", sentences_per_chunk=1
    )
    first = rows[0]
    assert first == {
        "doc_id": "pets#0",
        "text": "Cats purr when content.",
        "lang": "en",
        "source": "inline",
        "parent_id": "pets",
        "chunk_index": 0,
    }
    assert [row["doc_id"] for row in rows if row["parent_id"] == "pets"] == ["pets#0", "pets#1", "pets#2"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"chunker": "fixed", "chunk_size": 4, "chunk_overlap": 2}, ["abcd", "cdef", "efgh"]),
        (
            {"chunker": "fixed", "chunk_size": 2, "chunk_overlap": 1, "chunk_unit": "tokens"},
            ["ab cd", "cd ef", "ef gh"],
        ),
        ({"chunker": "paragraph"}, ["ab cd.", "ef gh"]),
        ({"chunker": "sentence", "sentences_per_chunk": 2, "sentence_overlap": 1}, ["ab cd.\n\nef gh"]),
    ],
)
def test_chunkers(options: dict[str, Any], expected: list[str]) -> None:
    text = "abcdefgh" if options.get("chunk_unit") is None and options["chunker"] == "fixed" else "ab cd.\n\nef gh"
    if options.get("chunk_unit") == "tokens":
        text = "ab cd ef gh"
    rows = stage("docs__chunked", document_source="inline", documents=[{"doc_id": "d", "text": text}], **options)
    assert [row["text"] for row in rows] == expected


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"chunker": "fixed", "chunk_size": 3, "chunk_overlap": 3}, "chunk_overlap"),
        ({"chunker": "fixed", "chunk_unit": "pages"}, "chunk_unit"),
        ({"chunker": "fixed", "chunk_size": True}, "chunk_size"),
        ({"chunker": "sentence", "sentences_per_chunk": 0}, "sentences_per_chunk"),
    ],
)
def test_bad_chunker_options(options: dict[str, Any], option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        stage("docs__chunked", document_source="inline", documents=DOCUMENTS, **options)


def test_dedup_exact_and_normalized() -> None:
    documents = [
        {"doc_id": "a", "text": "Hello,  World!"},
        {"doc_id": "b", "text": "hello world"},
        {"doc_id": "c", "text": "Hello,  World!"},
    ]
    exact = stage("docs__deduped", document_source="inline", documents=documents, dedup="exact")
    normalized = stage("docs__deduped", document_source="inline", documents=documents, dedup="normalized")
    assert [row["doc_id"] for row in exact] == ["a", "b"]
    assert [row["doc_id"] for row in normalized] == ["a"]


def test_embedding_stage_adds_vectors_in_one_batch() -> None:
    EMBEDDING_MEMO.clear()  # rows embedded by earlier tests would not be embedded again
    embedder = get_embedder("hash")
    before = embedder.texts_embedded
    rows = stage(
        "docs__chunked__embedded",
        document_source="inline",
        documents=DOCUMENTS,
        chunker="paragraph",
        embedding_model="hash",
    )
    assert embedder.texts_embedded - before == len(rows)
    assert all(len(row["embedding"]) == embedder.dimension and row["embedding_model"] == "hash" for row in rows)


def test_vector_store_writes_manifest_and_keeps_an_identical_store(tmp_path: Path) -> None:
    rows = stage(INDEXED, **base_options(tmp_path))
    assert "embedding" not in rows[0]
    version = current_version(tmp_path)
    assert version is not None
    settings = version.claim.settings
    assert (
        settings["embedding_model"] == get_embedder("hash-512").model_id
        and settings["count"] == len(rows)
        and settings["dimension"] == 512
    )
    stage(INDEXED, **base_options(tmp_path))
    again = current_version(tmp_path)
    assert again is not None and again.name == version.name


def test_retrieval_stage_answers_batched_queries_with_filters(tmp_path: Path) -> None:
    stage(INDEXED, **base_options(tmp_path))
    options = {
        "retrieve_backend": "vector_store",
        "embedding_model": "hash",
        "index_dir": str(tmp_path),
        "query_text": ["cats purr", "oil"],
        "top_k": 2,
    }
    rows = stage("retrieved_passages", **options)
    assert [ranking[0]["doc_id"] for ranking in rows] == ["pets#0", "cars#0"]
    assert all(set(passage) == {"doc_id", "text", "score", "rank"} for ranking in rows for passage in ranking)
    mixed = dict(options, query_text=["cats purr Brot Mehl Wasser"], top_k=5)
    german = stage("retrieved_passages", **dict(mixed, filters={"lang": "de"}, return_metadata=True))[0]
    assert [passage["doc_id"] for passage in german] == ["kochen#0"]
    assert german[0]["metadata"] == {"lang": "de", "source": "inline", "parent_id": "kochen", "chunk_index": 0}
    assert "pets#0" in [passage["doc_id"] for passage in stage("retrieved_passages", **mixed)[0]]


def test_a_metadata_only_change_rewrites_the_store(tmp_path: Path) -> None:
    stage(INDEXED, **base_options(tmp_path))
    relabelled = [dict(doc, lang="fr") for doc in DOCUMENTS]
    stage(INDEXED, **base_options(tmp_path, documents=relabelled))
    query = {"retrieve_backend": "vector_store", "index_dir": str(tmp_path), "query_text": "cats", "top_k": 1}
    query["embedding_model"] = "hash"
    assert stage("retrieved_passages", **query, filters={"lang": "fr"})[0][0]["doc_id"] == "pets#0"
    assert stage("retrieved_passages", **query, filters={"lang": "en"}) == [[]]


def test_a_connector_index_folder_is_not_mistaken_for_a_store(tmp_path: Path) -> None:
    stage(
        "retrieved_passages",
        retrieve_backend="faiss",
        embedding_model="hash",
        query_text="cats",
        corpus=DOCUMENTS,
        index_dir=str(tmp_path),
    )
    connector_folder = next(tmp_path.iterdir())
    with pytest.raises(InvalidOptionError, match="index_dir"):
        stage("retrieved_passages", retrieve_backend="vector_store", query_text="cats", index_dir=str(connector_folder))


def test_same_model_under_another_name_is_accepted(tmp_path: Path) -> None:
    stage(INDEXED, **base_options(tmp_path))
    rows = stage(
        "retrieved_passages",
        retrieve_backend="vector_store",
        index_dir=str(tmp_path),
        query_text="cats",
        embedding_model="hash-512",
    )
    assert rows[0]


@pytest.mark.parametrize("faiss_index", ["flat", "hnsw"])
@pytest.mark.parametrize("extra", [{}, {"filters": {"lang": "en"}, "return_metadata": True}])
def test_retrieval_stage_matches_the_dense_connector(tmp_path: Path, faiss_index: str, extra: dict[str, Any]) -> None:
    chain = "docs__chunked__embedded__indexed"
    options = base_options(tmp_path, faiss_index=faiss_index, query_text=["cats", "engine oil tyres"], top_k=3, **extra)
    from_stage = stage("retrieved_passages", **options, retrieve_backend="vector_store", corpus_source=chain)
    from_connector = stage("retrieved_passages", **options, retrieve_backend="faiss", corpus_source=chain)
    assert from_stage == from_connector
    assert from_stage[0] and from_stage[1]


def test_connectors_consume_stage_output_as_corpus(tmp_path: Path) -> None:
    rows = stage(
        "retrieved_passages",
        **base_options(tmp_path),
        retrieve_backend="bm25s",
        query_text="tails",
        corpus_source="docs__chunked",
    )
    assert rows[0][0]["doc_id"] == "pets#1"


def test_changed_model_or_corpus_is_refused(tmp_path: Path) -> None:
    stage(INDEXED, **base_options(tmp_path))
    query = {"retrieve_backend": "vector_store", "index_dir": str(tmp_path), "query_text": "cats"}
    with pytest.raises(IndexMismatchError, match="embedding_model"):
        stage("retrieved_passages", **query)  # minilm, the default, is not the store's model
    query["embedding_model"] = "hash"
    with pytest.raises(IndexMismatchError, match="index_dir"):
        stage("retrieved_passages", **query, corpus=[{"doc_id": "other", "text": "another corpus"}])
    with pytest.raises(MissingOptionError, match="index_dir"):
        stage("retrieved_passages", retrieve_backend="vector_store", query_text="cats")
    with pytest.raises(InvalidOptionError, match="index_dir"):
        stage("retrieved_passages", retrieve_backend="vector_store", query_text="cats", index_dir=str(tmp_path / "x"))


def test_a_new_process_reuses_the_store_without_re_embedding(tmp_path: Path) -> None:
    first = stage(
        "retrieved_passages",
        **base_options(tmp_path),
        retrieve_backend="vector_store",
        corpus_source=INDEXED,
        query_text=["cats purr", "fresh oil"],
    )
    script = (
        "import json, sys\n"
        "from rag_integration.core.indexes.embedders import get_embedder\n"
        "from rag_integration.feature_groups.rag_pipeline import VectorStoreRetriever\n"
        "from rag_integration.testing.runner import run_feature\n"
        "rows = run_feature('retrieved_passages', {'retrieve_backend': 'vector_store', 'index_dir': sys.argv[1],\n"
        "                   'embedding_model': 'hash', 'query_text': ['cats purr', 'fresh oil']}, {VectorStoreRetriever})\n"
        "print(json.dumps({'rows': rows, 'embedded': get_embedder('hash').texts_embedded}))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    reply = json.loads(completed.stdout.strip().splitlines()[-1])
    assert reply["rows"] == first
    assert reply["embedded"] == 2  # the two queries; no document was embedded again


class TestVectorStoreContract(VectorStoreContractTests):
    """The retrieval stage through the retrieve family's kit."""


def test_metadata_json_cannot_hold_is_refused_and_the_old_store_survives(tmp_path: Path) -> None:
    import datetime

    stage(INDEXED, **base_options(tmp_path))
    dated = [*DOCUMENTS, {"doc_id": "dated", "text": "A dated note.", "when": datetime.date(2020, 1, 1)}]
    with pytest.raises(InvalidOptionError, match=r"dated#0\.metadata"):
        stage(INDEXED, **base_options(tmp_path, documents=dated))
    rows = search_store(tmp_path, "cats")
    assert rows[0][0]["doc_id"] == "pets#0"


def test_text_with_a_lone_surrogate_is_refused_before_the_store(tmp_path: Path) -> None:
    """Not valid Unicode: refused where it is read, as by every component (core.unicode_text), and nothing is
    written; it used to round-trip through the hash embedder while MiniLM raised a bare TypeError on it."""
    odd = [{"doc_id": "odd", "text": "cats \ud800 purr"}]
    options = base_options(tmp_path / "store", documents=odd, chunker="paragraph")
    del options["sentences_per_chunk"]  # a sentence chunker's option: refused next to the paragraph chunker
    with pytest.raises(InvalidTextError, match=r"documents\[0\]\.text"):
        stage(INDEXED, **options)
    assert not (tmp_path / "store").exists()


def test_a_ragged_csv_row_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "ragged.csv").write_text("doc_id,text\n1,hello world,extra\n", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match=r"ragged\.csv:2"):
        stage("docs", document_source="files", paths=str(tmp_path))


def test_rst_and_html_files_are_read_and_a_byte_order_mark_is_not_text(tmp_path: Path) -> None:
    (tmp_path / "guide.rst").write_text("Oil\n===\n\nChange the engine oil yearly.\n", encoding="utf-8")
    page = (
        "<html><head><title>Tides &amp; moons</title><style>p {color: red}</style>"
        "<script>var secret = 1;</script></head><body><h1>Tides</h1><p>The moon pulls the&nbsp;sea.</p>"
        "<ul><li>twice a day</li><li>every day</li></ul><noscript>enable scripts</noscript></body></html>"
    )
    (tmp_path / "tides.html").write_text(page, encoding="utf-8")
    (tmp_path / "bom.txt").write_bytes("\ufeffA text with a byte-order mark.".encode())
    (tmp_path / "rows.csv").write_bytes("\ufeffdoc_id,text\nr1,Lava flows.\n".encode())
    rows = {row["doc_id"]: row for row in stage("docs", document_source="files", paths=str(tmp_path))}
    assert rows["guide.rst"]["text"].startswith("Oil\n===")
    assert rows["tides.html"]["text"] == "# Tides\n\nThe moon pulls the sea.\n\n- twice a day\n- every day"
    assert rows["tides.html"]["title"] == "Tides & moons"
    assert rows["bom.txt"]["text"] == "A text with a byte-order mark."
    assert rows["r1"]["text"] == "Lava flows."
