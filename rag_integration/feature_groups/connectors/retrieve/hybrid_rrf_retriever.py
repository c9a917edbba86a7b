"""Hybrid retrieval: reciprocal-rank fusion of the bm25s and faiss rankings, following the embedder's languages.

Each ranker's index is the one a ``bm25s`` or ``faiss`` request on the same corpus uses, shared in memory and in
``index_dir`` (each ranker stores its own, the hybrid nothing more); the pair is cached and shipped as one index
under the hybrid's own key. A dense ranking is only fused where its model knows the language
(``core.ranking.covered_fusion``): a query in a language the embedder was not trained on is ranked by bm25s alone,
and a document in such a language takes its bm25s rank in place of a dense one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.contract.spark_shards import ShardJob, ShardQuery, on_each_shard
from rag_integration.core.documents.corpus import Document
from rag_integration.core.indexes.cache import INDEX_CACHE, approximate_bytes, building_into
from rag_integration.core.indexes.shards import ShardSet, TermStatistics
from rag_integration.core.options import OptionReader, read_options
from rag_integration.core.ranking.covered_fusion import CoveredFusion, Fusion
from rag_integration.core.ranking.fusion import RrfOptions
from rag_integration.core.ranking.passages import (
    TIE_MARGIN,
    AllowedMask,
    Hits,
    RankedQuery,
    allowed_mask,
    rank_corpus,
)
from rag_integration.core.ranking.sharded_fusion import ShardCandidates, ShardedFusion
from rag_integration.core.text.languages import CorpusLanguages, CorpusPlacement
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import (
    Bm25sIndexSettings,
    Bm25sRetriever,
    Bm25sSettings,
)
from rag_integration.feature_groups.connectors.retrieve.faiss_retriever import (
    FaissDenseIndexSettings,
    FaissDenseRetriever,
    FaissDenseSettings,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkFrame

RANKERS: tuple[type[BaseRetrieveConnector[Any, Any, Any]], ...] = (Bm25sRetriever, FaissDenseRetriever)


@dataclass(frozen=True)
class HybridIndexSettings:
    """What shapes the pair of indexes: each ranker's own index settings."""

    bm25s: Bm25sIndexSettings
    faiss: FaissDenseIndexSettings


@dataclass(frozen=True)
class HybridSettings:
    """Both rankers' settings and the fusion's, with one weight per ranker."""

    bm25s: Bm25sSettings
    faiss: FaissDenseSettings
    fusion: RrfOptions
    weights: tuple[float, ...]


@dataclass(frozen=True)
class HybridIndex:
    """One index per ranker (in ``RANKERS`` order) and the corpus's doc_ids; pickles as its parts do."""

    rankers: tuple[Any, ...]
    doc_ids: tuple[str, ...]

    @property
    def nbytes(self) -> int:
        """What the cache counts for the pair: each ranker's own measure (the FAISS one never serialised)."""
        return sum(approximate_bytes(ranker) for ranker in self.rankers) + sum(map(len, self.doc_ids))

    @property
    def document_count(self) -> int:
        return len(self.doc_ids)

    @functools.cached_property
    def position_of(self) -> dict[str, int]:
        return {doc_id: position for position, doc_id in enumerate(self.doc_ids)}


class HybridRrfRetriever(BaseRetrieveConnector[HybridSettings, HybridIndexSettings, HybridIndex]):
    """``retrieve_backend="hybrid_rrf"``: fuses bm25s and faiss (``rrf_k``, ``rrf_weights``, ``rrf_candidates``)."""

    BACKEND: ClassVar[str | None] = "hybrid_rrf"
    SHARDS_RANK_AS_ONE: ClassVar[bool] = True
    SHARD_OVERLAYS: ClassVar[bool] = True
    OPTIONS: ClassVar[tuple[str, ...]] = (*Bm25sRetriever.own_options(), *FaissDenseRetriever.own_options())
    SETTINGS: ClassVar[type[Any] | None] = RrfOptions
    EXTRA: ClassVar[str | None] = "all"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = Bm25sRetriever.REQUIRED_MODULES + FaissDenseRetriever.REQUIRED_MODULES

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """Its dense ranking finds passages for a query sharing no word with the corpus."""
        return {"matches_by_word_overlap": False}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> HybridSettings:
        fusion = read_options(RrfOptions, reader)
        bm25s, faiss = Bm25sRetriever.read_settings(reader), FaissDenseRetriever.read_settings(reader)
        return HybridSettings(bm25s, faiss, fusion, fusion.weights(len(RANKERS)))

    @classmethod
    def index_settings(cls, settings: HybridSettings) -> HybridIndexSettings:
        return HybridIndexSettings(
            Bm25sRetriever.index_settings(settings.bm25s), FaissDenseRetriever.index_settings(settings.faiss)
        )

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: HybridIndexSettings) -> HybridIndex:
        """Each ranker's index as a request of its own gets it: from memory, else from ``index_dir``, else built."""
        rankers = tuple(
            ranker.shared_index(documents, ranker_settings, building_into())
            for ranker, ranker_settings in zip(RANKERS, (settings.bm25s, settings.faiss), strict=True)
        )
        return HybridIndex(rankers, tuple(document.doc_id for document in documents))

    @classmethod
    def view_index(
        cls, full: HybridIndex, positions: list[int], documents: Sequence[Document], settings: HybridSettings
    ) -> HybridIndex:
        """Each ranker's own view of the visible documents."""
        rankers = tuple(
            ranker.view_index(ranker_index, positions, documents, ranker_settings)
            for ranker, ranker_index, ranker_settings in zip(
                RANKERS, full.rankers, (settings.bm25s, settings.faiss), strict=True
            )
        )
        return HybridIndex(rankers, tuple(document.doc_id for document in documents))

    @classmethod
    def keep_stored(cls, documents: Sequence[Document], settings: HybridIndexSettings, index_dir: Path) -> None:
        """Each ranker still in memory asked for again with ``index_dir``, which keeps its store there."""
        for ranker, ranker_settings in zip(RANKERS, (settings.bm25s, settings.faiss), strict=True):
            if ranker.shared_key(documents, ranker_settings) in INDEX_CACHE:
                ranker.shared_index(documents, ranker_settings, index_dir)

    @classmethod
    def analysis_language(cls, settings: HybridIndexSettings) -> str | None:
        return settings.bm25s.language

    @classmethod
    def check_shardable(cls, settings: HybridSettings) -> None:
        FaissDenseRetriever.check_shardable(settings.faiss)

    @classmethod
    def shard_part(
        cls,
        documents: Sequence[Document],
        settings: HybridIndexSettings,
        folder: Path,
        placement: CorpusPlacement | None,
        live: AllowedMask = None,
    ) -> TermStatistics:
        FaissDenseRetriever.shard_part(documents, settings.faiss, folder, placement, live)
        return Bm25sRetriever.shard_part(documents, settings.bm25s, folder, placement, live)

    @classmethod
    def shard_index(
        cls,
        documents: Sequence[Document],
        settings: HybridIndexSettings,
        folder: Path,
        shard_set: ShardSet,
        live: AllowedMask = None,
    ) -> HybridIndex:
        lexical = Bm25sRetriever.shard_index(documents, settings.bm25s, folder, shard_set, live)
        dense = FaissDenseRetriever.shard_index(documents, settings.faiss, folder, shard_set)
        return HybridIndex((lexical, dense), tuple(document.doc_id for document in documents))

    @classmethod
    def sharded_rows(cls, frame: SparkFrame, job: ShardJob, shard_set: ShardSet, query: ShardQuery) -> list[Any]:
        """Each ranking merged over the shards as deep as one index's fusion reads it, then fused here: a shard's
        own fusion would rank by its own ranks, not the corpus's (``ShardedFusion``)."""
        settings: HybridSettings = job.settings
        total = shard_set.corpus_terms().statistics.document_count

        def gather(candidates: int) -> list[ShardCandidates]:
            return on_each_shard(
                frame,
                job,
                shard_set,
                lambda docs, index, live: _shard_candidates(docs, index, query, candidates, settings, live),
            )

        names = [str(ranker.BACKEND) for ranker in RANKERS]
        terms = shard_set.corpus_terms()
        languages = CorpusLanguages(terms.languages, terms.main)
        fusion = ShardedFusion(languages, settings.fusion, settings.weights, names, total, gather)
        return rank_corpus(
            fusion.documents(query.queries, min(query.top_k + TIE_MARGIN, total)),
            query.queries,
            query.top_k,
            lambda queries, depth, _: fusion.search(queries, depth),
            return_metadata=query.return_metadata,
            explain=(lambda ranked, allowed: cls.explanations(ranked, fusion.explain(ranked)))
            if query.explain
            else None,
            candidate_count=total,
        )

    @classmethod
    def search(
        cls, index: HybridIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: HybridSettings
    ) -> list[Hits]:
        return [
            [(index.position_of[doc_id], score) for doc_id, score in fusion.fused[:depth]]
            for fusion in _fusions(index, queries, depth, allowed, settings)
        ]

    @classmethod
    def explain(
        cls, index: HybridIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: HybridSettings
    ) -> list[list[dict[str, Any]]]:
        """Each ranking's rank and score of the passage and its share ``weight / (rrf_k + rank)`` of the fused
        score, from the rankings fused again exactly as the search fused them (same depth, same filter)."""
        names = [str(ranker.BACKEND) for ranker in RANKERS]
        return [
            _fusions(index, [query.query], query.depth, allowed, settings)[0].explanations(
                index.doc_ids, [index.doc_ids[position] for position, _ in query.hits], names
            )
            for query in ranked
        ]


def _fusions(
    index: HybridIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: HybridSettings
) -> list[Fusion]:
    """Each query's rankings, read ``rrf_candidates`` deep (at least ``depth``), and their fusion, the dense one
    only where its model knows the language (``core.ranking.covered_fusion``)."""
    candidates = min(max(settings.fusion.rrf_candidates, depth), index.document_count)
    lexical_hits, dense_hits = (
        ranker.search_exact(ranker_index, queries, candidates, allowed, index.document_count, ranker_settings)
        for ranker, ranker_index, ranker_settings in zip(
            RANKERS, index.rankers, (settings.bm25s, settings.faiss), strict=True
        )
    )
    lexical_index, dense_index = index.rankers
    fusion = CoveredFusion(
        index.doc_ids,
        index.position_of,
        lexical_index.languages,
        dense_index.query_vectors.embedder.languages,
        settings.fusion.rrf_k,
        settings.weights,
    )
    return [
        fusion.fuse(lexical, dense, lexical_index.query_language(query))
        for query, lexical, dense in zip(queries, lexical_hits, dense_hits, strict=True)
    ]


def _shard_candidates(
    documents: Sequence[Document],
    index: HybridIndex,
    query: ShardQuery,
    candidates: int,
    settings: HybridSettings,
    live: AllowedMask = None,
) -> ShardCandidates:
    """One shard's rankings of every query, ``candidates`` deep, for the fusion on the driver (of the documents
    ``live`` marks, under an overlay)."""
    allowed = allowed_mask(documents, query.metadata_filter, live)
    lexical_index, dense_index = index.rankers
    lexical, dense = (
        ranker.search_exact(ranker_index, query.queries, candidates, allowed, len(documents), ranker_settings)
        for ranker, ranker_index, ranker_settings in zip(
            RANKERS, index.rankers, (settings.bm25s, settings.faiss), strict=True
        )
    )
    query_languages = [lexical_index.query_language(text) for text in query.queries]
    covered = dense_index.query_vectors.embedder.languages
    return ShardCandidates.of(documents, lexical_index.languages, lexical, dense, query_languages, covered)
