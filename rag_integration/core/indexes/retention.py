"""What the indexes wing keeps, decided in one place: the bounded LRU behind every process cache (the index cache,
the analysed corpora, the embeddings) with one way of setting its bounds, the mark that tells a cache a store still
holds what it last verified there, and how many corpus versions an ``index_dir`` keeps before older ones go.

Three caches once had three LRUs, three environment readers and two kinds of mark, and stores written for each new
corpus were never removed; one copy of each rule keeps them alike and bounds the folder."""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes.store import live_version_name, pointer_state, remove_store, written_stores
from rag_integration.core.options import OptionSpec

DEFAULT_KEEP_VERSIONS = 4
"""Corpus versions an ``index_dir`` keeps per backend (and analysed corpora per analysis settings) when a request
does not say: a few, so corpora that take turns in one folder each still find their own."""
KEEP_VERSIONS: OptionSpec[int | None] = OptionSpec(
    "keep_versions",
    "integer",
    "versions kept in `index_dir`, the newest one counted, older ones removed unless a reader holds one: a retrieve "
    f"backend's stored indexes (one per corpus and settings; default {DEFAULT_KEEP_VERSIONS}) or a vector store's "
    "versions (default: each replaced version is removed a minute later)",
    default=None,
    minimum=1,
)
"""One declaration for both families that write versions into ``index_dir``: a vector store's versions replace one
another inside its folder, a retrieve backend's indexes sit side by side (``<backend>-<key hash>/``)."""
MARK_ENTRIES = 1024
"""Store folders whose last verified state a cache remembers; a forgotten one is only verified again."""
_INDEX_STORE = re.compile(r"(?P<backend>[a-z0-9_]+)-[0-9a-f]{20}")
"""An index store's folder name in an ``index_dir`` (``IndexKey.folder_name``), beside ``embeddings/`` and
``analysis/``, which every index of the folder shares and which are never removed with one."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def checked_bound(name: str, value: object) -> int:
    """``value`` when it is an int >= 0, else a typed error naming ``name`` (a bool is refused, not read as 0/1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionError(name, value, "an int >= 0")
    return value


def bound_from_environment(variable: str, default: int) -> int:
    """An int >= 0 from an environment variable, ``default`` when unset; anything else is a typed error."""
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return default
    try:
        return checked_bound(variable, int(raw.strip()))
    except ValueError as error:
        raise InvalidOptionError(variable, raw, "an int >= 0 (environment variable)") from error


@dataclass(frozen=True)
class Limit:
    """A bound of a process-wide cache: its default and the environment variable that sets it at import. The
    process changes it later through the cache's ``resize`` (``configure_index_cache`` for the index cache)."""

    variable: str
    default: int

    def read(self) -> int:
        return bound_from_environment(self.variable, self.default)


class BoundedLru(Generic[K, V]):
    """Values by key, the least recently used dropped first once there are more than ``max_entries`` or their sizes
    add up to more than ``max_bytes`` (None: no such bound). A value's size is given when it is put, so an expensive
    measurement happens once, outside any lock. A value larger than ``max_bytes`` alone, or any value while
    ``max_entries`` is 0, is not kept (and the key's previous value goes: it was being replaced).

    Thread-safe: each call holds the LRU's own lock briefly, so a cache around it locks only for its own state."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._values: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: K) -> bool:
        return key in self._values

    @property
    def total_bytes(self) -> int:
        return self._total

    def values(self) -> list[V]:
        """The values, least recently used first."""
        with self._lock:
            return [value for value, _ in self._values.values()]

    def get(self, key: K) -> V | None:
        """The value under ``key``, now the most recently used; None when there is none (values are never None)."""
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return None
            self._values.move_to_end(key)
            return found[0]

    def peek(self, key: K) -> V | None:
        """The value under ``key`` without counting it as a use."""
        found = self._values.get(key)
        return None if found is None else found[0]

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The values of the keys that have one, each now recently used, under one hold of the lock."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                kept = self._values.get(key)
                if kept is not None:
                    self._values.move_to_end(key)
                    found[key] = kept[0]
        return found

    def put(self, key: K, value: V, size: int = 0) -> bool:
        """Keep ``value`` under ``key`` as the most recently used, dropping the least recently used beyond the bounds;
        whether it was kept."""
        with self._lock:
            kept = self._put(key, value, size)
            self._evict()
        return kept

    def put_many(self, items: Iterable[tuple[K, V, int]]) -> None:
        """``put`` for each ``(key, value, size)``, the bounds applied once at the end."""
        with self._lock:
            for key, value, size in items:
                self._put(key, value, size)
            self._evict()

    def discard(self, key: K) -> None:
        with self._lock:
            self._drop(key)

    def discard_where(self, doomed: Callable[[K, V], bool]) -> int:
        """Drop every entry ``doomed(key, value)`` is true of; how many were dropped."""
        with self._lock:
            keys = [key for key, (value, _) in self._values.items() if doomed(key, value)]
            for key in keys:
                self._drop(key)
        return len(keys)

    def resize(self, max_entries: int | None, max_bytes: int | None) -> None:
        """New bounds, applied at once: shrinking drops the least recently used."""
        with self._lock:
            self.max_entries, self.max_bytes = max_entries, max_bytes
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._total = 0

    def _put(self, key: K, value: V, size: int) -> bool:
        self._drop(key)
        if self.max_entries == 0 or (self.max_bytes is not None and size > self.max_bytes):
            return False
        self._values[key] = (value, size)
        self._total += size
        return True

    def _drop(self, key: K) -> None:
        found = self._values.pop(key, None)
        if found is not None:
            self._total -= found[1]

    def _evict(self) -> None:
        entries, max_bytes = self.max_entries, self.max_bytes
        while self._values and (
            (entries is not None and len(self._values) > entries) or (max_bytes is not None and self._total > max_bytes)
        ):
            _, (_, size) = self._values.popitem(last=False)
            self._total -= size


@dataclass(frozen=True, slots=True)
class StoredMark:
    """What a store folder was last verified or written to hold (``content``: an index key, a corpus's digests)
    and its ``CURRENT`` file's state then: while the state is unchanged, so is what the store holds."""

    content: Hashable
    pointer: tuple[int, int, int]


class StoreMarks:
    """The last verified state of each store folder a cache uses, so a cache hit checks one ``stat`` of ``CURRENT``
    instead of listing and hashing the store again. Bounded (``MARK_ENTRIES``): a forgotten mark costs one check."""

    def __init__(self, entries: int = MARK_ENTRIES) -> None:
        self._marks: BoundedLru[Path, StoredMark] = BoundedLru(entries)

    def holds(self, folder: Path, content: Hashable) -> bool:
        """Whether ``folder`` still holds ``content``: marked so, and its ``CURRENT`` unchanged since."""
        mark = self._marks.peek(folder)
        return mark is not None and mark.content == content and pointer_state(folder) == mark.pointer

    def note(self, folder: Path, content: Hashable, version: str, state: tuple[int, int, int] | None) -> None:
        """Mark ``folder`` as holding ``content`` in ``version`` when ``CURRENT`` still names that version and has
        not changed since ``state`` was taken (before the version was written or read); else forget the folder,
        since another writer got in between and its next use must check again."""
        if state is not None and live_version_name(folder) == version and pointer_state(folder) == state:
            self._marks.put(folder, StoredMark(content, state))
        else:
            self._marks.discard(folder)

    def forget(self, folder: Path) -> None:
        self._marks.discard(folder)

    def clear(self) -> None:
        self._marks.clear()


_VERSIONS_KEPT: contextvars.ContextVar[int] = contextvars.ContextVar(
    "rag_integration_versions_kept", default=DEFAULT_KEEP_VERSIONS
)


@contextlib.contextmanager
def keeping_versions(keep: int | None) -> Iterator[None]:
    """While an index is built or kept for a request, what it stores beside its index (the analysed corpus) is
    pruned to the request's ``keep_versions`` too; None keeps the default."""
    token = _VERSIONS_KEPT.set(DEFAULT_KEEP_VERSIONS if keep is None else keep)
    try:
        yield
    finally:
        _VERSIONS_KEPT.reset(token)


def versions_kept() -> int:
    """The ``keep_versions`` of the index being built or kept on this thread, else ``DEFAULT_KEEP_VERSIONS``."""
    return _VERSIONS_KEPT.get()


def prune_stores(parent: Path, keep: int, *, spare: str | None = None, name: re.Pattern[str] | None = None) -> int:
    """Best effort: remove all but the ``keep`` most recently written stores in ``parent`` (``spare``, the one just
    written or used, always kept and counted); with ``name``, only stores whose folder name it matches are
    counted or removed. Only folders that are stores this package wrote are touched, never a user's folder, and a
    store a reader is loading is left for a later prune. Returns how many were removed."""
    stores = [store for store in written_stores(parent) if name is None or name.fullmatch(store.name)]
    others = [store for store in stores if store.name != spare]
    room = max(keep - (len(stores) - len(others)), 0)
    return sum(remove_store(store) for store in others[room:])


def prune_index_stores(index_dir: Path, keep: int, *, backend: str | None = None, spare: str | None = None) -> int:
    """Best effort: keep the ``keep`` most recently written index stores (``<backend>-<key hash>/``) of ``backend``
    in ``index_dir`` (of every backend together when None), ``spare`` always among them; the embeddings and analysed
    corpora every index shares are left alone. What a retrieve request does after writing an index, and what the
    command line's files cache calls after each search."""
    pattern = _INDEX_STORE if backend is None else re.compile(re.escape(backend) + r"-[0-9a-f]{20}")
    return prune_stores(Path(index_dir), keep, spare=spare, name=pattern)
