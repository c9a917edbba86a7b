"""Build each index once: a bounded in-process LRU, optionally backed by a folder on disk.

An index is keyed by (backend, backend settings, corpus fingerprint), so a changed corpus or
setting is a different key and can never be served a stale index.
"""

from __future__ import annotations

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

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class IndexKey:
    backend: str
    settings: str
    corpus_fingerprint: str

    @classmethod
    def of(cls, backend: str, settings: Mapping[str, Any], corpus_fingerprint: str) -> IndexKey:
        return cls(backend, json.dumps(dict(settings), sort_keys=True, default=str), corpus_fingerprint)

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


class IndexCache:
    """Process-wide LRU of built indexes; ``capacity`` 0 disables in-memory reuse."""

    def __init__(self, capacity: int = 8) -> None:
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
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return self._entries[key]
            index = None
            folder = Path(index_dir) / key.folder_name() if index_dir is not None else None
            if folder is not None and load is not None and _manifest_matches(folder, key):
                index = load(folder)
                self.stats.loads += 1
            if index is None:
                index = build()
                self.stats.builds += 1
                if folder is not None and save is not None:
                    _save_atomically(folder, key, index, save)
            if self.capacity > 0:
                self._entries[key] = index
                self._evict()
            return index

    def _evict(self) -> None:
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def _manifest_matches(folder: Path, key: IndexKey) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(manifest == key.manifest())


def _save_atomically(folder: Path, key: IndexKey, index: Any, save: Callable[[Any, Path], None]) -> None:
    """Write into a temporary sibling and rename, so a reader never sees half an index."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        save(index, staging)
        (staging / MANIFEST_NAME).write_text(json.dumps(key.manifest(), sort_keys=True), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


INDEX_CACHE = IndexCache()
