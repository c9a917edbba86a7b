"""A Spark corpus's shards written on the executors (``index_shards``): only statistics reach the driver.

Every corpus row goes to its shard (Spark's ``xxhash64`` of the doc_id, shuffled by Spark); each shard keeps its
documents, sorted by doc_id, as a store version in ``index_dir``, makes what its backend keeps (analysed terms,
embeddings) and returns its statistics and, under ``auto``, its part of the language sample. The driver sums them
and records them with the shard versions as one snapshot.

Every row's hash (SHA-256 over its doc_id, metadata JSON and text, ``row_hash``) is made by Spark where the row is
read. With a snapshot, rows that are already in it travel without their text: the hash alone goes to Python, to be
looked up among the hashes of its shard's snapshot version, and a row found there sends only its doc_id and hash
on. Each shard compares what arrives with the rows it keeps: an unchanged shard is kept as it is, a changed one
writes its previous rows with the change applied, analysing only the new texts. A row withheld that its shard
does not hold (its hashes file was not its rows') is read again, by doc_id, in a job of its own. So a small edit
moves a small part of the corpus, in one job.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import logging
import pickle
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.contract.frames import PYSPARK_PANDAS_WARNING
from rag_integration.core.contract.spark_shards import (
    ShardJob,
    TaskFailure,
    allocating,
    arrow_batches,
    collected,
    on_tasks,
)
from rag_integration.core.documents.corpus import Corpus, Document, text_digests, texts_of
from rag_integration.core.errors import ConnectorError, DuplicateDocIdError, IndexMismatchError, InvalidOptionError
from rag_integration.core.indexes.shards import (
    ROW_HASH_COLUMN,
    CorpusTerms,
    KnownRows,
    Overlay,
    ShardRecord,
    ShardSet,
    checked_row_hashes,
    documents_of,
    metadata_json,
    overlay_folder,
    plain_documents,
    read_overlay,
    read_shard_table,
    read_snapshot,
    shard_folder,
    shard_row_hashes,
    shard_table,
    write_overlay,
    write_shard_table,
    write_snapshot,
)
from rag_integration.core.text.analysis import AUTO
from rag_integration.core.text.languages import CorpusPlacement, PlacementSample

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkFrame

LOGGER = logging.getLogger("rag_integration")


@dataclass(frozen=True)
class _Written:
    shard: int
    version: str
    sample: PlacementSample | None
    documents: int
    part: Any
    """What ``shard_part`` returned, made under ``placed``: the shard's own sample's placement key (None if fixed)."""
    placed: tuple[str, ...] | None
    changed: bool = True
    """False for a shard kept as its snapshot version."""
    sent: int = 0
    """How many of its rows reached it with their text."""
    overlay: str | None = None
    """Its overlay version over ``version`` (``write_overlay``), None for a shard written whole."""


@dataclass(frozen=True)
class _Change:
    """A changed shard's change: the version it applies to (None: the shard is written from its rows alone) and that
    version's overlay, the rows to read again from the frame by doc_id (doc_id to row hash; None when the shard
    holds them already), and which of the version's base rows and overlay rows the corpus still holds."""

    shard: int
    version: str | None
    wanted: Mapping[str, bytes] | None
    overlay: str | None = None
    base_live: npt.NDArray[np.bool_] | None = None
    overlay_kept: npt.NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class _Previous:
    """A shard's version as a writer reads it back: its base rows and its overlay, if it has one."""

    base: pa.Table
    overlay: Overlay | None

    @functools.cached_property
    def live(self) -> npt.NDArray[np.bool_]:
        """Which base rows are the shard's."""
        rows = self.base.num_rows
        return np.ones(rows, dtype=bool) if self.overlay is None else self.overlay.live(rows)

    @property
    def documents(self) -> int:
        """How many documents the shard holds."""
        added = 0 if self.overlay is None else self.overlay.table.num_rows
        return int(self.live.sum()) + added


def build_shards(frame: SparkFrame, job: ShardJob) -> ShardSet:
    """The corpus in ``frame``'s ``job.column`` kept as up to ``job.shards`` shards under ``job.root``, with the
    snapshot that names them and their summed statistics: the shards of the previous snapshot kept, or changed
    where the corpus changed."""
    settings = {"index": json.loads(json.dumps(dataclasses.asdict(job.index_settings), default=str))}
    settings["shards"] = job.shards
    snapshot = read_snapshot(job.root, settings)
    if snapshot is not None and snapshot.overlays and not job.backend.SHARD_OVERLAYS:
        LOGGER.warning("index_shards: ignoring the snapshot in %s: overlays for a backend without them", job.root)
        snapshot = None
    previous, records = (snapshot.versions, snapshot.records) if snapshot is not None else ({}, {})
    overlays = snapshot.overlays if snapshot is not None else {}
    selected = _selected(frame, job)
    if previous:
        selected = _sifted(selected, job, previous, overlays)
    done = _run(_spread(selected, job), _writer(job, previous, overlays, frozenset(records)))
    written = [item for item in done if isinstance(item, _Written)]
    recorded = sum(not item.changed and item.shard in records for item in written)
    if recorded:
        LOGGER.info("index_shards: %d unchanged shards taken from the snapshot's records", recorded)
        written = [_from_record(item, records) for item in written]
    changes = {item.shard: item for item in done if isinstance(item, _Change)}
    if changes:
        LOGGER.info("index_shards: %d shards read again the withheld rows they do not hold", len(changes))
        written += _changed(frame, job, changes)
    if previous:
        changed, sent = sum(item.changed for item in written), sum(item.sent for item in written)
        rows = sum(item.documents for item in written)
        LOGGER.info(
            "index_shards: %d of %d shards changed, %d of %d rows sent their text", changed, len(written), sent, rows
        )
    held = sorted((item for item in written if item.documents), key=lambda item: item.shard)
    numbers, versions = tuple(item.shard for item in held), tuple(item.version for item in held)
    overlaid = tuple(item.overlay for item in held)
    samples = [item.sample for item in held if item.sample is not None]
    placement = CorpusPlacement.merged(samples) if job.language == AUTO else None
    partial = ShardSet(job.root, numbers, versions, placement, None, overlays=overlaid)
    placed = None if placement is None else placement.key
    again = [position for position, item in enumerate(held) if item.placed != placed]
    if again:
        LOGGER.info("index_shards: %d of %d shards analysed again under the corpus's placement", len(again), len(held))
    parts = dict(on_tasks(frame, again, _analyser(job, partial)))
    found = [parts.get(position, item.part) for position, item in enumerate(held)]
    statistics = [part for part in found if part is not None]
    terms = CorpusTerms.merged(statistics) if statistics else None
    kept = {
        item.shard: ShardRecord(item.documents, item.sample, part, placed)
        for item, part in zip(held, found, strict=True)
    }
    unchanged = not again and bool(held) and all(not item.changed and item.shard in records for item in held)
    live = snapshot if unchanged and set(records) == set(numbers) else None
    shard_set = ShardSet(job.root, numbers, versions, placement, terms, overlays=overlaid)
    return write_snapshot(shard_set, settings, kept, unchanged=live)


def _from_record(item: _Written, records: Mapping[int, ShardRecord]) -> _Written:
    """A shard kept unchanged with what its snapshot record holds (its writer made none of it): its statistics were
    made under ``placed``."""
    record = records.get(item.shard)
    if item.changed or record is None:
        return item
    return dataclasses.replace(item, sample=record.sample, part=record.statistics, placed=record.placed)


def partition_keys(shards: int) -> list[int]:
    """For each shard, the least key Spark's hash partitioning (``repartition(shards, key)``: Murmur3 of the long
    key with seed 42, as the SQL ``hash``) sends to the partition of the same number, so each shard is one task."""
    keys: dict[int, int] = {}
    key = 0
    while len(keys) < shards:
        keys.setdefault(spark_hash(key) % shards, key)
        key += 1
    return [keys[shard] for shard in range(shards)]


def spark_hash(value: int) -> int:
    """Spark's ``hash`` of a long (``Murmur3_x86_32.hashLong`` with seed 42), as a signed 32-bit int."""
    h1 = 42
    for word in (value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF):
        k1 = (word * 0xCC9E2D51) & 0xFFFFFFFF
        k1 = ((k1 << 15) | (k1 >> 17)) & 0xFFFFFFFF
        k1 = (k1 * 0x1B873593) & 0xFFFFFFFF
        h1 ^= k1
        h1 = ((h1 << 13) | (h1 >> 19)) & 0xFFFFFFFF
        h1 = (h1 * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def by_shard(frame: SparkFrame, job: ShardJob) -> SparkFrame:
    """The corpus's documents as columns, each shard in the partition of its number (``_selected``, ``_spread``)."""
    return _spread(_selected(frame, job), job)


def _selected(frame: SparkFrame, job: ShardJob) -> SparkFrame:
    """The corpus's documents as columns: each one's shard (Spark's ``xxhash64`` of the doc_id, the same in every
    run and process) and the key that sends it to its shard's partition, doc_id, text, metadata (a struct of the
    other fields, when there are any), the row hash (``row_hash``) and whether the text is sent (``_sifted``
    withholds it)."""
    from pyspark.sql import functions
    from pyspark.sql.types import IntegralType, StringType, StructType

    column = job.column
    kind = frame.schema[column].dataType
    fields = {field.name: field.dataType for field in kind.fields} if isinstance(kind, StructType) else {}
    if not isinstance(fields.get("doc_id"), (StringType, IntegralType)) or not isinstance(
        fields.get("text"), StringType
    ):
        expected = "rows of documents with a str or int doc_id and a string text, with index_shards"
        raise InvalidOptionError(column, kind.simpleString(), expected)
    doc_id = functions.col(column)["doc_id"].cast("string")
    text = functions.col(column)["text"]
    shard = functions.pmod(functions.xxhash64(doc_id), functions.lit(job.shards))
    keys = functions.array(*[functions.lit(key).cast("long") for key in partition_keys(job.shards)])
    others = [name for name in fields if name not in ("doc_id", "text")]
    metadata = functions.struct(*[functions.col(column)[name].alias(name) for name in others])
    return frame.select(
        functions.element_at(keys, (shard + 1).cast("int")).alias("partition_key"),
        shard.cast("int").alias("shard"),
        doc_id.alias("doc_id"),
        text.alias("text"),
        functions.col(column).isNull().alias("missing"),
        *([metadata.alias("metadata")] if others else []),
        row_hash(doc_id, text, metadata if others else None).alias(ROW_HASH_COLUMN),
        functions.lit(True).alias("sent"),
    )


def row_hash(doc_id: Any, text: Any, metadata: Any | None) -> Any:
    """A row's hash, what tells a corpus row unchanged: SHA-256 over its doc_id and its metadata as JSON (nulls
    kept), each after its length in characters, then its text, so no two rows hash the same input; null for a row
    without doc_id or text. Made by Spark where the row is read: the sift then sends Python 32 bytes a row, not
    its text."""
    from pyspark.sql import functions

    listed = functions.lit("{}") if metadata is None else functions.to_json(metadata, {"ignoreNullFields": "false"})
    parts = [functions.length(doc_id).cast("string"), functions.lit(":"), doc_id]
    parts += [functions.length(listed).cast("string"), functions.lit(":"), listed, text]
    return functions.unhex(functions.sha2(functions.concat(*parts), 256))


def _spread(selected: SparkFrame, job: ShardJob) -> SparkFrame:
    """Each shard's rows in the partition of its number: the shuffle runs in Spark, no row passes through Python on
    the way."""
    return selected.repartition(job.shards, "partition_key")


def _sifted(
    selected: SparkFrame, job: ShardJob, previous: Mapping[int, str], overlays: Mapping[int, str]
) -> SparkFrame:
    """``selected`` with the text and metadata of every row whose hash its shard's snapshot version holds withheld
    (``sent`` false): those rows cross the shuffle as doc_id and hash alone. Only the shard and hash of a row go to
    Python (an Arrow UDF); its text stays in Spark."""
    from pyspark.sql import functions
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    root = job.root

    def found(shards: pa.Array, hashes: pa.Array) -> pa.Array:
        import pyarrow as pa

        numbers = shards.to_numpy(zero_copy_only=False)
        held = np.zeros(len(numbers), dtype=bool)
        for shard in np.unique(numbers).tolist():
            version = previous.get(shard)
            if version is not None:
                rows = np.flatnonzero(numbers == shard)
                known = _stored_rows(str(shard_folder(root, shard)), version, overlays.get(shard))
                held[rows] = known.found(hashes.take(rows))
        return pa.array(held)

    with warnings.catch_warnings():  # type hints would name pyarrow where this module imports it only for mypy
        warnings.filterwarnings("ignore", message="It is preferred to specify type hints", category=UserWarning)
        udf = arrow_udf(found, "boolean", ArrowUDFType.SCALAR)
    withheld = udf(functions.col("shard"), functions.col(ROW_HASH_COLUMN))
    sifted = selected.withColumn("withheld", withheld)
    columns = []
    for field in selected.schema.fields:
        column = functions.col(field.name)
        if field.name in ("text", "metadata"):
            column = functions.when(functions.col("withheld"), functions.lit(None)).otherwise(column)
        elif field.name == "sent":
            column = ~functions.col("withheld")
        columns.append(column.cast(field.dataType).alias(field.name))
    return sifted.select(*columns)


@functools.lru_cache(maxsize=256)
def _stored_rows(folder: str, version: str, overlay: str | None) -> KnownRows:
    """A snapshot shard version's row hashes (with its overlay's), read once per Python worker."""
    return shard_row_hashes(Path(folder), version, overlay)


def _run(spread: SparkFrame, work: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]) -> list[Any]:
    """``work`` over each partition of ``spread`` on the executors, in ``arrow_batches``; the records it returned, or
    its typed error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        results = spread.mapInArrow(work, "result binary")
    with arrow_batches(spread.sparkSession):
        rows = results.collect()
    return collected([pickle.loads(row[0]) for row in rows])


def _writer(
    job: ShardJob, previous: Mapping[int, str], overlays: Mapping[int, str], recorded: frozenset[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each shard of a partition compared with its version in the previous snapshot (if any) and kept, written with
    its change applied, or, when a row it needs came without its text, the ``_Change`` to fetch. A kept shard the
    snapshot holds a record of (``recorded``) is not read further."""

    def written(shard: int, part: pa.Table) -> _Written | _Change:
        return _shard_written(job, shard, previous.get(shard), part, shard in recorded, overlays.get(shard))

    return _records(lambda table: _per_shard(job, table, written))


def _per_shard(job: ShardJob, table: pa.Table, write: Callable[[int, pa.Table], Any]) -> Iterator[Any]:
    """``write(shard, rows)`` for each shard of a partition's rows, a typed error as its ``TaskFailure``."""
    _require_documents(table, job.column)
    shards = table.column("shard").to_numpy(zero_copy_only=False)
    numbers = np.unique(shards).tolist()
    for shard in numbers:  # a partition holds one shard (``partition_keys``): its table is not copied
        part = table if len(numbers) == 1 else table.take(np.flatnonzero(shards == shard))
        try:
            yield write(shard, part)
        except ConnectorError as error:
            yield TaskFailure(error)


def _shard_written(
    job: ShardJob,
    shard: int,
    version: str | None,
    part: pa.Table,
    recorded: bool = False,
    overlay: str | None = None,
) -> _Written | _Change:
    """One shard's rows against its snapshot version (base rows and overlay) by whole row hash: kept when nothing
    changed (its sample and statistics made again only when the snapshot has no ``recorded`` ones), else written
    with the rows whose hash is gone left out and the new ones taken in (``_change_written``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = job.column
    if pc.any(pc.and_(part.column("sent"), part.column("text").is_null())).as_py():
        raise InvalidOptionError(f"{column}.text", None, "a string text in every row")
    if pc.count_distinct(part.column("doc_id")).as_py() != part.num_rows:
        _require_unique(part.column("doc_id").take(pc.sort_indices(part.column("doc_id"))), column)
    folder = shard_folder(job.root, shard)
    sent = int(pc.sum(part.column("sent")).as_py() or 0)
    hashes = part.column(ROW_HASH_COLUMN)
    if version is not None and overlay is None and recorded and not sent and _holds_exactly(folder, version, hashes):
        return _Written(shard, version, None, part.num_rows, None, None, changed=False, sent=sent)
    previous = None if version is None else _previous(folder, shard, version, overlay)
    if previous is None or version is None:
        wanted, change = part, _Change(shard, None, None)
    else:
        arriving = hashes.combine_chunks()
        base_live = _found(previous.base.column(ROW_HASH_COLUMN), arriving)
        added = None if previous.overlay is None else previous.overlay.table
        overlay_kept = np.zeros(0, dtype=bool) if added is None else _found(added.column(ROW_HASH_COLUMN), arriving)
        known = [previous.base.column(ROW_HASH_COLUMN)] + ([] if added is None else [added.column(ROW_HASH_COLUMN)])
        held = pa.concat_arrays([column.combine_chunks() for column in known])
        wanted = part.filter(pc.invert(pc.is_in(hashes, value_set=held)))
        if not wanted.num_rows and overlay_kept.all() and np.array_equal(base_live, previous.live):
            if recorded:
                count = previous.documents
                return _Written(shard, version, None, count, None, None, changed=False, sent=sent, overlay=overlay)
            kept = _made_from(job, shard, previous, version, overlay)
            return dataclasses.replace(kept, changed=False, sent=sent)
        change = _Change(shard, version, None, overlay, base_live, overlay_kept)
    if wanted.num_rows and not pc.all(wanted.column("sent")).as_py():
        listed = zip(wanted.column("doc_id").to_pylist(), wanted.column(ROW_HASH_COLUMN).to_pylist(), strict=True)
        return dataclasses.replace(change, wanted=dict(listed))
    return dataclasses.replace(_change_written(job, change, _sorted_rows(wanted, column), previous), sent=sent)


def _previous(folder: Path, shard: int, version: str, overlay: str | None) -> _Previous | None:
    """A shard's snapshot version read back, or None (logged) when it cannot be: the shard is then written again."""
    try:
        return _read_previous(folder, version, overlay)
    except IndexMismatchError as error:
        LOGGER.warning("index_shards: shard %d is written again: %s", shard, error)
        return None


def _read_previous(folder: Path, version: str, overlay: str | None) -> _Previous:
    """A shard's version (its base rows and overlay) read back, or an ``IndexMismatchError``."""
    base = read_shard_table(folder, version)
    return _Previous(base, None if overlay is None else read_overlay(folder, overlay, version, base.num_rows))


def _found(stored: pa.ChunkedArray, arriving: pa.Array) -> npt.NDArray[np.bool_]:
    """Which stored row hashes arrived."""
    import pyarrow.compute as pc

    found: npt.NDArray[np.bool_] = pc.is_in(stored, value_set=arriving).to_numpy(zero_copy_only=False)
    return found


def _holds_exactly(folder: Path, version: str, hashes: pa.ChunkedArray) -> bool:
    """Whether the shard version holds exactly the rows of these hashes (distinct: their doc_ids are), by its row
    hashes file alone, so an unchanged shard's documents are not read; False when that cannot be told."""
    try:
        stored = checked_row_hashes(folder, version)
    except IndexMismatchError:
        return False
    return len(stored) == len(hashes) and bool(stored.found(hashes).all())


def _require_unique(doc_ids: pa.ChunkedArray, column: str) -> None:
    """Sorted doc_ids without a repeat, or the error naming the least repeated one."""
    import pyarrow.compute as pc

    if len(doc_ids) > 1:
        same = pc.equal(doc_ids[:-1], doc_ids[1:])
        if pc.any(same).as_py():
            raise DuplicateDocIdError(column, doc_ids[pc.index(same, True).as_py()].as_py())


def _changed(frame: SparkFrame, job: ShardJob, changes: Mapping[int, _Change]) -> list[_Written]:
    """The shards whose needed rows came without their text, written once those rows are read again: only they
    travel, found by a broadcast join of their doc_ids."""
    import pyarrow as pa
    from pyspark.sql import functions

    wanted = sorted(doc_id for change in changes.values() for doc_id in change.wanted or {})
    keys = frame.sparkSession.createDataFrame(pa.table({"doc_id": pa.array(wanted, pa.string())}))
    rows = _selected(frame, job).join(functions.broadcast(keys), "doc_id", "left_semi")

    def write(shard: int, part: pa.Table) -> _Written:
        if shard not in changes:
            raise _frame_changed(job.column)
        return _change_written(job, changes[shard], _sorted_rows(part, job.column))

    written: list[_Written] = _run(_spread(rows, job), _records(lambda table: _per_shard(job, table, write)))
    if {item.shard for item in written} != set(changes):
        raise _frame_changed(job.column)
    return written


def _records(
    made: Callable[[pa.Table], Iterator[Any]],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A partition's task: what ``made`` returns for its rows, each record pickled into one ``result`` row; a typed
    error returned as a ``TaskFailure``."""
    import pyarrow as pa

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        listed = list(batches)
        if not listed:
            return
        table = pa.Table.from_batches(listed)
        del listed
        with allocating():
            try:
                results = list(made(table))
            except ConnectorError as error:
                results = [TaskFailure(error)]
        for result in results:
            yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], names=["result"])

    return run


def _sorted_rows(table: pa.Table, column: str) -> pa.Table:
    """A shard's rows from the frame as doc_id, text, metadata JSON and row hash, sorted by doc_id (UTF-8's byte
    order is the code point order Python sorts by), each checked as ``read_document`` checks a document dict."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.column("text").null_count:
        raise InvalidOptionError(f"{column}.text", None, "a string text in every row")
    table = table.take(pc.sort_indices(table.column("doc_id")))
    doc_ids = table.column("doc_id")
    _require_unique(doc_ids, column)
    if "metadata" in table.column_names:
        listed, names = table.column("metadata").to_pylist(), doc_ids.to_pylist()
        metadata = [metadata_json(Document(doc_id, "", values), column) for doc_id, values in zip(names, listed)]
    else:
        metadata = ["{}"] * table.num_rows
    columns = {"doc_id": doc_ids, "text": table.column("text"), "metadata": pa.array(metadata, pa.string())}
    return pa.table({**columns, ROW_HASH_COLUMN: table.column(ROW_HASH_COLUMN)})


def _require_documents(table: pa.Table, column: str) -> None:
    import pyarrow.compute as pc

    if pc.any(table.column("missing")).as_py():
        raise InvalidOptionError(column, None, "a document in every row")
    if table.column("doc_id").null_count:
        raise InvalidOptionError(f"{column}.doc_id", None, "a str or int doc_id in every row")


def _change_written(job: ShardJob, change: _Change, rows: pa.Table, previous: _Previous | None = None) -> _Written:
    """A shard written as ``rows`` (``_sorted_rows``), or as its previous version (``previous``, else read) with the
    rows the change leaves and ``rows`` taken in: kept beside its base as an overlay while the rows changed or gone
    since the base stay within ``job.overlay_share`` of it, else written whole. The frame must give exactly the
    rows a change asked for."""
    doc_ids, texts = rows.column("doc_id").to_pylist(), rows.column("text").to_pylist()
    if change.wanted is not None and dict(zip(doc_ids, rows.column(ROW_HASH_COLUMN).to_pylist())) != change.wanted:
        raise _frame_changed(job.column)
    # Arrow's UTF-8 decodes to valid text; a Corpus computes the text digests once for the sample and the analysis
    documents = Corpus.part_of(plain_documents(doc_ids, texts), range(len(doc_ids)))
    texts.clear()
    table = shard_table(rows, documents)
    folder = shard_folder(job.root, change.shard)
    if change.version is None:
        return _made(job, change.shard, write_shard_table(folder, change.shard, table), documents)
    if previous is None:
        previous = _read_previous(folder, change.version, change.overlay)
    base_live, overlay_kept = change.base_live, change.overlay_kept
    assert base_live is not None and overlay_kept is not None  # a change of a version says which rows it keeps
    added = table if previous.overlay is None else _merged(previous.overlay.table, overlay_kept, table)
    dead = np.flatnonzero(~base_live)
    if not len(dead) and not added.num_rows:  # every change undone: the shard is its base alone again
        return _made_from(job, change.shard, _Previous(previous.base, None), change.version, None)
    if len(dead) + added.num_rows <= job.overlay_share * previous.base.num_rows:
        name = write_overlay(folder, change.shard, change.version, added, dead)
        return _made_from(job, change.shard, _Previous(previous.base, Overlay(added, dead)), change.version, name)
    whole = _merged(previous.base, base_live, added)
    version = write_shard_table(folder, change.shard, whole, keep_same=False)
    return _made(job, change.shard, version, documents_of(whole, folder, metadata=False))


def _merged(previous: pa.Table, kept: npt.NDArray[np.bool_] | None, added: pa.Table) -> pa.Table:
    """Two tables of rows sorted by doc_id as one sorted table: the ``previous`` rows ``kept`` marks (all when None),
    each added row taken in before the first previous row whose doc_id is greater (no added doc_id is among the
    kept). A merge, not a sort: the kept rows are sliced a run at a time and the result copied once."""
    import pyarrow as pa

    held = np.arange(previous.num_rows) if kept is None else np.flatnonzero(kept)
    if added.num_rows:
        listed = previous.column("doc_id").to_pylist()
        before = [bisect.bisect_left(listed, doc_id) for doc_id in added.column("doc_id").to_pylist()]
        order = np.insert(held, np.searchsorted(held, before), previous.num_rows + np.arange(added.num_rows))
    else:
        order = held
    if not len(order):
        return previous.slice(0, 0)
    rows = pa.concat_tables([previous, added])
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    starts, ends = order[np.concatenate([[0], breaks])], order[np.concatenate([breaks, [len(order)]]) - 1] + 1
    runs = [rows.slice(start, end - start) for start, end in zip(starts.tolist(), ends.tolist(), strict=True)]
    return pa.concat_tables(runs).combine_chunks()


def _made(job: ShardJob, shard: int, version: str, documents: Corpus) -> _Written:
    """A written shard's statistics and, under ``auto``, its part of the sample, made under its own sample's
    placement (the corpus's is known once every shard has answered)."""
    sample = own = None
    if job.language == AUTO:
        sample = PlacementSample.of(texts_of(documents), text_digests(documents))
        own = CorpusPlacement.merged([sample])
    part = job.backend.shard_part(documents, job.index_settings, shard_folder(job.root, shard), own)
    return _Written(shard, version, sample, len(documents), part, None if own is None else own.key)


def _made_from(job: ShardJob, shard: int, previous: _Previous, version: str, overlay: str | None) -> _Written:
    """``_made`` of a shard kept as a base and an overlay: the sample of the rows it holds (drawn from their stored
    digests) and its statistics (``_statistics``)."""
    folder = shard_folder(job.root, shard)
    base, added = _documents(previous, folder)
    if added is None:
        return _made(job, shard, version, base)
    positions = np.flatnonzero(previous.live).tolist()
    sample = own = None
    if job.language == AUTO:
        base_texts, added_texts, base_digests = texts_of(base), texts_of(added), text_digests(base)
        digests = [base_digests[position] for position in positions] + list(text_digests(added))

        def text_of(index: int) -> str:
            return base_texts[positions[index]] if index < len(positions) else added_texts[index - len(positions)]

        sample = PlacementSample.of_digests(digests, text_of)
        own = CorpusPlacement.merged([sample])
    part = _statistics(job, folder, previous, (base, added), own)
    count = len(positions) + len(added)
    return _Written(shard, version, sample, count, part, None if own is None else own.key, overlay=overlay)


def _documents(previous: _Previous, folder: Path) -> tuple[Corpus, Corpus | None]:
    """The documents of a shard's base (every row, gone ones too) and of its overlay (None without one)."""
    base = documents_of(previous.base, folder, metadata=False)
    if previous.overlay is None:
        return base, None
    return base, documents_of(previous.overlay.table, overlay_folder(folder), metadata=False)


def _statistics(
    job: ShardJob,
    folder: Path,
    previous: _Previous,
    documents: tuple[Corpus, Corpus | None],
    placement: CorpusPlacement | None,
) -> Any:
    """A shard's part of the corpus's statistics under ``placement``: its base's, of the rows it still holds (from
    the analysed terms the base keeps), and its overlay's, summed (None for a backend scored without them)."""
    base, added = documents
    settings = job.index_settings
    if added is None:
        return job.backend.shard_part(base, settings, folder, placement)
    if not len(added):  # an overlay of removals alone
        return job.backend.shard_part(base, settings, folder, placement, previous.live)
    parts = (
        job.backend.shard_part(base, settings, folder, placement, previous.live),
        job.backend.shard_part(added, settings, overlay_folder(folder), placement),
    )
    return parts[1] if parts[0] is None else parts[0] if parts[1] is None else parts[0] + parts[1]


def _analyser(job: ShardJob, shard_set: ShardSet) -> Callable[[Iterator[int]], Iterator[tuple[int, Any]]]:
    def analyse(positions: Iterator[int]) -> Iterator[tuple[int, Any]]:
        for position in positions:
            folder, version, overlay = (
                shard_set.folder(position),
                shard_set.versions[position],
                shard_set.overlay(position),
            )
            previous = _read_previous(folder, version, overlay)
            documents = _documents(previous, folder)
            yield position, _statistics(job, folder, previous, documents, shard_set.placement)

    return analyse


def _frame_changed(column: str) -> InvalidOptionError:
    expected = "a corpus frame that gives the same rows each time it is read (cache or checkpoint it)"
    return InvalidOptionError(column, "rows that changed between two reads", expected)
