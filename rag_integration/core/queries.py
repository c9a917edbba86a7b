"""Reading what every retrieval-shaped request has: its queries and its index folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.frames import column_values
from rag_integration.core.options import OptionReader


def read_queries(reader: OptionReader, data: Any) -> list[str]:
    """``query_text`` (a str or a list of str) or the rows of the upstream feature named by ``queries_source``."""
    if reader.has("query_text") and reader.has("queries_source"):
        raise InvalidOptionError("queries_source", reader.raw("queries_source"), "either query_text or queries_source")
    if reader.has("queries_source"):
        source = reader.string("queries_source")
        queries = column_values(data, source, "queries_source")
        for position, query in enumerate(queries):
            if not isinstance(query, str):
                raise InvalidOptionError(f"{source}[{position}]", query, "a query string in every row")
        return queries
    if not reader.has("query_text"):
        raise MissingOptionError("query_text", "a string or a list of strings (or queries_source)", owner=reader.owner)
    query_text = reader.string_or_strings("query_text")
    return [query_text] if isinstance(query_text, str) else query_text


def read_index_dir(reader: OptionReader, *, required: bool = False) -> Path | None:
    value = reader.raw("index_dir")
    if value is None:
        if required:
            raise MissingOptionError("index_dir", "the folder holding the index", owner=reader.owner)
        return None
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value):
        return Path(value)
    raise InvalidOptionError("index_dir", value, "a folder path (str or os.PathLike)")
