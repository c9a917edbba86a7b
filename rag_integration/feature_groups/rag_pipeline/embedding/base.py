"""The embedding stage ``<source>__embedded``: each row gains ``embedding`` (list of floats) and ``embedding_model``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rag_integration.core.contract.request_options import INDEX_DIR
from rag_integration.core.documents.corpus import Document
from rag_integration.core.indexes.embedders import Embedder, get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.core.options import OptionReader, option_keys
from rag_integration.feature_groups.rag_pipeline.base import StageFeatureGroup, document_row


class BaseEmbeddingStage(StageFeatureGroup):
    """Selected by ``embedding_model``; uses the same embedders as the dense retriever, all texts in one batch."""

    FAMILY: ClassVar[str] = "embedding"
    FEATURE_NAME: ClassVar[str] = "<source>__embedded"
    SELECTOR: ClassVar[str] = "embedding_model"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(INDEX_DIR)
    """With the chain's ``index_dir``, embeddings are kept there and reused by later runs (``EMBEDDING_MEMO``)."""
    SUFFIX: ClassVar[str] = "__embedded"

    @classmethod
    def embedder(cls) -> Embedder:
        return get_embedder(cls.BACKEND)

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        embedder = cls.embedder()
        vectors = EMBEDDING_MEMO.embed(embedder, [document.text for document in documents], INDEX_DIR.read(reader))
        return [
            document_row(
                document.doc_id,
                document.text,
                {**document.metadata, "embedding": vector.tolist(), "embedding_model": cls.BACKEND},
            )
            for document, vector in zip(documents, vectors, strict=True)
        ]
