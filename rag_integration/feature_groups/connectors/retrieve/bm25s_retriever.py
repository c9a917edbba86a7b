"""Lucene BM25 through bm25s over the core's language analysis (each document's own stemmer, stopwords and
segmentation; ``core.text.analysis``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes.bm25_model import Bm25Model
from rag_integration.core.indexes.cache import building_into
from rag_integration.core.indexes.shards import ShardSet, TermStatistics, analysed_shard
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO, AnalysisSettings
from rag_integration.core.indexes.vector_index import SEARCH_THREADS
from rag_integration.core.options import option
from rag_integration.core.ranking.explain import bm25_contributions, query_words
from rag_integration.core.ranking.passages import AllowedMask, Hits, RankedQuery
from rag_integration.core.text.analysis import ANALYSIS_VERSION, LANGUAGE, Analyzer, analyzer_for, check_language
from rag_integration.core.text.languages import CorpusLanguages, CorpusPlacement, query_language
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


@dataclass(frozen=True)
class Bm25sIndexSettings:
    """What shapes a bm25s index: the BM25 variant, its parameters and whether words are stemmed."""

    k1: float = option("bm25_k1", "number", "BM25 term-frequency saturation", default=1.5, minimum=0.0)
    b: float = option("bm25_b", "number", "BM25 length normalisation", default=0.75, minimum=0.0, maximum=1.0)
    method: str = option("bm25_method", "choice", "the BM25 variant", default="lucene", choices=BM25_METHODS)
    stemmer: bool = option(
        "stemmer", "boolean", "each language's Snowball stemmer; False indexes surface words", default=True
    )
    language: str = LANGUAGE.field()
    analysis: str = ANALYSIS_VERSION

    def __post_init__(self) -> None:
        check_language(self.language)
        if self.method == "bm25+" and self.k1 == 0.0:  # BM25+'s score of an absent term is then 0/0
            raise InvalidOptionError("bm25_k1", self.k1, "a number > 0 with bm25_method 'bm25+'")


@dataclass(frozen=True)
class Bm25sSettings:
    """A request's bm25s options: the index's shape plus ``search_threads``, which only steers a search."""

    index: Bm25sIndexSettings
    threads: int = SEARCH_THREADS.field()


@dataclass(frozen=True)
class Bm25sIndex:
    """bm25s's model of the corpus, the term ids it is indexed by and the languages the documents were analysed in."""

    model: Bm25Model
    vocabulary: dict[str, int]
    languages: CorpusLanguages
    settings: Bm25sIndexSettings

    def query_language(self, query: str) -> str:
        return query_language(query, self.settings.language, self.languages)

    def analyzer(self, query: str) -> Analyzer:
        """The analysis of ``query``: its language's, stemmed as the corpus is."""
        return analyzer_for(self.query_language(query), stem=self.settings.stemmer)

    def query_terms(self, query: str) -> list[str]:
        """The query's terms the corpus holds, in order, analysed in the query's language."""
        return [term for term in self.analyzer(query).query_terms(query, self.vocabulary) if term in self.vocabulary]


class Bm25sRetriever(BaseRetrieveConnector[Bm25sSettings, Bm25sIndexSettings, Bm25sIndex]):
    """``retrieve_backend="bm25s"``: sparse BM25 (options ``bm25_k1``, ``bm25_b``, ``bm25_method``, ``stemmer``).

    ``index_dir`` keeps the analysed corpus (``ANALYSIS_MEMO``), not the index: the score matrix is derived from its
    term counts again in linear time, so an updated corpus writes the change, not a second copy."""

    BACKEND: ClassVar[str | None] = "bm25s"
    SETTINGS: ClassVar[type[Any] | None] = Bm25sSettings
    EXTRA: ClassVar[str | None] = "connectors"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("bm25s", "Stemmer")
    SHARDS_RANK_AS_ONE: ClassVar[bool] = True
    SHARD_OVERLAYS: ClassVar[bool] = True

    @classmethod
    def index_settings(cls, settings: Bm25sSettings) -> Bm25sIndexSettings:
        return settings.index

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Bm25sIndexSettings) -> Bm25sIndex:
        """The corpus analysed (only the texts the latest analysed corpus lacks), then bm25s's model of its counts."""
        analysed = ANALYSIS_MEMO.analyse(documents, _analysis(settings), building_into(), required=True)
        model = Bm25Model.from_counts(analysed.counts, analysed.vocabulary, settings.method, settings.k1, settings.b)
        return Bm25sIndex(model, analysed.vocabulary, analysed.languages, settings)

    @classmethod
    def shard_part(
        cls,
        documents: Sequence[Document],
        settings: Bm25sIndexSettings,
        folder: Path,
        placement: CorpusPlacement | None,
        live: AllowedMask = None,
    ) -> TermStatistics:
        return TermStatistics.of(analysed_shard(documents, _analysis(settings), folder, placement), live)

    @classmethod
    def shard_index(
        cls,
        documents: Sequence[Document],
        settings: Bm25sIndexSettings,
        folder: Path,
        shard_set: ShardSet,
        live: AllowedMask = None,
    ) -> Bm25sIndex:
        """The shard's counts by the corpus's vocabulary, scored with the corpus's statistics."""
        analysed = analysed_shard(documents, _analysis(settings), folder, shard_set.placement)
        corpus = shard_set.corpus_terms()
        counts = corpus.counts(analysed, live)
        model = Bm25Model.from_counts(
            counts, corpus.vocabulary, settings.method, settings.k1, settings.b, corpus.statistics
        )
        return Bm25sIndex(model, corpus.vocabulary, corpus.corpus_languages(analysed, live), settings)

    @classmethod
    def keep_stored(cls, documents: Sequence[Document], settings: Bm25sIndexSettings, index_dir: Path) -> None:
        ANALYSIS_MEMO.keep_stored(documents, _analysis(settings), index_dir)

    @classmethod
    def search(
        cls, index: Bm25sIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: Bm25sSettings
    ) -> list[Hits]:
        query_ids = [[index.vocabulary[term] for term in index.query_terms(query)] for query in queries]
        return index.model.search(query_ids, depth, allowed, settings.threads)

    @classmethod
    def explain(
        cls, index: Bm25sIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: Bm25sSettings
    ) -> list[list[dict[str, Any]]]:
        """Each matched query term (its stem and the query words behind it) and what it added to the score."""
        matrix, nonoccurrence = index.model.term_document_matrix, index.model.nonoccurrence
        explained = []
        for query in ranked:
            terms = index.query_terms(query.query)
            ids = [index.vocabulary[term] for term in terms]
            known = functools.partial(index.analyzer(query.query).query_terms, known=index.vocabulary)
            words = query_words(query.query, known)
            contributions = [
                bm25_contributions(matrix, nonoccurrence, ids, terms, words, position) for position, _ in query.hits
            ]
            explained.append(
                [{"kind": "bm25", "method": settings.index.method, "contributions": parts} for parts in contributions]
            )
        return explained


def _analysis(settings: Bm25sIndexSettings) -> AnalysisSettings:
    return AnalysisSettings(settings.language, settings.stemmer)
