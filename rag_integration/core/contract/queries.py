"""Reading what requests share: their queries, their corpus, the items each query is answered over, an index folder.

Queries, corpora and items come inline from an option or from an upstream feature named by a ``*_source`` option,
so one ``run_all`` can chain the families.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.contract.feature_group import source_feature_name
from rag_integration.core.contract.frames import column_values
from rag_integration.core.documents.corpus import Corpus, Document, MetadataFilter, read_documents, read_passages
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import REQUIRED, OptionReader
from rag_integration.core.unicode_text import require_valid_text, require_valid_texts


def read_queries(reader: OptionReader, data: Any) -> list[str]:
    """``query_text`` (a str or a list of str) or the rows of the upstream feature named by ``queries_source``, each
    valid Unicode (``core.unicode_text``)."""
    if reader.has("query_text") and reader.has("queries_source"):
        raise InvalidOptionError("queries_source", reader.raw("queries_source"), "either query_text or queries_source")
    source = source_feature_name(reader, "queries_source")
    if source is not None:
        queries = column_values(data, source, "queries_source")
        for position, query in enumerate(queries):
            if not isinstance(query, str):
                raise InvalidOptionError(f"{source}[{position}]", query, "a query string in every row")
        require_valid_texts(queries, source)
        return queries
    if not reader.has("query_text"):
        raise MissingOptionError("query_text", "a string or a list of strings (or queries_source)", owner=reader.owner)
    query_text = reader.string_or_strings("query_text")
    if isinstance(query_text, str):
        return [require_valid_text(query_text, "query_text")]
    require_valid_texts(query_text, "query_text")
    return list(query_text)


def read_corpus(reader: OptionReader, data: Any) -> Sequence[Document]:
    """``corpus`` (document dicts) or the rows of the upstream feature named by ``corpus_source``."""
    if reader.has("corpus") and reader.has("corpus_source"):
        raise InvalidOptionError("corpus_source", reader.raw("corpus_source"), "either corpus or corpus_source")
    source = source_feature_name(reader, "corpus_source")
    if source is not None:
        return read_documents(column_values(data, source, "corpus_source"), source)
    if not reader.has("corpus"):
        raise MissingOptionError("corpus", "a list of document dicts (or corpus_source)", owner=reader.owner)
    corpus = reader.raw("corpus")
    return corpus if isinstance(corpus, Corpus) else Corpus(corpus, "corpus")


@dataclass(frozen=True)
class QueryRow:
    """One output row: its query, the raw items it is answered over, and the option those items came from."""

    query: str
    items: Any
    option: str


def query_rows(reader: OptionReader, data: Any, inline_option: str, inline: Any, source_option: str) -> list[QueryRow]:
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
    reader: OptionReader, data: Any, inline_option: str, source_option: str
) -> list[tuple[str, list[Document]]]:
    """(query, passages) per output row: items read as passages (see ``read_passages``), in the given order, with
    those failing ``filters`` removed, so a filtered passage is never ranked, drawn from or cited."""
    rows = query_rows(reader, data, inline_option, reader.raw(inline_option), source_option)
    metadata_filter = MetadataFilter.from_option(reader.raw("filters"))
    requests = [(row.query, read_passages(row.items, row.option)) for row in rows]
    if metadata_filter is None:
        return requests
    return [(query, metadata_filter.apply(passages)) for query, passages in requests]


def read_index_dir(reader: OptionReader, *, required: bool = False) -> Path | None:
    path: Path | None = reader.path("index_dir", default=None if not required else REQUIRED)
    return path
