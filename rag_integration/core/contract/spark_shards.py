"""A corpus given as a Spark frame, searched in shards on the executors: no document text reaches the driver, only
each query's best passages (the shards are written by ``core.contract.spark_shard_builds``).

Queries are answered by every shard with the corpus-wide statistics of the snapshot, so each shard's best passages
are its rows of one index over the whole corpus, and the driver merges them by score, then doc_id. An error raised
on an executor reaches the caller as the same typed error (``ConnectorError`` pickles).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import pickle
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rag_integration.core.contract.frames import PYSPARK_PANDAS_WARNING, PyArrowAdapter
from rag_integration.core.contract.schema import Shape
from rag_integration.core.contract.spark import with_answer_column
from rag_integration.core.documents.corpus import Corpus, Document, MetadataFilter
from rag_integration.core.errors import ConnectorError, IndexMismatchError, InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey, approximate_bytes
from rag_integration.core.indexes.shards import (
    Overlay,
    ShardSet,
    documents_of,
    overlay_folder,
    read_overlay,
    read_shard_table,
)
from rag_integration.core.unicode_text import require_valid_texts

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkFrame

Rows = list[list[dict[str, Any]]]
Item = TypeVar("Item")
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
    live: Any = None
    """Under an overlay, which of the base's documents are still the shard's (a bool array); None: all of them."""

    @property
    def nbytes(self) -> int:
        columns = self.documents.columns if isinstance(self.documents, Corpus) else None
        texts = columns.nbytes if columns is not None else sum(len(document.text) for document in self.documents)
        return approximate_bytes(self.index) + texts


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
    overlay_share: float = 0.0
    """How much of a shard an edit may leave changed or gone and still be kept as an overlay (``index_overlay_share``;
    0 for a backend without overlays)."""


@dataclass(frozen=True)
class TaskFailure:
    """A typed error raised on an executor, returned as a record: Spark would turn it into an untyped one."""

    error: ConnectorError


def answer_shards(frame: SparkFrame, job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> Rows:
    """Each query's passages: every shard's best ``top_k`` (filters applied there), merged by score, then doc_id."""
    backend, settings = job.backend, job.settings
    per_shard: list[Rows] = on_each_shard(
        frame,
        job,
        shard_set,
        lambda documents, index, live: backend.rank_shard(documents, index, query, settings, **_given(live)),
    )
    return [
        merged_passages([rows[position] for rows in per_shard], query.top_k) for position in range(len(query.queries))
    ]


def on_each_shard(
    frame: SparkFrame, job: ShardJob, shard_set: ShardSet, work: Callable[[Sequence[Document], Any, Any], Any]
) -> list[Any]:
    """``work(documents, index, live)`` on every shard of the set, one task each on the executors (each shard's
    index from that process's cache, or read and made now); the results in shard order. A shard with an overlay
    gives two: its base's (``live`` marking the rows still held) and its overlay's (``live`` None)."""

    def run(positions: Iterator[int]) -> Iterator[tuple[int, list[Any]]]:
        for position in positions:
            base, overlay = _shard_indexes(job, shard_set, position)
            results = [work(base.documents, base.index, base.live)]
            if overlay is not None and len(overlay.documents):  # an overlay of removals alone has no rows to rank
                results.append(work(overlay.documents, overlay.index, None))
            yield position, results

    done = sorted(on_tasks(frame, range(shard_set.shards), run), key=lambda pair: pair[0])
    return [result for _, results in done for result in results]


def on_tasks(frame: SparkFrame, items: Sequence[Item], work: Callable[[Iterator[Item]], Iterator[Any]]) -> list[Any]:
    """``work`` over ``items``, one task each on the executors; what it yields, collected, or the typed error it
    raised. The tasks run as the shard writers' do (``mapInArrow``), in their pool of Python workers: warm, holding
    what they made."""
    import pyarrow as pa
    from pyspark import cloudpickle  # as Spark pickles a task's results: what a backend returns may hold a mappingproxy

    dumps: Callable[[Any], bytes] = cloudpickle.dumps
    chosen = list(items)
    if not chosen:
        return []
    run_carried = carried(work)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tasks = [chosen[task] for batch in batches for task in batch.column(0).to_pylist()]
        with allocating():
            results = list(run_carried(iter(tasks)))
        for result in results:
            yield pa.RecordBatch.from_arrays([pa.array([dumps(result)], pa.binary())], names=["result"])

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        tasks = frame.sparkSession.range(0, len(chosen), 1, len(chosen)).mapInArrow(run, "result binary")
    return collected([pickle.loads(row[0]) for row in tasks.collect()])


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


def _shard_indexes(job: ShardJob, shard_set: ShardSet, position: int) -> tuple[ShardedIndex, ShardedIndex | None]:
    """The documents and index of the set's shard at ``position`` and of its overlay (None without one), from this
    executor process's cache or read and made now."""
    terms = "" if shard_set.terms is None else shard_set.terms.fingerprint
    backend, version, folder = str(job.backend.BACKEND), shard_set.versions[position], shard_set.folder(position)
    overlay = shard_set.overlay(position)
    if overlay is not None and not job.backend.SHARD_OVERLAYS:
        raise IndexMismatchError("index_dir", str(folder), f"no overlay for retrieve_backend '{backend}'")
    settings = {"index": job.index_settings, "terms": terms}

    read: list[Overlay] = []  # the overlay as the base's build read it, for the overlay's build to take

    def build() -> ShardedIndex:
        table = read_shard_table(folder, version)
        documents, live = documents_of(table, folder), None
        if overlay is not None:
            read.append(read_overlay(folder, overlay, version, table.num_rows))
            live = _live_rows(table, read[0], folder)
        index = job.backend.shard_index(documents, job.index_settings, folder, shard_set, **_given(live))
        return ShardedIndex(documents, index, live)

    base = INDEX_CACHE.get_or_build(IndexKey.of(backend, settings, f"{folder}/{version}/{overlay}"), build)
    if overlay is None:
        return base, None

    def build_overlay() -> ShardedIndex:
        assert overlay is not None
        added = read[0] if read else read_overlay(folder, overlay, version, len(base.documents))
        place = overlay_folder(folder)
        documents = documents_of(added.table, place)
        if not len(documents):
            return ShardedIndex(documents, None)
        return ShardedIndex(documents, job.backend.shard_index(documents, job.index_settings, place, shard_set))

    key = IndexKey.of(backend, settings, f"{overlay_folder(folder)}/{overlay}/{version}")
    return base, INDEX_CACHE.get_or_build(key, build_overlay)


def _given(live: Any) -> dict[str, Any]:
    """``live`` as a hook's keyword only when there is one: a backend without overlays need not take it."""
    return {} if live is None else {"live": live}


def _live_rows(base: Any, overlay: Overlay, folder: Path) -> Any:
    """Which of the base's rows the overlay leaves, refused when one of them shares a doc_id with the overlay's rows
    (a writer keeps them apart; a stored overlay that does not would answer a document twice)."""
    import pyarrow.compute as pc

    live = overlay.live(base.num_rows)
    held = base.column("doc_id").filter(live)
    if pc.any(pc.is_in(overlay.table.column("doc_id"), value_set=held.combine_chunks())).as_py():
        raise IndexMismatchError("index_dir", str(folder), "an overlay of documents its base no longer holds")
    return live


@contextlib.contextmanager
def allocating() -> Iterator[None]:
    """A shard task makes millions of small objects (documents, term lists) that reference counting frees; the
    cyclic collector's passes over them cost a third of reading a shard, so it pauses for the task."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


ARROW_BATCH_SIZES = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 * 1024 * 1024),
}
"""Arrow batch sizes for the shard writers' job: the sift's Arrow UDF pays about 10 ms a batch, more than 10,000 of
its 36-byte rows cost, so Spark's default 10,000-row batches took about a second of a 1M-row request on two cores.
The byte cap keeps a batch of long texts small."""


@contextlib.contextmanager
def arrow_batches(session: Any) -> Iterator[None]:
    """``ARROW_BATCH_SIZES`` in ``session`` while a shard job runs, each unless the session sets its own; unset after
    (unless someone set another value meanwhile). Another job running meanwhile in the same session gets these batch
    sizes too: only its speed can change."""
    chosen = [key for key in ARROW_BATCH_SIZES if session.conf.get(key, None) is None]
    try:
        for key in chosen:
            session.conf.set(key, ARROW_BATCH_SIZES[key])
        yield
    finally:
        for key in chosen:
            if session.conf.get(key, None) == ARROW_BATCH_SIZES[key]:
                session.conf.unset(key)


def carried(work: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``work`` on an executor with a typed error returned as a record: Spark would turn it into an untyped one."""

    def run(*arguments: Any) -> Iterator[Any]:
        try:
            return iter(list(work(*arguments)))
        except ConnectorError as error:
            return iter([TaskFailure(error)])

    return run


def collected(results: list[Any]) -> list[Any]:
    for result in results:
        if isinstance(result, TaskFailure):
            raise result.error
    return results
