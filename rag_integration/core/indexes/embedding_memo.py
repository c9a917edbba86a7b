"""Vectors already made in this process, by model and text: a corpus that changes by a few documents embeds only
those, and a text that appears twice is embedded once."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from rag_integration.core.indexes.embedders import Embedder, Vectors

MEMO_BYTES_VARIABLE = "RAG_EMBEDDING_MEMO_BYTES"
DEFAULT_MEMO_BYTES = 256 * 1024 * 1024
"""About 170,000 MiniLM vectors; the least recently used go first."""


class EmbeddingMemo:
    """A process-wide, byte-bounded LRU of embedded rows keyed by (model id, sha256 of the text)."""

    def __init__(self, max_bytes: int = DEFAULT_MEMO_BYTES) -> None:
        self.max_bytes = max_bytes
        self._rows: OrderedDict[tuple[str, bytes], Vectors] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self._bytes = 0

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> Vectors:
        """``embedder.embed(texts)``, asking the model only for texts it has not embedded in this process."""
        keys = [(embedder.model_id, hashlib.sha256(text.encode("utf-8")).digest()) for text in texts]
        with self._lock:
            found = {key: self._rows[key] for key in keys if key in self._rows}
            for key in found:
                self._rows.move_to_end(key)
        missing: dict[tuple[str, bytes], str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if missing:
            made = embedder.embed(list(missing.values()))
            new_rows = list(zip(missing, made, strict=True))
            found.update(new_rows)
            self._keep(new_rows)
        if not keys:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.ascontiguousarray(np.stack([found[key] for key in keys]), dtype=np.float32)

    def _keep(self, rows: list[tuple[tuple[str, bytes], Vectors]]) -> None:
        with self._lock:
            for key, row in rows:
                if key not in self._rows:
                    self._rows[key] = row
                    self._bytes += row.nbytes
            while self._rows and self._bytes > self.max_bytes:
                _, evicted = self._rows.popitem(last=False)
                self._bytes -= evicted.nbytes


def _memo_bytes() -> int:
    raw = os.environ.get(MEMO_BYTES_VARIABLE, "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MEMO_BYTES


EMBEDDING_MEMO = EmbeddingMemo(_memo_bytes())
