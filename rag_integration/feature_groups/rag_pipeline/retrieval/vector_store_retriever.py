"""The retrieval stage: ``retrieved_passages`` answered from a vector store persisted by the ``__indexed`` stage.

Rows are the retrieve family's rows (same shape, same tie-breaking, batched queries, ``filters``), so moving
between this stage and ``retrieve_backend="faiss"`` is an option swap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rag_integration.core.documents import MetadataFilter, corpus_fingerprint, read_documents
from rag_integration.core.embedders import get_embedder
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.frames import column_values
from rag_integration.core.index_cache import INDEX_CACHE, IndexKey
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import rank_hits, search_with_exact_ties
from rag_integration.core.queries import read_index_dir, read_queries
from rag_integration.core.vector_index import search_faiss_index
from rag_integration.feature_groups.rag_pipeline.vector_store.store import VectorStore, read_manifest, read_store


class VectorStoreRetriever(SelectorFeatureGroup):
    """``retrieve_backend="vector_store"`` with ``index_dir``; ``embedding_model`` and a corpus, when given, must
    match the store's manifest (``IndexMismatchError`` otherwise), so a changed corpus or model is never served."""

    FAMILY: ClassVar[str] = "retrieval"
    FEATURE_NAME: ClassVar[str] = "retrieved_passages"
    SELECTOR: ClassVar[str] = "retrieve_backend"
    BACKEND: ClassVar[str | None] = "vector_store"
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss",)
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"queries_source": "query_text", "corpus_source": "corpus"}

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        queries = read_queries(reader, data)
        top_k = reader.integer("top_k", default=10, minimum=1)
        metadata_filter = MetadataFilter.from_option(reader.raw("filters"))
        return_metadata = reader.boolean("return_metadata", default=False)
        store = cls.load(read_index_dir(reader, required=True), reader, data)
        documents = store.documents
        allowed = None
        if metadata_filter is not None:
            allowed = np.zeros(len(documents), dtype=bool)
            allowed[metadata_filter.positions(documents)] = True
        if not documents or (allowed is not None and not allowed.any()):
            return {cls.FEATURE_NAME: [[] for _ in queries]}
        embedder = get_embedder(store.manifest["embedding_model"], "embedding_model")
        query_vectors = {query: vector for query, vector in zip(queries, embedder.embed(queries), strict=True)}

        def search(batch: list[str], depth: int) -> list[list[tuple[int, float]]]:
            vectors = np.stack([query_vectors[query] for query in batch])
            return search_faiss_index(store.index, vectors, depth, allowed, store.manifest["faiss"], cls.FAMILY)

        hits = search_with_exact_ties(search, queries, top_k, len(documents))
        rows = [rank_hits(query_hits, documents, top_k, return_metadata=return_metadata) for query_hits in hits]
        return {cls.FEATURE_NAME: rows}

    @classmethod
    def load(cls, folder: Path | None, reader: OptionReader, data: Any) -> VectorStore:
        """The store in ``folder`` (cached per manifest), after checking it against the request."""
        assert folder is not None
        manifest = read_manifest(folder)
        if manifest is None:
            raise InvalidOptionError("index_dir", str(folder), "a folder written by the <source>__indexed stage")
        wanted_model = reader.raw("embedding_model")
        if wanted_model is not None and wanted_model != manifest["embedding_model"]:
            raise IndexMismatchError(
                "embedding_model", wanted_model, f"the store's model '{manifest['embedding_model']}' ({folder})"
            )
        expected = cls.expected_fingerprint(reader, data)
        if expected is not None and expected != manifest["corpus_fingerprint"]:
            raise IndexMismatchError("index_dir", str(folder), "a store built from the corpus this request names")
        key = IndexKey.of(cls.FAMILY, {"folder": str(folder.resolve())}, str(sorted(manifest.items())))
        store: VectorStore = INDEX_CACHE.get_or_build(key, lambda: read_store(folder, manifest))
        return store

    @classmethod
    def expected_fingerprint(cls, reader: OptionReader, data: Any) -> str | None:
        if reader.has("corpus_source") and not reader.has("corpus"):
            source = reader.string("corpus_source")
            return corpus_fingerprint(read_documents(column_values(data, source, "corpus_source"), source))
        if reader.has("corpus"):
            return corpus_fingerprint(read_documents(reader.raw("corpus"), "corpus"))
        return None
