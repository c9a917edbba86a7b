"""Documents given inline as a Python list in the ``documents`` option."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionReader, option, read_options
from rag_integration.feature_groups.rag_pipeline.documents.base import BaseDocumentSource


@dataclass(frozen=True)
class InlineSourceSettings:
    documents: list[object] = option("documents", "sequence", "document dicts, each with a `text` string")


class InlineDocumentSource(BaseDocumentSource):
    """``document_source="inline"``: each dict keeps its keys; ``source`` defaults to ``"inline"``."""

    BACKEND: ClassVar[str | None] = "inline"
    SETTINGS: ClassVar[type[Any] | None] = InlineSourceSettings

    @classmethod
    def load(cls, reader: OptionReader) -> list[dict[str, Any]]:
        documents: list[dict[str, Any]] = []
        for position, document in enumerate(read_options(InlineSourceSettings, reader).documents):
            if not isinstance(document, Mapping):
                raise InvalidOptionError(f"documents[{position}]", document, "a dict with a 'text' string")
            documents.append({"source": "inline", **document})
        return documents
