"""Lucene BM25 through bm25s over the core's language analysis (each document's own stemmer, stopwords and
segmentation; ``core.text.analysis``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.cache import building_into
from rag_integration.core.indexes.corpus_languages import load_corpus_languages, save_corpus_languages
from rag_integration.core.indexes.store import load_npy, load_sparse_parts, save_npy, term_ids
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO, AnalysisSettings
from rag_integration.core.indexes.vector_index import SEARCH_THREADS
from rag_integration.core.options import option
from rag_integration.core.ranking.bm25_scores import NONOCCURRENCE_METHODS, bm25_scores
from rag_integration.core.ranking.explain import bm25_contributions, query_words
from rag_integration.core.ranking.passages import AllowedMask, Hits, RankedQuery, best_positive_hits
from rag_integration.core.text.analysis import ANALYSIS_VERSION, LANGUAGE, Analyzer, analyzer_for, check_language
from rag_integration.core.text.languages import CorpusLanguages, query_language
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

if TYPE_CHECKING:
    import bm25s
    import numpy.typing as npt
    import scipy.sparse

BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
SCORE_ARRAYS = ("data", "indices", "indptr")
NONOCCURRENCE_FILE = "nonoccurrence.npy"
VOCABULARY_FILE = "vocabulary.json"
MAX_BLOCK_QUERIES = 64
BLOCK_SCORES = 1 << 18
"""Queries scored together on a thread: at most 64, and at most ~260k scores (2 MB) held per block."""


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
    """The BM25 arrays, the term ids they are indexed by and the languages the documents were analysed in."""

    retriever: bm25s.BM25
    vocabulary: dict[str, int]
    languages: CorpusLanguages
    settings: Bm25sIndexSettings

    def query_language(self, query: str) -> str:
        return query_language(query, self.settings.language, self.languages)

    def analyzer(self, query: str) -> Analyzer:
        """The analysis of ``query``: its language's, stemmed as the corpus is."""
        return analyzer_for(self.query_language(query), stem=self.settings.stemmer)

    def query_ids(self, query: str) -> list[int]:
        """The ids of the query's terms the corpus holds, in order, analysed in the query's language."""
        vocabulary = self.vocabulary
        terms = self.analyzer(query).query_terms(query, vocabulary)
        return [vocabulary[term] for term in terms if term in vocabulary]

    @functools.cached_property
    def term_document_matrix(self) -> scipy.sparse.csr_matrix:
        """bm25s's score arrays (one row of document scores per term) as a SciPy CSR matrix sharing their data,
        made on the first threaded search and kept with the index."""
        sparse = require_module("scipy.sparse", "bm25s", "connectors")
        scores = self.retriever.scores
        shape = (len(scores["indptr"]) - 1, scores["num_docs"])
        return sparse.csr_matrix((scores["data"], scores["indices"], scores["indptr"]), shape=shape)


class Bm25sRetriever(BaseRetrieveConnector[Bm25sSettings, Bm25sIndexSettings, Bm25sIndex]):
    """``retrieve_backend="bm25s"``: sparse BM25 (options ``bm25_k1``, ``bm25_b``, ``bm25_method``, ``stemmer``)."""

    BACKEND: ClassVar[str | None] = "bm25s"
    SETTINGS: ClassVar[type[Any] | None] = Bm25sSettings
    EXTRA: ClassVar[str | None] = "connectors"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("bm25s", "Stemmer")
    STORES_INDEX: ClassVar[bool] = False

    @classmethod
    def index_settings(cls, settings: Bm25sSettings) -> Bm25sIndexSettings:
        return settings.index

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Bm25sIndexSettings) -> Bm25sIndex:
        """The corpus analysed (only the documents the latest analysed corpus lacks: ``ANALYSIS_MEMO``), then
        bm25s's score matrix computed from the term counts, bit for bit as ``bm25s.BM25.index`` makes it."""
        analysed = ANALYSIS_MEMO.analyse(documents, _analysis(settings), building_into(), required=True)
        scores = bm25_scores(analysed.counts, settings.method, settings.k1, settings.b)
        arrays = (scores.data, scores.indices, scores.indptr)
        retriever = _retriever(settings, arrays, analysed.vocabulary, len(documents), scores.nonoccurrence)
        return Bm25sIndex(retriever, analysed.vocabulary, analysed.languages, settings)

    @classmethod
    def keep_stored(cls, documents: Sequence[Document], settings: Bm25sIndexSettings, index_dir: Path) -> None:
        ANALYSIS_MEMO.keep_stored(documents, _analysis(settings), index_dir)

    @classmethod
    def search(
        cls, index: Bm25sIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: Bm25sSettings
    ) -> list[Hits]:
        """bm25s's scores of each query, its top hits picked among the positive ones (exactly bm25s's ranking at a
        fraction of its selection cost). On several threads, blocks of queries are scored as one sparse product
        with bm25s's score matrix, which runs outside the GIL; the sums are added in the same order, so the scores
        are bit for bit bm25s's."""
        retriever = index.retriever
        query_ids = [index.query_ids(query) for query in queries]
        weight_mask = None if allowed is None else allowed.astype(np.float32)
        if settings.threads == 1 or retriever.nonoccurrence_array is not None:
            return [
                best_positive_hits(retriever.get_scores_from_ids(ids, weight_mask=weight_mask), depth) if ids else []
                for ids in query_ids
            ]
        matrix = index.term_document_matrix
        size = max(1, min(MAX_BLOCK_QUERIES, BLOCK_SCORES // max(1, matrix.shape[1])))
        blocks = [query_ids[start : start + size] for start in range(0, len(query_ids), size)]
        with ThreadPoolExecutor(max_workers=settings.threads) as pool:
            scored = pool.map(lambda block: _block_hits(matrix, block, depth, weight_mask), blocks)
            return [hits for block_hits in scored for hits in block_hits]

    @classmethod
    def explain(
        cls, index: Bm25sIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: Bm25sSettings
    ) -> list[list[dict[str, Any]]]:
        """Each matched query term (its stem and the query words behind it) and what it added to the score."""
        nonoccurrence = index.retriever.nonoccurrence_array
        explained = []
        for query in ranked:
            analyzer = index.analyzer(query.query)
            terms = [term for term in analyzer.query_terms(query.query, index.vocabulary) if term in index.vocabulary]
            ids = [index.vocabulary[term] for term in terms]
            words = query_words(query.query, functools.partial(analyzer.query_terms, known=index.vocabulary))
            explained.append(
                [
                    {
                        "kind": "bm25",
                        "method": settings.index.method,
                        "contributions": bm25_contributions(
                            index.term_document_matrix, nonoccurrence, ids, terms, words, position
                        ),
                    }
                    for position, _ in query.hits
                ]
            )
        return explained

    @classmethod
    def save_index(cls, index: Bm25sIndex, folder: Path) -> None:
        """The score matrix as plain arrays and the vocabularies as JSON: nothing of bm25s's own ``params`` file,
        which would choose its constructor's arguments on load. Used inside another backend's store (hybrid_rrf's);
        alone, bm25s keeps only its analysed corpus in ``index_dir`` (``STORES_INDEX``)."""
        scores = index.retriever.scores
        for name in SCORE_ARRAYS:
            save_npy(folder / f"{name}.npy", np.asarray(scores[name]))
        if index.retriever.nonoccurrence_array is not None:
            save_npy(folder / NONOCCURRENCE_FILE, np.asarray(index.retriever.nonoccurrence_array))
        vocabulary = {"index": index.vocabulary}
        (folder / VOCABULARY_FILE).write_text(json.dumps(vocabulary, ensure_ascii=False), encoding="utf-8")
        save_corpus_languages(folder, index.languages)

    @classmethod
    def load_index(cls, folder: Path, settings: Bm25sIndexSettings, documents: Sequence[Document]) -> Bm25sIndex:
        """A BM25 built from the request's settings around stored arrays checked against the corpus's size."""
        vocabulary = json.loads((folder / VOCABULARY_FILE).read_text(encoding="utf-8"))
        terms = term_ids(vocabulary, "index", folder)
        arrays = load_sparse_parts(folder, len(terms), len(documents))
        nonoccurrence = None
        if settings.method in NONOCCURRENCE_METHODS:
            nonoccurrence = load_npy(folder / NONOCCURRENCE_FILE, (len(terms),))
        retriever = _retriever(settings, arrays, terms, len(documents), nonoccurrence)
        return Bm25sIndex(retriever, terms, load_corpus_languages(folder, len(documents)), settings)


def _analysis(settings: Bm25sIndexSettings) -> AnalysisSettings:
    return AnalysisSettings(settings.language, settings.stemmer)


def _retriever(
    settings: Bm25sIndexSettings,
    arrays: tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]],
    vocabulary: dict[str, int],
    documents: int,
    nonoccurrence: npt.NDArray[Any] | None,
) -> bm25s.BM25:
    """A ``bm25s.BM25`` of the request's settings around score arrays made or read by us."""
    bm25s = require_module("bm25s", "bm25s", "connectors")
    retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method=settings.method)
    data, indices, indptr = arrays
    retriever.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": documents}
    retriever.vocab_dict = vocabulary
    retriever.unique_token_ids_set = set(vocabulary.values())
    retriever.nonoccurrence_array = nonoccurrence
    return retriever


def _block_hits(
    matrix: scipy.sparse.csr_matrix, block: list[list[int]], depth: int, weight_mask: npt.NDArray[np.float32] | None
) -> list[Hits]:
    """The hits of a block of queries (term ids, repeats kept) from one product of their term counts and the
    matrix: each document's score is summed over the query's terms in query order, as bm25s sums it."""
    pointers = np.zeros(len(block) + 1, dtype=np.int64)
    np.cumsum([len(ids) for ids in block], out=pointers[1:])
    terms = np.fromiter((token for ids in block for token in ids), dtype=np.int64, count=int(pointers[-1]))
    counts = np.ones(len(terms), dtype=matrix.dtype)
    product = type(matrix)((counts, terms, pointers), shape=(len(block), matrix.shape[0])) @ matrix
    rows = product.indptr.tolist()
    hits = []
    for row in range(len(block)):
        scores, documents = product.data[rows[row] : rows[row + 1]], product.indices[rows[row] : rows[row + 1]]
        if weight_mask is not None:
            scores = scores * weight_mask[documents]
        hits.append(best_positive_hits(scores, depth, documents))
    return hits
