"""The vector store stage ``<source>__indexed``: persists the embedded rows to ``index_dir`` and passes them on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from rag_integration.core.contract.queries import read_index_dir
from rag_integration.core.contract.request_options import INDEX_DIR
from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.retention import KEEP_VERSIONS
from rag_integration.core.indexes.store import intact_claim
from rag_integration.core.options import OptionReader, option_keys
from rag_integration.feature_groups.rag_pipeline.base import StageFeatureGroup, document_row
from rag_integration.feature_groups.rag_pipeline.embedding import EMBEDDING_STAGES
from rag_integration.feature_groups.rag_pipeline.vector_store.store import store_claim, write_store

EMBEDDING_KEYS = ("embedding", "embedding_model")


class BaseVectorStore(StageFeatureGroup):
    """Selected by ``vector_store``; the rows out are the rows in without their vectors, so they can feed a corpus."""

    FAMILY: ClassVar[str] = "vector_store"
    FEATURE_NAME: ClassVar[str] = "<source>__indexed"
    SELECTOR: ClassVar[str] = "vector_store"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(INDEX_DIR, KEEP_VERSIONS)
    SUFFIX: ClassVar[str] = "__indexed"

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        folder = read_index_dir(reader, required=True)
        assert folder is not None
        settings = cls.read_settings(reader)
        keep = KEEP_VERSIONS.read(reader)
        vectors, model = _embedded_vectors(documents)
        plain = [Document(doc.doc_id, doc.text, _without_embedding(doc.metadata)) for doc in documents]
        claim = store_claim(plain, get_embedder(model).model_id, int(vectors.shape[1]), settings)
        stored = intact_claim(folder)
        if stored is None or not stored.same_as(claim):  # an identical store on disk is kept as it is
            write_store(folder, vectors, plain, claim, keep)
        return [document_row(doc.doc_id, doc.text, doc.metadata) for doc in plain]

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {}


def _embedded_vectors(documents: Sequence[Document]) -> tuple[np.ndarray[Any, np.dtype[np.float32]], str]:
    if not documents:
        raise InvalidOptionError(
            "vector_store", [], "at least one document with text to index (every file given was empty or not read)"
        )
    models = {doc.metadata.get("embedding_model") for doc in documents}
    stages = {stage.BACKEND for stage in EMBEDDING_STAGES}
    if not documents or len(models) != 1 or next(iter(models)) not in stages:
        raise InvalidOptionError("vector_store", sorted(map(str, models)), "rows from one <source>__embedded stage")
    rows = []
    for doc in documents:
        vector = doc.metadata.get("embedding")
        if not isinstance(vector, list) or not vector or not all(isinstance(x, Real) for x in vector):
            raise InvalidOptionError(f"{doc.doc_id}.embedding", vector, "a list of numbers from the embedding stage")
        rows.append(vector)
    if len({len(row) for row in rows}) != 1:
        raise InvalidOptionError("embedding", "vectors of several lengths", "one dimension for every row")
    return np.asarray(rows, dtype=np.float32), str(next(iter(models)))


def _without_embedding(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if key not in EMBEDDING_KEYS}
