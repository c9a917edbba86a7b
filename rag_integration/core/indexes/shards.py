"""A corpus kept as shards in an ``index_dir``: which shard a document belongs to, each shard's documents as a
store version, each shard's part of the corpus-wide term statistics and their sum, and the snapshot that names
the shard versions and statistics answered together.

A document's shard is a hash of its doc_id (Spark's ``xxhash64``, ``core.contract.spark_shards``), so an edited corpus changes only the shards holding changed documents.
Statistics add over disjoint shards (``CorpusStatistics``); scored with their sum, every shard ranks its documents
as rows of one index over the whole corpus (``core.ranking.bm25_scores``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import logging
import operator
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.corpus import TEXT_DIGEST_BYTES, Corpus, Document, DocumentColumns, text_digests
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.digest_index import DigestIndex
from rag_integration.core.indexes.store import (
    StoreClaim,
    check_npy,
    current_version,
    intact_claim,
    load_npy,
    load_version,
    named_version,
    remove_store,
    save_npy,
    write_store,
)
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO, EMPTY_TERM, AnalysedCorpus, AnalysisSettings
from rag_integration.core.options import OptionSpec
from rag_integration.core.ranking.bm25_scores import CorpusStatistics, TermCountArrays
from rag_integration.core.text.languages import (
    CorpusLanguages,
    CorpusPlacement,
    PlacementSample,
    most_common_of,
)

LOGGER = logging.getLogger("rag_integration")
INDEX_SHARDS: OptionSpec[int] = OptionSpec(
    "index_shards",
    "integer",
    "build a Spark corpus (`corpus_source`) on the executors in this many shards under `index_dir`, scored with "
    "corpus-wide statistics (docs/frameworks.md); 1 builds one index",
    default=1,
    minimum=1,
)
INDEX_OVERLAY_SHARE: OptionSpec[float] = OptionSpec(
    "index_overlay_share",
    "number",
    "with `index_shards`: while a shard's rows gone and rows new since it was last written whole stay within this "
    "share of it (a changed document counts as both), an edit is kept beside it as an overlay, not a rewrite; 0 "
    "writes every changed shard whole",
    default=0.1,
    minimum=0.0,
    maximum=1.0,
)
SHARDS_FOLDER = "shards"
DOCUMENTS_FILE = "documents.arrow"
ROW_HASHES_FILE = "row_hashes.npy"
"""Beside a shard's documents: its rows' hashes as 32-byte rows ordered by their first 8 bytes, which a request
reads to withhold the text of rows that are unchanged (``KnownRows``)."""
DOCUMENTS_KIND = "shard-documents-6"
"""The documents file's format: doc_id, text and metadata strings, each text's digest (``text_digests``) and each
row's hash (made by Spark, ``core.contract.spark_shard_builds``), sorted by doc_id."""
OVERLAY_FOLDER = "overlay"
OVERLAY_KIND = "shard-overlay-1"
"""An overlay's rows (a shard documents file) and the positions of its base's rows that are gone (``DEAD_ROWS_FILE``),
for one base version named in its claim."""
DEAD_ROWS_FILE = "dead_rows.npy"
SNAPSHOT_KIND = "shard-snapshot"
RECORD_TERMS_FILE = "record_terms.npy"
"""Beside a snapshot: each recorded shard's terms as ids into the snapshot's vocabulary, shard after shard."""
RECORD_FREQUENCIES_FILE = "record_frequencies.npy"
_DOCUMENT_COLUMNS = ("doc_id", "text", "metadata")
DIGEST_COLUMN = "digest"
ROW_HASH_COLUMN = "row_hash"
ROW_HASH_BYTES = 32
_NO_METADATA = Document._field_defaults["metadata"]


def shard_folder(root: Path, shard: int) -> Path:
    return root / f"shard-{shard}"


def _shard_number(folder: Path) -> int | None:
    """The number of the shard kept in ``folder`` (``shard_folder``), None for another folder."""
    number = folder.name.removeprefix("shard-")
    return int(number) if _is_number(number) else None


def shards_root(index_dir: Path, backend: str, settings_key: str, shards: int) -> Path:
    """Where one backend's shards under one set of index settings live: one folder per shard count."""
    digest = hashlib.sha256(f"{backend}\0{settings_key}".encode()).hexdigest()[:20]
    return index_dir / SHARDS_FOLDER / f"{backend}-{digest}" / f"{shards}-shards"


def metadata_json(document: Document, option: str) -> str:
    """A document's metadata as JSON, or an error naming the document whose metadata is not JSON values."""
    try:
        return json.dumps(dict(document.metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        expected = "metadata of JSON values (strings, finite numbers, booleans, null, lists and dicts of them)"
        raise InvalidOptionError(f"{option} (doc_id {document.doc_id!r})", str(error), expected) from None


def shard_table(rows: Any, documents: Corpus) -> Any:
    """A shard's rows as its documents file holds them: ``rows`` (Arrow doc_id, text and metadata JSON strings and
    row hashes, sorted by doc_id by the caller) with the text digests of ``documents``, the same rows read."""
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    return pa.table(
        {
            **{name: rows.column(name).cast(pa.large_string()) for name in _DOCUMENT_COLUMNS},
            DIGEST_COLUMN: pa.array(text_digests(documents), pa.binary(TEXT_DIGEST_BYTES)),
            ROW_HASH_COLUMN: rows.column(ROW_HASH_COLUMN).cast(pa.binary(ROW_HASH_BYTES)),
        }
    )


def plain_documents(doc_ids: Sequence[str], texts: Sequence[str]) -> list[Document]:
    """Documents without metadata, made without Python-level construction per document (a shard has millions)."""
    return list(map(Document._make, zip(doc_ids, texts, itertools.repeat(_NO_METADATA))))


def write_shard_table(folder: Path, shard: int, table: Any, *, keep_same: bool = True) -> str:
    """Keep a shard's rows (``shard_table``) as the live version of the store in ``folder``, unless it already holds
    exactly them (the same row hashes in the same order, which name every row's doc_id, metadata and text; not
    checked without ``keep_same``, for rows known to be new); the live version's name."""
    hashes = _hash_rows(table.column(ROW_HASH_COLUMN))
    claim = StoreClaim(DOCUMENTS_KIND, {"shard": shard}, hashlib.sha256(hashes.tobytes()).hexdigest())
    store = folder / "documents"
    if keep_same and intact_claim(store) == claim:
        version = current_version(store)
        assert version is not None
        return version.name

    return write_store(store, claim, lambda staging: _save_rows(staging, table, hashes))


def _save_rows(staging: Path, table: Any, hashes: npt.NDArray[np.uint8]) -> None:
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    with pa.OSFile(str(staging / DOCUMENTS_FILE), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    save_npy(staging / ROW_HASHES_FILE, hashes[DigestIndex.of(hashes).rows])


def overlay_folder(folder: Path) -> Path:
    """Where a shard keeps its overlay: the rows a small change brought and which of its base's rows are gone, so
    the base version is kept as it is."""
    return folder / OVERLAY_FOLDER


def write_overlay(folder: Path, shard: int, base: str, table: Any, dead: npt.NDArray[np.int64]) -> str:
    """Keep a shard's overlay over its ``base`` version as the live version of its overlay store: ``table`` its
    rows (``shard_table``), ``dead`` the increasing positions of the base's rows that are gone."""
    hashes = _hash_rows(table.column(ROW_HASH_COLUMN))
    dead = np.asarray(dead, dtype="<i8")
    fingerprint = hashlib.sha256(hashes.tobytes())
    fingerprint.update(dead.tobytes())
    claim = StoreClaim(OVERLAY_KIND, {"shard": shard, "base": base}, fingerprint.hexdigest())

    def save(staging: Path) -> None:
        _save_rows(staging, table, hashes)
        save_npy(staging / DEAD_ROWS_FILE, dead)

    return write_store(overlay_folder(folder) / "documents", claim, save)


@dataclass(frozen=True)
class Overlay:
    """A shard's overlay as read back: its rows and the positions of its base's rows that are gone."""

    table: Any
    dead: npt.NDArray[np.int64]

    def live(self, base_rows: int) -> npt.NDArray[np.bool_]:
        """Which of the base's rows are still the shard's."""
        live = np.ones(base_rows, dtype=bool)
        live[self.dead] = False
        return live


def read_overlay(folder: Path, version_name: str, base: str, base_rows: int) -> Overlay:
    """One version of a shard's overlay over the ``base`` version of ``base_rows`` rows, checked against its
    manifest: rows as ``read_shard_table`` checks them, dead rows increasing within the base, or an
    ``IndexMismatchError``."""
    version = named_version(overlay_folder(folder) / "documents", version_name)
    claimed = version.claim.settings
    if version.claim.kind != OVERLAY_KIND or claimed != {"shard": _shard_number(folder), "base": base}:
        raise IndexMismatchError("index_dir", str(version.folder), f"an overlay of this shard's version {base}")

    def load(path: Path) -> Overlay:
        dead = load_npy(path / DEAD_ROWS_FILE, dtype="<i8")
        if dead.ndim != 1 or (len(dead) and (dead[0] < 0 or dead[-1] >= base_rows or bool((np.diff(dead) <= 0).any()))):
            raise IndexMismatchError("index_dir", str(path), "increasing positions of the base's rows")
        return Overlay(_checked_rows(path), dead.astype(np.int64))

    return load_version(version, load)


@dataclass(frozen=True)
class KnownRows:
    """The row hashes one version of a shard holds (``shard_row_hashes``, kept in key order), found by key and
    compared whole. A hint: a hash it misses (two hashes sharing a key, a file out of order) only sends that row's
    text."""

    index: DigestIndex

    @classmethod
    def of(cls, hashes: npt.NDArray[np.uint8]) -> KnownRows:
        return cls(DigestIndex.of(hashes, by_key=True))

    def __len__(self) -> int:
        return len(self.index.keys)

    def found(self, hashes: Any) -> npt.NDArray[np.bool_]:
        """For each row hash (Arrow binary, null for a row not hashed), whether this version holds it whole."""
        pa = require_module("pyarrow", "pyarrow", "frameworks")
        array = hashes.combine_chunks() if isinstance(hashes, pa.ChunkedArray) else hashes
        if not len(array):
            return np.zeros(0, dtype=bool)
        found: npt.NDArray[np.bool_] = self.index.rows_of(_hash_rows(array)) >= 0
        valid: npt.NDArray[np.bool_] = array.is_valid().to_numpy(zero_copy_only=False)
        return found & valid


def _hash_rows(hashes: Any) -> npt.NDArray[np.uint8]:
    """Row hashes as an (n, 32) byte array (a null hash's row holds whatever its slot holds)."""
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    array = hashes.combine_chunks() if isinstance(hashes, pa.ChunkedArray) else hashes
    if not isinstance(array.type, pa.FixedSizeBinaryType):
        array = array.cast(pa.binary(ROW_HASH_BYTES))
    return np.frombuffer(_fixed_width_bytes(array), dtype=np.uint8).reshape(-1, ROW_HASH_BYTES)


def shard_row_hashes(folder: Path, version_name: str, overlay: str | None = None) -> KnownRows:
    """The row hashes of one version of a shard's store (``ROW_HASHES_FILE``), memory-mapped (the executor's Python
    workers share them in the page cache), with its ``overlay``'s rows when it has one (a base row the overlay
    marks gone counts too: it comes back without its text), or none when they cannot be read. A hint only: a row
    found here crosses without its text, and its shard checks it against the rows it keeps, so a wrong file costs
    time (texts sent, or read again), never a wrong index."""
    base = _row_hashes_file(folder / "documents" / version_name / ROW_HASHES_FILE)
    if overlay is None or not len(base):
        return KnownRows.of(base)
    added = _row_hashes_file(overlay_folder(folder) / "documents" / overlay / ROW_HASHES_FILE)
    return KnownRows(DigestIndex.of(np.concatenate([base, added])))


def _row_hashes_file(path: Path) -> npt.NDArray[np.uint8]:
    """A row hashes file in key order, memory-mapped, or no rows when it cannot be read."""
    try:
        shape = check_npy(path, dtype="|u1")
        if len(shape) == 2 and shape[1] == ROW_HASH_BYTES:
            hashes: npt.NDArray[np.uint8] = np.load(path, mmap_mode="r", allow_pickle=False)
            return hashes
    except (IndexMismatchError, OSError, ValueError):
        pass
    return np.zeros((0, ROW_HASH_BYTES), dtype=np.uint8)


def checked_row_hashes(folder: Path, version_name: str) -> KnownRows:
    """The row hashes of one version of a shard's store, every file of the version checked against its manifest
    first: unlike the hint ``shard_row_hashes``, what a writer may keep a shard unchanged by without loading and
    comparing its documents. An ``IndexMismatchError`` when the version cannot be read."""
    version = named_version(folder / "documents", version_name)
    if version.claim.kind != DOCUMENTS_KIND:
        raise IndexMismatchError("index_dir", str(version.folder), "a shard's documents")

    def load(path: Path) -> KnownRows:
        hashes = np.load(path / ROW_HASHES_FILE, allow_pickle=False)
        if hashes.dtype != np.uint8 or hashes.ndim != 2 or hashes.shape[1] != ROW_HASH_BYTES:
            raise IndexMismatchError("index_dir", str(path), f"{ROW_HASH_BYTES}-byte row hashes")
        return KnownRows.of(hashes)

    return load_version(version, load)


def read_shard_table(folder: Path, version_name: str) -> Any:
    """The rows of one version of a shard's store, checked against its manifest and read memory-mapped: non-null
    columns of ``shard_table``'s types, doc_ids strictly increasing (so unique), or an ``IndexMismatchError``."""
    version = named_version(folder / "documents", version_name)
    if version.claim.kind != DOCUMENTS_KIND:
        raise IndexMismatchError("index_dir", str(version.folder), "a shard's documents")
    return load_version(version, _checked_rows)


def _checked_rows(path: Path) -> Any:
    """A version folder's documents file, memory-mapped: ``shard_table``'s non-null columns, doc_ids increasing."""
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    pc = require_module("pyarrow.compute", "pyarrow", "frameworks")
    table = pa.ipc.open_file(pa.memory_map(str(path / DOCUMENTS_FILE))).read_all()
    table.validate(full=True)
    types = {
        **dict.fromkeys(_DOCUMENT_COLUMNS, pa.large_string()),
        DIGEST_COLUMN: pa.binary(TEXT_DIGEST_BYTES),
        ROW_HASH_COLUMN: pa.binary(ROW_HASH_BYTES),
    }
    if table.column_names != list(types) or any(
        table.column(name).type != kind or table.column(name).null_count for name, kind in types.items()
    ):
        expected = "a shard's doc_id, text, metadata, digest and row_hash columns"
        raise IndexMismatchError("index_dir", str(path), expected)
    doc_ids = table.column("doc_id")
    if len(doc_ids) > 1 and not pc.all(pc.less(doc_ids[:-1], doc_ids[1:])).as_py():
        raise IndexMismatchError("index_dir", str(path), "a shard's doc_ids unique and in order")
    return table


def documents_of(table: Any, path: Path, *, metadata: bool = True) -> Corpus:
    """The documents of a shard's rows (``read_shard_table``) as its columns (``ShardDocuments``), holding the
    stored digests: the store's manifest vouches for them, as it does for the analysed terms kept beside them. The
    metadata of every row that has some is read now, so a store's bad JSON is found when it is read. Without
    ``metadata``, text alone: what analysis and embedding read."""
    pc = require_module("pyarrow.compute", "pyarrow", "frameworks")
    values: dict[int, Mapping[str, Any]] = {}
    if metadata:
        column = table.column("metadata")
        positions = np.flatnonzero(pc.not_equal(column, "{}").to_numpy(zero_copy_only=False))
        listed = column.take(positions).to_pylist()
        values = {position: _metadata(item, path) for position, item in zip(positions.tolist(), listed, strict=True)}
    documents = ShardDocuments(table.column("doc_id"), table.column("text"), values)
    return Corpus.read_back(documents, fixed_width_values(table.column(DIGEST_COLUMN)))


class ShardDocuments(DocumentColumns):
    """A shard's documents as its store's Arrow columns, memory-mapped: a document is made when it is asked for, so
    a query makes its hits, not the shard's millions."""

    __slots__ = ("_doc_ids", "_metadata", "_texts")

    def __init__(self, doc_ids: Any, texts: Any, metadata: Mapping[int, Mapping[str, Any]]) -> None:
        self._doc_ids = ArrowStrings(doc_ids)
        self._texts = ArrowStrings(texts)
        self._metadata = metadata

    @property
    def texts(self) -> Sequence[str]:
        return self._texts

    @property
    def nbytes(self) -> int:
        return self._doc_ids.nbytes + self._texts.nbytes

    def __len__(self) -> int:
        return len(self._doc_ids)

    @overload
    def __getitem__(self, index: int) -> Document: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Document]: ...

    def __getitem__(self, index: int | slice) -> Document | Sequence[Document]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        position = self._doc_ids.position(index)
        return Document(self._doc_ids[position], self._texts[position], self._metadata.get(position, _NO_METADATA))

    def __iter__(self) -> Iterator[Document]:
        metadata = self._metadata
        for position, (doc_id, text) in enumerate(zip(self._doc_ids, self._texts, strict=True)):
            yield Document(doc_id, text, metadata.get(position, _NO_METADATA))


class ArrowStrings(Sequence[str]):
    """An Arrow string column as a sequence of str, each made when it is asked for (and in batches when iterated)."""

    __slots__ = ("_column",)
    BATCH = 8192

    def __init__(self, column: Any) -> None:
        self._column = column

    @property
    def nbytes(self) -> int:
        return int(self._column.nbytes)

    def __len__(self) -> int:
        return len(self._column)

    def position(self, index: int) -> int:
        """``index`` as a position from the start, or the ``IndexError`` a list raises."""
        position = operator.index(index)
        if position < 0:
            position += len(self._column)
        if not 0 <= position < len(self._column):
            raise IndexError("document index out of range")
        return position

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        value: str = self._column[self.position(index)].as_py()
        return value

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._column), self.BATCH):
            yield from self._column.slice(start, self.BATCH).to_pylist()


def fixed_width_values(column: Any) -> list[bytes]:
    """The values of a non-null fixed-size binary column, sliced from its buffer: ``to_pylist`` makes each one
    through a scalar, a third of a second for a shard's digests."""
    array = column.combine_chunks()
    width, data = array.type.byte_width, bytes(_fixed_width_bytes(array))
    return [data[start : start + width] for start in range(0, len(data), width)]


def _fixed_width_bytes(array: Any) -> memoryview:
    """The value bytes of a fixed-size binary array (its data buffer from its offset, nulls' slots included)."""
    width = array.type.byte_width
    return memoryview(array.buffers()[1])[array.offset * width : (array.offset + len(array)) * width]


def read_shard_documents(folder: Path, version_name: str) -> Corpus:
    """The documents of one version of a shard's store (``read_shard_table``, ``documents_of``)."""
    return documents_of(read_shard_table(folder, version_name), folder)


@dataclass(frozen=True)
class ShardRecord:
    """What one shard version gave its snapshot, kept in it so a request that finds the shard unchanged need not
    read it again: its document count, its part of the ``auto`` sample, and its term statistics (None for a backend
    scored without them) with the placement key they were made under."""

    documents: int
    sample: PlacementSample | None
    statistics: TermStatistics | None
    placed: tuple[str, ...] | None


@dataclass(frozen=True)
class Snapshot:
    """The live snapshot's shard versions by shard number, and the records of those it kept them for."""

    versions: dict[int, str]
    records: dict[int, ShardRecord]
    overlays: dict[int, str] = dataclasses.field(default_factory=dict)
    name: str = ""
    fingerprint: str = ""
    """Its claim's fingerprint (``write_snapshot``): a set of shards with the same one is this snapshot again."""


def read_snapshot(root: Path, settings: Mapping[str, Any]) -> Snapshot | None:
    """The live snapshot under ``root`` when it was written under these ``settings``; None when there is none, or it
    is of other settings or cannot be read (the shards are then written again, so a broken snapshot costs a rebuild,
    never a wrong answer). Records that cannot be read are dropped: their shards are read again."""
    store = root / "snapshot"
    try:
        version = current_version(store)
        if version is None or version.claim.kind != SNAPSHOT_KIND:
            return None
        if not StoreClaim(SNAPSHOT_KIND, settings, "").same_as(
            dataclasses.replace(version.claim, corpus_fingerprint="")
        ):
            return None
        listed, arrays = load_version(version, _snapshot_files)
    except (IndexMismatchError, OSError, ValueError, RecursionError) as error:
        LOGGER.warning("index_shards: ignoring the snapshot in %s: %s", store, error)
        return None
    shards = listed.get("shards") if isinstance(listed, dict) else None
    count = settings.get("shards")
    if (
        not isinstance(shards, dict)
        or not isinstance(count, int)
        or not all(
            isinstance(number, str) and _is_number(number) and int(number) < count and isinstance(name, str)
            for number, name in shards.items()
        )
    ):
        LOGGER.warning("index_shards: ignoring the snapshot in %s: not a map of shard numbers to versions", store)
        return None
    versions = {int(number): name for number, name in shards.items()}
    overlays = listed.get("overlays", {})
    if not isinstance(overlays, dict) or not all(
        isinstance(number, str) and _is_number(number) and int(number) in versions and isinstance(name, str)
        for number, name in overlays.items()
    ):
        LOGGER.warning("index_shards: ignoring the snapshot in %s: not a map of shard numbers to overlays", store)
        return None
    try:
        records = _records_of(listed, arrays, set(versions))
    except (KeyError, TypeError, ValueError, IndexError) as error:
        LOGGER.warning(
            "index_shards: reading every shard again, the snapshot's records in %s are not usable: %r", store, error
        )
        records = {}
    listed_overlays = {int(number): name for number, name in overlays.items()}
    return Snapshot(versions, records, listed_overlays, version.name, version.claim.corpus_fingerprint)


def _snapshot_files(path: Path) -> tuple[Any, tuple[npt.NDArray[Any], npt.NDArray[Any]] | None]:
    listed = json.loads((path / "snapshot.json").read_text(encoding="utf-8"))
    if not (path / RECORD_TERMS_FILE).exists():
        return listed, None
    return listed, (
        load_npy(path / RECORD_TERMS_FILE, dtype="<i8"),
        load_npy(path / RECORD_FREQUENCIES_FILE, dtype="<i8"),
    )


def _records_of(
    listed: dict[str, Any], arrays: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None, shards: set[int]
) -> dict[int, ShardRecord]:
    """The snapshot's records, each checked (counts non-negative ints, term ids within its vocabulary, digests of
    their size): anything else raises, and no record is used."""
    raw = listed.get("records", {})
    listed_terms = listed.get("terms")
    vocabulary: list[Any] = listed_terms if isinstance(listed_terms, list) else []
    if not isinstance(raw, dict):
        raise TypeError("records")
    ids, frequencies = arrays if arrays is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if ids.ndim != 1 or ids.shape != frequencies.shape or bool(np.any(frequencies < 0)):
        raise ValueError("record arrays")
    if bool(np.any((ids < 0) | (ids >= len(vocabulary)))):
        raise ValueError("record term ids")
    if not all(isinstance(term, str) for term in vocabulary):
        raise TypeError("the snapshot's terms are strings")
    records: dict[int, ShardRecord] = {}
    start = 0
    for number in sorted(raw, key=int):
        entry = raw[number]
        shard = int(number)
        if shard not in shards or str(shard) != number:
            raise ValueError(f"record of shard {number}")
        statistics = None
        if entry["statistics"] is not None:
            given = entry["statistics"]
            size = _count(given["terms"])
            chosen = ids[start : start + size]
            if len(chosen) != size or (size and int(np.bincount(chosen).max()) > 1):
                raise IndexError("record terms")
            statistics = TermStatistics(
                _count(given["document_count"]),
                _count(given["total_length"]),
                tuple(map(vocabulary.__getitem__, chosen.tolist())),
                np.array(frequencies[start : start + size], dtype=np.int64),
                tuple((_code(code), _count(documents)) for code, documents in given["languages"]),
            )
            start += size
        sample = None
        if entry["sample"] is not None:
            least = tuple(
                (_digest(digest), None if code is None else _code(code)) for digest, code in entry["sample"]["least"]
            )
            sample = PlacementSample(_count(entry["sample"]["documents"]), least)
        placed = None if entry["placed"] is None else tuple(_code(part) for part in entry["placed"])
        records[shard] = ShardRecord(_count(entry["documents"]), sample, statistics, placed)
    if start != len(ids):
        raise ValueError("record terms left over")
    return records


def _is_number(text: str) -> bool:
    """Whether ``text`` is a shard number as the snapshot writes it: ASCII digits (``int`` refuses other digits)."""
    return text.isascii() and text.isdigit()


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"a count, not {value!r}")
    return value


def _code(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string, not {value!r}")
    return value


def _digest(value: Any) -> bytes:
    digest = bytes.fromhex(_code(value))
    if len(digest) != TEXT_DIGEST_BYTES:
        raise ValueError("a text digest")
    return digest


def _metadata(listed: str, path: Path) -> Mapping[str, Any]:
    try:
        value = json.loads(listed)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise IndexMismatchError("index_dir", str(path), "each document's metadata as a JSON object")
    return MappingProxyType(value)


def analysed_shard(
    documents: Sequence[Document], settings: AnalysisSettings, folder: Path, placement: CorpusPlacement | None
) -> AnalysedCorpus:
    """A shard's analysed terms, kept in its ``folder`` (``ANALYSIS_MEMO``: an edited shard analyses only its new
    texts), its languages placed by the whole corpus's ``placement`` under ``auto``."""
    placed = None if placement is None else placement.placement(text_digests(documents))
    return ANALYSIS_MEMO.analyse(documents, settings, folder, required=True, placement=placed)


@dataclass(frozen=True)
class TermStatistics:
    """One shard's part of the corpus-wide statistics, by term: its document count, total length, each term's
    document frequency (``terms`` in the shard's id order) and how many documents each language holds."""

    document_count: int
    total_length: int
    terms: tuple[str, ...]
    frequencies: npt.NDArray[np.int64]
    languages: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, analysed: AnalysedCorpus, live: npt.NDArray[np.bool_] | None = None) -> TermStatistics:
        """The statistics of the analysed documents, or of those ``live`` marks: only terms they hold are listed
        (and the empty term), as a build over those documents alone would list them."""
        empty = analysed.vocabulary[EMPTY_TERM]
        statistics = CorpusStatistics.of(analysed.counts, empty)
        if live is not None:  # a base under an overlay: few of its rows are gone, so their statistics are taken away
            statistics -= CorpusStatistics.of(analysed.counts.only(~live), empty)
        held = statistics.frequencies > 0
        held[empty] = True
        terms = _by_id(analysed.vocabulary)
        ids = np.flatnonzero(held)
        known = analysed.languages
        documents = np.frombuffer(known.documents, dtype=np.uint8)
        documents = documents if live is None else documents[live]
        per_language = np.bincount(documents, minlength=len(known.languages))
        languages = tuple((code, int(count)) for code, count in zip(known.languages, per_language.tolist()) if count)
        listed = tuple(terms[ids].tolist())
        return cls(statistics.document_count, statistics.total_length, listed, statistics.frequencies[ids], languages)

    def __add__(self, other: TermStatistics) -> TermStatistics:
        """The statistics of two disjoint parts of a shard (its base's rows still held, and its overlay)."""
        terms, frequencies = _merged_terms([self, other])
        return TermStatistics(
            self.document_count + other.document_count,
            self.total_length + other.total_length,
            tuple(terms),
            frequencies,
            tuple(sorted(_summed_languages([self, other]).items())),
        )


def _summed_languages(parts: Sequence[TermStatistics]) -> dict[str, int]:
    """The parts' document counts by language, summed."""
    per_language: dict[str, int] = {}
    for part in parts:
        for code, count in part.languages:
            per_language[code] = per_language.get(code, 0) + count
    return per_language


def _merged_terms(parts: Sequence[TermStatistics]) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Every part's terms once, ``EMPTY_TERM`` first and the others in code-point order, with their summed document
    frequencies: sorted by Arrow (UTF-8's byte order is the code points' order) and each run of one term summed, a
    corpus's million terms in a fraction of the time a dict takes; a term Arrow cannot hold (a lone surrogate) is
    summed by dict."""
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    pc = require_module("pyarrow.compute", "pyarrow", "frameworks")
    try:
        terms = pa.chunked_array([pa.array(part.terms, pa.large_string()) for part in parts], pa.large_string())
    except (pa.ArrowException, UnicodeError):
        totals: dict[str, int] = {}
        for part in parts:
            for term, frequency in zip(part.terms, part.frequencies.tolist(), strict=True):
                totals[term] = totals.get(term, 0) + frequency
        listed = [EMPTY_TERM, *sorted(term for term in totals if term != EMPTY_TERM)]
        return listed, np.array([totals.get(term, 0) for term in listed], dtype=np.int64)
    frequencies = np.concatenate([np.asarray(part.frequencies, dtype=np.int64) for part in parts])
    order = pc.sort_indices(terms).to_numpy()
    listed = terms.take(order).combine_chunks()
    starts = np.flatnonzero(
        np.concatenate([[True], pc.not_equal(listed[1:], listed[:-1]).to_numpy(zero_copy_only=False)])
    )
    ordered: list[str] = listed.take(starts).to_pylist() if len(listed) else []
    summed = np.add.reduceat(frequencies[order], starts) if len(listed) else np.zeros(0, dtype=np.int64)
    if not ordered or ordered[0] != EMPTY_TERM:
        return [EMPTY_TERM, *ordered], np.concatenate([np.zeros(1, dtype=np.int64), summed])
    return ordered, summed


def _by_id(vocabulary: Mapping[str, int]) -> npt.NDArray[np.object_]:
    """A vocabulary's terms in the order of their ids (0..n-1)."""
    terms = np.empty(len(vocabulary), dtype=object)
    terms[np.fromiter(vocabulary.values(), np.int64, len(vocabulary))] = list(vocabulary)
    return terms


@dataclass(frozen=True)
class CorpusTerms:
    """The whole corpus's vocabulary (``EMPTY_TERM`` at 0, the others in code-point order), its statistics by those
    ids and its languages: what every shard is scored and its queries analysed with."""

    vocabulary: dict[str, int]
    statistics: CorpusStatistics
    languages: tuple[str, ...]
    main: str

    @classmethod
    def merged(cls, parts: Sequence[TermStatistics]) -> CorpusTerms:
        ordered, frequencies = _merged_terms(parts)
        vocabulary = dict(zip(ordered, range(len(ordered))))
        per_language = _summed_languages(parts)
        statistics = CorpusStatistics(
            sum(part.document_count for part in parts), sum(part.total_length for part in parts), frequencies
        )
        main = most_common_of(per_language)
        return cls(vocabulary, statistics, tuple(sorted(per_language)), main)

    @property
    def fingerprint(self) -> str:
        hasher = hashlib.sha256(json.dumps([self.languages, self.main, self.statistics.document_count]).encode())
        hasher.update(str(self.statistics.total_length).encode())
        hasher.update(json.dumps(list(self.vocabulary), ensure_ascii=False).encode("utf-8", "surrogatepass"))
        hasher.update(self.statistics.frequencies.tobytes())
        return hasher.hexdigest()

    def counts(self, analysed: AnalysedCorpus, live: npt.NDArray[np.bool_] | None = None) -> TermCountArrays:
        """A shard's term counts with this vocabulary's ids (rows keep the shard's order of terms: scores and
        statistics do not depend on it). A row ``live`` does not mark is a gone document's: no statistic counts it,
        so a term of its that the corpus lacks is counted as the empty term."""
        renumbered = self._ids_of(analysed.vocabulary)
        counts = analysed.counts
        terms = renumbered[counts.terms]
        unknown = np.flatnonzero(terms < 0)
        if len(unknown):  # only a gone row may hold a term the corpus lacks: it is never ranked, so any id serves
            if live is None or bool(live[counts.row_of(unknown)].any()):
                raise IndexMismatchError("index_dir", "a shard's terms", "terms among the corpus's statistics")
            terms[unknown] = self.vocabulary[EMPTY_TERM]
        return TermCountArrays(counts.indptr, terms, counts.counts, len(self.vocabulary))

    @functools.cached_property
    def _term_array(self) -> Any:
        """The vocabulary's terms by id as an Arrow array, made once (``_ids_of`` looks shards' terms up in it)."""
        pa = require_module("pyarrow", "pyarrow", "frameworks")
        return pa.array(_by_id(self.vocabulary), pa.large_string())

    def _ids_of(self, vocabulary: Mapping[str, int]) -> npt.NDArray[np.int32]:
        """Each term id of a shard's ``vocabulary`` as this vocabulary's id, -1 for a term it lacks: looked up by
        Arrow (a shard's hundreds of thousands of terms in a fraction of a dict lookup each); a term Arrow cannot
        hold (a lone surrogate) is looked up by dict."""
        pa = require_module("pyarrow", "pyarrow", "frameworks")
        pc = require_module("pyarrow.compute", "pyarrow", "frameworks")
        own = _by_id(vocabulary)
        try:
            found = pc.index_in(pa.array(own, pa.large_string()), value_set=self._term_array)
        except (pa.ArrowException, UnicodeError):
            known = self.vocabulary.get
            return np.fromiter((known(term, -1) for term in own.tolist()), np.int32, len(own))
        ids: npt.NDArray[np.int32] = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
        return ids

    def corpus_languages(self, analysed: AnalysedCorpus, live: npt.NDArray[np.bool_] | None = None) -> CorpusLanguages:
        """A shard's document languages among the corpus's, with the corpus's main language (a gone document's,
        which no statistic counts, may be any)."""
        position = {code: index for index, code in enumerate(self.languages)}
        own = analysed.languages
        documents = np.frombuffer(own.documents, dtype=np.uint8)
        held = set(np.unique(documents if live is None else documents[live]).tolist())
        table = np.zeros(len(own.languages), dtype=np.uint8)
        for index in np.unique(documents).tolist():  # the languages its documents hold, not every one it lists
            code = own.languages[index]
            if code in position:
                table[index] = position[code]
            elif index in held:  # stored terms that disagree with the snapshot's statistics
                raise IndexMismatchError("index_dir", code, "a shard's document languages among the corpus's")
        mapped = table[documents].tobytes()
        return CorpusLanguages(self.languages, self.main, mapped)


@dataclass(frozen=True)
class ShardSet:
    """One snapshot of a sharded corpus: where its shards live, the store version of each shard's documents, the
    corpus's language placement and term statistics (None for a backend scored without them)."""

    root: Path
    numbers: tuple[int, ...]
    """The shards that hold documents (one no doc_id hashes to holds none and is never read)."""
    versions: tuple[str, ...]
    placement: CorpusPlacement | None
    terms: CorpusTerms | None
    snapshot: str = ""
    overlays: tuple[str | None, ...] = ()
    """Each shard's overlay version over its base version (``write_overlay``), None for a shard without one."""

    @property
    def shards(self) -> int:
        """How many shards hold documents: at most the requested count, never more than the documents."""
        return len(self.versions)

    def corpus_terms(self) -> CorpusTerms:
        """The corpus's term statistics, which a term-scored backend's shards cannot rank without."""
        if self.terms is None:
            raise IndexMismatchError("index_shards", self.shards, "shards whose backend summed term statistics")
        return self.terms

    def folder(self, position: int) -> Path:
        """The folder of the set's shard at ``position`` (of ``numbers``)."""
        return shard_folder(self.root, self.numbers[position])

    def overlay(self, position: int) -> str | None:
        """The overlay version of the set's shard at ``position``, if it has one."""
        return self.overlays[position] if self.overlays else None


def write_snapshot(
    shard_set: ShardSet,
    settings: Mapping[str, Any],
    records: Mapping[int, ShardRecord] | None = None,
    unchanged: Snapshot | None = None,
) -> ShardSet:
    """Record which shard versions and statistics answer together as the live version of ``root/snapshot``, with
    what each shard version gave (``ShardRecord``, by shard number). A request that changed nothing passes the
    live snapshot it was made from as ``unchanged``: when the set's fingerprint is that snapshot's, nothing is
    written (its records are the ones it read)."""
    terms = shard_set.terms
    kept = dict(records or {})
    overlays = {
        str(number): shard_set.overlay(position)
        for position, number in enumerate(shard_set.numbers)
        if shard_set.overlay(position) is not None
    }

    def save(folder: Path) -> None:
        listed: dict[str, Any] = {"shards": dict(zip(map(str, shard_set.numbers), shard_set.versions, strict=True))}
        listed["overlays"] = overlays
        if terms is not None:
            listed.update(
                terms=list(terms.vocabulary),
                document_count=terms.statistics.document_count,
                total_length=terms.statistics.total_length,
                languages=list(terms.languages),
                main=terms.main,
            )
            save_npy(folder / "frequencies.npy", terms.statistics.frequencies)
        ids: list[npt.NDArray[np.int64]] = []
        frequencies: list[npt.NDArray[np.int64]] = []
        entries: dict[str, Any] = {}
        for shard in sorted(kept):
            record = kept[shard]
            given = record.statistics
            if given is not None:
                assert terms is not None  # the corpus's terms are the sum of the shards' statistics
                ids.append(np.fromiter(map(terms.vocabulary.__getitem__, given.terms), np.int64, len(given.terms)))
                frequencies.append(np.asarray(given.frequencies, dtype=np.int64))
            entries[str(shard)] = _listed_record(record)
        listed["records"] = entries
        save_npy(folder / RECORD_TERMS_FILE, np.concatenate(ids) if ids else np.zeros(0, np.int64))
        save_npy(
            folder / RECORD_FREQUENCIES_FILE, np.concatenate(frequencies) if frequencies else np.zeros(0, np.int64)
        )
        (folder / "snapshot.json").write_text(json.dumps(listed, ensure_ascii=False), encoding="utf-8")

    fingerprint = hashlib.sha256(json.dumps([shard_set.numbers, shard_set.versions, overlays]).encode())
    if terms is not None:
        fingerprint.update(terms.fingerprint.encode())
    if unchanged is not None and unchanged.name and unchanged.fingerprint == fingerprint.hexdigest():
        return dataclasses.replace(shard_set, snapshot=unchanged.name)
    claim = StoreClaim(SNAPSHOT_KIND, dict(settings), fingerprint.hexdigest())
    name = write_store(shard_set.root / "snapshot", claim, save)
    return dataclasses.replace(shard_set, snapshot=name)


def _listed_record(record: ShardRecord) -> dict[str, Any]:
    """A shard record as the snapshot's JSON lists it (``_records_of`` reads it back); its term ids and frequencies
    go to the snapshot's arrays."""
    sample, given = record.sample, record.statistics
    listed_sample = None
    if sample is not None:
        listed_sample = {
            "documents": sample.documents,
            "least": [[digest.hex(), code] for digest, code in sample.least],
        }
    statistics = None
    if given is not None:
        statistics = {
            "document_count": given.document_count,
            "total_length": given.total_length,
            "languages": [list(pair) for pair in given.languages],
            "terms": len(given.terms),
        }
    placed = None if record.placed is None else list(record.placed)
    return {"documents": record.documents, "placed": placed, "sample": listed_sample, "statistics": statistics}


def forget_shards(index_dir: Path, doomed: Callable[[str, Mapping[str, Any]], bool]) -> int:
    """Remove every shard under ``index_dir`` any version of whose documents is ``doomed`` (by doc_id and metadata),
    with all it keeps (documents, analysed terms, embeddings) and the snapshot of its shard set; a shard whose
    documents cannot be read cannot be checked, so it goes too. The next request builds them again. How many
    shards went."""
    removed = 0
    for shard in sorted((index_dir / SHARDS_FOLDER).glob("*/*-shards/shard-*")):
        if _holds_doomed(shard / "documents", doomed) or _holds_doomed(overlay_folder(shard) / "documents", doomed):
            remove_store(shard.parent / "snapshot")
            shutil.rmtree(shard, ignore_errors=True)
            removed += 1
    return removed


def _holds_doomed(store: Path, doomed: Callable[[str, Mapping[str, Any]], bool]) -> bool:
    pa = require_module("pyarrow", "pyarrow", "frameworks")
    for version in sorted(store.glob("v-*")):
        try:
            with pa.memory_map(str(version / DOCUMENTS_FILE)) as source:
                table = pa.ipc.open_file(source).read_all()
            doc_ids, metadata = table.column("doc_id").to_pylist(), table.column("metadata").to_pylist()
            if any(
                doomed(doc_id, _metadata(listed, version)) for doc_id, listed in zip(doc_ids, metadata, strict=True)
            ):
                return True
        except (OSError, ValueError, KeyError, IndexMismatchError, pa.ArrowException):
            return True
    return False
