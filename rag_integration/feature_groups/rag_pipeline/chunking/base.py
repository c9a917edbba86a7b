"""The chunking stage ``<source>__chunked``: each document becomes chunks ``<parent>#<n>`` with its metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import OptionReader, SettingsT
from rag_integration.feature_groups.rag_pipeline.base import StageFeatureGroup, document_row


class BaseChunker(StageFeatureGroup, Generic[SettingsT]):
    """Selected by ``chunker``; a backend splits one text into chunk texts, the base names and annotates them."""

    FAMILY: ClassVar[str] = "chunking"
    FEATURE_NAME: ClassVar[str] = "<source>__chunked"
    SELECTOR: ClassVar[str] = "chunker"
    SUFFIX: ClassVar[str] = "__chunked"

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        settings = cls.read_settings(reader)
        rows = []
        for document in documents:
            source = document.metadata.get("source", document.doc_id)
            for index, chunk in enumerate(cls.split(document.text, settings)):
                metadata = {**document.metadata, "source": source, "parent_id": document.doc_id, "chunk_index": index}
                rows.append(document_row(f"{document.doc_id}#{index}", chunk, metadata))
        return rows

    @classmethod
    def split(cls, text: str, settings: SettingsT) -> list[str]:
        """Non-empty chunk texts, in order, each a contiguous piece of ``text``.

        Args:
            text: one document's text.
            settings: the backend's ``SETTINGS``, read from the request.
        """
        raise NotImplementedError


def group_spans(spans: Sequence[tuple[int, int]], size: int, overlap: int, text: str) -> list[str]:
    """Windows of ``size`` spans advancing by ``size - overlap``, each cut from the original text."""
    chunks = []
    step = size - overlap
    for start in range(0, len(spans), step):
        window = spans[start : start + size]
        chunks.append(text[window[0][0] : window[-1][1]].strip())
        if start + size >= len(spans):
            break
    return [chunk for chunk in chunks if chunk]
