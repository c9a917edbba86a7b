"""Build each index once: a bounded in-process LRU, optionally backed by a folder on disk.

An index is keyed by (backend, backend settings, corpus fingerprint), so a changed corpus or
setting is a different key and can never be served a stale index. An index built elsewhere (on a Spark
driver, say) can be shipped pickled and ``install``-ed under its key, so a worker never builds it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionReader
from rag_integration.core.progress import step

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 1
DEFAULT_CAPACITY = 8


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

    def manifest(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "backend": self.backend,
            "settings": json.loads(self.settings),
            "corpus_fingerprint": self.corpus_fingerprint,
        }


@dataclass
class CacheStats:
    builds: int = 0
    loads: int = 0
    hits: int = 0
    installs: int = 0


class IndexCache:
    """Process-wide LRU of built indexes; ``capacity`` 0 disables in-memory reuse."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._entries: OrderedDict[IndexKey, Any] = OrderedDict()
        self._lock = threading.RLock()
        self.capacity = capacity
        self.stats = CacheStats()

    def resize(self, capacity: int) -> None:
        with self._lock:
            self.capacity = capacity
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
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
        """The index for ``key``: from memory, else loaded from ``index_dir``, else built (and saved there)."""
        folder = Path(index_dir) / key.folder_name() if index_dir is not None else None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                index = self._entries[key]
                if folder is not None and save is not None and not _manifest_matches(folder, key):
                    _save_atomically(folder, key, index, save)
                return index
            index = None
            if folder is not None and load is not None and _manifest_matches(folder, key):
                with step(f"loading the {key.backend} index from {folder}"):
                    index = load(folder)
                self.stats.loads += 1
            if index is None:
                with step(f"building the {key.backend} index"):
                    index = build()
                self.stats.builds += 1
                if folder is not None and save is not None:
                    _save_atomically(folder, key, index, save)
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
        if self.capacity > 0:
            self._entries[key] = index
            self._entries.move_to_end(key)
            self._evict()

    def _evict(self) -> None:
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def read_json_file(path: Path) -> Any:
    """The parsed JSON in ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_text_atomically(path: Path, text: str) -> None:
    """Write to a temporary sibling and rename, so a reader sees the old file or the new one, never half."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _manifest_matches(folder: Path, key: IndexKey) -> bool:
    return bool(read_json_file(folder / MANIFEST_NAME) == key.manifest())


def _save_atomically(folder: Path, key: IndexKey, index: Any, save: Callable[[Any, Path], None]) -> None:
    """Write into a temporary sibling folder and rename it, so a reader never sees half an index."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    except OSError as error:
        raise InvalidOptionError("index_dir", str(folder.parent), f"a writable folder ({error.strerror})") from error
    try:
        save(index, staging)
        write_text_atomically(staging / MANIFEST_NAME, json.dumps(key.manifest(), sort_keys=True))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


INDEX_CACHE = IndexCache()


def configure_index_cache(reader: OptionReader) -> None:
    """Apply a request's ``index_cache_size`` (default ``DEFAULT_CAPACITY``) to the process-wide cache."""
    INDEX_CACHE.resize(reader.integer("index_cache_size", default=DEFAULT_CAPACITY, minimum=0))
