"""The chunking stage ``<source>__chunked``: each document becomes chunks ``<parent>#<n>`` with its metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic

from rag_integration.core.documents.corpus import Document
from rag_integration.core.options import OptionReader, OptionSpec, SettingsT, option_keys
from rag_integration.feature_groups.rag_pipeline.base import StageFeatureGroup, document_row

MAX_CHARS: OptionSpec[int] = OptionSpec(
    "max_chars",
    "integer",
    "the longest chunk any chunker makes: a longer one (a sentence or paragraph without end) is cut at its last "
    "space before the limit, or at the limit",
    default=4000,
    minimum=16,
)


LINE_KEYS = ("line_start", "line_end")
"""A text file's document's lines, which its chunks replace with their own."""


class BaseChunker(StageFeatureGroup, Generic[SettingsT]):
    """Selected by ``chunker``; a backend splits one text into chunk texts, the base names and annotates them."""

    FAMILY: ClassVar[str] = "chunking"
    FEATURE_NAME: ClassVar[str] = "<source>__chunked"
    SELECTOR: ClassVar[str] = "chunker"
    SUFFIX: ClassVar[str] = "__chunked"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(MAX_CHARS)

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        settings = cls.read_settings(reader)
        limit = MAX_CHARS.read(reader)
        rows = []
        for document in documents:
            source = document.metadata.get("source", document.doc_id)
            pieces = [
                piece for chunk in cls.split_within(document.text, settings, limit) for piece in capped(chunk, limit)
            ]
            lines = _chunk_lines(document, pieces)
            kept = {key: value for key, value in document.metadata.items() if key not in LINE_KEYS}
            for index, chunk in enumerate(pieces):
                metadata = {**kept, "source": source, "parent_id": document.doc_id, "chunk_index": index}
                rows.append(document_row(f"{document.doc_id}#{index}", chunk, metadata | lines[index]))
        return rows

    @classmethod
    def split(cls, text: str, settings: SettingsT) -> list[str]:
        """Non-empty chunk texts, in order, each a contiguous piece of ``text``.

        Args:
            text: one document's text.
            settings: the backend's ``SETTINGS``, read from the request.
        """
        raise NotImplementedError

    @classmethod
    def split_within(cls, text: str, settings: SettingsT, max_chars: int) -> list[str]:
        """``split`` for a request whose chunks may be at most ``max_chars`` long: a backend that joins pieces
        (a heading with its paragraph) overrides it to join only what fits; the base cuts any longer chunk after.
        By default ``split(text, settings)``."""
        return cls.split(text, settings)


def _chunk_lines(document: Document, pieces: Sequence[str]) -> list[dict[str, int]]:
    """Each chunk's ``line_start`` and ``line_end`` in its file, when the document records where its text starts
    (a text file's ``line_start``); chunks are pieces of the text in order, so one pass finds them all."""
    first = document.metadata.get("line_start")
    if type(first) is not int:
        return [{} for _ in pieces]
    text = document.text
    found: list[dict[str, int]] = []
    cursor = counted = 0
    line = first
    for piece in pieces:
        start = text.find(piece, cursor)
        if start < 0:  # not a verbatim piece: no line numbers rather than wrong ones
            return [{} for _ in pieces]
        line += text.count("\n", counted, start)
        counted = start
        found.append({"line_start": line, "line_end": line + piece.count("\n")})
        cursor = start + 1
    return found


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


def capped(chunk: str, limit: int) -> list[str]:
    """``chunk`` cut into pieces of at most ``limit`` characters, at the last whitespace in the second half of a
    piece when there is one; each piece stripped, none empty."""
    pieces = []
    start = 0
    while len(chunk) - start > limit:
        end = start + limit
        cut = max(chunk.rfind(" ", start + limit // 2, end + 1), chunk.rfind("\n", start + limit // 2, end + 1))
        end = cut if cut > start else end
        pieces.append(chunk[start:end])
        start = end
    pieces.append(chunk[start:])
    return [piece.strip() for piece in pieces if piece.strip()]
