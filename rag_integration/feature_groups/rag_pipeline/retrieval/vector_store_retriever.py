"""The retrieval stage: ``retrieved_passages`` answered from a vector store persisted by the ``__indexed`` stage.

Rows are the retrieve family's rows (same shape, same tie-breaking, batched queries, ``filters``), so moving
between this stage and ``retrieve_backend="faiss"`` is an option swap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents import Document, MetadataFilter, corpus_fingerprint
from rag_integration.core.embedders import QueryVectors, get_embedder
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.index_cache import INDEX_CACHE, IndexKey, configure_index_cache
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import AllowedMask, Hits, rank_corpus
from rag_integration.core.queries import read_corpus, read_index_dir, read_queries
from rag_integration.core.vector_index import search_faiss_index
from rag_integration.feature_groups.rag_pipeline.vector_store.store import VectorStore, read_manifest, read_store


class VectorStoreRetriever(SelectorFeatureGroup):
    """``retrieve_backend="vector_store"`` with ``index_dir``; ``embedding_model`` and a corpus, when given, must
    match the store's manifest (``IndexMismatchError`` otherwise), so a changed corpus or model is never served."""

    FAMILY: ClassVar[str] = "retrieve"
    FEATURE_NAME: ClassVar[str] = "retrieved_passages"
    SELECTOR: ClassVar[str] = "retrieve_backend"
    BACKEND: ClassVar[str | None] = "vector_store"
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss",)
    CORPUS_OPTIONS: ClassVar[tuple[str, ...]] = ("corpus",)
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"queries_source": "query_text", "corpus_source": "corpus"}

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        queries = read_queries(reader, data)
        top_k = reader.integer("top_k", default=10, minimum=1)
        metadata_filter = MetadataFilter.from_option(reader.raw("filters"))
        return_metadata = reader.boolean("return_metadata", default=False)
        configure_index_cache(reader)
        corpus = read_corpus(reader, data) if reader.has("corpus") or reader.has("corpus_source") else None
        wanted_model = reader.string("embedding_model", default=None)
        if corpus is not None and not corpus:  # the request names an empty corpus: nothing can match
            return {cls.FEATURE_NAME: [[] for _ in queries]}
        folder = read_index_dir(reader, required=True)
        assert folder is not None
        store = cls.load(folder, wanted_model, corpus)
        query_vectors = QueryVectors(get_embedder(store.manifest["embedding_model"], "embedding_model"))

        def search(batch: list[str], depth: int, allowed: AllowedMask) -> list[Hits]:
            return search_faiss_index(
                store.index, query_vectors(batch), depth, allowed, store.manifest["faiss"], "faiss"
            )

        rows = rank_corpus(store.documents, queries, top_k, search, metadata_filter, return_metadata)
        return {cls.FEATURE_NAME: rows}

    @classmethod
    def load(cls, folder: Path, wanted_model: str | None, corpus: Sequence[Document] | None) -> VectorStore:
        """The store in ``folder`` (cached per manifest), after checking it against the request."""
        manifest = read_manifest(folder)
        if manifest is None:
            raise InvalidOptionError("index_dir", str(folder), "a folder written by the <source>__indexed stage")
        stored_model = manifest["embedding_model"]
        if wanted_model is not None and get_embedder(wanted_model).model_id != get_embedder(stored_model).model_id:
            raise IndexMismatchError("embedding_model", wanted_model, f"the store's model '{stored_model}' ({folder})")
        if corpus is not None and corpus_fingerprint(corpus) != manifest["corpus_fingerprint"]:
            raise IndexMismatchError("index_dir", str(folder), "a store built from the corpus this request names")
        key = IndexKey.of(cls.FAMILY, {"folder": str(folder.resolve())}, str(sorted(manifest.items())))
        store: VectorStore = INDEX_CACHE.get_or_build(key, lambda: read_store(folder, manifest))
        return store
