"""The retrieve contract: options, validation, index reuse and passage rows. Backends fill four hooks."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents import Document, MetadataFilter, corpus_fingerprint
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.index_cache import INDEX_CACHE, IndexKey, configure_index_cache
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import AllowedMask, Hits, rank_corpus, search_with_exact_ties
from rag_integration.core.queries import read_corpus, read_index_dir, read_queries


@dataclass(frozen=True)
class RetrieveRequest:
    """One validated request: every query of it is answered by one batched search."""

    queries: list[str]
    documents: Sequence[Document]
    top_k: int
    metadata_filter: MetadataFilter | None
    return_metadata: bool
    index_dir: Path | None

    @classmethod
    def read(cls, reader: OptionReader, data: Any) -> RetrieveRequest:
        return cls(
            queries=read_queries(reader, data),
            documents=read_corpus(reader, data),
            top_k=reader.integer("top_k", default=10, minimum=1),
            metadata_filter=MetadataFilter.from_option(reader.raw("filters")),
            return_metadata=reader.boolean("return_metadata", default=False),
            index_dir=read_index_dir(reader),
        )


class BaseRetrieveConnector(SelectorFeatureGroup):
    """``retrieved_passages``: ranked passages for one query or a batch of queries over one corpus."""

    FAMILY: ClassVar[str] = "retrieve"
    FEATURE_NAME: ClassVar[str] = "retrieved_passages"
    SELECTOR: ClassVar[str] = "retrieve_backend"
    CORPUS_OPTIONS: ClassVar[tuple[str, ...]] = ("corpus",)
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"queries_source": "query_text", "corpus_source": "corpus"}

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        request = RetrieveRequest.read(reader, data)
        settings = cls.read_settings(reader)
        configure_index_cache(reader)
        return {cls.FEATURE_NAME: cls.retrieve(request, settings)}

    @classmethod
    def retrieve(cls, request: RetrieveRequest, settings: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
        """Rows for every query, built on the cached index for this corpus and these settings."""

        index = functools.cache(lambda: cls.cached_index(request.documents, settings, request.index_dir))

        def search(queries: list[str], depth: int, allowed: AllowedMask) -> list[Hits]:
            return cls.search(index(), queries, depth, allowed, settings)

        return rank_corpus(
            request.documents, request.queries, request.top_k, search, request.metadata_filter, request.return_metadata
        )

    @classmethod
    def cached_index(cls, documents: Sequence[Document], settings: Mapping[str, Any], index_dir: Path | None) -> Any:
        assert cls.BACKEND is not None
        index_settings = cls.index_settings(settings)
        key = IndexKey.of(cls.BACKEND, index_settings, corpus_fingerprint(documents))
        return INDEX_CACHE.get_or_build(
            key,
            lambda: cls.build_index(documents, index_settings),
            index_dir=index_dir,
            save=cls.save_index,
            load=lambda folder: cls.load_index(folder, index_settings),
        )

    @classmethod
    def search_exact(
        cls,
        index: Any,
        queries: list[str],
        top_k: int,
        allowed: AllowedMask,
        document_count: int,
        settings: Mapping[str, Any],
    ) -> list[Hits]:
        """Hits with every tie at the ``top_k`` cut included, for a caller that ranks them itself."""
        return search_with_exact_ties(
            lambda batch, depth: cls.search(index, batch, depth, allowed, settings), queries, top_k, document_count
        )

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        """The backend's options, validated once per request; JSON-serialisable."""
        return {}

    @classmethod
    def index_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The part of the settings that shapes the index (its cache key); the rest only steers searches."""
        return dict(settings)

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    @classmethod
    def search(
        cls, index: Any, queries: list[str], depth: int, allowed: AllowedMask, settings: Mapping[str, Any]
    ) -> list[Hits]:
        """Up to ``depth`` best ``(document position, score)`` hits per query, never one outside ``allowed``."""
        raise NotImplementedError

    @classmethod
    def save_index(cls, index: Any, folder: Path) -> None:
        raise NotImplementedError

    @classmethod
    def load_index(cls, folder: Path, settings: Mapping[str, Any]) -> Any:
        raise NotImplementedError
