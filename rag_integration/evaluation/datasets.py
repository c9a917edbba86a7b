"""Test collections read from disk: BEIR-format folders and SMART collections (Cranfield).

Files are untrusted: each is read once, line by line, with a cap on the length of a line and on the number of
records, and anything malformed raises ``DatasetFormatError`` naming the file, the line and what was expected.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.errors import DatasetFormatError

MAX_LINE_CHARS = 1_000_000
"""Longest line read from a dataset file; a longer one is refused rather than held in memory."""
MAX_RECORDS = 10_000_000
"""Most records (documents, queries or judgements) read from one file."""
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")
SMART_TEXT_FIELDS = frozenset({"T", "W"})
"""The fields a SMART record is read for (title, text); the others (.A author, .B source, .X references...) are
skipped."""
SMART_DOCUMENTS = ("*.all.*", "*.all")
SMART_QUERIES = ("*.qry", "query.text")
SMART_CODED_QRELS = ("*qrel",)
SMART_QRELS = (*SMART_CODED_QRELS, "*.rel", "qrels.text")
CRANFIELD_CODES = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}
"""Cranfield relevance code -> gain: 1 (complete answer) is worth 4, 4 (minimum interest) 1, -1 nothing."""

Qrels = dict[str, dict[str, int]]
"""query id -> {doc_id: relevance}; relevance >= 1 counts as relevant for the binary metrics."""


@dataclass(frozen=True)
class Dataset:
    """One test collection: documents to index, judged queries (in a fixed order) and their relevance judgements."""

    name: str
    documents: list[dict[str, str]]
    queries: dict[str, str]
    qrels: Qrels

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)

    def judgements(self) -> list[dict[str, int]]:
        """The judgements of every query, in query order (the ``qrels`` option of ``retrieval_metrics``)."""
        return [self.qrels[query_id] for query_id in self.queries]


def load_dataset(folder: str | Path, split: str = "test") -> Dataset:
    """A BEIR folder (``corpus.jsonl``) or a SMART collection (``*.all.*`` or ``*.all``, ``*.qry`` or ``query.text``,
    ``*qrel``, ``*.rel`` or ``qrels.text``; names in any letter case), by what it holds."""
    root = Path(folder)
    if not root.is_dir():
        raise DatasetFormatError(root, None, "not a folder", "a BEIR folder or a SMART collection folder")
    if (root / "corpus.jsonl").is_file():
        return load_beir(root, split)
    if _matching(root, SMART_DOCUMENTS):
        return load_smart(root)
    raise DatasetFormatError(
        root, None, "holds neither corpus.jsonl nor a SMART *.all file", "a BEIR folder or a SMART collection"
    )


def load_beir(folder: str | Path, split: str = "test") -> Dataset:
    """``corpus.jsonl`` (indexed as title + text), ``queries.jsonl`` and ``qrels/<split>.tsv``: the judged queries
    only, in the order of their first judgement."""
    root = Path(folder)
    documents = []
    seen: set[str] = set()
    corpus_file = root / "corpus.jsonl"
    for number, record in _json_lines(corpus_file):
        doc_id = _string_field(record, "_id", corpus_file, number)
        text = _string_field(record, "text", corpus_file, number)
        title = record.get("title", "")
        if not isinstance(title, str):
            raise DatasetFormatError(corpus_file, number, f"'title' is {type(title).__name__}", "a string")
        if doc_id in seen:
            raise DatasetFormatError(corpus_file, number, f"duplicate _id {doc_id!r}", "unique document ids")
        seen.add(doc_id)
        documents.append({"doc_id": doc_id, "text": f"{title} {text}".strip()})
    queries_file = root / "queries.jsonl"
    all_queries: dict[str, str] = {}
    for number, record in _json_lines(queries_file):
        query_id = _string_field(record, "_id", queries_file, number)
        if query_id in all_queries:
            raise DatasetFormatError(queries_file, number, f"duplicate _id {query_id!r}", "unique query ids")
        all_queries[query_id] = _string_field(record, "text", queries_file, number)
    qrels = _beir_qrels(root / "qrels" / f"{split}.tsv", all_queries)
    return Dataset(root.name, documents, {query_id: all_queries[query_id] for query_id in qrels}, qrels)


def load_smart(folder: str | Path) -> Dataset:
    """A SMART collection (Cranfield, CISI, CACM, MED, ADI): ``*.all`` documents (title + text), queries numbered
    1..n by position (the ``.I`` numbers of Cranfield's queries skip values), and judgements.

    Cranfield's ``*qrel`` lines are ``query doc code``: codes become gains 4 (code 1, complete answer) to 1 (code 4,
    minimum interest); code -1 is not relevant. The others' ``*.rel`` / ``qrels.text`` lines start ``query doc``
    (what follows is not a grade) and judge the document relevant (gain 1). The binary metrics count every gain >= 1
    as relevant (codes 1-4, the common convention).
    """
    root = Path(folder)
    documents_file = _single_file(root, SMART_DOCUMENTS)
    queries_file = _single_file(root, SMART_QUERIES)
    qrels_file = _single_file(root, SMART_QRELS)
    coded = bool(_matching(root, SMART_CODED_QRELS))
    documents = []
    seen: set[str] = set()
    for number, doc_id, fields in _smart_records(documents_file):
        if doc_id in seen:
            raise DatasetFormatError(documents_file, number, f"duplicate .I {doc_id!r}", "unique document ids")
        seen.add(doc_id)
        documents.append({"doc_id": doc_id, "text": f"{fields.get('T', '')} {fields.get('W', '')}".strip()})
    all_queries = {
        str(position): fields.get("W", "").strip()
        for position, (_, _, fields) in enumerate(_smart_records(queries_file), start=1)
    }
    qrels: Qrels = {}
    for number, line in _lines(qrels_file):
        parts = line.split()
        if not parts:
            continue
        if coded and (len(parts) != 3 or not all(_is_int(part) for part in parts)):
            raise DatasetFormatError(qrels_file, number, f"line {line[:60]!r}", "three integers: query doc code")
        if not coded and (len(parts) < 2 or not all(_is_int(part) for part in parts[:2])):
            raise DatasetFormatError(qrels_file, number, f"line {line[:60]!r}", "two integers first: query doc")
        query_id, doc_id = str(int(parts[0])), str(int(parts[1]))
        gain = CRANFIELD_CODES.get(int(parts[2])) if coded else 1
        if gain is None:
            raise DatasetFormatError(qrels_file, number, f"code {parts[2]}", "a relevance code 1, 2, 3, 4 or -1")
        if query_id not in all_queries:
            raise DatasetFormatError(qrels_file, number, f"query {query_id}", f"a query number 1..{len(all_queries)}")
        if gain > 0:
            qrels.setdefault(query_id, {})[doc_id] = gain
    ordered = {query_id: all_queries[query_id] for query_id in all_queries if query_id in qrels}
    return Dataset(root.name, documents, ordered, {query_id: qrels[query_id] for query_id in ordered})


def _beir_qrels(path: Path, queries: Mapping[str, str]) -> Qrels:
    qrels: Qrels = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        cells = tuple(cell.strip() for cell in line.split("\t"))
        if number == 1 and cells == BEIR_QRELS_HEADER:
            continue
        if len(cells) != 3 or not _is_int(cells[2]) or not cells[0] or not cells[1]:
            raise DatasetFormatError(path, number, f"line {line[:60]!r}", "query-id<TAB>corpus-id<TAB>integer score")
        if cells[0] not in queries:
            raise DatasetFormatError(path, number, f"query-id {cells[0]!r}", "an _id from queries.jsonl")
        qrels.setdefault(cells[0], {})[cells[1]] = int(cells[2])
    if not qrels:
        raise DatasetFormatError(path, None, "no judgements", "at least one query-id corpus-id score line")
    return qrels


def _json_lines(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetFormatError(path, number, f"invalid JSON ({error.msg})", "one JSON object a line") from error
        except (ValueError, RecursionError) as error:  # a number too long for int(), nesting too deep to parse
            raise DatasetFormatError(path, number, "unreadable JSON", "one JSON object a line") from error
        if not isinstance(record, dict):
            raise DatasetFormatError(path, number, f"a JSON {type(record).__name__}", "one JSON object a line")
        yield number, record


def _smart_records(path: Path) -> Iterator[tuple[int, str, dict[str, str]]]:
    """(line of ``.I``, its id, {field letter: text}) per record. A field given twice in one record is joined (two
    Cranfield documents repeat ``.W``); text before the first ``.I`` or under an unknown field is refused."""
    start, record_id, field = 0, "", ""
    fields: dict[str, list[str]] = {}
    for number, line in _lines(path):
        if line.startswith(".I"):
            if record_id:
                yield start, record_id, {name: " ".join(parts) for name, parts in fields.items()}
            record_id = line[2:].strip()
            if not record_id or not record_id.isdigit():
                raise DatasetFormatError(path, number, f"record header {line[:60]!r}", "'.I <number>'")
            start, fields, field = number, {}, ""
        elif len(marker := line.strip()) == 2 and marker[0] == "." and "A" <= marker[1] <= "Z":
            if not record_id:
                raise DatasetFormatError(path, number, f"field {marker!r} before any record", "'.I <number>'")
            field = marker[1]
            if field in SMART_TEXT_FIELDS:
                fields.setdefault(field, [])
        elif line.strip():
            if not field:
                raise DatasetFormatError(
                    path, number, f"text {line[:60]!r} outside a field", "a field such as .T or .W"
                )
            if field in SMART_TEXT_FIELDS:
                fields[field].append(line.strip())
    if not record_id:
        raise DatasetFormatError(path, None, "no records", "records starting with '.I <number>'")
    yield start, record_id, {name: " ".join(parts) for name, parts in fields.items()}


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based number, line without its end) of a UTF-8 text file, refusing over-long lines and files."""
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as error:
        raise DatasetFormatError(path, None, f"cannot be read ({error.strerror})", "a readable text file") from error
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline(MAX_LINE_CHARS + 1)
            except UnicodeDecodeError as error:
                raise DatasetFormatError(path, number + 1, "bytes that are not UTF-8", "UTF-8 text") from error
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_CHARS:
                raise DatasetFormatError(path, number, "an over-long line", f"lines of at most {MAX_LINE_CHARS} chars")
            if number > MAX_RECORDS:
                raise DatasetFormatError(path, number, "too many lines", f"at most {MAX_RECORDS} lines")
            yield number, line.rstrip("\r\n")


def _matching(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The regular files of ``root`` whose lower-cased name matches one of ``patterns`` (readme files aside)."""
    return sorted(
        path
        for path in root.iterdir()
        if any(fnmatch.fnmatchcase(path.name.lower(), pattern) for pattern in patterns)
        and not path.name.lower().endswith(".readme")
        and path.is_file()
    )


def _single_file(root: Path, patterns: tuple[str, ...]) -> Path:
    found = _matching(root, patterns)
    if len(found) != 1:
        names = ", ".join(path.name for path in found) or "none"
        wanted = " or ".join(repr(pattern) for pattern in patterns)
        raise DatasetFormatError(root, None, f"files matching {wanted}: {names}", "exactly one")
    return found[0]


def _string_field(record: Mapping[str, Any], key: str, path: Path, number: int) -> str:
    value = record.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and key == "_id":
        return str(value)
    if not isinstance(value, str) or (key == "_id" and not value.strip()):
        raise DatasetFormatError(path, number, f"'{key}' is {value!r:.60}", f"a string '{key}'")
    return value


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit() and len(text) < 19
