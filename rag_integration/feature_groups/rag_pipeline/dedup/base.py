"""The deduplication stage ``<source>__deduped``: keeps the first row of each text key, in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.base import StageFeatureGroup, document_row


class BaseDeduplicator(StageFeatureGroup):
    """Selected by ``dedup``; a backend maps a text to the key that decides what counts as the same text."""

    FAMILY: ClassVar[str] = "dedup"
    FEATURE_NAME: ClassVar[str] = "<source>__deduped"
    SELECTOR: ClassVar[str] = "dedup"
    SUFFIX: ClassVar[str] = "__deduped"

    @classmethod
    def reduces_rows(cls) -> bool:
        return True

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        seen: set[str] = set()
        rows = []
        for document in documents:
            key = cls.text_key(document.text)
            if key not in seen:
                seen.add(key)
                rows.append(document_row(document.doc_id, document.text, document.metadata))
        return rows

    @classmethod
    def text_key(cls, text: str) -> str:
        raise NotImplementedError
