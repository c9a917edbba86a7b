"""Sparse TF-IDF with cosine similarity through scikit-learn's TfidfVectorizer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.store import load_npy, load_sparse_parts, save_npy, term_ids
from rag_integration.core.options import option
from rag_integration.core.ranking.passages import AllowedMask, Hits, best_positive_hits
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

if TYPE_CHECKING:
    import scipy.sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

VOCABULARY_FILE = "vocabulary.json"


@dataclass(frozen=True)
class TfidfSettings:
    """What shapes a TF-IDF index; every option of this backend does, so these are its index settings too."""

    sublinear_tf: bool = option("tfidf_sublinear_tf", "boolean", "`1 + log(tf)` term weights", default=True)
    ngram_max: int = option("tfidf_ngram_max", "integer", "longest word n-gram", default=1, minimum=1, maximum=3)


@dataclass(frozen=True)
class TfidfIndex:
    """A fitted vectorizer and the l2-normalised document rows; both pickle as they are."""

    vectorizer: TfidfVectorizer
    document_matrix: scipy.sparse.csr_matrix


class TfidfRetriever(BaseRetrieveConnector[TfidfSettings, TfidfSettings, TfidfIndex]):
    """``retrieve_backend="tfidf"``: l2-normalised TF-IDF vectors (options ``tfidf_sublinear_tf``, ``tfidf_ngram_max``)."""

    BACKEND: ClassVar[str | None] = "tfidf"
    SETTINGS: ClassVar[type[Any] | None] = TfidfSettings
    EXTRA: ClassVar[str | None] = "tfidf"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("sklearn", "scipy")

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: TfidfSettings) -> TfidfIndex:
        vectorizer = _vectorizer(settings)
        texts = [document.text for document in documents]
        try:
            matrix = vectorizer.fit_transform(texts)
        except ValueError:  # every document is empty or stopwords only: nothing can match
            vectorizer = _vectorizer(settings, vocabulary={"\0": 0})
            matrix = vectorizer.fit_transform(texts)
        return TfidfIndex(vectorizer, matrix.tocsr())

    @classmethod
    def search(
        cls, index: TfidfIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: TfidfSettings
    ) -> list[Hits]:
        similarities = (index.vectorizer.transform(queries) @ index.document_matrix.T).toarray()
        if allowed is not None:
            similarities[:, ~allowed] = 0.0
        return [best_positive_hits(row, depth) for row in similarities]

    @classmethod
    def save_index(cls, index: TfidfIndex, folder: Path) -> None:
        vocabulary = {term: int(column) for term, column in index.vectorizer.vocabulary_.items()}
        stored = {"vocabulary": vocabulary}
        (folder / VOCABULARY_FILE).write_text(json.dumps(stored, sort_keys=True), encoding="utf-8")
        save_npy(folder / "idf.npy", index.vectorizer.idf_)
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
        return TfidfIndex(vectorizer, sparse.csr_matrix((data, indices, indptr), shape=(len(documents), columns)))


def _vectorizer(settings: TfidfSettings, vocabulary: Mapping[str, int] | None = None) -> Any:
    text = require_module("sklearn.feature_extraction.text", "tfidf", "tfidf")
    return text.TfidfVectorizer(
        lowercase=True,
        stop_words="english",
        sublinear_tf=settings.sublinear_tf,
        ngram_range=(1, settings.ngram_max),
        vocabulary=vocabulary,
        dtype=np.float64,
    )
