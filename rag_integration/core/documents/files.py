"""Untrusted folders: list the files a folder, file or glob names without leaving its root, and read each one
within a size limit.

Every path is resolved and must stay inside its root (the folder, the named file's folder, or a glob's leading
folder). Folders are walked with ``os.scandir`` without following links, so a symlinked folder is never descended
and a link loop cannot hang a ``**`` glob; a symlinked file is read only with ``follow_symlinks`` and only when it
resolves to a regular file inside the root. Pseudo-files (``/proc``, ``/sys``, ``/dev``), FIFOs, sockets and
devices are refused.
"""

from __future__ import annotations

import contextvars
import dataclasses
import fnmatch
import functools
import hashlib
import logging
import os
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from rag_integration.core.errors import InvalidOptionError, UnsafePathError

LOGGER = logging.getLogger(__name__)
Entry = TypeVar("Entry")

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_FOLDER_ENTRIES = 1_000_000
"""How many folder entries one pattern may walk: the walk is bounded in time even on a huge tree."""
PSEUDO_FILESYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
GLOB_MAGIC = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file a folder or glob held that was not read, and why."""

    path: str
    reason: str


class _FileLog(Generic[Entry]):
    """What runs noted about files. Inside ``collecting()`` a run's notes go to its own list (a context variable:
    two runs in two threads, or two tasks, never see each other's files); outside one they go to a process-wide
    list that ``take`` empties (a library caller reading the log)."""

    def __init__(self, name: str) -> None:
        self._entries: list[Entry] = []
        self._lock = threading.Lock()
        self._scope: contextvars.ContextVar[list[Entry] | None] = contextvars.ContextVar(name, default=None)

    def _add(self, entry: Entry) -> None:
        scoped = self._scope.get()
        if scoped is not None:
            scoped.append(entry)
            return
        with self._lock:
            self._entries.append(entry)

    @contextmanager
    def collecting(self) -> Iterator[list[Entry]]:
        """A list that receives what is noted in this context until the block ends."""
        collected: list[Entry] = []
        token = self._scope.set(collected)
        try:
            yield collected
        finally:
            self._scope.reset(token)

    def take(self) -> list[Entry]:
        """What was noted outside any ``collecting`` block since the last ``take``, forgotten here."""
        with self._lock:
            taken, self._entries = self._entries, []
        return taken


class SkippedFiles(_FileLog[SkippedFile]):
    """Every file not read, with its reason: logged for a library caller, counted (and with ``--verbose`` listed)
    by the command line."""

    def record(self, path: Path | str, reason: str) -> None:
        LOGGER.info("file source: skipped %s: %s", path, reason)
        self._add(SkippedFile(str(path), reason))


SKIPPED_FILES = SkippedFiles("rag_integration_skipped_files")


@dataclass(frozen=True, slots=True)
class ReadFile:
    """A file a document source read: its resolved path, size, modification time and content hash."""

    path: str
    size: int
    mtime_ns: int
    sha256: str


class ReadFiles(_FileLog[ReadFile]):
    """Every file read, for the command line's record of what an index was built from (``index``)."""

    def record(self, path: Path, data: bytes) -> None:
        try:
            modified = os.stat(path).st_mtime_ns
        except OSError:
            return
        self._add(ReadFile(str(path), len(data), modified, hashlib.sha256(data).hexdigest()))


READ_FILES = ReadFiles("rag_integration_read_files")


@dataclass(frozen=True, slots=True)
class FileRules:
    """Which files a pattern may yield: their suffixes, whether links to files inside the folder given are followed
    (those leading out never are), how large one may be."""

    suffixes: tuple[str, ...]
    follow_symlinks: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    option: str = "paths"
    size_option: str | None = "max_file_bytes"
    """The option that raises the size limit, named when a file is too large (None: the limit is fixed)."""
    skip_folder: Callable[[Path], str | None] | None = None
    """Why a folder met in a walk is not read (None: it is), e.g. a persisted index's own folder."""


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A file to read: ``real`` (resolved and checked) is opened; ``shown`` is the path as found, ``name`` its id;
    ``named`` when a pattern named it on its own (not found in a folder or by a glob)."""

    real: Path
    shown: Path
    name: str
    named: bool = False


def find_files(patterns: Sequence[str], rules: FileRules) -> list[FoundFile]:
    """The files every pattern names, pattern by pattern, each pattern's files sorted by their path inside it. A
    file two patterns name is read once (the first time); files of different folders sharing a name
    (``a/README.md`` and ``b/README.md`` given as ``a`` and ``b``) are each named by their path as found."""
    found: list[FoundFile] = []
    seen: set[str] = set()
    for pattern in patterns:
        for file in _find(pattern, rules):
            where = os.path.abspath(file.shown)  # the same path given twice; a link to a file is a file of its own
            if where not in seen:
                seen.add(where)
                found.append(file)
    names = Counter(file.name for file in found)
    return [file if names[file.name] == 1 else dataclasses.replace(file, name=file.shown.as_posix()) for file in found]


def _find(pattern: str, rules: FileRules) -> list[FoundFile]:
    path = Path(pattern)
    if is_glob(pattern):
        return _glob(pattern, rules)
    if path.is_dir():
        files = _walk(path, rules, lambda relative: True, max_depth=None)
        return [FoundFile(real, shown, relative) for relative, real, shown in files]
    if os.path.lexists(path):
        if path.suffix.lower() not in rules.suffixes:
            raise InvalidOptionError(rules.option, pattern, "files ending in " + ", ".join(rules.suffixes))
        root = path.parent.resolve()
        return [FoundFile(_checked(path, root, rules), path, path.name, named=True)]
    raise InvalidOptionError(rules.option, pattern, "an existing file, folder or glob matching supported files")


def missing(pattern: str, suffixes: Sequence[str]) -> str | None:
    """Why ``pattern`` can name no file, found without walking a folder (a caller's early usage check): a path
    that does not exist, a file of a type not read (``suffixes``), a glob whose leading folder does not exist;
    None when it may name files. What a walk finds is ``find_files``'s to say."""
    if is_glob(pattern):
        root, _ = _glob_parts(pattern)
        return None if root.is_dir() else f"a glob whose folder {str(root)!r} exists"
    path = Path(pattern)
    if not os.path.lexists(path):
        return "an existing file, folder or glob"
    if not path.is_dir() and path.suffix.lower() not in suffixes:
        return "a folder, a glob or a file ending in " + ", ".join(suffixes)
    return None


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a wildcard (``*``, ``?``, ``[``) and is not an existing path: a folder called
    ``My [Docs]`` or a file ``report [final].txt`` is read as what it is, not matched as a pattern."""
    return any(char in GLOB_MAGIC for char in pattern) and not os.path.lexists(pattern)


def _glob_parts(pattern: str) -> tuple[Path, tuple[str, ...]]:
    """A glob's leading folder (its parts without wildcards; ``.`` when none) and the parts matched below it."""
    parts = Path(pattern).parts
    fixed = next(position for position, part in enumerate(parts) if any(char in GLOB_MAGIC for char in part))
    return (Path(*parts[:fixed]) if fixed else Path(".")), parts[fixed:]


def _glob(pattern: str, rules: FileRules) -> list[FoundFile]:
    """A glob's files: its leading folder (the parts without wildcards) walked once, the rest matched per part.

    Each file is named by its path inside that folder, as a folder walk names it, so ``docs/**/*.md`` keeps
    ``a/README.md`` and ``b/README.md`` apart."""
    root, wanted = _glob_parts(pattern)
    if not root.is_dir():
        raise InvalidOptionError(rules.option, pattern, "an existing file, folder or glob matching supported files")
    max_depth = None if "**" in wanted else len(wanted)
    files = _walk(root, rules, lambda relative: _matches(relative.split("/"), wanted), max_depth=max_depth)
    if not files:
        raise InvalidOptionError(rules.option, pattern, "an existing file, folder or glob matching supported files")
    return [FoundFile(real, shown, relative) for relative, real, shown in files]


def _matches(names: list[str], wanted: Sequence[str]) -> bool:
    """Whether path parts match glob parts (``**`` is any number of folders), letter case aside (``*.txt`` takes
    ``NOTES.TXT``, as the suffixes read do); a name starting with a dot matches only a part that starts with one, as
    ``glob`` does. Memoised, so at most parts x names steps."""

    @functools.cache
    def match(name: int, part: int) -> bool:
        if part == len(wanted):
            return name == len(names)
        if name < len(names) and names[name].startswith(".") and not wanted[part].startswith("."):
            return wanted[part] == "**" and match(name, part + 1)
        if wanted[part] == "**":
            return match(name, part + 1) or (name < len(names) and match(name + 1, part))
        found = name < len(names) and fnmatch.fnmatchcase(names[name].casefold(), wanted[part].casefold())
        return found and match(name + 1, part + 1)

    return match(0, 0)


def _walk(
    top: Path, rules: FileRules, accept: Callable[[str], bool], max_depth: int | None
) -> list[tuple[str, Path, Path]]:
    """(path inside ``top``, checked real path, path as found) of every accepted file, sorted by the first."""
    root = top.resolve()
    found: list[tuple[str, Path, Path]] = []
    pending: list[tuple[Path, str, int]] = [(top, "", 0)]
    visited = 0
    while pending:
        folder, prefix, depth = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as error:
            raise InvalidOptionError(rules.option, str(folder), f"a readable folder ({error.strerror})") from error
        visited += len(listed)
        if visited > MAX_FOLDER_ENTRIES:
            raise InvalidOptionError(rules.option, str(top), f"a folder of at most {MAX_FOLDER_ENTRIES:,} entries")
        for entry in sorted(listed, key=lambda item: item.name):
            relative = prefix + entry.name
            shown = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                why = _tool_folder(entry.name) or (None if rules.skip_folder is None else rules.skip_folder(shown))
                if why is not None:
                    SKIPPED_FILES.record(shown, why)
                elif max_depth is None or depth + 1 < max_depth:
                    pending.append((shown, relative + "/", depth + 1))
            elif entry.is_symlink() and (why := _unfollowed_link(shown)) is not None:
                if why == LINKED_FOLDER:
                    LOGGER.warning("file source: not descending into the symlinked folder %s", shown)
                SKIPPED_FILES.record(shown, why)
            elif not accept(relative):
                continue
            elif (suffix := Path(entry.name).suffix.lower()) not in rules.suffixes:
                SKIPPED_FILES.record(shown, f"not a file type read here ({suffix or 'no suffix'})")
            else:
                try:
                    found.append((relative, _checked(shown, root, rules), shown))
                except UnsafePathError as error:  # one file a folder holds never stops the folder's other files
                    SKIPPED_FILES.record(shown, f"not read: expected {str(error).partition(': expected ')[2]}")
    found.sort(key=lambda item: item[0])
    return found


LINKED_FOLDER = "a linked folder, not followed"
TOOL_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages"})
"""Folders that hold a tool's files, not the user's documents: a walk of a project folder does not read them."""


def _tool_folder(name: str) -> str | None:
    """Why a folder met in a walk is not read for its name: hidden (``.git``, ``.venv``) or a tool's own; one
    named on its own is read."""
    if name.startswith(".") or name in TOOL_FOLDERS:
        return "a hidden or tool folder, not read in a walk (name it on its own to read it)"
    return None


def _unfollowed_link(link: Path) -> str | None:
    """Why a link met in a folder walk is not read: a linked folder is never descended, and a link that loops or
    leads nowhere resolvable is skipped; None for a link to a file (``_checked`` decides on it)."""
    try:
        return LINKED_FOLDER if stat.S_ISDIR(os.stat(link).st_mode) else None
    except OSError:
        return "a looping or unresolvable link"


def _checked(path: Path, root: Path, rules: FileRules) -> Path:
    """The resolved path of a file that may be read: inside ``root`` (a link too, unless links are not followed);
    a link that leads out of the folder given reads nothing the user gave, so it never is."""
    if path.is_symlink() and not rules.follow_symlinks:
        raise UnsafePathError(
            rules.option,
            str(path),
            f"a file, not a symlink (to {os.readlink(path)!s}); set follow_symlinks=True to "
            "read links to regular files inside the folder",
        )
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        raise UnsafePathError(rules.option, str(path), f"a file inside {root} (it links to {real}, outside)")
    if any(real.is_relative_to(pseudo) for pseudo in PSEUDO_FILESYSTEMS):
        raise UnsafePathError(rules.option, str(path), f"a regular file, not the pseudo-file {real}")
    return real


class NotRegularFileError(OSError):
    """A path names a FIFO, socket, device or folder, never read as a file."""


class FileTooLargeError(OSError):
    """A regular file holds more bytes than its reader allows."""


def read_regular_file(path: Path | str, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file, else an ``OSError``: opened without following a final link and
    without blocking (a FIFO cannot hang the read), checked with ``fstat`` before a byte is read
    (``NotRegularFileError``) and refused past ``limit`` (``FileTooLargeError``)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFileError(f"{Path(path).name} is not a regular file")
        if status.st_size > limit:
            raise FileTooLargeError(f"{Path(path).name} is larger than {limit} bytes")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{Path(path).name} is larger than {limit} bytes")
    return data


def read_file_bytes(file: FoundFile, rules: FileRules) -> bytes:
    """The file's bytes, refused unless it is a regular file of at most ``max_file_bytes`` (``read_regular_file``;
    the path is already resolved, so not following a final link loses nothing)."""
    try:
        return read_regular_file(file.real, rules.max_file_bytes)
    except NotRegularFileError as error:
        raise UnsafePathError(rules.option, str(file.shown), "a regular file (not a FIFO, socket or device)") from error
    except FileTooLargeError as error:
        raise _too_large(file, rules) from error
    except OSError as error:
        raise InvalidOptionError(rules.option, str(file.shown), f"a readable file ({error.strerror})") from error


def read_named_file(path: Path, option: str, max_bytes: int) -> bytes:
    """The bytes of the one file an option names (no folder, no glob), under ``read_file_bytes``'s rules: a regular
    file outside the pseudo-filesystems, read without blocking and refused past ``max_bytes``."""
    real = Path(os.path.realpath(path))
    if any(real.is_relative_to(pseudo) for pseudo in PSEUDO_FILESYSTEMS):
        raise UnsafePathError(option, str(path), f"a regular file, not the pseudo-file {real}")
    rules = FileRules(suffixes=(), follow_symlinks=True, max_file_bytes=max_bytes, option=option, size_option=None)
    return read_file_bytes(FoundFile(real, path, path.name, named=True), rules)


def skip_unreadable(file: FoundFile, error: InvalidOptionError, rules: FileRules) -> bool:
    """Whether a reader's refusal of ``file`` as a whole (``error`` about the file's option, ``rules.option``, with
    the file as its value: not a regular file, too large, text not in the encoding, a damaged or locked PDF, a
    damaged .docx) was recorded in
    ``SKIPPED_FILES`` with its reason, so that one such file does not stop the others being read: so for a file a
    folder or glob held. Not for a file named on its own, an error about a record inside the file (its value
    ``file:line``) or one about another option: those stay the caller's to raise."""
    if file.named or error.option not in (rules.option, rules.size_option) or error.value != str(file.shown):
        return False
    _, found, expected = str(error).partition(": expected ")
    SKIPPED_FILES.record(file.shown, f"not readable: expected {expected}" if found else f"not readable: {error}")
    return True


def _too_large(file: FoundFile, rules: FileRules) -> InvalidOptionError:
    if rules.size_option is None:
        return InvalidOptionError(rules.option, str(file.shown), f"a file of at most {rules.max_file_bytes:,} bytes")
    return InvalidOptionError(
        rules.size_option,
        str(file.shown),
        f"a file of at most {rules.max_file_bytes:,} bytes (raise {rules.size_option})",
    )
