"""Build each index once: a bounded in-process LRU, optionally backed by a folder on disk.

An index is keyed by (backend, backend settings, corpus fingerprint), so a changed corpus or
setting is a different key and can never be served a stale index. An index built elsewhere (on a Spark
driver, say) can be shipped pickled and ``install``-ed under its key, so a worker never builds it again.
The LRU, its bounds, the stored marks and the pruning of an ``index_dir`` are ``core.indexes.retention``'s.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
import logging
import os
import pickle
import sys
import threading
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.indexes.retention import (
    BoundedLru,
    Limit,
    StoreMarks,
    checked_bound,
    keeping_versions,
    prune_index_stores,
    versions_kept,
)
from rag_integration.core.indexes.store import (
    StoreClaim,
    load_version,
    pointer_state,
    read_store,
    verified_version,
    write_store,
)
from rag_integration.core.progress import step

LOGGER = logging.getLogger(__name__)
DEFAULT_CAPACITY = 8
DEFAULT_MAX_BYTES = 2 * 1024**3
ENTRIES_VARIABLE = "RAG_INDEX_CACHE_ENTRIES"
BYTES_VARIABLE = "RAG_INDEX_CACHE_BYTES"
ENTRIES = Limit(ENTRIES_VARIABLE, DEFAULT_CAPACITY)
BYTES = Limit(BYTES_VARIABLE, DEFAULT_MAX_BYTES)
VIEW_ENTRIES = Limit("RAG_VIEW_CACHE_ENTRIES", 32)
VIEW_BYTES = Limit("RAG_VIEW_CACHE_BYTES", 1024**3)


@dataclass(frozen=True, slots=True)
class IndexKey:
    backend: str
    settings: str
    corpus_fingerprint: str

    @classmethod
    def of(cls, backend: str, settings: object, corpus_fingerprint: str) -> IndexKey:
        """The key for index settings given as a frozen dataclass (or a plain mapping), as canonical JSON."""
        if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
            fields = dataclasses.asdict(settings)
        elif isinstance(settings, Mapping):
            fields = dict(settings)
        else:
            raise TypeError(f"index settings must be a dataclass instance or a mapping, got {type(settings).__name__}")
        return cls(backend, json.dumps(fields, sort_keys=True, default=str), corpus_fingerprint)

    def folder_name(self) -> str:
        digest = hashlib.sha256(f"{self.backend}\0{self.settings}\0{self.corpus_fingerprint}".encode()).hexdigest()
        return f"{self.backend}-{digest[:20]}"

    def claim(self) -> StoreClaim:
        """What a persisted index under this key must say it holds (``core.indexes.store``)."""
        return StoreClaim(self.backend, json.loads(self.settings), self.corpus_fingerprint)


@dataclass
class CacheStats:
    builds: int = 0
    loads: int = 0
    hits: int = 0
    installs: int = 0


@dataclass(slots=True)
class _KeyLock:
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    users: int = 0


IndexT = TypeVar("IndexT")


class IndexCache:
    """Process-wide LRU of built indexes, bounded by ``capacity`` entries and ``max_bytes`` (each index's
    ``approximate_bytes``, measured once when it is kept); ``capacity`` 0 disables in-memory reuse. An index larger
    than ``max_bytes`` alone is used by its request and not kept.

    The cache lock guards only the dictionaries: building, loading, saving and measuring run outside it under a
    lock of their key, so a cold build never blocks another key's hits and one key is never built twice at once."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._entries: BoundedLru[IndexKey, object] = BoundedLru(capacity, max_bytes)
        self._marks = StoreMarks()
        self._key_locks: dict[IndexKey, _KeyLock] = {}
        self._lock = threading.Lock()
        self.stats = CacheStats()

    @property
    def capacity(self) -> int:
        return self._entries.max_entries or 0

    @property
    def max_bytes(self) -> int:
        return self._entries.max_bytes or 0

    def resize(self, capacity: int, max_bytes: int | None = None) -> None:
        self._entries.resize(capacity, self.max_bytes if max_bytes is None else max_bytes)

    @property
    def total_bytes(self) -> int:
        return self._entries.total_bytes

    def clear(self) -> None:
        self._entries.clear()
        self._marks.clear()
        with self._lock:
            self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: IndexKey) -> bool:
        return key in self._entries

    def get_or_build(
        self,
        key: IndexKey,
        build: Callable[[], IndexT],
        *,
        index_dir: str | os.PathLike[str] | None = None,
        save: Callable[[IndexT, Path], None] | None = None,
        load: Callable[[Path], IndexT] | None = None,
        keep: Callable[[Path], None] | None = None,
        keep_versions: int | None = None,
    ) -> IndexT:
        """The index for ``key``: from memory, else loaded from ``index_dir``, else built (and saved there). A stored
        index that fails its checks (``IndexMismatchError``) is logged, rebuilt and written again. On a hit the store
        is checked again (and written again if it changed) only when its ``CURRENT`` file changed; an index that is
        not stored itself has ``keep(index_dir)`` look after what its build keeps there instead.

        Writing an index prunes ``index_dir`` to the ``keep_versions`` latest stores of its backend; None takes the
        value of the index being built around this one (a hybrid's rankers), else ``DEFAULT_KEEP_VERSIONS``. The
        build and ``keep`` run with it too (``retention.versions_kept``), so what they store is pruned alike."""
        folder = Path(index_dir) / key.folder_name() if index_dir is not None else None
        kept = self._hit(key)
        if kept is not None:
            index = _as_index(kept, build)
            if folder is not None and save is not None:
                self._keep_stored(key, folder, index, save, _kept(keep_versions))
            elif index_dir is not None and keep is not None:
                with keeping_versions(_kept(keep_versions)):
                    keep(Path(index_dir))
            return index
        versions = _kept(keep_versions)
        with self._key_lock(key):
            kept = self._hit(key)
            if kept is not None:
                return _as_index(kept, build)
            loaded: IndexT | None = None
            if folder is not None and load is not None:
                with step(f"loading the {key.backend} index from {folder}"):
                    loaded = self._load(folder, key, load)
            if loaded is not None:
                index = loaded
                with self._lock:
                    self.stats.loads += 1
            else:
                with (
                    step(f"building the {key.backend} index"),
                    keeping_in(index_dir),
                    keeping_versions(versions),
                ):
                    index = build()
                with self._lock:
                    self.stats.builds += 1
                if folder is not None and save is not None:
                    self._save(folder, key, index, save, versions)
            self._remember(key, index)
            return index

    def get_or_load(self, key: IndexKey, load: Callable[[], IndexT]) -> IndexT:
        """The index for ``key`` from memory, else read by ``load`` from a folder this cache does not manage (a
        vector store written by the pipeline): counted as a load, since nothing is built."""
        kept = self._hit(key)
        if kept is not None:
            return _as_index(kept, load)
        with self._key_lock(key):
            kept = self._hit(key)
            if kept is not None:
                return _as_index(kept, load)
            index = load()
            with self._lock:
                self.stats.loads += 1
            self._remember(key, index)
            return index

    def install(self, key: IndexKey, index: object) -> None:
        """Put an index built elsewhere (unpickled on a Spark executor) under ``key``; counted in ``installs``,
        never as a build. With ``capacity`` 0 nothing is kept, as for a built index."""
        with self._lock:
            self.stats.installs += 1
        self._remember(key, index)

    def _hit(self, key: IndexKey) -> object | None:
        kept = self._entries.get(key)
        if kept is not None:
            with self._lock:
                self.stats.hits += 1
        return kept

    @contextlib.contextmanager
    def _key_lock(self, key: IndexKey) -> Iterator[None]:
        with self._lock:
            slot = self._key_locks.setdefault(key, _KeyLock())
            slot.users += 1
        try:
            with slot.lock:
                yield
        finally:
            with self._lock:
                slot.users -= 1
                if slot.users == 0:
                    del self._key_locks[key]

    def _keep_stored(
        self,
        key: IndexKey,
        folder: Path,
        index: IndexT,
        save: Callable[[IndexT, Path], None],
        keep_versions: int,
    ) -> None:
        """Write a kept index to its store again when the store no longer holds it intact; the store is verified
        (listed and hashed) only when ``CURRENT`` changed since it was last verified or written.

        Best effort: the query is answered from the index in memory, so a store that cannot be written now (another
        process deleting ``index_dir`` mid-write, a full disk) is logged and tried again on the next hit instead of
        failing a query that does not need the folder. A folder that cannot be written on a cold build still fails
        that request (``get_or_build``), since there the request's ``index_dir`` is what is wrong."""
        if self._marks.holds(folder, key):
            return
        with self._key_lock(key):
            state = pointer_state(folder)
            version = verified_version(folder)
            if version is not None and version.claim.same_as(key.claim()):
                self._marks.note(folder, key, version.name, state)
                return
            try:
                self._save(folder, key, index, save, keep_versions)
            except Exception as error:  # any library's write error: the answer does not depend on the store
                self._marks.forget(folder)
                LOGGER.warning(
                    "index_dir: could not store the index again in %s (answering from memory, will retry): %s: %s",
                    folder,
                    type(error).__name__,
                    error,
                )

    def _remember(self, key: IndexKey, index: object) -> None:
        if self.capacity <= 0:
            return
        self._entries.put(key, index, approximate_bytes(index))

    def _load(self, folder: Path, key: IndexKey, load: Callable[[Path], IndexT]) -> IndexT | None:
        """The index stored in ``folder`` (its store marked as verified), or None when there is none or it fails a
        check (logged: it is rebuilt)."""

        def check(claim: StoreClaim) -> None:
            if not claim.same_as(key.claim()):
                raise IndexMismatchError("index_dir", str(folder), f"the index of this request ({key.backend})")

        state = pointer_state(folder)
        try:
            found = read_store(folder, check, lambda version: load_version(version, load))
        except IndexMismatchError as error:
            LOGGER.warning(
                "index_dir: the stored %s index is unusable, rebuilding it from the corpus: %s", key.backend, error
            )
            return None
        if found is None:
            return None
        self._marks.note(folder, key, found[0].name, state)
        return found[1]

    def _save(
        self,
        folder: Path,
        key: IndexKey,
        index: IndexT,
        save: Callable[[IndexT, Path], None],
        keep_versions: int,
    ) -> None:
        """Write the index as its store's new version, mark it, and prune ``index_dir`` to the latest
        ``keep_versions`` stores of this backend, so a caller whose corpus keeps changing keeps a bounded folder."""
        version = write_store(folder, key.claim(), lambda staging: save(index, staging))
        self._marks.note(folder, key, version, pointer_state(folder))
        prune_index_stores(folder.parent, keep_versions, backend=key.backend, spare=folder.name)


class _ByteCounter:
    """A write-only sink that counts what a pickler writes, so measuring an index never holds a second copy of it."""

    def __init__(self) -> None:
        self.count = 0

    def write(self, chunk: bytes | bytearray | memoryview) -> int:
        size = memoryview(chunk).nbytes
        self.count += size
        return size


_INDEX_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("rag_integration_index_dir", default=None)


@contextlib.contextmanager
def keeping_in(index_dir: str | os.PathLike[str] | None) -> Iterator[None]:
    """Builds inside keep what a later build can reuse in ``index_dir`` (``building_into``)."""
    token = _INDEX_DIR.set(None if index_dir is None else Path(index_dir))
    try:
        yield
    finally:
        _INDEX_DIR.reset(token)


def building_into() -> Path | None:
    """The ``index_dir`` of the index being built on this thread, if any: where a build may keep what a later
    build can reuse (embeddings)."""
    return _INDEX_DIR.get()


_VIEW: contextvars.ContextVar[bool] = contextvars.ContextVar("rag_integration_view", default=False)


@contextlib.contextmanager
def building_view() -> Iterator[None]:
    """Mark the indexes built inside as views of a corpus (what one set of principals may read): kept in
    ``VIEW_CACHE`` only, never stored, and never the corpus a memo of analysed text starts its next build from."""
    token = _VIEW.set(True)
    try:
        yield
    finally:
        _VIEW.reset(token)


def in_view() -> bool:
    """Whether the index being built on this thread is a view (``building_view``)."""
    return _VIEW.get()


def _kept(keep_versions: int | None) -> int:
    return versions_kept() if keep_versions is None else keep_versions


def _as_index(kept: object, made_by: Callable[..., IndexT]) -> IndexT:
    """A kept index as the type its maker makes: a key names its backend and settings, so what is kept under it
    was made by the same maker."""
    return typing.cast(IndexT, kept)


def approximate_bytes(index: object) -> int:
    """An index's size: its own ``nbytes`` when it has one (the arrays it holds, measured without copying), else
    its pickle counted as it is written rather than built in memory; an object that does not pickle counts its
    shallow size."""
    own = getattr(index, "nbytes", None)
    if type(own) is int and own >= 0:
        return own
    counter = _ByteCounter()
    try:
        pickle.Pickler(counter, protocol=pickle.HIGHEST_PROTOCOL).dump(index)
    except Exception:
        return sys.getsizeof(index)
    return counter.count


def configure_index_cache(*, max_entries: int | None = None, max_bytes: int | None = None) -> None:
    """Bound the process-wide index cache: at most ``max_entries`` indexes (0: keep none) and ``max_bytes`` of them.

    A process setting, not a request option: every request in the process shares the cache. A bound left out keeps
    its value; at import the bounds come from ``RAG_INDEX_CACHE_ENTRIES`` / ``RAG_INDEX_CACHE_BYTES`` when set
    (defaults 8 entries and 2 GiB). Shrinking evicts the least recently used indexes at once.
    """
    entries = INDEX_CACHE.capacity if max_entries is None else checked_bound("max_entries", max_entries)
    size = None if max_bytes is None else checked_bound("max_bytes", max_bytes)
    INDEX_CACHE.resize(entries, size)


INDEX_CACHE = IndexCache(ENTRIES.read(), BYTES.read())
VIEW_CACHE = IndexCache(VIEW_ENTRIES.read(), VIEW_BYTES.read())
"""Indexes over what one set of principals may read: apart from ``INDEX_CACHE`` so many callers' views never push
out the full corpora's indexes they are derived from."""
