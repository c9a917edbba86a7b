"""Reading what requests share: their queries, their corpus, the items each query is answered over, an index folder.

Queries, corpora and items come inline from an option or from an upstream feature named by a ``*_source`` option,
so one ``run_all`` can chain the families.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_integration.core.contract.feature_group import source_feature_name
from rag_integration.core.contract.frames import column_values
from rag_integration.core.contract.request_options import INDEX_DIR, read_metadata_filter
from rag_integration.core.contract.sources import CORPUS, QUERIES
from rag_integration.core.documents.corpus import Corpus, Document, read_documents, read_passages
from rag_integration.core.documents.visibility import Visibility, label_of
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import REQUIRED, OptionReader
from rag_integration.core.unicode_text import require_valid_text, require_valid_texts

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame


def read_queries(reader: OptionReader, data: ReadableFrame | None) -> list[str]:
    """``query_text`` (a str or a list of str) or the rows of the upstream feature named by ``queries_source``, each
    valid Unicode (``core.unicode_text``)."""
    if reader.has(QUERIES.inline) and reader.has(QUERIES.upstream):
        raise InvalidOptionError(QUERIES.upstream, reader.raw(QUERIES.upstream), "either query_text or queries_source")
    source = source_feature_name(reader, QUERIES.upstream)
    if source is not None:
        queries = column_values(data, source, QUERIES.upstream)
        for position, query in enumerate(queries):
            if not isinstance(query, str):
                raise InvalidOptionError(f"{source}[{position}]", query, "a query string in every row")
        require_valid_texts(queries, source)
        return queries
    if not reader.has(QUERIES.inline):
        raise MissingOptionError(
            QUERIES.inline, "a string or a list of strings (or queries_source)", owner=reader.owner
        )
    query_text = reader.string_or_strings(QUERIES.inline)
    if isinstance(query_text, str):
        return [require_valid_text(query_text, QUERIES.inline)]
    require_valid_texts(query_text, QUERIES.inline)
    return list(query_text)


def read_corpus(reader: OptionReader, data: ReadableFrame | None) -> Sequence[Document]:
    """``corpus`` (document dicts) or the rows of the upstream feature named by ``corpus_source``."""
    if reader.has(CORPUS.inline) and reader.has(CORPUS.upstream):
        raise InvalidOptionError(CORPUS.upstream, reader.raw(CORPUS.upstream), "either corpus or corpus_source")
    source = source_feature_name(reader, CORPUS.upstream)
    if source is not None:
        return read_documents(column_values(data, source, CORPUS.upstream), source)
    if not reader.has(CORPUS.inline):
        raise MissingOptionError(CORPUS.inline, "a list of document dicts (or corpus_source)", owner=reader.owner)
    corpus = reader.raw(CORPUS.inline)
    return corpus if isinstance(corpus, Corpus) else Corpus(corpus, CORPUS.inline)


@dataclass(frozen=True)
class QueryRow:
    """One output row: its query, the raw items it is answered over, and the option those items came from."""

    query: str
    items: object
    option: str


def query_rows(
    reader: OptionReader, data: ReadableFrame | None, inline_option: str, inline: object, source_option: str
) -> list[QueryRow]:
    """Pair queries with items. Inline items (read from ``inline_option`` by the caller) serve every query, one row
    per query; an upstream feature gives one row per upstream row, answered by the single query or by the query
    at the same position."""
    queries = read_queries(reader, data)
    source = source_feature_name(reader, source_option)
    if source is None:
        if inline is None:
            raise MissingOptionError(inline_option, f"inline items or '{source_option}'", owner=reader.owner)
        return [QueryRow(query, inline, inline_option) for query in queries]
    if inline is not None:
        raise InvalidOptionError(source_option, reader.raw(source_option), f"either {inline_option} or {source_option}")
    rows = column_values(data, source, source_option)
    if len(queries) not in (1, len(rows)):
        expected = f"one query, or one query per row of '{source}' ({len(rows)} rows)"
        raise InvalidOptionError("query_text", reader.raw("query_text"), expected)
    if len(queries) == 1:
        queries = queries * len(rows)
    return [
        QueryRow(query, row, f"{source}[{position}]")
        for position, (query, row) in enumerate(zip(queries, rows, strict=True))
    ]


def passage_requests(
    reader: OptionReader, data: ReadableFrame | None, inline_option: str, source_option: str
) -> list[tuple[str, list[Document]]]:
    """(query, passages) per output row: items read as passages (see ``read_passages``), in the given order, with
    those failing ``filters`` removed, so a filtered passage is never ranked, drawn from or cited."""
    rows = query_rows(reader, data, inline_option, reader.raw(inline_option), source_option)
    metadata_filter = read_metadata_filter(reader)
    passages = _readable(reader, [read_passages(row.items, row.option) for row in rows], inline_option)
    requests = [(row.query, items) for row, items in zip(rows, passages, strict=True)]
    if metadata_filter is None:
        return requests
    return [(query, metadata_filter.apply(passages)) for query, passages in requests]


def _readable(reader: OptionReader, lists: list[list[Document]], option: str) -> list[list[Document]]:
    """Each query's items cut to what the request's principals may read (``core.documents.visibility``)."""
    return Visibility.read(reader).visible_lists(lists, lambda item: label_of(item.metadata), option)


@dataclass(frozen=True)
class Incoming:
    """An item's place in the list it came in: its position from 1 and the ``score`` it carried (None without)."""

    rank: int
    score: float | None


def incoming_places(
    reader: OptionReader, data: ReadableFrame | None, inline_option: str, source_option: str
) -> list[dict[str, Incoming]]:
    """Per output row of ``passage_requests``, each item's doc_id -> its incoming place, before ``filters``. Read
    again only for explanations, so the common path never keeps the scores it drops."""
    rows = query_rows(reader, data, inline_option, reader.raw(inline_option), source_option)
    readable = _readable(reader, [read_passages(row.items, row.option) for row in rows], inline_option)
    incoming = [read_documents(row.items, row.option) for row in rows]
    return [
        {
            document.doc_id: Incoming(position, _incoming_score(document.metadata.get("score")))
            for position, document in enumerate(_kept(items, kept), start=1)
        }
        for items, kept in zip(incoming, readable, strict=True)
    ]


def _kept(items: list[Document], kept: list[Document]) -> list[Document]:
    """``items`` (as they came, scores kept) that are in ``kept``: a place counts only the items the caller may read."""
    ids = {document.doc_id for document in kept}
    return [document for document in items if document.doc_id in ids]


def _incoming_score(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def read_index_dir(reader: OptionReader, *, required: bool = False) -> Path | None:
    path: Path | None = reader.path(INDEX_DIR.key, default=None if not required else REQUIRED)
    return path
