"""A shard's documents as its store keeps them (``core.indexes.shards``): read back with the text digests written
beside them, and a file of another shape, even under a valid manifest, refused with a typed error."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from rag_integration.core.documents.corpus import Corpus, Document, text_digests, texts_of
from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.indexes.shards import (
    DOCUMENTS_FILE,
    DOCUMENTS_KIND,
    ROW_HASH_BYTES,
    ArrowStrings,
    ShardDocuments,
    read_shard_documents,
    shard_table,
    write_shard_table,
)
from rag_integration.core.indexes.store import StoreClaim, write_store

DOCUMENTS = [Document("a", "Das Öl ist alt."), Document("b", "海水の温度"), Document("c", "", {"year": 2020})]


HASHES = [bytes([number]) * ROW_HASH_BYTES for number in range(len(DOCUMENTS))]


def written(folder: Path) -> str:
    rows = {
        "doc_id": pa.array([document.doc_id for document in DOCUMENTS]),
        "text": pa.array([document.text for document in DOCUMENTS]),
        "metadata": pa.array(["{}", "{}", '{"year": 2020}']),
        "row_hash": pa.array(HASHES, pa.binary()),
    }
    table = shard_table(pa.table(rows), Corpus(DOCUMENTS))
    return write_shard_table(folder, 0, table)


def test_documents_read_back_with_the_digests_of_their_texts(tmp_path: Path) -> None:
    version = written(tmp_path)
    found = read_shard_documents(tmp_path, version)
    assert isinstance(found, Corpus)
    assert list(found) == DOCUMENTS
    assert text_digests(found) == text_digests([Document(d.doc_id, d.text) for d in DOCUMENTS])
    assert written(tmp_path) == version


def test_read_back_documents_are_made_one_at_a_time_from_the_columns_and_act_as_a_list(tmp_path: Path) -> None:
    found = read_shard_documents(tmp_path, written(tmp_path))
    columns = found.columns
    assert isinstance(columns, ShardDocuments)
    assert texts_of(found) is columns.texts
    assert list(texts_of(found)) == [document.text for document in DOCUMENTS]
    assert [found[position] for position in range(-3, 3)] == DOCUMENTS + DOCUMENTS
    assert found[2].metadata == {"year": 2020} and found[0].metadata == {}
    assert list(found[1:]) == DOCUMENTS[1:] and list(columns[::-1]) == DOCUMENTS[::-1]
    assert columns.texts[-1] == "" and list(columns.texts[:2]) == [DOCUMENTS[0].text, DOCUMENTS[1].text]
    for position in (3, -4):
        with pytest.raises(IndexError):
            found[position]
    assert found == Corpus(DOCUMENTS) and found.fingerprint == Corpus(DOCUMENTS).fingerprint
    assert pickle.loads(pickle.dumps(found)) == Corpus(DOCUMENTS)
    assert columns.nbytes >= sum(len(document.text.encode()) for document in DOCUMENTS)


def test_a_column_iterated_in_batches_gives_every_value_once() -> None:
    values = [f"text {number}" for number in range(ArrowStrings.BATCH * 2 + 5)]
    chunks = [pa.array(values[:7], pa.large_string()), pa.array(values[7:], pa.large_string())]
    strings = ArrowStrings(pa.chunked_array(chunks))
    assert list(strings) == values and len(strings) == len(values)
    assert strings[ArrowStrings.BATCH + 1] == values[ArrowStrings.BATCH + 1] and strings[-1] == values[-1]


def test_stored_metadata_that_is_not_json_is_a_typed_error_when_the_shard_is_read(tmp_path: Path) -> None:
    rows = {**TEXTS, "metadata": pa.array(["{not json"], pa.large_string())}
    rows |= {"digest": pa.array([bytes(16)], pa.binary(16)), "row_hash": pa.array([bytes(32)], pa.binary(32))}
    version = _stored(tmp_path, pa.table(rows))
    with pytest.raises(IndexMismatchError):
        read_shard_documents(tmp_path, version)


def _stored(folder: Path, table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    written = sink.getvalue()
    claim = StoreClaim(DOCUMENTS_KIND, {"shard": 0}, hashlib.sha256(memoryview(written)).hexdigest())
    return write_store(folder / "documents", claim, lambda staging: (staging / DOCUMENTS_FILE).write_bytes(written))


TEXTS = {name: pa.array(["x"], pa.large_string()) for name in ("doc_id", "text")}


@pytest.mark.parametrize(
    "columns",
    [
        {**TEXTS, "metadata": pa.array(["{}"], pa.large_string())},  # no digests: an older or foreign file
        {**TEXTS, "metadata": pa.array(["{}"], pa.large_string()), "digest": pa.array([b"short"], pa.binary(5))},
        {**TEXTS, "metadata": pa.array(["{}"], pa.large_string()), "digest": pa.array([None], pa.binary(16))},
    ],
)
def test_a_documents_file_of_another_shape_is_a_typed_error(columns: dict[str, pa.Array], tmp_path: Path) -> None:
    version = _stored(tmp_path, pa.table(columns))
    with pytest.raises(IndexMismatchError, match="digest"):
        read_shard_documents(tmp_path, version)


def test_a_documents_file_whose_doc_ids_repeat_or_are_out_of_order_is_a_typed_error(tmp_path: Path) -> None:
    for number, doc_ids in enumerate((["b", "a"], ["a", "a"])):
        columns = {
            "doc_id": pa.array(doc_ids, pa.large_string()),
            "text": pa.array(["x", "y"], pa.large_string()),
            "metadata": pa.array(["{}", "{}"], pa.large_string()),
            "digest": pa.array([b"d" * 16] * 2, pa.binary(16)),
            "row_hash": pa.array([b"h" * ROW_HASH_BYTES] * 2, pa.binary(ROW_HASH_BYTES)),
        }
        version = _stored(tmp_path / str(number), pa.table(columns))
        with pytest.raises(IndexMismatchError, match="unique and in order"):
            read_shard_documents(tmp_path / str(number), version)


def test_a_shards_languages_map_to_the_corpus_languages_its_documents_hold() -> None:
    from rag_integration.core.indexes.shards import CorpusTerms
    from rag_integration.core.indexes.term_counts import AnalysedCorpus
    from rag_integration.core.text.languages import CorpusLanguages

    corpus = CorpusTerms({}, None, ("de", "en"), "en")  # type: ignore[arg-type]

    def mapped(languages: tuple[str, ...], documents: bytes) -> bytes:
        analysed = AnalysedCorpus(None, {}, b"", CorpusLanguages(languages, languages[0], documents), (), {})  # type: ignore[arg-type]
        return corpus.corpus_languages(analysed).documents

    assert mapped(("en", "fr"), b"\0\0\0") == b"\1\1\1"  # a listed language no document holds is not looked up
    assert mapped(("de", "en"), b"\1\0\1") == b"\1\0\1"
    with pytest.raises(IndexMismatchError):
        mapped(("en", "fr"), b"\0\1")
