"""The retrieve contract: options, validation, index reuse and passage rows. Backends fill a few hooks.

Settings are frozen dataclasses: ``read_settings`` validates a request's options once, ``index_settings`` is the
part that shapes the index (its cache key). Index objects pickle, so an index built once can be shipped to
workers and ``INDEX_CACHE.install``-ed there under ``index_key``.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from rag_integration.core.contract.feature_group import SelectorFeatureGroup, source_feature_name
from rag_integration.core.contract.frames import FrameworkAdapter, SparkAdapter
from rag_integration.core.contract.queries import read_corpus, read_index_dir, read_queries
from rag_integration.core.contract.request_options import (
    EXPLAIN,
    FILTERS,
    INDEX_DIR,
    RETURN_METADATA,
    TOP_K,
    read_metadata_filter,
)
from rag_integration.core.contract.sources import CORPUS, QUERIES, Source
from rag_integration.core.contract.spark import Shipment, answer_partitions
from rag_integration.core.contract.spark_shard_builds import build_shards
from rag_integration.core.contract.spark_shards import (
    ShardJob,
    ShardQuery,
    answer_shards,
    answers_by_query,
    distinct_queries,
)
from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import Corpus, Document, MetadataFilter, corpus_fingerprint, labels_of
from rag_integration.core.documents.visibility import NO_PRINCIPALS, PRINCIPALS, Visibility
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, VIEW_CACHE, IndexKey, building_view
from rag_integration.core.indexes.retention import KEEP_VERSIONS
from rag_integration.core.indexes.shards import (
    INDEX_OVERLAY_SHARE,
    INDEX_SHARDS,
    ShardSet,
    TermStatistics,
    shards_root,
)
from rag_integration.core.options import OptionReader, option_keys
from rag_integration.core.ranking.explain import checked_explanations
from rag_integration.core.ranking.passages import (
    AllowedMask,
    Hits,
    RankedQuery,
    rank_corpus,
    search_with_exact_ties,
)
from rag_integration.core.text.languages import CorpusPlacement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkFrame

    from rag_integration.core.contract.frames import ReadableFrame

CORPUS_OPTION = "corpus"
SHARDS_NEED_SPARK = "1, or a corpus given as a Spark frame (corpus_source) on SparkFramework, where shards are built"
S = TypeVar("S")
"""A backend's request settings (``read_settings``)."""
K = TypeVar("K")
"""The part of them that shapes the index, its cache key (``index_settings``)."""
I = TypeVar("I")  # noqa: E741 - the index, as in the hooks' signatures
"""The backend's index (``build_index``, ``load_index``)."""


@dataclass(frozen=True)
class RetrieveRequest:
    """One validated request: every query of it is answered by one batched search.

    ``documents`` is None only for a backend whose corpus is optional (its store holds the documents) when the
    request names none.
    """

    queries: list[str]
    documents: Sequence[Document] | None
    top_k: int
    metadata_filter: MetadataFilter | None
    return_metadata: bool
    index_dir: Path | None
    explain: bool = False
    keep_versions: int | None = None
    visibility: Visibility = NO_PRINCIPALS

    @classmethod
    def read(
        cls,
        reader: OptionReader,
        data: ReadableFrame | None,
        *,
        corpus_required: bool = True,
        queries: list[str] | None = None,
    ) -> RetrieveRequest:
        """The request in ``reader``; ``queries``, when given, stand in for the request's own (none are read)."""
        queries = read_queries(reader, data) if queries is None else queries
        given = corpus_required or reader.has("corpus") or reader.has("corpus_source")
        return cls(
            queries=queries,
            documents=read_corpus(reader, data) if given else None,
            top_k=TOP_K.read(reader),
            metadata_filter=read_metadata_filter(reader),
            return_metadata=RETURN_METADATA.read(reader),
            index_dir=read_index_dir(reader),
            explain=EXPLAIN.read(reader),
            keep_versions=KEEP_VERSIONS.read(reader),
            visibility=Visibility.read(reader),
        )


class BaseRetrieveConnector(SelectorFeatureGroup, Generic[S, K, I]):
    """``retrieved_passages``: ranked passages for one query or a batch of queries over one corpus."""

    FAMILY: ClassVar[str] = "retrieve"
    CONTRACT_VERSION: ClassVar[str] = "1.0"
    FEATURE_NAME: ClassVar[str] = "retrieved_passages"
    SELECTOR: ClassVar[str] = "retrieve_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(
        TOP_K, FILTERS, RETURN_METADATA, INDEX_DIR, EXPLAIN, KEEP_VERSIONS, INDEX_SHARDS, INDEX_OVERLAY_SHARE
    )
    SOURCES: ClassVar[tuple[Source, ...]] = (QUERIES, CORPUS)
    CORPUS_REQUIRED: ClassVar[bool] = True
    """False for a backend whose documents come with its index (``open_index`` reads both from ``index_dir``)."""
    SHARDS_RANK_AS_ONE: ClassVar[bool] = False
    """True for a backend whose shards (``index_shards``) rank exactly as one index: it implements the shard hooks
    (``shard_part``, ``shard_index``) or its scores need nothing of other documents."""
    SHARD_OVERLAYS: ClassVar[bool] = False
    """True for a backend whose shard hooks take ``live`` (the base rows an overlay leaves): a small edit of its
    shards is then kept as an overlay (``index_overlay_share``) instead of a rewrite."""

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        if INDEX_SHARDS.read(reader) > 1:
            raise InvalidOptionError(INDEX_SHARDS.key, reader.raw(INDEX_SHARDS.key), SHARDS_NEED_SPARK)
        request = RetrieveRequest.read(reader, data, corpus_required=cls.CORPUS_REQUIRED)
        settings = cls.read_settings(reader)
        return {cls.FEATURE_NAME: cls.retrieve(request, settings)}

    @classmethod
    def answer_frame(cls, adapter: FrameworkAdapter, data: object, reader: OptionReader) -> object:
        """A Spark frame of queries is answered where it lives, on the executors (``core.contract.spark``); a Spark
        corpus with ``index_shards`` >= 2 is indexed and searched there too (``core.contract.spark_shards``)."""
        if INDEX_SHARDS.read(reader) > 1:
            if not (isinstance(adapter, SparkAdapter) and data is not None and reader.has(CORPUS.upstream)):
                raise InvalidOptionError(INDEX_SHARDS.key, reader.raw(INDEX_SHARDS.key), SHARDS_NEED_SPARK)
            return cls.answer_sharded(cast("SparkFrame", data), reader)
        distributed = isinstance(adapter, SparkAdapter) and data is not None and reader.has("queries_source")
        if distributed and not reader.has("corpus_source"):
            shipment = cls.shipment(reader)
            check_deadline(f"while {cls.__name__} built its index for the executors")
            return answer_partitions(cast("SparkFrame", data), shipment)
        return super().answer_frame(adapter, data, reader)

    @classmethod
    def shipment(cls, reader: OptionReader) -> Shipment:
        """The request for the executors: validated here, its indexes built (or loaded) once, here."""
        request = RetrieveRequest.read(reader, None, corpus_required=cls.CORPUS_REQUIRED, queries=[])
        settings = cls.read_settings(reader)
        indexes = tuple(cls.indexes_for(request, settings))
        # the indexes travel with the request, so executors need no index folder (a store-backed backend still does)
        shipped = reader.snapshot(without=("index_dir",) if cls.CORPUS_REQUIRED else ())
        return Shipment(cls, shipped, indexes, cls.output_shape(reader))

    @classmethod
    def answer_sharded(cls, data: SparkFrame, reader: OptionReader) -> SparkFrame:
        """The corpus in ``data`` built in ``index_shards`` shards on the executors, every query answered by each
        shard with the corpus-wide statistics and the shards' best passages merged (``core.contract.spark_shards``).
        Queries come inline or as the request's ``queries_source`` column, whose rows each get their answer."""
        if reader.has(PRINCIPALS.key):
            raise InvalidOptionError(PRINCIPALS.key, reader.raw(PRINCIPALS.key), "no principals with index_shards >= 2")
        index_dir = read_index_dir(reader, required=True)
        assert index_dir is not None
        settings = cls.read_settings(reader)
        index_settings = cls.index_settings(settings)
        cls.check_shardable(settings)
        column = source_feature_name(reader, CORPUS.upstream)
        assert column is not None
        queries_column = source_feature_name(reader, "queries_source")
        for option, name in ((CORPUS.upstream, column), ("queries_source", queries_column)):
            if name is not None and name not in data.columns:
                raise MissingOptionError(option, f"upstream feature '{name}' in the input data")
        queries = read_queries(reader, None) if queries_column is None else distinct_queries(data, queries_column)
        query = ShardQuery(
            queries,
            TOP_K.read(reader),
            read_metadata_filter(reader),
            RETURN_METADATA.read(reader),
            EXPLAIN.read(reader),
        )
        shards = INDEX_SHARDS.read(reader)
        settings_key = IndexKey.of(str(cls.BACKEND), index_settings, "").settings
        root = shards_root(index_dir, str(cls.BACKEND), settings_key, shards)
        language = cls.analysis_language(index_settings)
        overlay_share = INDEX_OVERLAY_SHARE.read(reader)
        if not cls.SHARD_OVERLAYS:
            if reader.has(INDEX_OVERLAY_SHARE.key) and overlay_share > 0:
                expected = f"0 with retrieve_backend '{cls.BACKEND}' (its shards are written whole)"
                raise InvalidOptionError(INDEX_OVERLAY_SHARE.key, overlay_share, expected)
            overlay_share = 0.0
        job = ShardJob(cls, settings, index_settings, root, shards, column, language, overlay_share)
        shard_set = build_shards(data, job)
        check_deadline(f"after {cls.__name__} built {shards} shards")
        answers = cls.sharded_rows(data, job, shard_set, query) if queries else []
        for passage in (passage for passages in answers for passage in passages if "explanation" in passage):
            passage["explanation"] = {**passage["explanation"], "shards": shard_set.shards}
        shape = cls.output_shape(reader)
        if queries_column is None:
            return SparkAdapter().write(cls.FEATURE_NAME, answers, shape, None)
        return answers_by_query(data, queries_column, dict(zip(queries, answers, strict=True)), cls.FEATURE_NAME, shape)

    @classmethod
    def check_shardable(cls, settings: S) -> None:
        """Refuse, with a typed error naming the option, settings whose index cannot be built in shards that rank
        exactly as one index. By default a backend that has not declared ``SHARDS_RANK_AS_ONE`` is refused."""
        if not cls.SHARDS_RANK_AS_ONE:
            raise InvalidOptionError(INDEX_SHARDS.key, "> 1", f"1 for retrieve_backend '{cls.BACKEND}' (no shards)")

    @classmethod
    def analysis_language(cls, settings: K) -> str | None:
        """The ``language`` the index analyses documents under (``auto``: the shards need the corpus's sample), or
        None for an index that analyses none."""
        language = getattr(settings, "language", None)
        return language if isinstance(language, str) else None

    @classmethod
    def sharded_rows(cls, frame: SparkFrame, job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> list[Any]:
        """Every query's rows from the shards: by default each shard's best ``top_k`` (``rank_shard``), merged by
        score, then doc_id (``answer_shards``)."""
        return answer_shards(frame, job, shard_set, query)

    @classmethod
    def shard_part(
        cls,
        documents: Sequence[Document],
        settings: K,
        folder: Path,
        placement: CorpusPlacement | None,
        live: AllowedMask = None,
    ) -> TermStatistics | None:
        """On an executor, for one shard's documents: keep in ``folder`` what ``shard_index`` makes its index from
        and return the shard's part of the corpus-wide term statistics (``placement`` places its documents' languages
        as the whole corpus's build would), of the documents ``live`` marks when given (a base under an overlay: what
        it keeps is kept already). By default nothing is kept and no statistics are needed (vectors)."""
        return None

    @classmethod
    def shard_index(
        cls, documents: Sequence[Document], settings: K, folder: Path, shard_set: ShardSet, live: AllowedMask = None
    ) -> I:
        """On an executor: the index of one shard's documents, scored as rows of one index over the whole corpus
        (``shard_set.terms``, the summed statistics); the documents ``live`` does not mark are never ranked, so
        their rows may score anything. By default the shard's own index, for scores that need nothing of the other
        documents."""
        return cls.build_index(documents, settings)

    @classmethod
    def rank_shard(
        cls, documents: Sequence[Document], index: I, query: ShardQuery, settings: S, live: AllowedMask = None
    ) -> list[list[dict[str, Any]]]:
        """One shard's rows for every query: its best ``top_k`` passages among those ``live`` marks, exactly as
        ``retrieve`` ranks them."""
        request = RetrieveRequest(
            query.queries, documents, query.top_k, query.metadata_filter, query.return_metadata, None, query.explain
        )
        return cls.ranked(documents, lambda: index, request, settings, live)

    @classmethod
    def retrieve(cls, request: RetrieveRequest, settings: S) -> list[list[dict[str, Any]]]:
        """Rows for every query, ranked over the documents and index ``open_index`` gives, or over the part of them
        the request's principals may read (``open_view``)."""
        documents, index = cls.open_index(request, settings)
        visible = request.visibility.visible(labels_of(documents, CORPUS_OPTION), CORPUS_OPTION)
        if visible is not None:
            documents, index = cls.open_view(documents, index, visible, settings)
        return cls.ranked(documents, index, request, settings)

    @classmethod
    def ranked(
        cls,
        documents: Sequence[Document],
        index: Callable[[], I],
        request: RetrieveRequest,
        settings: S,
        live: AllowedMask = None,
    ) -> list[list[dict[str, Any]]]:
        """Rows for every query of ``request``, ranked over ``documents`` (those ``live`` marks, when given) with
        the index ``index`` gives."""

        def search(queries: list[str], depth: int, allowed: AllowedMask) -> list[Hits]:
            built = index()
            check_deadline(f"before {cls.__name__} searched {len(queries)} queries")
            return cls.search(built, queries, depth, allowed, settings)

        def explain(ranked: list[RankedQuery], allowed: AllowedMask) -> list[list[dict[str, Any]]]:
            return cls.explanations(ranked, cls.explain(index(), ranked, allowed, settings))

        return rank_corpus(
            documents,
            request.queries,
            request.top_k,
            search,
            request.metadata_filter,
            request.return_metadata,
            explain if request.explain else None,
            live=live,
        )

    @classmethod
    def explanations(cls, ranked: list[RankedQuery], details: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """``explain``'s details checked (one per passage, each with a ``kind``) and completed with the backend and
        the passage's score."""
        checked = checked_explanations(cls.__name__, details, [len(query.hits) for query in ranked])
        return [
            [
                {"backend": cls.BACKEND, "kind": kind, "score": score, **detail}
                for (_, score), (kind, detail) in zip(query.hits, query_details, strict=True)
            ]
            for query, query_details in zip(ranked, checked, strict=True)
        ]

    @classmethod
    def open_index(cls, request: RetrieveRequest, settings: S) -> tuple[Sequence[Document], Callable[[], I]]:
        """The documents to rank and a call giving their index. By default the request's corpus, whose index is
        built on first use only (nothing is built when no document can be returned) and cached."""
        documents = request.documents
        if documents is None:
            raise TypeError(f"{cls.__name__} needs the request's corpus (CORPUS_REQUIRED) to build its index")
        return documents, functools.cache(
            lambda: cls.cached_index(documents, settings, request.index_dir, request.keep_versions)
        )

    @classmethod
    def open_view(
        cls, documents: Sequence[Document], full: Callable[[], I], positions: list[int], settings: S
    ) -> tuple[Sequence[Document], Callable[[], I]]:
        """The documents at ``positions`` (what the caller may read) and a call giving their index, kept in
        ``VIEW_CACHE`` under the key an index of those documents alone has: a view is never stored, and a set of
        principals that reads other documents never gets it."""
        visible = Corpus.part_of(documents, positions)

        def view() -> I:
            whole = full()  # outside the view, so it stays the corpus its memo builds the next view from

            def build() -> I:
                with building_view():
                    return cls.view_index(whole, positions, visible, settings)

            return VIEW_CACHE.get_or_build(cls.view_key(whole, visible, settings), build)

        return visible, functools.cache(view)

    @classmethod
    def view_key(cls, full: I, documents: Sequence[Document], settings: S) -> IndexKey:
        """The key of the view of ``documents``: by default the key an index of them alone has (``index_key``)."""
        return cls.index_key(documents, settings)

    @classmethod
    def view_index(cls, full: I, positions: list[int], documents: Sequence[Document], settings: S) -> I:
        """The index of ``documents``, the corpus's documents at ``positions``, equal to an index built over them
        alone (every statistic, vocabulary and language from them). By default built over them so: ``full`` has
        just been built, so a memo of analysed text or embeddings makes it cheap. A backend whose index holds what
        the view needs (vectors) may cut it from ``full`` instead."""
        return cls.build_index(documents, cls.index_settings(settings))

    @classmethod
    def indexes_for(cls, request: RetrieveRequest, settings: S) -> list[tuple[IndexKey, I]]:
        """The ``(key, index)`` pairs this request is answered with, built or loaded now. Installed in another
        process's ``INDEX_CACHE`` (a Spark executor), they answer the same request there without building one."""
        if not request.documents:
            return []
        return [
            (
                cls.index_key(request.documents, settings),
                cls.cached_index(request.documents, settings, request.index_dir, request.keep_versions),
            )
        ]

    @classmethod
    def index_key(cls, documents: Sequence[Document], settings: S) -> IndexKey:
        """The cache key of the index for ``documents`` under these settings (search-only settings excluded)."""
        return cls.shared_key(documents, cls.index_settings(settings))

    @classmethod
    def cached_index(
        cls, documents: Sequence[Document], settings: S, index_dir: Path | None, keep_versions: int | None = None
    ) -> I:
        """The index under ``index_key``: from memory, else from ``index_dir``, else built (and saved there, which
        keeps the ``keep_versions`` latest stores of this backend; ``core.indexes.retention``)."""
        return cls.shared_index(documents, cls.index_settings(settings), index_dir, keep_versions)

    @classmethod
    def shared_index(
        cls,
        documents: Sequence[Document],
        index_settings: K,
        index_dir: Path | None = None,
        keep_versions: int | None = None,
    ) -> I:
        """``cached_index`` given the index settings themselves, for a backend built on others' indexes."""
        stored = cls.stores_index()
        index: I = INDEX_CACHE.get_or_build(
            cls.shared_key(documents, index_settings),
            lambda: cls.build_index(documents, index_settings),
            index_dir=index_dir,
            save=cls.save_index if stored else None,
            load=(lambda folder: cls.load_index(folder, index_settings, documents)) if stored else None,
            keep=None if stored else lambda folder: cls.keep_stored(documents, index_settings, folder),
            keep_versions=keep_versions,
        )
        return index

    @classmethod
    def shared_key(cls, documents: Sequence[Document], index_settings: K) -> IndexKey:
        """``index_key`` given the index settings themselves: the key ``shared_index`` keeps its index under."""
        assert cls.BACKEND is not None
        return IndexKey.of(cls.BACKEND, index_settings, corpus_fingerprint(documents))

    @classmethod
    def search_exact(
        cls, index: I, queries: list[str], top_k: int, allowed: AllowedMask, document_count: int, settings: S
    ) -> list[Hits]:
        """Hits with every tie at the ``top_k`` cut included, for a caller that ranks them itself."""
        return search_with_exact_ties(
            lambda batch, depth: cls.search(index, batch, depth, allowed, settings), queries, top_k, document_count
        )

    @classmethod
    def index_settings(cls, settings: S) -> K:
        """The frozen part of the settings that shapes the index (its cache key); the rest only steers searches.
        By default all of them do, so a backend whose settings are its index settings (``K`` = ``S``) needs none."""
        return cast(K, settings)

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: K) -> I:
        """A picklable index over ``documents``, given ``index_settings``.

        Args:
            documents: the corpus, validated (unique doc_ids, valid Unicode); positions are the hits' positions.
            settings: what ``index_settings`` returned; the index is cached under it and the corpus fingerprint.

        Raises:
            BackendUnavailableError: the library is not installed (``core.extras.require_module`` says which extra).
        """
        raise NotImplementedError

    @classmethod
    @abstractmethod
    def search(cls, index: I, queries: list[str], depth: int, allowed: AllowedMask, settings: S) -> list[Hits]:
        """Up to ``depth`` best ``(document position, score)`` hits per query, never one outside ``allowed``.

        Args:
            index: what ``build_index`` or ``load_index`` returned.
            queries: the batch, in order; answer each with its own list, in the same order.
            depth: how many hits a query may return at most; the base widens it itself when ties reach the cut.
            allowed: a boolean mask over document positions (the request's ``filters``), or None for all.
            settings: the request's full settings (search-only ones such as ``search_threads`` included).

        Returns hits in any order: the base drops scores <= 0, sorts, and breaks ties by doc_id. A position out of
        range or a non-finite score is refused by the base with ``RankingContractError``.
        """

    @classmethod
    def explain(
        cls, index: I, ranked: list[RankedQuery], allowed: AllowedMask, settings: S
    ) -> list[list[dict[str, Any]]]:
        """Why each returned passage scored as it did (``explain=True`` only, so it costs nothing otherwise): one
        JSON-ready dict per hit of each ranked query, in order, with a ``kind`` naming its shape; the base adds
        ``backend`` and ``score``. Where the score is a sum, list its parts under ``contributions``, each with a
        ``contribution``, adding up to the score. By default the score alone (kind ``score``).

        Args:
            index: the index the hits were searched in.
            ranked: per query its text, its returned ``(position, score)`` hits best first, and the search depth.
            allowed: the request's ``filters`` as a mask over positions, or None.
            settings: the request's full settings.
        """
        return [[{"kind": "score"} for _ in query.hits] for query in ranked]

    @classmethod
    def stores_index(cls) -> bool:
        """Whether ``index_dir`` keeps this backend's index itself: it implements ``save_index`` and ``load_index``.

        That is the one way an index is persisted. A backend that implements neither makes its index from parts
        kept in ``index_dir`` by what made them (bm25s: its analysed corpus, ``ANALYSIS_MEMO``; hybrid_rrf: its
        rankers' indexes, each stored its own way), so an updated corpus writes the change, not a second copy;
        ``keep_stored`` asks for those parts again when the index is answered from memory."""
        return cls.save_index.__func__ is not BaseRetrieveConnector.save_index.__func__  # type: ignore[attr-defined]

    @classmethod
    def save_index(cls, index: I, folder: Path) -> None:
        """Write the index's files into ``folder`` (a fresh staging folder of ``core.indexes.store``); implemented
        with ``load_index``, or neither (``stores_index``).

        Args:
            index: what ``build_index`` returned.
            folder: an empty folder; the store adds the manifest and checksums and publishes it atomically.

        Write plain arrays and JSON (``core.indexes.store.save_npy``), never pickles: ``load_index`` must be
        able to read the files back when someone else wrote them.
        """
        raise NotImplementedError

    @classmethod
    def load_index(cls, folder: Path, settings: K, documents: Sequence[Document]) -> I:
        """The index read back from ``folder`` (files already checked against their manifest), built around the
        request's ``settings`` and checked against ``documents``: a file never chooses code, a class or a model."""
        raise NotImplementedError

    @classmethod
    def keep_stored(cls, documents: Sequence[Document], settings: K, index_dir: Path) -> None:
        """For a backend that stores no index of its own (``stores_index``), on a request answered from memory: make
        ``index_dir`` hold again the parts ``build_index`` keeps there (they may have been deleted or replaced since);
        best effort, never raising. By default there are none."""
