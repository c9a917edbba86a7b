"""Documents read from files: a folder, a file or a glob of ``.txt``, ``.md``, ``.rst``, ``.html``, ``.pdf`` (extra
``pdf``), ``.docx`` (extra ``docx``), ``.jsonl`` and ``.csv``."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents.encodings import decode_text
from rag_integration.core.documents.files import (
    DEFAULT_MAX_FILE_BYTES,
    READ_FILES,
    SKIPPED_FILES,
    FileRules,
    FoundFile,
    find_files,
    read_file_bytes,
    skip_unreadable,
)
from rag_integration.core.documents.html_text import html_text
from rag_integration.core.documents.office_text import docx_text, pdf_pages
from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes.store import store_folder
from rag_integration.core.options import OptionReader, option, read_options
from rag_integration.feature_groups.rag_pipeline.documents.base import BaseDocumentSource

SUFFIXES = (".txt", ".md", ".rst", ".html", ".htm", ".pdf", ".docx", ".jsonl", ".csv")
HTML_SUFFIXES = (".html", ".htm")
BINARY_SUFFIXES = (".pdf", ".docx")
MAX_JSON_NESTING = 64
"""How deeply a JSONL record may nest: deeper is refused before it can exhaust the parser's recursion."""


@dataclass(frozen=True)
class FileSourceSettings:
    paths: str | list[str] = option(
        "paths", "string_or_strings", "a folder (read recursively), a file or a glob, or a list of them"
    )
    encoding: str = option(
        "encoding",
        "string",
        "the text encoding of files without a byte-order mark (with utf-8, a web page's declared charset is read)",
        default="utf-8",
    )
    text_field: str = option(
        "text_field", "string", "the text's field in a `.jsonl` record or `.csv` row", default="text"
    )
    id_field: str = option(
        "id_field", "string", "the doc_id's field in a `.jsonl` record or `.csv` row", default="doc_id"
    )
    follow_symlinks: bool = option(
        "follow_symlinks",
        "boolean",
        "read links to files inside the folder given (links leading out of it are always skipped); False skips every "
        "link",
        default=True,
    )
    max_file_bytes: int = option(
        "max_file_bytes",
        "integer",
        "the largest file read (a larger one is refused)",
        default=DEFAULT_MAX_FILE_BYTES,
        minimum=1,
    )


class FileDocumentSource(BaseDocumentSource):
    """``document_source="files"``: ``paths`` (str or list); a .txt/.md/.rst file is one document (with its
    ``line_start`` and ``line_end``), an .html page or a .docx one document of its text with its ``title``, a .pdf
    page one document with its ``page``, a .jsonl line or a .csv row one document (``text_field``, ``id_field``);
    every document records its file in ``source``. A file that is not read is recorded in ``SKIPPED_FILES``: one of
    another type, and one a folder or glob held whose content cannot be read (text not in ``encoding``, a damaged
    PDF or .docx); a file named on its own that cannot be read, or a malformed record, is an ``InvalidOptionError``.
    Folders are untrusted (``core.documents.files``): ``follow_symlinks`` (links inside the folder given) and ``max_file_bytes`` bound them."""

    BACKEND: ClassVar[str | None] = "files"
    SETTINGS: ClassVar[type[Any] | None] = FileSourceSettings
    OPTION: ClassVar[str] = "paths"

    @classmethod
    def load(cls, reader: OptionReader) -> list[dict[str, Any]]:
        settings = read_options(FileSourceSettings, reader)
        rules = FileRules(
            suffixes=SUFFIXES,
            follow_symlinks=settings.follow_symlinks,
            max_file_bytes=settings.max_file_bytes,
            skip_folder=store_folder,
        )
        paths = settings.paths
        documents: list[dict[str, Any]] = []
        for file in find_files([paths] if isinstance(paths, str) else paths, rules):
            try:
                data = read_file_bytes(file, rules)
                READ_FILES.record(file.real, data)
                documents.extend(_read_file(file, data, settings))
            except InvalidOptionError as error:
                if not file.named and error.option == "text_field":  # a table of data a folder holds, not documents
                    SKIPPED_FILES.record(
                        file.shown, f"records without a {settings.text_field!r} field (text_field): data, not documents"
                    )
                elif not skip_unreadable(file, error, rules):
                    raise
        return documents


def _read_file(found: FoundFile, data: bytes, settings: FileSourceSettings) -> list[dict[str, Any]]:
    file = found.shown
    suffix = file.suffix.lower()
    if suffix in BINARY_SUFFIXES:
        return _binary_documents(found, data)
    try:
        content = decode_text(data, settings.encoding, html=suffix in HTML_SUFFIXES)
    except UnicodeDecodeError as error:
        raise InvalidOptionError(
            "paths", str(file), f"text in {error.encoding} (byte {error.start}: {error.reason})"
        ) from error
    except LookupError as error:
        raise InvalidOptionError("encoding", settings.encoding, "a codec Python knows") from error
    if "\r" in content:  # an old Mac file's lone CR ends a line as LF does: lines, paragraphs and citations count it
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    if suffix == ".jsonl":
        records = _jsonl_records(content, file)
    elif suffix == ".csv":
        records = _csv_records(content, file)
    elif not content.strip():
        SKIPPED_FILES.record(file, "no text")
        return []
    elif suffix in HTML_SUFFIXES:
        page = html_text(content)
        if not page.text.strip():
            SKIPPED_FILES.record(file, "no text in the page's body")
            return []
        return [{"doc_id": found.name, "text": page.text, "source": str(file), "title": page.title}]
    else:
        lines = {"line_start": 1, "line_end": content.count("\n", 0, len(content.rstrip("\n"))) + 1}
        return [{"doc_id": found.name, "text": content, "source": str(file), **lines}]
    return [
        _record_document(record, file, f"{found.name}:{number}", settings)
        for number, record in enumerate(records, start=1)
    ]


def _binary_documents(found: FoundFile, data: bytes) -> list[dict[str, Any]]:
    """A PDF's pages with text, one document each, or a .docx as one document; a file whose library is not
    installed, or that holds no text, is recorded as skipped."""
    file = found.shown
    if file.suffix.lower() == ".docx":
        document = docx_text(data, str(file))
        if document is None:
            SKIPPED_FILES.record(file, "a .docx needs the 'docx' extra (python-docx)")
            return []
        if not document.text.strip():
            SKIPPED_FILES.record(file, "no text")
            return []
        titled = {"title": document.title} if document.title else {}
        return [{"doc_id": found.name, "text": document.text, "source": str(file), **titled}]
    pages = pdf_pages(data, str(file))
    if pages is None:
        SKIPPED_FILES.record(file, "a .pdf needs the 'pdf' extra (pypdf)")
        return []
    documents = [
        {"doc_id": f"{found.name}:{page.number}", "text": page.text, "source": str(file), "page": page.number}
        | ({"title": page.title} if page.title else {})
        for page in pages
        if page.text.strip()
    ]
    if not documents:
        SKIPPED_FILES.record(file, "no text layer (scanned pages need OCR first)")
    return documents


def _csv_records(content: str, file: Path) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(content, newline=""))
    records = []
    try:
        for record in reader:
            if None in record or None in record.values():
                expected = "a CSV row with one value per header column"
                raise InvalidOptionError("paths", f"{file}:{reader.line_num}", expected)
            records.append(record)
    except csv.Error as error:  # a field over csv.field_size_limit(), a NUL byte, an unclosed quote at the end
        raise InvalidOptionError("paths", f"{file}:{reader.line_num}", f"well-formed CSV ({error})") from error
    return records


def _jsonl_records(content: str, file: Path) -> list[dict[str, Any]]:
    records = []
    for line_number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}:{line_number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidOptionError("paths", where, f"one JSON object per line ({error.msg})") from error
        except ValueError as error:  # an integer past Python's int-string conversion limit
            raise InvalidOptionError("paths", where, f"one JSON object per line ({error})") from error
        except RecursionError as error:
            raise InvalidOptionError("paths", where, f"JSON nested at most {MAX_JSON_NESTING} deep") from error
        if not isinstance(record, dict):
            raise InvalidOptionError("paths", where, "one JSON object per line")
        if _nesting(record) > MAX_JSON_NESTING:
            raise InvalidOptionError("paths", where, f"JSON nested at most {MAX_JSON_NESTING} deep")
        records.append(record)
    return records


def _nesting(value: object) -> int:
    """How deeply lists and dicts nest in a parsed value, found without recursion (linear in its size)."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            if depth <= MAX_JSON_NESTING:
                pending.extend((child, depth + 1) for child in item)
    return deepest


def _record_document(
    record: dict[str, Any], file: Path, fallback_id: str, settings: FileSourceSettings
) -> dict[str, Any]:
    text_field, id_field = settings.text_field, settings.id_field
    if not isinstance(record.get(text_field), str):
        raise InvalidOptionError("text_field", text_field, f"a text column/key present in every record of {file}")
    metadata = {key: value for key, value in record.items() if key not in (text_field, id_field)}
    doc_id = record.get(id_field)
    return {
        **metadata,
        "doc_id": fallback_id if doc_id in (None, "") else doc_id,
        "text": record[text_field],
        "source": str(file),
    }
