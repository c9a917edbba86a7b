"""Persisted indexes and vector stores: one folder format, one atomic writer, one verifying reader.

A store folder holds complete versions ``v-<id>/`` (the index files and ``manifest.json``) and a ``CURRENT`` file
naming the live one. A writer stages a whole version in its own ``tempfile.mkdtemp`` folder, renames it into the
store and only then replaces ``CURRENT`` atomically: a reader sees one complete version, never a mix of two, and a
failed write leaves the store as it was. The manifest says what the version holds (``kind``, its ``settings``, the
corpus fingerprint) and each file's size and sha256. The reader checks that claim against the request and every
file against the manifest (no file missing, none extra, no link) before a library reads a byte, and every ``.npy``
header against its file size before an array is allocated; any failure is an ``IndexMismatchError``. The manifest
is data only: it never names code, a class or a model to load.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.files import read_regular_file
from rag_integration.core.errors import ConnectorError, IndexMismatchError, InvalidOptionError

try:
    import fcntl
except ImportError:  # not on Windows: versions are then removed without asking readers
    fcntl = None  # type: ignore[assignment]

LOGGER = logging.getLogger(__name__)

POINTER_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
STORE_FORMAT = "rag-integration-index"
STORE_FORMAT_VERSION = 2
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_FILES = 1000
STALE_SECONDS = 60.0
"""A version replaced longer ago than this is removed by the next writer; one replaced more recently is left, since
a concurrent reader may still be reading it. A version's age counts from when it stopped being live (the writer
that moves ``CURRENT`` away from it touches its folder), not from when it was written."""
STALE_STAGING_SECONDS = 24 * 3600.0
"""A staging folder untouched for this long was left by a crashed writer; a slow writer may still be filling a
younger one, so only older ones are removed."""
_VERSION_NAME = re.compile(r"v-[A-Za-z0-9_]{1,64}")
_STAGING_NAME = re.compile(r"\.staging-[a-z0-9_]{8}")
"""A staging folder as ``tempfile.mkdtemp`` names it: a crashed writer's leftover, removed once stale."""
_SHA256 = re.compile(r"[0-9a-f]{64}")
_READ_ATTEMPTS = 3
_HASH_CHUNK = 1024 * 1024
SETTLED_SECONDS = 2.0
"""How long before it was hashed a file must have last changed for its hash to be remembered: more than the
coarsest file time granularity, so a later write always shows in its times (``_checked_digest``)."""
_DIGESTS_KEPT = 4096
_DIGESTS: dict[tuple[int, int], tuple[tuple[int, int, int], str]] = {}
_DIGESTS_LOCK = threading.Lock()

Loaded = TypeVar("Loaded")


@dataclass(frozen=True)
class StoreClaim:
    """What a stored version holds: its ``kind`` (a backend name), the settings that shaped it (JSON values) and
    the fingerprint of the corpus it was built from. Equal claims mean the version can answer the request."""

    kind: str
    settings: Mapping[str, Any]
    corpus_fingerprint: str

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "settings": dict(self.settings), "corpus_fingerprint": self.corpus_fingerprint}

    def same_as(self, other: StoreClaim) -> bool:
        return _canonical(self.as_json()) == _canonical(other.as_json())


@dataclass(frozen=True)
class StoredVersion:
    """The live version of a store: its folder, what it claims to hold and its files' sizes and hashes."""

    folder: Path
    claim: StoreClaim
    files: Mapping[str, tuple[int, str]]

    @property
    def name(self) -> str:
        return self.folder.name


def write_store(
    folder: Path,
    claim: StoreClaim,
    save: Callable[[Path], None],
    option: str = "index_dir",
    keep: int | None = None,
) -> str:
    """Write a new version of the store in ``folder`` with ``save(version_folder)``, make it the live one and return
    its name. Versions no longer live are removed once ``STALE_SECONDS`` old; with ``keep``, all but the ``keep``
    newest (the live one counted) are removed at once unless a reader holds one (``held_versions``). A folder that
    another process removes while the version is written (``forget``, a cleanup) is made again and written once more,
    not blamed on the caller."""
    for attempt in range(2):
        try:
            return _write_version(folder, claim, save, option, keep)
        except _FolderVanished:
            if attempt:
                break
    raise InvalidOptionError(option, str(folder), "a folder no other process removes while a version is written")


class _FolderVanished(Exception):
    """The store's folder disappeared under a writer."""


def _write_error(folder: Path, option: str, error: OSError) -> Exception:
    """What a failed write means: the folder vanished under it (written again), or it is not writable."""
    if error.errno == errno.ENOENT and not folder.is_dir():
        return _FolderVanished()
    return InvalidOptionError(option, str(folder), f"a writable folder ({error.strerror})")


def _write_version(folder: Path, claim: StoreClaim, save: Callable[[Path], None], option: str, keep: int | None) -> str:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder))
    except OSError as error:
        raise _write_error(folder, option, error) from error
    try:
        save(staging)
        files = {relative: _file_record(staging / relative) for relative in _listed_files(staging, option)}
        manifest = {
            "format": STORE_FORMAT,
            "format_version": STORE_FORMAT_VERSION,
            **claim.as_json(),
            "files": {
                relative: {"bytes": size, "sha256": digest} for relative, (size, digest) in sorted(files.items())
            },
        }
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, sort_keys=True, indent=1), encoding="ascii")
        version = folder / ("v-" + staging.name.removeprefix(".staging-"))
        os.rename(staging, version)
        os.utime(version)
        replaced = _pointer_text(folder)
        _replace_pointer(folder, version.name)
        _mark_replaced(folder, replaced)
    except OSError as error:
        raise _write_error(folder, option, error) from error
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    _remove_stale(folder, live=version.name, keep=keep)
    return version.name


def _mark_replaced(folder: Path, name: str | None) -> None:
    """Touch the version ``CURRENT`` just moved away from, so its age (for ``_remove_stale``) counts from now."""
    if name is None or not _VERSION_NAME.fullmatch(name):
        return
    try:
        if stat.S_ISDIR(os.lstat(folder / name).st_mode):
            os.utime(folder / name)
    except OSError:
        return


def _replace_pointer(folder: Path, version: str) -> None:
    descriptor, staged = tempfile.mkstemp(prefix=".pointer-", dir=folder)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as pointer:
            pointer.write(version + "\n")
        os.replace(staged, folder / POINTER_FILE)
    finally:
        if os.path.exists(staged):
            os.unlink(staged)


def _remove_stale(folder: Path, live: str, keep: int | None = None) -> None:
    """Best effort: versions that are no longer live (beyond the ``keep`` newest, or stale) and staging folders
    left by a crashed writer."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    replaced: list[tuple[float, os.DirEntry[str]]] = []
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            modified = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if entry.name != live and _written_here(Path(entry.path)):
            replaced.append((modified, entry))
        elif _STAGING_NAME.fullmatch(entry.name) and modified < now - STALE_STAGING_SECONDS:
            shutil.rmtree(entry.path, ignore_errors=True)
    replaced.sort(key=lambda item: (-item[0], item[1].name))
    for position, (modified, entry) in enumerate(replaced):
        if keep is not None and position >= keep - 1:
            _remove_unless_read(Path(entry.path))
        elif keep is None and modified < now - STALE_SECONDS:
            shutil.rmtree(entry.path, ignore_errors=True)


def _written_here(version: Path) -> bool:
    """Whether ``version`` is a version this module wrote: a version name holding a manifest of this store format.
    A folder of the user's that happens to be called ``v-2`` is never taken for one, so never removed."""
    if not _VERSION_NAME.fullmatch(version.name):
        return False
    try:
        manifest = json.loads(_read_small(version / MANIFEST_FILE, MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError, ConnectorError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == STORE_FORMAT


def _remove_unless_read(version: Path) -> None:
    """Remove a version no reader holds: renamed out of the store first, so it vanishes whole, then deleted."""
    with _version_lock(version, exclusive=True) as locked:
        if not locked:
            return
        doomed = version.with_name(".removed-" + version.name)
        try:
            os.rename(version, doomed)
        except OSError:
            return
    shutil.rmtree(doomed, ignore_errors=True)


def written_stores(parent: Path) -> list[Path]:
    """The stores among ``parent``'s folders, newest first (by when their ``CURRENT`` was last replaced, then by
    name): only a real folder, not a link, whose ``CURRENT`` names a version holding a manifest of this store format
    counts, so a folder of the user's is never taken for one."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    stores: list[tuple[int, str, Path]] = []
    for entry in entries:
        try:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        store = Path(entry.path)
        state = pointer_state(store)
        if state is None:
            continue
        try:
            if current_version(store) is None:
                continue
        except (IndexMismatchError, OSError):
            continue
        stores.append((state[0], entry.name, store))
    stores.sort(key=lambda item: (-item[0], item[1]))
    return [store for _, _, store in stores]


def remove_store(store: Path) -> bool:
    """Remove a whole store this module wrote, unless a reader holds its live version (the same shared lock that
    keeps a replaced version while it is read): renamed out of its parent first, so it vanishes whole and a reader
    arriving later finds no store and rebuilds. Whether it was removed."""
    try:
        version = current_version(store)
    except (IndexMismatchError, OSError):
        return False
    if version is None:
        return False
    with _version_lock(version.folder, exclusive=True) as locked:
        if not locked:
            return False
        doomed = store.with_name(f".removed-{store.name}-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(store, doomed)
        except OSError:
            return False
    shutil.rmtree(doomed, ignore_errors=True)
    return True


@contextmanager
def _version_lock(version: Path, exclusive: bool = False) -> Iterator[bool]:
    """A lock on a version folder: shared while a reader checks and loads it, exclusive (not waiting) for a writer
    removing it; yields whether it is held. Where ``fcntl`` is missing, readers take none and a remover always
    may, as without ``keep``."""
    if fcntl is None:
        yield True
        return
    try:
        descriptor = os.open(version, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(descriptor, (fcntl.LOCK_EX | fcntl.LOCK_NB) if exclusive else fcntl.LOCK_SH)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)


def current_version(folder: Path, option: str = "index_dir") -> StoredVersion | None:
    """The live version's manifest, checked for form only (files are verified by ``load_version``); None when
    ``folder`` holds no store at all."""
    pointer = folder / POINTER_FILE
    try:
        name = _read_small(pointer, 256).decode("ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise _mismatch(option, folder, f"a readable {POINTER_FILE} file ({error})") from error
    if not _VERSION_NAME.fullmatch(name):
        raise _mismatch(option, folder, f"a {POINTER_FILE} file naming a version folder")
    return named_version(folder, name, option)


def named_version(folder: Path, name: str, option: str = "index_dir") -> StoredVersion:
    """The version ``name`` of the store in ``folder`` (live or not, while it is kept), its manifest checked for
    form: what a snapshot naming the versions it was made of reads."""
    if not _VERSION_NAME.fullmatch(name):
        raise _mismatch(option, folder, "a version folder name")
    version = folder / name
    try:
        if not stat.S_ISDIR(os.lstat(version).st_mode):
            raise _mismatch(option, folder, f"a version folder {name}, not a link or file")
        raw = json.loads(_read_small(version / MANIFEST_FILE, MAX_MANIFEST_BYTES))
    except IndexMismatchError:
        raise
    except (OSError, ValueError, RecursionError) as error:
        raise _mismatch(option, folder, f"a readable {MANIFEST_FILE} in {name} ({error})") from error
    return StoredVersion(version, *_parsed_manifest(raw, option, folder))


def store_folder(folder: Path) -> str | None:
    """Why ``folder`` is not read as documents when it holds a store (its ``CURRENT`` pointer): an index kept inside
    the folder it indexes must not index itself."""
    return "a store written by `rag-integration index`, not documents" if (folder / POINTER_FILE).is_file() else None


def intact_claim(folder: Path) -> StoreClaim | None:
    """The live version's claim when its manifest and files pass their checks, else None: what a writer compares
    with before keeping a store as it is (a broken one is written again, even if it claims the same content)."""
    version = verified_version(folder)
    return None if version is None else version.claim


def verified_version(folder: Path) -> StoredVersion | None:
    """The live version when its manifest and files pass their checks, else None."""
    try:
        version = current_version(folder)
        if version is not None:
            load_version(version, lambda _: None)
    except (IndexMismatchError, OSError):
        return None
    return version


def load_version(version: StoredVersion, load: Callable[[Path], Loaded], option: str = "index_dir") -> Loaded:
    """``load(version_folder)`` after checking every file against the manifest; anything that goes wrong while
    loading (a library's own error on a bad file) is an ``IndexMismatchError`` too, and so is a file or folder
    vanishing mid-check (a writer removed a replaced version): ``read_store`` then reads the new one."""
    with _version_lock(version.folder) as held:
        if not held:
            raise _mismatch(option, version.folder, "a version folder that is still there")
        try:
            _check_files(version, option)
        except OSError as error:
            raise _mismatch(option, version.folder, f"a readable version folder ({error})") from error
        try:
            return load(version.folder)
        except IndexMismatchError:
            raise
        except Exception as error:  # a library's own error on a file it cannot read: the version is unusable
            kind = type(error).__name__
            raise _mismatch(option, version.folder, f"files the index can be read from ({kind})") from error


def _check_files(version: StoredVersion, option: str) -> None:
    present = set(_listed_files(version.folder, option)) - {MANIFEST_FILE}
    if present != set(version.files):
        missing, extra = sorted(set(version.files) - present), sorted(present - set(version.files))
        raise _mismatch(option, version.folder, f"exactly the manifest's files (missing {missing}, extra {extra})")
    for relative, (size, digest) in sorted(version.files.items()):
        path = version.folder / relative
        if path.stat().st_size != size:
            raise _mismatch(option, version.folder, f"{relative} of {size} bytes as the manifest says")
        if _checked_digest(path) != digest:
            raise _mismatch(option, version.folder, f"{relative} with the manifest's sha256")
        if relative.endswith(".npy"):
            check_npy(path, option)


def pointer_state(folder: Path) -> tuple[int, int, int] | None:
    """``CURRENT``'s (mtime_ns, size, inode), None when absent: a writer replaces the file, so an unchanged state
    means the live version is still the one last checked."""
    try:
        status = os.stat(folder / POINTER_FILE, follow_symlinks=False)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


def live_version_name(folder: Path) -> str | None:
    """The version ``CURRENT`` names, unchecked; None when it cannot be read."""
    return _pointer_text(folder)


def read_store(
    folder: Path,
    check: Callable[[StoreClaim], None],
    load: Callable[[StoredVersion], Loaded],
    option: str = "index_dir",
) -> tuple[StoredVersion, Loaded] | None:
    """The live version and what ``load`` makes of it, after ``check`` accepted its claim; None when ``folder`` holds
    no store. A version replaced while it was being read is read again from the new pointer."""
    for attempt in range(_READ_ATTEMPTS):
        version = current_version(folder, option)
        if version is None:
            return None
        check(version.claim)
        try:
            return version, load(version)
        except IndexMismatchError:
            replaced = _pointer_text(folder) != version.name
            if not replaced or attempt == _READ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _pointer_text(folder: Path) -> str | None:
    try:
        return _read_small(folder / POINTER_FILE, 256).decode("ascii", "replace").strip()
    except OSError:
        return None


def check_npy(
    path: Path, option: str = "index_dir", shape: tuple[int, ...] | None = None, dtype: str | None = None
) -> tuple[int, ...]:
    """The shape a ``.npy`` file declares, refused unless its data is exactly the bytes the file holds (a short file
    declaring 2^29 floats never reaches ``np.load``), its dtype is plain numbers and, when given, ``shape`` and
    ``dtype`` match."""
    try:
        with path.open("rb") as file:
            major, _ = np.lib.format.read_magic(file)
            if major == 1:
                declared, fortran, found = np.lib.format.read_array_header_1_0(file)
            else:
                declared, fortran, found = np.lib.format.read_array_header_2_0(file)
            offset = file.tell()
    except (OSError, ValueError, SyntaxError) as error:
        raise _mismatch(option, path, f"a .npy array file ({error})") from error
    if found.hasobject or found.kind not in "biuf" or fortran or (dtype is not None and found != np.dtype(dtype)):
        raise _mismatch(option, path, f"an array of {dtype or 'plain numbers'} in C order (got {found})")
    nbytes = int(np.prod(declared, dtype=np.float64)) * found.itemsize
    if nbytes != path.stat().st_size - offset:
        raise _mismatch(option, path, f"{nbytes} bytes of data for its declared shape {declared}")
    if shape is not None and tuple(declared) != shape:
        raise _mismatch(option, path, f"an array of shape {shape} (it declares {tuple(declared)})")
    return tuple(declared)


def load_npy(
    path: Path, shape: tuple[int, ...] | None = None, dtype: str | None = None, option: str = "index_dir"
) -> npt.NDArray[Any]:
    """A checked ``.npy`` array (see ``check_npy``), never unpickled."""
    check_npy(path, option, shape, dtype)
    array: npt.NDArray[Any] = np.load(path, allow_pickle=False)
    return array


def save_npy(path: Path, array: npt.NDArray[Any]) -> None:
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def load_sparse_parts(
    folder: Path, rows: int, columns: int | None, option: str = "index_dir"
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
    """``data``, ``indices``, ``indptr`` of a compressed sparse matrix (CSR: ``rows`` documents; CSC: ``rows`` terms)
    checked so no index falls outside the matrix: what a library would otherwise trust and read out of bounds."""
    indptr = load_npy(folder / "indptr.npy", (rows + 1,), option=option)
    data = load_npy(folder / "data.npy", option=option)
    indices = load_npy(folder / "indices.npy", data.shape, option=option)
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu" or data.ndim != 1:
        raise _mismatch(option, folder, "integer indptr and indices, one-dimensional data")
    steps_ok = bool(indptr[0] == 0 and indptr[-1] == len(data) and (np.diff(indptr) >= 0).all())
    inside = len(indices) == 0 or (columns is not None and int(indices.min()) >= 0 and int(indices.max()) < columns)
    if not steps_ok or not inside or not np.isfinite(data).all():
        raise _mismatch(option, folder, f"a consistent sparse matrix of {rows} x {columns}")
    return data, indices, indptr


def term_ids(
    stored: object, name: str, folder: Path, columns: int | None = None, values: type = int, option: str = "index_dir"
) -> dict[str, Any]:
    """``stored[name]``, a ``{term: column}`` map read from JSON, checked: str keys, and ``values`` that are ints
    inside a matrix of ``columns`` columns (default: as many as terms), or, with ``values=str``, strings."""
    mapping = stored.get(name) if isinstance(stored, dict) else None
    if not isinstance(mapping, dict) or not all(isinstance(key, str) for key in mapping):
        raise _mismatch(option, folder, f"a map '{name}' of terms")
    if values is str:
        if not all(isinstance(value, str) for value in mapping.values()):
            raise _mismatch(option, folder, f"a map '{name}' of terms to words")
        return mapping
    limit = len(mapping) if columns is None else columns
    if not all(type(value) is int and 0 <= value < limit for value in mapping.values()):
        raise _mismatch(option, folder, f"a map '{name}' of terms to columns 0..{limit - 1}")
    return mapping


def _parsed_manifest(raw: object, option: str, folder: Path) -> tuple[StoreClaim, dict[str, tuple[int, str]]]:
    expected_keys = {"format", "format_version", "kind", "settings", "corpus_fingerprint", "files"}
    if not isinstance(raw, dict) or set(raw) != expected_keys:
        raise _mismatch(option, folder, f"a manifest with exactly the keys {sorted(expected_keys)}")
    if raw["format"] != STORE_FORMAT or raw["format_version"] != STORE_FORMAT_VERSION:
        raise _mismatch(option, folder, f"a manifest of format {STORE_FORMAT} version {STORE_FORMAT_VERSION}")
    kind, settings, fingerprint, listed = raw["kind"], raw["settings"], raw["corpus_fingerprint"], raw["files"]
    if not isinstance(kind, str) or not isinstance(settings, dict) or not isinstance(fingerprint, str):
        raise _mismatch(option, folder, "a manifest whose kind, settings and corpus_fingerprint are str, dict, str")
    if not isinstance(listed, dict) or len(listed) > MAX_MANIFEST_FILES:
        raise _mismatch(option, folder, f"a manifest listing at most {MAX_MANIFEST_FILES} files")
    files: dict[str, tuple[int, str]] = {}
    for relative, record in listed.items():
        if not _safe_relative(relative) or not isinstance(record, dict) or set(record) != {"bytes", "sha256"}:
            raise _mismatch(option, folder, "manifest files named by safe relative paths with bytes and sha256")
        size, digest = record["bytes"], record["sha256"]
        if type(size) is not int or size < 0 or not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise _mismatch(option, folder, "manifest files with a byte count and a sha256 hex digest")
        files[relative] = (size, digest)
    return StoreClaim(kind, settings, fingerprint), files


def _safe_relative(relative: object) -> bool:
    if not isinstance(relative, str) or not relative or "\\" in relative or "\0" in relative:
        return False
    parts = PurePosixPath(relative).parts
    return (
        not PurePosixPath(relative).is_absolute()
        and relative != MANIFEST_FILE
        and all(part not in ("", ".", "..") for part in parts)
    )


def _listed_files(folder: Path, option: str) -> list[str]:
    """Every file under ``folder`` as a relative posix path; a link or special file makes the version unusable."""
    found: list[str] = []
    pending = [(folder, "")]
    while pending:
        current, prefix = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_symlink():
                    raise _mismatch(option, folder, f"plain files only ({relative} is a link)")
                if entry.is_dir(follow_symlinks=False):
                    pending.append((Path(entry.path), relative + "/"))
                elif entry.is_file(follow_symlinks=False):
                    found.append(relative)
                else:
                    raise _mismatch(option, folder, f"plain files only ({relative} is a special file)")
                if len(found) > MAX_MANIFEST_FILES:
                    raise _mismatch(option, folder, f"at most {MAX_MANIFEST_FILES} files")
    return found


def _checked_digest(path: Path) -> str:
    """A file's sha256, hashed again unless this process hashed the same file (device and inode) unchanged since:
    the same size, modification and change times, where the change time was ``SETTLED_SECONDS`` older than the
    hashing. The kernel sets a file's change time on every write and it cannot be set back, so a file written
    after it was hashed has another one; a file still being written is hashed again on every read."""
    status = path.stat()
    key, state = (status.st_dev, status.st_ino), (status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    known = _DIGESTS.get(key)
    if known is not None and known[0] == state:
        return known[1]
    hashed_at = time.time_ns()
    digest = _file_record(path)[1]
    if hashed_at - status.st_ctime_ns >= SETTLED_SECONDS * 1e9 and path.stat().st_ctime_ns == status.st_ctime_ns:
        with _DIGESTS_LOCK:
            _DIGESTS.pop(key, None)
            _DIGESTS[key] = (state, digest)
            while len(_DIGESTS) > _DIGESTS_KEPT:
                del _DIGESTS[next(iter(_DIGESTS))]
    return digest


def _file_record(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _read_small(path: Path, limit: int) -> bytes:
    """A pointer or manifest: a regular file, never a link or FIFO, of at most ``limit`` bytes."""
    return read_regular_file(path, limit)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mismatch(option: str, where: Path, expected: str) -> IndexMismatchError:
    return IndexMismatchError(option, str(where), expected)
