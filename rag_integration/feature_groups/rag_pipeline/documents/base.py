"""The document source stage: the root feature ``docs``, one row per document with ``doc_id``, ``text``, ``source``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.documents.corpus import read_documents
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.base import PythonDictStage, document_row

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame


class BaseDocumentSource(PythonDictStage):
    """``docs`` selected by ``document_source``; backends load raw document dicts, the base validates them."""

    FAMILY: ClassVar[str] = "documents"
    FEATURE_NAME: ClassVar[str] = "docs"
    SELECTOR: ClassVar[str] = "document_source"

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        raw_documents = cls.load(reader)
        documents = read_documents(raw_documents, cls.OPTION)
        return {cls.FEATURE_NAME: [document_row(doc.doc_id, doc.text, doc.metadata) for doc in documents]}

    OPTION: ClassVar[str] = "documents"
    """The option a bad document is reported under."""

    @classmethod
    def load(cls, reader: OptionReader) -> list[dict[str, Any]]:
        """Document dicts (``text``, optional ``doc_id``, ``source`` and other metadata) in a stable order."""
        raise NotImplementedError
