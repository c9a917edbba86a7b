"""Build each index once: a bounded in-process LRU, optionally backed by a folder on disk.

An index is keyed by (backend, backend settings, corpus fingerprint), so a changed corpus or
setting is a different key and can never be served a stale index. An index built elsewhere (on a Spark
driver, say) can be shipped pickled and ``install``-ed under its key, so a worker never builds it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pickle
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.index_store import StoreClaim, intact_claim, load_version, read_store, write_store
from rag_integration.core.progress import step

LOGGER = logging.getLogger(__name__)
DEFAULT_CAPACITY = 8
DEFAULT_MAX_BYTES = 2 * 1024**3
ENTRIES_VARIABLE = "RAG_INDEX_CACHE_ENTRIES"
BYTES_VARIABLE = "RAG_INDEX_CACHE_BYTES"


@dataclass(frozen=True, slots=True)
class IndexKey:
    backend: str
    settings: str
    corpus_fingerprint: str

    @classmethod
    def of(cls, backend: str, settings: Any, corpus_fingerprint: str) -> IndexKey:
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
        """What a persisted index under this key must say it holds (``core.index_store``)."""
        return StoreClaim(self.backend, json.loads(self.settings), self.corpus_fingerprint)


@dataclass
class CacheStats:
    builds: int = 0
    loads: int = 0
    hits: int = 0
    installs: int = 0


class IndexCache:
    """Process-wide LRU of built indexes, bounded by ``capacity`` entries and ``max_bytes`` (the indexes' pickled
    size, measured once when an index is kept); ``capacity`` 0 disables in-memory reuse. An index larger than
    ``max_bytes`` alone is used by its request and not kept."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._entries: OrderedDict[IndexKey, Any] = OrderedDict()
        self._sizes: dict[IndexKey, int] = {}
        self._lock = threading.RLock()
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.stats = CacheStats()

    def resize(self, capacity: int, max_bytes: int | None = None) -> None:
        with self._lock:
            self.capacity = capacity
            if max_bytes is not None:
                self.max_bytes = max_bytes
            self._evict()

    @property
    def total_bytes(self) -> int:
        return sum(self._sizes.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: IndexKey) -> bool:
        return key in self._entries

    def get_or_build(
        self,
        key: IndexKey,
        build: Callable[[], Any],
        *,
        index_dir: str | os.PathLike[str] | None = None,
        save: Callable[[Any, Path], None] | None = None,
        load: Callable[[Path], Any] | None = None,
    ) -> Any:
        """The index for ``key``: from memory, else loaded from ``index_dir``, else built (and saved there). A stored
        index that fails its checks (``IndexMismatchError``) is logged, rebuilt and written again."""
        folder = Path(index_dir) / key.folder_name() if index_dir is not None else None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                index = self._entries[key]
                if folder is not None and save is not None and not _stored(folder, key):
                    _save(folder, key, index, save)
                return index
            index = None
            if folder is not None and load is not None:
                with step(f"loading the {key.backend} index from {folder}"):
                    index = _load(folder, key, load)
                if index is not None:
                    self.stats.loads += 1
            if index is None:
                with step(f"building the {key.backend} index"):
                    index = build()
                self.stats.builds += 1
                if folder is not None and save is not None:
                    _save(folder, key, index, save)
            self._remember(key, index)
            return index

    def get_or_load(self, key: IndexKey, load: Callable[[], Any]) -> Any:
        """The index for ``key`` from memory, else read by ``load`` from a folder this cache does not manage (a
        vector store written by the pipeline): counted as a load, since nothing is built."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return self._entries[key]
            index = load()
            self.stats.loads += 1
            self._remember(key, index)
            return index

    def install(self, key: IndexKey, index: Any) -> None:
        """Put an index built elsewhere (unpickled on a Spark executor) under ``key``; counted in ``installs``,
        never as a build. With ``capacity`` 0 nothing is kept, as for a built index."""
        with self._lock:
            self.stats.installs += 1
            self._remember(key, index)

    def _remember(self, key: IndexKey, index: Any) -> None:
        if self.capacity <= 0:
            return
        size = approximate_bytes(index)
        if size > self.max_bytes:
            return
        self._entries[key] = index
        self._sizes[key] = size
        self._entries.move_to_end(key)
        self._evict()

    def _evict(self) -> None:
        while self._entries and (len(self._entries) > self.capacity or self.total_bytes > self.max_bytes):
            key, _ = self._entries.popitem(last=False)
            self._sizes.pop(key, None)


class _ByteCounter:
    """A write-only sink that counts what a pickler writes, so measuring an index never holds a second copy of it."""

    def __init__(self) -> None:
        self.count = 0

    def write(self, chunk: Any) -> int:
        size = memoryview(chunk).nbytes
        self.count += size
        return size


def approximate_bytes(index: Any) -> int:
    """An index's size as its pickle (every index here pickles, to travel to Spark executors), counted as it is
    written rather than built in memory; an object that does not pickle counts its shallow size."""
    counter = _ByteCounter()
    try:
        pickle.Pickler(counter, protocol=pickle.HIGHEST_PROTOCOL).dump(index)
    except Exception:
        return sys.getsizeof(index)
    return counter.count


def _stored(folder: Path, key: IndexKey) -> bool:
    """Whether ``folder``'s live version is this key's index, with its files intact."""
    claim = intact_claim(folder)
    return claim is not None and claim.same_as(key.claim())


def _load(folder: Path, key: IndexKey, load: Callable[[Path], Any]) -> Any:
    """The index stored in ``folder``, or None when there is none or it fails a check (logged: it is rebuilt)."""

    def check(claim: StoreClaim) -> None:
        if not claim.same_as(key.claim()):
            raise IndexMismatchError("index_dir", str(folder), f"the index of this request ({key.backend})")

    try:
        found = read_store(folder, check, lambda version: load_version(version, load))
    except IndexMismatchError as error:
        LOGGER.warning(
            "index_dir: the stored %s index is unusable, rebuilding it from the corpus: %s", key.backend, error
        )
        return None
    return None if found is None else found[1]


def _save(folder: Path, key: IndexKey, index: Any, save: Callable[[Any, Path], None]) -> None:
    write_store(folder, key.claim(), lambda staging: save(index, staging))


def configure_index_cache(*, max_entries: int | None = None, max_bytes: int | None = None) -> None:
    """Bound the process-wide index cache: at most ``max_entries`` indexes (0: keep none) and ``max_bytes`` of them.

    A process setting, not a request option: every request in the process shares the cache. A bound left out keeps
    its value; at import the bounds come from ``RAG_INDEX_CACHE_ENTRIES`` / ``RAG_INDEX_CACHE_BYTES`` when set
    (defaults 8 entries and 2 GiB). Shrinking evicts the least recently used indexes at once.
    """
    entries = INDEX_CACHE.capacity if max_entries is None else _bound("max_entries", max_entries)
    size = None if max_bytes is None else _bound("max_bytes", max_bytes)
    INDEX_CACHE.resize(entries, size)


def _bound(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionError(name, value, "an int >= 0")
    return value


def _bound_from_environment(variable: str, default: int) -> int:
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return default
    try:
        return _bound(variable, int(raw.strip()))
    except ValueError as error:
        raise InvalidOptionError(variable, raw, "an int >= 0 (environment variable)") from error


INDEX_CACHE = IndexCache(
    _bound_from_environment(ENTRIES_VARIABLE, DEFAULT_CAPACITY),
    _bound_from_environment(BYTES_VARIABLE, DEFAULT_MAX_BYTES),
)
