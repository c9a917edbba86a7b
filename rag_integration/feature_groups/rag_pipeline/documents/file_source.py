"""Documents read from files: a folder, a file or a glob of ``.txt``, ``.md``, ``.jsonl`` and ``.csv``."""

from __future__ import annotations

import csv
import glob
import io
import json
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.rag_pipeline.documents.base import BaseDocumentSource

SUFFIXES = (".txt", ".md", ".jsonl", ".csv")


class FileDocumentSource(BaseDocumentSource):
    """``document_source="files"``: ``paths`` (str or list); a .txt/.md file is one document, a .jsonl line or a
    .csv row is one document (``text_field``, ``id_field``); every document records its file in ``source``."""

    BACKEND: ClassVar[str | None] = "files"
    OPTIONS: ClassVar[tuple[str, ...]] = ("paths", "encoding", "text_field", "id_field")
    OPTION: ClassVar[str] = "paths"

    @classmethod
    def load(cls, reader: OptionReader) -> list[dict[str, Any]]:
        paths = reader.string_or_strings("paths")
        settings = {
            "encoding": reader.string("encoding", default="utf-8"),
            "text_field": reader.string("text_field", default="text"),
            "id_field": reader.string("id_field", default="doc_id"),
        }
        documents: list[dict[str, Any]] = []
        for file, file_id in _resolve([paths] if isinstance(paths, str) else paths):
            documents.extend(_read_file(file, file_id, settings))
        return documents


def _resolve(patterns: list[str]) -> list[tuple[Path, str]]:
    """(file, id) pairs in sorted order; a folder's files are named by their path inside it."""
    files: list[tuple[Path, str]] = []
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            files.extend((file, file.relative_to(path).as_posix()) for file in found)
        elif path.is_file():
            if path.suffix.lower() not in SUFFIXES:
                raise InvalidOptionError("paths", pattern, "files ending in " + ", ".join(SUFFIXES))
            files.append((path, path.name))
        else:
            matches = sorted(Path(m) for m in glob.glob(pattern, recursive=True))
            matches = [m for m in matches if m.is_file() and m.suffix.lower() in SUFFIXES]
            if not matches:
                raise InvalidOptionError("paths", pattern, "an existing file, folder or glob matching supported files")
            files.extend((match, match.name) for match in matches)
    return files


def _read_file(file: Path, file_id: str, settings: dict[str, str]) -> list[dict[str, Any]]:
    try:
        content = file.read_bytes().decode(settings["encoding"])
    except UnicodeDecodeError as error:
        raise InvalidOptionError(
            "paths", str(file), f"text in {settings['encoding']} (byte {error.start}: {error.reason})"
        ) from error
    except LookupError as error:
        raise InvalidOptionError("encoding", settings["encoding"], "a codec Python knows") from error
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        records = _jsonl_records(content, file)
    elif suffix == ".csv":
        records = _csv_records(content, file)
    else:
        return [{"doc_id": file_id, "text": content, "source": str(file)}]
    return [
        _record_document(record, file, f"{file_id}:{number}", settings)
        for number, record in enumerate(records, start=1)
    ]


def _csv_records(content: str, file: Path) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(content, newline=""))
    records = []
    for record in reader:
        if None in record or None in record.values():
            raise InvalidOptionError("paths", f"{file}:{reader.line_num}", "a CSV row with one value per header column")
        records.append(record)
    return records


def _jsonl_records(content: str, file: Path) -> list[dict[str, Any]]:
    records = []
    for line_number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidOptionError(
                "paths", f"{file}:{line_number}", f"one JSON object per line ({error.msg})"
            ) from error
        if not isinstance(record, dict):
            raise InvalidOptionError("paths", f"{file}:{line_number}", "one JSON object per line")
        records.append(record)
    return records


def _record_document(record: dict[str, Any], file: Path, fallback_id: str, settings: dict[str, str]) -> dict[str, Any]:
    text_field, id_field = settings["text_field"], settings["id_field"]
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
