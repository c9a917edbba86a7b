"""Sparse TF-IDF with cosine similarity through scikit-learn's TfidfVectorizer, over the core's language analysis
(each document's stemmer, stopwords and segmentation; ``core.text.analysis``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rag_integration.core.documents.corpus import Document, texts_of
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.cache import building_into
from rag_integration.core.indexes.corpus_languages import load_corpus_languages, save_corpus_languages
from rag_integration.core.indexes.shards import CorpusTerms, ShardSet, TermStatistics, analysed_shard
from rag_integration.core.indexes.store import load_npy, load_sparse_parts, save_npy, term_ids
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO, EMPTY_TERM, AnalysedCorpus, AnalysisSettings
from rag_integration.core.options import option
from rag_integration.core.ranking.explain import dot_contributions, ngram_words, query_words, sparse_row
from rag_integration.core.ranking.passages import AllowedMask, Hits, RankedQuery, best_positive_hits_of_rows
from rag_integration.core.text.analysis import ANALYSIS_VERSION, LANGUAGE, Analyzer, analyzer_for, check_language
from rag_integration.core.text.languages import CorpusLanguages, CorpusPlacement, analyse_texts, query_language
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

if TYPE_CHECKING:
    import numpy.typing as npt
    import scipy.sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

VOCABULARY_FILE = "vocabulary.json"


@dataclass(frozen=True)
class TfidfSettings:
    """What shapes a TF-IDF index; every option of this backend does, so these are its index settings too."""

    sublinear_tf: bool = option("tfidf_sublinear_tf", "boolean", "`1 + log(tf)` term weights", default=True)
    ngram_max: int = option("tfidf_ngram_max", "integer", "longest word n-gram", default=1, minimum=1, maximum=3)
    language: str = LANGUAGE.field()
    analysis: str = ANALYSIS_VERSION

    def __post_init__(self) -> None:
        check_language(self.language)


@dataclass(frozen=True)
class TfidfIndex:
    """A fitted vectorizer, the l2-normalised document rows and the languages the documents were analysed in."""

    vectorizer: TfidfVectorizer
    document_matrix: scipy.sparse.csr_matrix
    languages: CorpusLanguages
    settings: TfidfSettings

    def analyzer(self, query: str) -> Analyzer:
        return analyzer_for(query_language(query, self.settings.language, self.languages))

    def query_rows(self, queries: list[str]) -> scipy.sparse.csr_matrix:
        """The queries' TF-IDF rows, each analysed in its language."""
        analysed = [_with_ngrams(self.analyzer(query).terms(query), self.settings.ngram_max) for query in queries]
        return self.vectorizer.transform(analysed)


class TfidfRetriever(BaseRetrieveConnector[TfidfSettings, TfidfSettings, TfidfIndex]):
    """``retrieve_backend="tfidf"``: l2-normalised TF-IDF vectors (options ``tfidf_sublinear_tf``, ``tfidf_ngram_max``)."""

    BACKEND: ClassVar[str | None] = "tfidf"
    SETTINGS: ClassVar[type[Any] | None] = TfidfSettings
    EXTRA: ClassVar[str | None] = "tfidf"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("sklearn", "scipy")
    SHARDS_RANK_AS_ONE: ClassVar[bool] = True
    SHARD_OVERLAYS: ClassVar[bool] = True

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: TfidfSettings) -> TfidfIndex:
        """Single terms come from the analysed corpus (``ANALYSIS_MEMO``: a changed corpus analyses only its new
        texts); n-grams need each text's terms in order, so they are analysed afresh."""
        if settings.ngram_max == 1:
            return _from_counts(
                ANALYSIS_MEMO.analyse(documents, AnalysisSettings(settings.language, True), building_into()), settings
            )
        vectorizer = _vectorizer(settings)
        terms, languages = analyse_texts(list(texts_of(documents)), settings.language)
        analysed = [_with_ngrams(document_terms, settings.ngram_max) for document_terms in terms]
        try:
            matrix = vectorizer.fit_transform(analysed)
        except ValueError:  # every document is empty or stopwords only: nothing can match
            vectorizer = _vectorizer(settings, vocabulary={"\0": 0})
            matrix = vectorizer.fit_transform(analysed)
        return TfidfIndex(vectorizer, matrix.tocsr(), CorpusLanguages.of(languages), settings)

    @classmethod
    def check_shardable(cls, settings: TfidfSettings) -> None:
        if settings.ngram_max > 1:
            raise InvalidOptionError("tfidf_ngram_max", settings.ngram_max, "1 with index_shards >= 2")

    @classmethod
    def shard_part(
        cls,
        documents: Sequence[Document],
        settings: TfidfSettings,
        folder: Path,
        placement: CorpusPlacement | None,
        live: AllowedMask = None,
    ) -> TermStatistics:
        analysed = analysed_shard(documents, AnalysisSettings(settings.language, True), folder, placement)
        return TermStatistics.of(analysed, live)

    @classmethod
    def shard_index(
        cls,
        documents: Sequence[Document],
        settings: TfidfSettings,
        folder: Path,
        shard_set: ShardSet,
        live: AllowedMask = None,
    ) -> TfidfIndex:
        analysed = analysed_shard(documents, AnalysisSettings(settings.language, True), folder, shard_set.placement)
        return _from_counts(analysed, settings, shard_set.corpus_terms(), live)

    @classmethod
    def search(
        cls, index: TfidfIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: TfidfSettings
    ) -> list[Hits]:
        similarities = (index.query_rows(queries) @ index.document_matrix.T).toarray()
        if allowed is not None:
            similarities[:, ~allowed] = 0.0
        return best_positive_hits_of_rows(similarities, depth)

    @classmethod
    def explain(
        cls, index: TfidfIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: TfidfSettings
    ) -> list[list[dict[str, Any]]]:
        """The terms query and document share, each weight and their product: the parts of the cosine."""
        rows = index.query_rows([query.query for query in ranked])
        explained = []
        for row, query in enumerate(ranked):
            analyzer = index.analyzer(query.query)
            words = query_words(query.query, analyzer.terms)
            terms = _with_ngrams(analyzer.terms(query.query), settings.ngram_max)
            columns = {
                index.vectorizer.vocabulary_[term]: term for term in terms if term in index.vectorizer.vocabulary_
            }
            term_words = {term: ngram_words(term, words) for term in columns.values()}
            weights = sparse_row(rows, row)
            explained.append(
                [
                    {
                        "kind": "tfidf",
                        "contributions": dot_contributions(
                            weights, sparse_row(index.document_matrix, position), columns, term_words
                        ),
                    }
                    for position, _ in query.hits
                ]
            )
        return explained

    @classmethod
    def save_index(cls, index: TfidfIndex, folder: Path) -> None:
        vocabulary = {term: int(column) for term, column in index.vectorizer.vocabulary_.items()}
        stored = {"vocabulary": vocabulary}
        (folder / VOCABULARY_FILE).write_text(json.dumps(stored, sort_keys=True), encoding="utf-8")
        save_npy(folder / "idf.npy", index.vectorizer.idf_)
        save_corpus_languages(folder, index.languages)
        matrix = index.document_matrix
        for name, array in (("data", matrix.data), ("indices", matrix.indices), ("indptr", matrix.indptr)):
            save_npy(folder / f"{name}.npy", array)

    @classmethod
    def load_index(cls, folder: Path, settings: TfidfSettings, documents: Sequence[Document]) -> TfidfIndex:
        """The vectorizer from the request's settings with a stored vocabulary, and the document rows, each checked
        against the corpus's size and the vocabulary's before scikit-learn sees them."""
        sparse = require_module("scipy.sparse", "tfidf", "tfidf")
        vocabulary = term_ids(json.loads((folder / VOCABULARY_FILE).read_text(encoding="utf-8")), "vocabulary", folder)
        columns = len(vocabulary)
        if not columns or len(set(vocabulary.values())) != columns:  # scikit-learn needs every column once
            raise IndexMismatchError("index_dir", str(folder), "a vocabulary mapping terms to columns 0..n-1")
        idf = load_npy(folder / "idf.npy", (columns,), "float64")
        data, indices, indptr = load_sparse_parts(folder, len(documents), columns)
        vectorizer = _vectorizer(settings, vocabulary=vocabulary)
        vectorizer.idf_ = idf
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(documents), columns))
        return TfidfIndex(vectorizer, matrix, load_corpus_languages(folder, len(documents)), settings)


def _from_counts(
    analysed: AnalysedCorpus,
    settings: TfidfSettings,
    corpus: CorpusTerms | None = None,
    live: AllowedMask = None,
) -> TfidfIndex:
    """The index scikit-learn's vectorizer would fit on these documents: columns in term order, its idf and
    weights (``TfidfTransformer``) over the analysed corpus's counts. Given the ``corpus`` they are a shard of, its
    vocabulary and idf: the shard's rows of the whole corpus's index (those ``live`` does not mark left empty)."""
    sparse = require_module("scipy.sparse", "tfidf", "tfidf")
    text = require_module("sklearn.feature_extraction.text", "tfidf", "tfidf")
    counts = analysed.counts if corpus is None else corpus.counts(analysed, live)
    terms = analysed.vocabulary if corpus is None else corpus.vocabulary
    ordered = sorted(term for term in terms if term != EMPTY_TERM)
    vocabulary = {term: column for column, term in enumerate(ordered)} or {"\0": 0}
    column_of = np.zeros(len(terms), dtype=np.int64)
    for term, term_id in terms.items():
        column_of[term_id] = vocabulary.get(term, 0)
    matrix = sparse.csr_matrix(
        (counts.counts.astype(np.float64), column_of[counts.terms], counts.indptr),
        shape=(counts.document_count, len(vocabulary)),
    )
    matrix.sort_indices()
    transformer = text.TfidfTransformer(sublinear_tf=settings.sublinear_tf).fit(matrix)
    languages = analysed.languages
    if corpus is not None:
        transformer.idf_ = _smoothed_idf(corpus, column_of)
        languages = corpus.corpus_languages(analysed, live)
    vectorizer = _vectorizer(settings, vocabulary=vocabulary)
    vectorizer.idf_ = transformer.idf_
    return TfidfIndex(vectorizer, transformer.transform(matrix).tocsr(), languages, settings)


def _smoothed_idf(corpus: CorpusTerms, column_of: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """scikit-learn's smoothed idf, ``ln((1 + n) / (1 + df)) + 1``, of the corpus's document frequencies, in its
    operations and dtype, by column."""
    frequencies = np.zeros(max(1, len(corpus.vocabulary) - 1), dtype=np.int64)
    frequencies[column_of[1:]] = corpus.statistics.frequencies[1:]
    document_frequency = frequencies.astype(np.float64)
    document_frequency += 1.0
    idf = np.full_like(document_frequency, fill_value=corpus.statistics.document_count + 1, dtype=np.float64)
    idf /= document_frequency
    np.log(idf, out=idf)
    idf += 1.0
    return idf


def _vectorizer(settings: TfidfSettings, vocabulary: Mapping[str, int] | None = None) -> Any:
    text = require_module("sklearn.feature_extraction.text", "tfidf", "tfidf")
    return text.TfidfVectorizer(
        analyzer=_analysed, sublinear_tf=settings.sublinear_tf, vocabulary=vocabulary, dtype=np.float64
    )


def _analysed(terms: list[str]) -> list[str]:
    """The vectorizer's analyzer: documents and queries come analysed (``_with_ngrams``)."""
    return terms


def _with_ngrams(terms: list[str], longest: int) -> list[str]:
    """The terms, then every run of 2..``longest`` neighbouring terms joined by a space."""
    return terms + [
        " ".join(terms[start : start + size])
        for size in range(2, longest + 1)
        for start in range(len(terms) - size + 1)
    ]
