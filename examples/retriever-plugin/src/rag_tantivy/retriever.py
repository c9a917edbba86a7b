"""``retrieve_backend="tantivy"``: BM25 over an inverted index of Tantivy, the Rust search engine.

rag-integration's analysis (``rag_integration.core.text``) turns every text into index terms in its own language
(Snowball stemmers, stopword lists, character bigrams for Chinese, Japanese, Thai...); Tantivy indexes those terms
in RAM and ranks with its own BM25 (k1 = 1.2, b = 0.75). The base class does the rest of the retrieve contract:
validation, ``top_k``, ties by doc_id, filters (as a mask of allowed positions), index caching and Spark.

``tantivy`` is imported by the hooks only, so discovering this backend never needs it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from rag_integration.core.documents.corpus import Document
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.cache import building_into
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO, AnalysedCorpus, AnalysisSettings
from rag_integration.core.options import option
from rag_integration.core.ranking.passages import AllowedMask, Hits
from rag_integration.core.text.analysis import ANALYSIS_VERSION, LANGUAGE, analyzer_for, check_language
from rag_integration.core.text.languages import query_language
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

if TYPE_CHECKING:
    import tantivy

DISTRIBUTION = "rag-integration-tantivy"
TERMS = "terms"
"""The analysed text: our terms joined by spaces, split back by Tantivy's ``whitespace`` tokenizer (no filters)."""
POSITION = "position"
"""The document's position in the corpus, a fast field: hits are read back and filters applied by position."""
WRITER_HEAP = 50_000_000
MATCH_MODES = ("any", "all")


def _tantivy() -> Any:
    """The library, imported when a request builds or loads an index; missing, a typed error naming this package."""
    return require_module("tantivy", "tantivy", "tantivy", distribution=DISTRIBUTION)


@dataclass(frozen=True)
class TantivyIndexSettings:
    """What shapes the index: how texts become terms."""

    stemmer: bool = option(
        "stemmer", "boolean", "each language's Snowball stemmer; False indexes surface words", default=True
    )
    language: str = LANGUAGE.field()
    analysis: str = ANALYSIS_VERSION

    def __post_init__(self) -> None:
        check_language(self.language)

    def analysis_settings(self) -> AnalysisSettings:
        return AnalysisSettings(self.language, self.stemmer)


@dataclass(frozen=True)
class TantivySettings:
    """A request's options: the index's, plus ``tantivy_match``, which only steers a search."""

    index: TantivyIndexSettings
    match: str = option(
        "tantivy_match",
        "choice",
        "`any`: a passage holding some query term ranks; `all`: only passages holding every query term",
        default="any",
        choices=MATCH_MODES,
    )


@dataclass(frozen=True)
class TantivyIndex:
    """The analysed corpus (what pickles, and what ``index_dir`` keeps) and the Tantivy index made from it."""

    analysed: AnalysedCorpus
    settings: TantivyIndexSettings

    @functools.cached_property
    def engine(self) -> tantivy.Index:
        """The Tantivy index, in RAM: made on first use, and made again where the index is unpickled."""
        library = _tantivy()
        schema = library.SchemaBuilder()
        schema.add_text_field(TERMS, tokenizer_name="whitespace", index_option="freq")  # BM25 needs no positions
        schema.add_unsigned_field(POSITION, indexed=True, fast=True)
        index: tantivy.Index = library.Index(schema.build())
        names = {term_id: term for term, term_id in self.analysed.vocabulary.items()}
        counts = self.analysed.counts
        writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
        for position in range(counts.document_count):
            row = slice(counts.indptr[position], counts.indptr[position + 1])
            # each term as often as the text holds it: BM25 reads term frequencies and lengths, not word order
            repeated = (
                " ".join([names[term]] * int(count)) for term, count in zip(counts.terms[row], counts.counts[row])
            )
            document = library.Document()
            document.add_text(TERMS, " ".join(repeated))
            document.add_unsigned(POSITION, position)
            writer.add_document(document)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return index

    @property
    def nbytes(self) -> int:
        return self.analysed.nbytes

    def query_terms(self, query: str) -> list[str]:
        """The query's terms, analysed in its language as the documents were."""
        language = query_language(query, self.settings.language, self.analysed.languages)
        return analyzer_for(language, stem=self.settings.stemmer).query_terms(query, self.analysed.vocabulary)

    def __getstate__(self) -> dict[str, Any]:
        return {"analysed": self.analysed, "settings": self.settings}  # a Tantivy index does not pickle


class TantivyRetriever(BaseRetrieveConnector[TantivySettings, TantivyIndexSettings, TantivyIndex]):
    """``retrieve_backend="tantivy"``: Tantivy's BM25 over the core's analysis (options ``stemmer``, ``language``,
    ``tantivy_match``)."""

    BACKEND: ClassVar[str | None] = "tantivy"
    SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ("1.0",)
    SETTINGS: ClassVar[type[Any] | None] = TantivySettings
    EXTRA: ClassVar[str | None] = "tantivy"  # pip install "rag-integration-tantivy[tantivy]" (or the bare name)
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("tantivy",)

    @classmethod
    def index_settings(cls, settings: TantivySettings) -> TantivyIndexSettings:
        return settings.index

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: TantivyIndexSettings) -> TantivyIndex:
        _tantivy()  # an absent library is refused now, before any text is analysed
        analysed = ANALYSIS_MEMO.analyse(documents, settings.analysis_settings(), building_into(), required=True)
        index = TantivyIndex(analysed, settings)
        _ = index.engine  # made now, so the index cache times and keeps a ready index
        return index

    @classmethod
    def keep_stored(cls, documents: Sequence[Document], settings: TantivyIndexSettings, index_dir: Path) -> None:
        """``index_dir`` keeps the analysed corpus, not Tantivy's segments (no ``save_index``): the index is made
        again from it in RAM. Answered from memory, the analysed corpus is stored again if it went missing."""
        ANALYSIS_MEMO.keep_stored(documents, settings.analysis_settings(), index_dir)

    @classmethod
    def search(
        cls, index: TantivyIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: TantivySettings
    ) -> list[Hits]:
        """One Tantivy search per query: a boolean query of its terms (SHOULD, or MUST under ``tantivy_match="all"``)
        and, with filters, a MUST clause scoring 0 that admits the allowed positions alone."""
        library = _tantivy()
        Query, Occur = library.Query, library.Occur
        engine = index.engine
        schema, searcher = engine.schema, engine.searcher()
        occur = Occur.Must if settings.match == "all" else Occur.Should
        admitted = None
        if allowed is not None:
            positions = np.flatnonzero(allowed).tolist()
            admitted = Query.const_score_query(Query.term_set_query(schema, POSITION, positions), 0.0)
        results: list[Hits] = []
        for query in queries:
            terms = index.query_terms(query)
            if not terms:
                results.append([])
                continue
            found = Query.boolean_query([(occur, Query.term_query(schema, TERMS, term, "freq")) for term in terms])
            if admitted is not None:
                found = Query.boolean_query([(Occur.Must, found), (Occur.Must, admitted)])
            hits = searcher.search(found, depth, count=False).hits
            at = cast("list[int]", searcher.fast_field_values(POSITION, [address for _, address in hits]))
            results.append([(position, float(score)) for (score, _), position in zip(hits, at, strict=True)])
        return results
