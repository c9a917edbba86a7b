"""A corpus given as a Spark frame, indexed and searched in shards on the executors: no document text reaches the
driver, only each shard's statistics (document count, total length, document frequency per term) and each
query's best passages.

Three jobs. The corpus's rows go to their shard (a hash of the doc_id, ``core.indexes.shards``) and each shard
keeps its documents, sorted by doc_id, as a store version in ``index_dir`` (with, under ``auto``, its part of the
language sample). Each shard then makes what its backend keeps (analysed terms, embeddings) and returns its
statistics, which the driver sums and records with the shard versions as one snapshot. Queries are answered by
every shard with those sums, so each shard's best passages are its rows of one index over the whole corpus, and
the driver merges them by score, then doc_id. An error raised on an executor reaches the caller as the same typed
error (``ConnectorError`` pickles).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rag_integration.core.contract.frames import PyArrowAdapter
from rag_integration.core.contract.schema import Shape
from rag_integration.core.contract.spark import with_answer_column
from rag_integration.core.documents.corpus import Document, MetadataFilter, read_documents, text_digests
from rag_integration.core.errors import ConnectorError, InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey, approximate_bytes
from rag_integration.core.indexes.shards import (
    CorpusTerms,
    ShardSet,
    TermStatistics,
    read_shard_documents,
    shard_folder,
    shard_of,
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


class ShardedBackend(Protocol):
    """What a retrieve backend does for its shards (``BaseRetrieveConnector``'s shard hooks)."""

    BACKEND: str | None

    @classmethod
    def shard_part(
        cls, documents: Sequence[Document], settings: Any, folder: Path, placement: CorpusPlacement | None
    ) -> TermStatistics | None: ...

    @classmethod
    def shard_index(cls, documents: Sequence[Document], settings: Any, folder: Path, shard_set: ShardSet) -> Any: ...

    @classmethod
    def rank_shard(cls, documents: Sequence[Document], index: Any, query: ShardQuery, settings: Any) -> Rows: ...


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
    """The connector class, a ``ShardedBackend``."""
    settings: Any
    index_settings: Any
    root: Path
    shards: int
    column: str

    @property
    def language(self) -> str | None:
        language = getattr(self.index_settings, "language", None)
        return language if isinstance(language, str) else None


@dataclass(frozen=True)
class _Failure:
    error: ConnectorError


@dataclass(frozen=True)
class _Written:
    shard: int
    version: str
    sample: PlacementSample | None


def build_shards(frame: SparkFrame, job: ShardJob) -> ShardSet:
    """The corpus in ``frame``'s ``job.column`` kept as ``job.shards`` shards under ``job.root``, with the snapshot
    that names them and their summed statistics."""
    shards, column = job.shards, job.column
    records = frame.select(column).rdd.map(lambda row: _keyed(row[0], shards))
    by_shard = records.partitionBy(shards, lambda shard: shard)
    written: list[_Written] = _collected(by_shard.mapPartitionsWithIndex(_carried(_writer(job))).collect())
    versions = tuple(item.version for item in sorted(written, key=lambda item: item.shard))
    samples = [item.sample for item in written if item.sample is not None]
    placement = CorpusPlacement.merged(samples) if job.language == AUTO else None
    context = frame.sparkSession.sparkContext
    partial = ShardSet(job.root, versions, placement, None)
    parts = _collected(
        context.parallelize(range(shards), shards).mapPartitions(_carried(_analyser(job, partial))).collect()
    )
    statistics = [part for _, part in sorted(parts, key=lambda pair: pair[0]) if part is not None]
    terms = CorpusTerms.merged(statistics) if statistics else None
    settings = json.loads(json.dumps(dataclasses.asdict(job.index_settings), default=str))
    return write_snapshot(ShardSet(job.root, versions, placement, terms), {"index": settings, "shards": shards})


def answer_shards(frame: SparkFrame, job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> Rows:
    """Each query's passages: every shard's best ``top_k`` (filters applied there), merged by score, then doc_id."""
    context = frame.sparkSession.sparkContext
    answering = _carried(_answerer(job, shard_set, query))
    found: list[tuple[int, Rows]] = _collected(
        context.parallelize(range(shard_set.shards), shard_set.shards).mapPartitions(answering).collect()
    )
    per_shard = [rows for _, rows in sorted(found, key=lambda pair: pair[0])]
    return [
        merged_passages([rows[position] for rows in per_shard], query.top_k, shard_set.shards)
        for position in range(len(query.queries))
    ]


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


def merged_passages(lists: Iterable[list[dict[str, Any]]], top_k: int, shards: int) -> list[dict[str, Any]]:
    """The best ``top_k`` of the shards' ranked passages by score, ties by doc_id, ranked again from 1."""
    pooled = sorted((passage for passages in lists for passage in passages), key=lambda p: (-p["score"], p["doc_id"]))
    merged = []
    for rank, passage in enumerate(pooled[:top_k], start=1):
        merged.append({**passage, "rank": rank})
        if "explanation" in passage:
            merged[-1]["explanation"] = {**passage["explanation"], "shards": shards}
    return merged


def _keyed(value: object, shards: int) -> tuple[int, object]:
    """A corpus row's shard and the row as a document dict; a row without a str doc_id goes to shard 0, where
    reading it raises the typed error."""
    item = value.asDict(recursive=True) if hasattr(value, "asDict") else value
    doc_id = item.get("doc_id") if isinstance(item, dict) else None
    return (shard_of(doc_id, shards) if isinstance(doc_id, str) else 0), item


def _writer(job: ShardJob) -> Callable[[int, Iterator[tuple[int, object]]], Iterator[_Written]]:
    def write(shard: int, records: Iterator[tuple[int, object]]) -> Iterator[_Written]:
        option = f"{job.column} (shard {shard})"
        raw = [item for _, item in records]
        for item in raw:
            if not isinstance(item, dict) or not isinstance(item.get("doc_id"), str):
                found = item.get("doc_id") if isinstance(item, dict) else item
                raise InvalidOptionError(f"{job.column}.doc_id", found, "a str doc_id in every row with index_shards")
        documents = sorted(read_documents(raw, option), key=lambda document: document.doc_id)
        version = write_shard_documents(shard_folder(job.root, shard), shard, documents, job.column)
        sample = None
        if job.language == AUTO:
            sample = PlacementSample.of([document.text for document in documents], text_digests(documents))
        yield _Written(shard, version, sample)

    return write


def _analyser(job: ShardJob, shard_set: ShardSet) -> Callable[[Iterator[int]], Iterator[tuple[int, Any]]]:
    def analyse(shards: Iterator[int]) -> Iterator[tuple[int, TermStatistics | None]]:
        for shard in shards:
            folder = shard_set.folder(shard)
            documents = read_shard_documents(folder, shard_set.versions[shard])
            yield shard, job.backend.shard_part(documents, job.index_settings, folder, shard_set.placement)

    return analyse


def _answerer(job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> Callable[[Iterator[int]], Iterator[Any]]:
    def answer(shards: Iterator[int]) -> Iterator[tuple[int, Rows]]:
        for shard in shards:
            sharded = _shard_index(job, shard_set, shard)
            yield shard, job.backend.rank_shard(sharded.documents, sharded.index, query, job.settings)

    return answer


def _shard_index(job: ShardJob, shard_set: ShardSet, shard: int) -> ShardedIndex:
    """One shard's documents and index, from this executor process's cache or read and made now."""
    terms = "" if shard_set.terms is None else shard_set.terms.fingerprint
    backend, version = str(job.backend.BACKEND), shard_set.versions[shard]
    key = IndexKey.of(backend, {"index": job.index_settings, "terms": terms}, f"{shard_set.folder(shard)}/{version}")

    def build() -> ShardedIndex:
        folder = shard_set.folder(shard)
        documents = read_shard_documents(folder, shard_set.versions[shard])
        return ShardedIndex(documents, job.backend.shard_index(documents, job.index_settings, folder, shard_set))

    return INDEX_CACHE.get_or_build(key, build)


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
