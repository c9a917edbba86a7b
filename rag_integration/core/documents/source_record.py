"""What a store was built from: the folders, files and globs ``rag-integration index`` read, and each file's size,
modification time and content hash, kept beside the store (``sources.json``) and naming the store version it
describes. ``search`` and ``ask`` compare it with the folders as they are now and say what changed since."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_integration.core.documents.files import FileRules, ReadFile, find_files, read_regular_file
from rag_integration.core.errors import ConnectorError

RECORD_FILE = "sources.json"
RACY_NS = 2_000_000_000
"""How long before the record a file's last status change must be for its size and time to vouch for it: the
coarsest file-system clock (FAT's two seconds)."""
RECORD_FORMAT = "rag-integration-sources"
MAX_RECORD_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Changes:
    """Files added, changed and removed since a store was built."""

    added: int
    changed: int
    removed: int

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def describe(self) -> str:
        counts = [(self.changed, "changed"), (self.added, "added"), (self.removed, "removed")]
        return ", ".join(f"{count} file(s) {what}" for count, what in counts if count)


def save_record(folder: Path, version: str, patterns: Sequence[str], files: Sequence[ReadFile]) -> None:
    """Write the record of ``version`` atomically (a reader sees the old record or the new one)."""
    record = {
        "format": RECORD_FORMAT,
        "version": version,
        "patterns": [str(Path(pattern).resolve()) for pattern in patterns],
        "files": {file.path: [file.size, file.mtime_ns, file.sha256] for file in files},
    }
    descriptor, staged = tempfile.mkstemp(prefix=".sources-", dir=folder)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False)
        os.replace(staged, folder / RECORD_FILE)
    finally:
        if os.path.exists(staged):
            os.unlink(staged)


def move_record(folder: Path, version: str, new_version: str, without: set[str]) -> None:
    """The record of ``version`` carried over to ``new_version`` (the same files, less ``without``), as when some
    documents were forgotten: the next ``search`` then says those files were added since, which they would be if
    they are still there. No record of ``version``: nothing to carry (and none is made)."""
    found = _read_record(folder, version)
    if found is None:
        (folder / RECORD_FILE).unlink(missing_ok=True)
        return
    patterns, files = found
    kept = [ReadFile(path, *entry) for path, entry in files.items() if path not in without]
    save_record(folder, new_version, patterns, kept)


def changes_since(folder: Path, version: str, rules: FileRules) -> Changes | None:
    """How the files a store was built from differ from what its patterns find now; None when there is no record
    of this version (not built by ``index``, or rewritten since) or it cannot be read. A file whose size, time or
    status changed is hashed, so one only touched does not count as changed."""
    recorded = _read_record(folder, version)
    if recorded is None:
        return None
    patterns, files = recorded
    try:
        written = os.stat(folder / RECORD_FILE).st_mtime_ns
    except OSError:
        return None
    found: dict[str, Path] = {}
    for pattern in patterns:
        try:
            found.update((str(file.real), file.real) for file in find_files([pattern], rules))
        except (ConnectorError, OSError):
            continue  # a folder or file that is gone: its files count as removed
    changed = 0
    for path, real in found.items():
        if path in files and _differs(real, files[path], rules, written):
            changed += 1
    added = sum(1 for path in found if path not in files)
    removed = sum(1 for path in files if path not in found)
    return Changes(added, changed, removed)


def _differs(path: Path, recorded: tuple[int, int, str], rules: FileRules, written: int) -> bool:
    """Whether the file's content differs from the record. Size and modification time alike are trusted only for a
    file whose status last changed well before the record was written (``RACY_NS``): the inode's change time cannot
    be set back, so an edit that kept the size and restored the time, or one in the same clock tick as the indexing
    (git's "racily clean" files), is hashed."""
    size, modified, digest = recorded
    try:
        status = os.stat(path)
        if status.st_size == size and status.st_mtime_ns == modified and status.st_ctime_ns + RACY_NS < written:
            return False
        return hashlib.sha256(read_regular_file(path, rules.max_file_bytes)).hexdigest() != digest
    except OSError:
        return True


def _read_record(folder: Path, version: str) -> tuple[list[str], dict[str, tuple[int, int, str]]] | None:
    """The record's patterns and files when it is well formed and describes ``version``; a record is data someone
    else may have written, so anything else is no record."""
    try:
        raw = json.loads(read_regular_file(folder / RECORD_FILE, MAX_RECORD_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("format") != RECORD_FORMAT or raw.get("version") != version:
        return None
    patterns, listed = raw.get("patterns"), raw.get("files")
    if not isinstance(patterns, list) or not all(isinstance(item, str) for item in patterns):
        return None
    if not isinstance(listed, dict):
        return None
    files: dict[str, tuple[int, int, str]] = {}
    for path, entry in listed.items():
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and all(type(value) is int for value in entry[:2])
            and isinstance(entry[2], str)
        ):
            return None
        files[path] = (entry[0], entry[1], entry[2])
    return patterns, files
