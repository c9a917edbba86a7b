"""The retrieval stage: ``retrieved_passages`` answered from a vector store persisted by the ``__indexed`` stage.

A backend of the retrieve family like any other (same options, rows, tie-breaking, batched queries, ``filters``),
so moving between this stage and ``retrieve_backend="faiss"`` is an option swap. Only where its documents and
index come from differs: the store in ``index_dir``, so a corpus is optional and, when given, only checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document, corpus_fingerprint
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError, MissingOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey
from rag_integration.core.indexes.embedders import EMBEDDING_MODEL, QueryVectors, get_embedder
from rag_integration.core.indexes.store import StoreClaim, StoredVersion, read_store
from rag_integration.core.indexes.vector_index import (
    SEARCH_THREADS,
    FaissSettings,
    build_faiss_index,
    faiss_vectors,
    search_faiss_index,
)
from rag_integration.core.options import OptionReader, read_options
from rag_integration.core.ranking.explain import dense_explanation
from rag_integration.core.ranking.passages import AllowedMask, Hits, RankedQuery
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector, RetrieveRequest
from rag_integration.feature_groups.rag_pipeline.vector_store.store import VectorStore, check_store_claim, load_store


@dataclass(frozen=True)
class VectorStoreSettings:
    """``embedding_model`` (default ``minilm``, as for every dense backend; the store's manifest must name the same
    model, it never chooses one) and ``search_threads``; the store fixes the rest."""

    embedding_model: str = EMBEDDING_MODEL.field()
    threads: int = SEARCH_THREADS.field()


@dataclass(frozen=True)
class StoreIndex:
    """A loaded store and the request's embedder for its queries; pickles as the store and the model option, the
    embedder is resolved again."""

    store: VectorStore
    model_option: str
    query_vectors: QueryVectors

    @classmethod
    def of(cls, store: VectorStore, model_option: str) -> StoreIndex:
        return cls(store, model_option, QueryVectors(get_embedder(model_option, "embedding_model")))

    @property
    def nbytes(self) -> int:
        return self.store.nbytes

    def __reduce__(self) -> tuple[Any, ...]:
        return (StoreIndex.of, (self.store, self.model_option))


class VectorStoreRetriever(BaseRetrieveConnector[VectorStoreSettings, VectorStoreSettings, StoreIndex]):
    """``retrieve_backend="vector_store"`` with ``index_dir``; ``embedding_model`` and a corpus, when given, must
    match the store's manifest (``IndexMismatchError`` otherwise), so a changed corpus or model is never served.
    A store that fails its checks is an ``IndexMismatchError`` too: there is no corpus to rebuild it from."""

    BACKEND: ClassVar[str | None] = "vector_store"
    SETTINGS: ClassVar[type[Any] | None] = VectorStoreSettings
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss",)
    CORPUS_REQUIRED: ClassVar[bool] = False

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """Certified by the store-backed kit, which writes each request's corpus into a store first."""
        return {"kit": "rag_integration.testing.retrieve:VectorStoreContractTests"}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> VectorStoreSettings:
        settings = read_options(VectorStoreSettings, reader)
        get_embedder(settings.embedding_model)  # a bad name is refused before any store is read
        return settings

    @classmethod
    def open_index(
        cls, request: RetrieveRequest, settings: VectorStoreSettings
    ) -> tuple[Sequence[Document], Callable[[], Any]]:
        """The store's documents and index; an empty corpus given has nothing to rank and reads no store."""
        if request.documents is not None and not request.documents:
            return request.documents, lambda: None
        if request.index_dir is None:
            expected = "the folder of a vector store written by `rag-integration index` or the <source>__indexed stage (it holds the corpus)"
            raise MissingOptionError("index_dir", expected, owner=f"{cls.__name__} ({cls.FEATURE_NAME})")
        index = cls.load(request.index_dir, settings.embedding_model, request.documents)
        return index.store.documents, lambda: index

    @classmethod
    def indexes_for(cls, request: RetrieveRequest, settings: VectorStoreSettings) -> list[tuple[IndexKey, Any]]:
        """The store under its ``store_key``; a process it is installed in still reads the small manifest, so
        ``index_dir`` must be readable there too."""
        if request.documents is not None and not request.documents:
            return []
        store_index: StoreIndex = cls.open_index(request, settings)[1]()
        assert request.index_dir is not None  # open_index refuses a request without one
        return [(cls.store_key(request.index_dir, store_index.store.version), store_index)]

    @classmethod
    def load(cls, folder: Path, model_option: str, corpus: Sequence[Document] | None) -> StoreIndex:
        """The store in ``folder`` (cached per version), after checking its claim against the request."""
        wanted = get_embedder(model_option)

        def check(claim: StoreClaim) -> None:
            check_store_claim(claim, folder)
            stored = claim.settings["embedding_model"]
            if stored != wanted.model_id or claim.settings["dimension"] != wanted.dimension:
                expected = f"the model the store in {folder} was built with ('{stored}')"
                raise IndexMismatchError("embedding_model", model_option, expected)
            if corpus is not None and corpus_fingerprint(corpus) != claim.corpus_fingerprint:
                raise IndexMismatchError("index_dir", str(folder), "a store built from the corpus this request names")

        def load(version: StoredVersion) -> StoreIndex:
            index: StoreIndex = INDEX_CACHE.get_or_load(
                cls.store_key(folder, version.name), lambda: StoreIndex.of(load_store(version), model_option)
            )
            return index

        found = read_store(folder, check, load)
        if found is None:
            raise InvalidOptionError(
                "index_dir", str(folder), "a folder written by `rag-integration index` or the <source>__indexed stage"
            )
        return found[1]

    @classmethod
    def store_key(cls, folder: Path, version: str) -> IndexKey:
        """A store's cache key: its folder and its live version, so a rewritten store is read again."""
        assert cls.BACKEND is not None
        return IndexKey.of(cls.BACKEND, {"folder": str(folder.resolve())}, version)

    @classmethod
    def view_key(cls, full: StoreIndex, documents: Sequence[Document], settings: VectorStoreSettings) -> IndexKey:
        """A view's vectors and index kind are the store's: its key names the store's settings (model, FAISS) and
        the visible documents."""
        assert cls.BACKEND is not None
        return IndexKey.of(cls.BACKEND, {"store": dict(full.store.settings)}, corpus_fingerprint(documents))

    @classmethod
    def view_index(
        cls, full: StoreIndex, positions: list[int], documents: Sequence[Document], settings: VectorStoreSettings
    ) -> StoreIndex:
        """The store's vectors of the visible documents, in a FAISS index of the store's kind."""
        store = full.store
        index = build_faiss_index(faiss_vectors(store.index, positions, "faiss"), store.settings["faiss"], "faiss")
        view = VectorStore(index, list(documents), store.settings, store.version)
        return StoreIndex(view, full.model_option, full.query_vectors)

    @classmethod
    def search(
        cls, index: StoreIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: VectorStoreSettings
    ) -> list[Hits]:
        faiss = FaissSettings.from_manifest(index.store.settings["faiss"], settings.threads)
        return search_faiss_index(index.store.index, index.query_vectors(queries), depth, allowed, faiss, "faiss")

    @classmethod
    def explain(
        cls, index: StoreIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: VectorStoreSettings
    ) -> list[list[dict[str, Any]]]:
        """The similarity, with the model and FAISS index kind the store was built with."""
        model, kind = index.query_vectors.embedder.model_id, index.store.settings["faiss"]["faiss_index"]
        return [[dense_explanation(score, model, kind) for _, score in query.hits] for query in ranked]
