"""A corpus given as a Spark frame, indexed and searched in shards on the executors: no document text reaches the
driver, only each shard's statistics (document count, total length, document frequency per term) and each
query's best passages.

Two jobs. The corpus's rows go to their shard (Spark's ``xxhash64`` of the doc_id, shuffled by Spark); each shard
keeps its documents, sorted by doc_id, as a store version in ``index_dir``, makes what its backend keeps (analysed
terms, embeddings) and returns its statistics (with, under ``auto``, its part of the language sample), which the
driver sums and records with the shard versions as one snapshot. Queries are answered by every shard with those
sums, so each shard's best passages are its rows of one index over the whole corpus, and the driver merges them by
score, then doc_id. Under ``auto`` a shard analyses its texts as its own sample places them; the rare shard whose
placement differs from the corpus-wide one (``CorpusPlacement.key``) is analysed again in a job of its own. An
error raised on an executor reaches the caller as the same typed error (``ConnectorError`` pickles).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import json
import logging
import pickle
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_integration.core.contract.frames import PYSPARK_PANDAS_WARNING, PyArrowAdapter
from rag_integration.core.contract.schema import Shape
from rag_integration.core.contract.spark import with_answer_column
from rag_integration.core.documents.corpus import Corpus, Document, MetadataFilter, text_digests
from rag_integration.core.errors import ConnectorError, DuplicateDocIdError, InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey, approximate_bytes
from rag_integration.core.indexes.shards import (
    CorpusTerms,
    ShardSet,
    TermStatistics,
    metadata_json,
    read_shard_documents,
    shard_folder,
    write_shard_documents,
    write_snapshot,
)
from rag_integration.core.text.analysis import AUTO
from rag_integration.core.text.languages import CorpusPlacement, PlacementSample
from rag_integration.core.unicode_text import require_valid_texts

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkFrame

Rows = list[list[dict[str, Any]]]
LOGGER = logging.getLogger("rag_integration")


@dataclass(frozen=True)
class ShardQuery:
    """What every shard answers: the queries and the request's ranking options."""

    queries: list[str]
    top_k: int
    metadata_filter: MetadataFilter | None
    return_metadata: bool
    explain: bool


@dataclass(frozen=True)
class ShardedIndex:
    """The index of one shard's documents as an executor keeps it (in ``INDEX_CACHE``), with the documents."""

    documents: Sequence[Document]
    index: Any

    @property
    def nbytes(self) -> int:
        return approximate_bytes(self.index) + sum(len(document.text) for document in self.documents)


@dataclass(frozen=True)
class ShardJob:
    """A request's shards: its backend (pickled by reference), settings, index settings and their key, where the
    shards live and the column the corpus is in."""

    backend: Any
    """The connector class (its shard hooks: ``shard_part``, ``shard_index``, ``rank_shard``)."""
    settings: Any
    index_settings: Any
    root: Path
    shards: int
    column: str
    language: str | None
    """The language option documents are analysed under (``auto`` needs the corpus-wide sample), None if none."""


@dataclass(frozen=True)
class _Failure:
    error: ConnectorError


@dataclass(frozen=True)
class _Written:
    shard: int
    version: str
    sample: PlacementSample | None
    documents: int
    part: Any
    """What ``shard_part`` returned, made under ``placed``: the shard's own sample's placement key (None if fixed)."""
    placed: tuple[str, ...] | None


def build_shards(frame: SparkFrame, job: ShardJob) -> ShardSet:
    """The corpus in ``frame``'s ``job.column`` kept as up to ``job.shards`` shards under ``job.root``, with the
    snapshot that names them and their summed statistics."""
    shards = job.shards
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        spread = _by_shard(frame, job).mapInArrow(_writer(job), "result binary")
    written: list[_Written] = _collected([pickle.loads(row[0]) for row in spread.collect()])
    held = sorted((item for item in written if item.documents), key=lambda item: item.shard)
    numbers, versions = tuple(item.shard for item in held), tuple(item.version for item in held)
    samples = [item.sample for item in held if item.sample is not None]
    placement = CorpusPlacement.merged(samples) if job.language == AUTO else None
    partial = ShardSet(job.root, numbers, versions, placement, None)
    placed = None if placement is None else placement.key
    again = [position for position, item in enumerate(held) if item.placed != placed]
    if again:
        LOGGER.info("index_shards: %d of %d shards analysed again under the corpus's placement", len(again), len(held))
    parts = dict(_collected(_each_shard(frame, partial, _analyser(job, partial), again)))
    found = [parts.get(position, item.part) for position, item in enumerate(held)]
    statistics = [part for part in found if part is not None]
    terms = CorpusTerms.merged(statistics) if statistics else None
    settings = json.loads(json.dumps(dataclasses.asdict(job.index_settings), default=str))
    return write_snapshot(
        ShardSet(job.root, numbers, versions, placement, terms), {"index": settings, "shards": shards}
    )


def answer_shards(frame: SparkFrame, job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> Rows:
    """Each query's passages: every shard's best ``top_k`` (filters applied there), merged by score, then doc_id."""
    backend, settings = job.backend, job.settings
    per_shard: list[Rows] = on_each_shard(
        frame, job, shard_set, lambda documents, index: backend.rank_shard(documents, index, query, settings)
    )
    return [
        merged_passages([rows[position] for rows in per_shard], query.top_k) for position in range(len(query.queries))
    ]


def on_each_shard(
    frame: SparkFrame, job: ShardJob, shard_set: ShardSet, work: Callable[[Sequence[Document], Any], Any]
) -> list[Any]:
    """``work(documents, index)`` on every shard of the set, one task each on the executors (each shard's index from
    that process's cache, or read and made now); the results in shard order."""

    def run(positions: Iterator[int]) -> Iterator[tuple[int, Any]]:
        for position in positions:
            sharded = _shard_index(job, shard_set, position)
            yield position, work(sharded.documents, sharded.index)

    return [result for _, result in sorted(_collected(_each_shard(frame, shard_set, run)), key=lambda pair: pair[0])]


def _each_shard(
    frame: SparkFrame,
    shard_set: ShardSet,
    work: Callable[[Iterator[int]], Iterator[Any]],
    positions: Sequence[int] | None = None,
) -> list[Any]:
    """``work`` over the positions of the set's shards (or those given), one task each; what it yields, collected.
    The tasks run as the writer's do (``mapInArrow``), in its pool of Python workers: warm, holding what it made."""
    import pyarrow as pa
    from pyspark import cloudpickle  # as Spark pickles a task's results: what a backend returns may hold a mappingproxy

    dumps: Callable[[Any], bytes] = cloudpickle.dumps
    chosen = list(range(shard_set.shards) if positions is None else positions)
    if not chosen:
        return []
    carried = _carried(work)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tasks = [chosen[task] for batch in batches for task in batch.column(0).to_pylist()]
        with _allocating():
            results = list(carried(iter(tasks)))
        for result in results:
            yield pa.RecordBatch.from_arrays([pa.array([dumps(result)], pa.binary())], names=["result"])

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        tasks = frame.sparkSession.range(0, len(chosen), 1, len(chosen)).mapInArrow(run, "result binary")
    return [pickle.loads(row[0]) for row in tasks.collect()]


def distinct_queries(frame: SparkFrame, column: str) -> list[str]:
    """The distinct queries of a frame's ``column``, sorted: only this column reaches the driver."""
    queries = [row[0] for row in frame.select(column).distinct().collect()]
    for query in queries:
        if not isinstance(query, str):
            raise InvalidOptionError(column, query, "a query string in every row")
    require_valid_texts(queries, column)
    return sorted(queries)


def answers_by_query(
    frame: SparkFrame, column: str, answers: dict[str, list[dict[str, Any]]], name: str, shape: Shape
) -> SparkFrame:
    """``frame`` with each row's answer, looked up by its query on the executors (``with_answer_column``)."""
    broadcast = frame.sparkSession.sparkContext.broadcast(answers)

    def answer(batch: pa.RecordBatch) -> pa.Table:
        import pyarrow as pa

        table = pa.Table.from_batches([batch])
        found: dict[str, list[dict[str, Any]]] = broadcast.value
        values = [found[query] for query in table.column(column).to_pylist()]
        return PyArrowAdapter().write(name, values, shape, table)

    return with_answer_column(frame, name, shape, answer)


def merged_passages(lists: Iterable[list[dict[str, Any]]], top_k: int) -> list[dict[str, Any]]:
    """The best ``top_k`` of the shards' ranked passages by score, ties by doc_id, ranked again from 1."""
    pooled = sorted((passage for passages in lists for passage in passages), key=lambda p: (-p["score"], p["doc_id"]))
    return [{**passage, "rank": rank} for rank, passage in enumerate(pooled[:top_k], start=1)]


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


def _by_shard(frame: SparkFrame, job: ShardJob) -> SparkFrame:
    """The corpus's documents as columns, each shard (Spark's ``xxhash64`` of the doc_id, the same in every run and
    process) in the partition of its number: the shuffle runs in Spark, no row passes through Python on the way."""
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
    shard = functions.pmod(functions.xxhash64(doc_id), functions.lit(job.shards))
    keys = functions.array(*[functions.lit(key).cast("long") for key in partition_keys(job.shards)])
    others = [name for name in fields if name not in ("doc_id", "text")]
    selected = frame.select(
        functions.element_at(keys, (shard + 1).cast("int")).alias("partition_key"),
        shard.cast("int").alias("shard"),
        doc_id.alias("doc_id"),
        functions.col(column)["text"].alias("text"),
        functions.col(column).isNull().alias("missing"),
        *(
            [functions.struct(*[functions.col(column)[name].alias(name) for name in others]).alias("metadata")]
            if others
            else []
        ),
    )
    return selected.repartition(job.shards, "partition_key")


def _writer(job: ShardJob) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each shard of a partition kept as a store version (documents sorted by doc_id, ``write_shard_documents``)
    with what its backend keeps, its statistics and its part of the language sample: one ``result`` row (a pickled
    ``_Written`` or ``_Failure``) per shard."""
    import pyarrow as pa

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        listed = list(batches)
        if not listed:
            return
        table = pa.Table.from_batches(listed)
        del listed
        with _allocating():
            try:
                rows: dict[int, list[tuple[str, str, str]]] | _Failure = _shard_rows(table, job.column)
            except ConnectorError as error:
                rows = _Failure(error)
            del table  # the rows hold the texts as Python strings now: Arrow's copy goes before the analysis
            results = [rows] if isinstance(rows, _Failure) else list(_written(job, rows))
        for result in results:
            yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], names=["result"])

    return write


def _shard_rows(table: pa.Table, column: str) -> dict[int, list[tuple[str, str, str]]]:
    """Each shard's rows of the table: (doc_id, text, metadata JSON)."""
    doc_ids, texts, metadata = _document_columns(table, column)
    rows: dict[int, list[tuple[str, str, str]]] = {}
    for row, shard in enumerate(table.column("shard").to_pylist()):
        rows.setdefault(shard, []).append((doc_ids[row], texts[row], metadata[row]))
    return rows


def _written(job: ShardJob, rows: dict[int, list[tuple[str, str, str]]]) -> Iterator[_Written | _Failure]:
    """Each shard's rows written and made into what its backend keeps, one shard at a time; a shard's rows leave
    ``rows`` as it is written, so only one shard's are held twice."""
    for shard in sorted(rows):
        try:
            yield _shard_written(job, shard, rows.pop(shard))
        except ConnectorError as error:
            yield _Failure(error)


def _document_columns(table: pa.Table, column: str) -> tuple[list[str], list[str], list[str]]:
    """doc_ids, texts and metadata JSON of the rows, each checked as ``read_document`` checks a document dict."""
    import pyarrow.compute as pc

    if pc.any(table.column("missing")).as_py():
        raise InvalidOptionError(column, None, "a document in every row")
    if table.column("doc_id").null_count:
        raise InvalidOptionError(f"{column}.doc_id", None, "a str or int doc_id in every row")
    if table.column("text").null_count:
        raise InvalidOptionError(f"{column}.text", None, "a string text in every row")
    doc_ids, texts = table.column("doc_id").to_pylist(), table.column("text").to_pylist()
    if "metadata" not in table.column_names:
        return doc_ids, texts, ["{}"] * len(doc_ids)
    listed = table.column("metadata").to_pylist()
    return (
        doc_ids,
        texts,
        [metadata_json(Document(doc_id, "", values), column) for doc_id, values in zip(doc_ids, listed, strict=True)],
    )


def _shard_written(job: ShardJob, shard: int, rows: list[tuple[str, str, str]]) -> _Written:
    rows.sort()
    for first, second in itertools.pairwise(rows):
        if first[0] == second[0]:
            raise DuplicateDocIdError(job.column, first[0])
    # Arrow's UTF-8 decodes to valid text; a Corpus computes the text digests once for the sample and the analysis
    documents = Corpus.part_of([Document(doc_id, text) for doc_id, text, _ in rows], range(len(rows)))
    metadata = [listed for *_, listed in rows]
    rows.clear()
    folder = shard_folder(job.root, shard)
    version = write_shard_documents(folder, shard, documents, metadata)
    del metadata
    sample = own = None
    if job.language == AUTO:
        sample = PlacementSample.of([document.text for document in documents], text_digests(documents))
        own = CorpusPlacement.merged([sample])
    part = job.backend.shard_part(documents, job.index_settings, folder, own)
    return _Written(shard, version, sample, len(documents), part, None if own is None else own.key)


def _analyser(job: ShardJob, shard_set: ShardSet) -> Callable[[Iterator[int]], Iterator[tuple[int, Any]]]:
    def analyse(positions: Iterator[int]) -> Iterator[tuple[int, TermStatistics | None]]:
        for position in positions:
            folder = shard_set.folder(position)
            documents = read_shard_documents(folder, shard_set.versions[position])
            yield position, job.backend.shard_part(documents, job.index_settings, folder, shard_set.placement)

    return analyse


def _shard_index(job: ShardJob, shard_set: ShardSet, position: int) -> ShardedIndex:
    """The documents and index of the set's shard at ``position``, from this executor process's cache or read and
    made now."""
    terms = "" if shard_set.terms is None else shard_set.terms.fingerprint
    backend, version, folder = str(job.backend.BACKEND), shard_set.versions[position], shard_set.folder(position)
    key = IndexKey.of(backend, {"index": job.index_settings, "terms": terms}, f"{folder}/{version}")

    def build() -> ShardedIndex:
        documents = read_shard_documents(folder, version)
        return ShardedIndex(documents, job.backend.shard_index(documents, job.index_settings, folder, shard_set))

    return INDEX_CACHE.get_or_build(key, build)


@contextlib.contextmanager
def _allocating() -> Iterator[None]:
    """A shard task makes millions of small objects (documents, term lists) that reference counting frees; the
    cyclic collector's passes over them cost a third of reading a shard, so it pauses for the task."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _carried(work: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``work`` on an executor with a typed error returned as a record: Spark would turn it into an untyped one."""

    def run(*arguments: Any) -> Iterator[Any]:
        try:
            return iter(list(work(*arguments)))
        except ConnectorError as error:
            return iter([_Failure(error)])

    return run


def _collected(results: list[Any]) -> list[Any]:
    for result in results:
        if isinstance(result, _Failure):
            raise result.error
    return results
