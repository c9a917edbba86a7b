"""Vectors already made, by model and text: a corpus that changes by a few documents embeds only those, and a text
that appears twice is embedded once. In memory for the process; with a folder (a request's ``index_dir``), also in
content-addressed shards under ``<folder>/embeddings/<model>/`` that a later process reads back, checked like any
file someone else may have written."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rag_integration.core.documents.files import read_regular_file
from rag_integration.core.errors import ConnectorError
from rag_integration.core.indexes.embedders import Embedder, Vectors
from rag_integration.core.indexes.retention import BoundedLru, Limit
from rag_integration.core.indexes.store import load_npy

LOGGER = logging.getLogger("rag_integration")
EMBEDDINGS_FOLDER = "embeddings"
"""The folder of an ``index_dir`` that keeps embeddings (beside the stored indexes)."""
KEY_BYTES = 32
SHARD_NAME = re.compile(r"[0-9a-f]{32}")
MAX_SHARDS = 10_000
MAX_SHARD_ROWS = 1_000_000

MEMO_BYTES_VARIABLE = "RAG_EMBEDDING_MEMO_BYTES"
DEFAULT_MEMO_BYTES = 256 * 1024 * 1024
"""About 170,000 MiniLM vectors; the least recently used go first."""
MEMO_BYTES = Limit(MEMO_BYTES_VARIABLE, DEFAULT_MEMO_BYTES)


class EmbeddingMemo:
    """A process-wide, byte-bounded LRU of embedded rows keyed by (model id, sha256 of the text)."""

    def __init__(self, max_bytes: int = DEFAULT_MEMO_BYTES) -> None:
        self._rows: BoundedLru[tuple[str, bytes], Vectors] = BoundedLru(max_bytes=max_bytes)
        self._shards_read: set[Path] = set()

    @property
    def max_bytes(self) -> int:
        return self._rows.max_bytes or 0

    def resize(self, max_bytes: int) -> None:
        self._rows.resize(None, max_bytes)

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self._shards_read.clear()

    def embed(self, embedder: Embedder, texts: Sequence[str], folder: Path | None = None) -> Vectors:
        """``embedder.embed(texts)``, asking the model only for texts it has not embedded: in this process, or (with
        ``folder``) in any process that embedded them with the same folder."""
        keys = [(embedder.model_id, text_key(text)) for text in texts]
        shards = None if folder is None else Path(folder) / EMBEDDINGS_FOLDER / _model_folder(embedder.model_id)
        if shards is not None and any(key not in self._rows for key in keys):
            self._read_shards(shards, embedder)
        found = self._rows.get_many(keys)
        missing: dict[tuple[str, bytes], str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if missing:
            made = embedder.embed(list(missing.values()))
            new_rows = list(zip(missing, made, strict=True))
            found.update(new_rows)
            self._keep(new_rows)
            if shards is not None:
                try:
                    _write_shard(shards, new_rows)
                except OSError as error:  # a cache: the vectors are made, only their reuse by a later process is lost
                    LOGGER.warning("index_dir: could not keep %d embeddings in %s: %s", len(new_rows), shards, error)
        if not keys:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.ascontiguousarray(np.stack([found[key] for key in keys]), dtype=np.float32)

    def _keep(self, rows: list[tuple[tuple[str, bytes], Vectors]]) -> None:
        self._rows.put_many((key, row, row.nbytes) for key, row in rows)

    def _read_shards(self, shards: Path, embedder: Embedder) -> None:
        """Every readable shard of this model; a shard that fails a check is skipped (logged): it is a cache."""
        try:
            with os.scandir(shards) as entries:
                names = sorted(
                    entry.name[: -len(".keys")]
                    for entry in entries
                    if entry.name.endswith(".keys") and entry.is_file(follow_symlinks=False)
                )
        except OSError:
            return
        for name in names[:MAX_SHARDS]:
            if not SHARD_NAME.fullmatch(name) or shards / name in self._shards_read:
                continue
            self._shards_read.add(shards / name)
            try:
                raw = read_regular_file(shards / f"{name}.keys", KEY_BYTES * MAX_SHARD_ROWS)
                if len(raw) % KEY_BYTES:
                    raise ValueError("a keys file of whole sha256 digests")
                count = len(raw) // KEY_BYTES
                rows = load_npy(shards / f"{name}.npy", (count, embedder.dimension), "float32", "index_dir")
            except (OSError, ValueError, ConnectorError) as error:
                LOGGER.warning("index_dir: skipping embedding shard %s: %s", shards / name, error)
                continue
            keys = [(embedder.model_id, raw[start : start + KEY_BYTES]) for start in range(0, len(raw), KEY_BYTES)]
            self._keep(list(zip(keys, rows, strict=True)))

    def forget(self, folder: Path | None, doomed: Callable[[bytes], bool]) -> int:
        """Drop every vector whose text digest (``text_key``) is ``doomed``: from this process, and from each shard
        under ``folder`` (a shard holding one is written again without it, or removed). How many rows on disk went.
        What forgetting a document relies on: no vector of its text is kept once this returns."""
        self._rows.discard_where(lambda key, _: doomed(key[1]))
        self._shards_read.clear()
        if folder is None:
            return 0
        dropped = 0
        root = Path(folder) / EMBEDDINGS_FOLDER
        for model in _entries(root, lambda path: path.is_dir() and not path.is_symlink()):
            for keys_file in _entries(model, lambda path: path.suffix == ".keys" and path.is_file()):
                dropped += _forget_in_shard(model, keys_file.stem, doomed)
            for staged in _entries(model, lambda path: path.name.startswith(".")):
                staged.unlink(missing_ok=True)  # a crashed writer's half shard may hold anything
        return dropped


def text_key(text: str) -> bytes:
    """The digest a vector of ``text`` is kept under."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def _entries(folder: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    try:
        return sorted(path for path in folder.iterdir() if wanted(path))
    except OSError:
        return []


def _forget_in_shard(shards: Path, name: str, doomed: Callable[[bytes], bool]) -> int:
    """Rewrite one shard without its doomed rows; a shard that cannot be read is removed whole (it is a cache)."""
    keys_path, rows_path = shards / f"{name}.keys", shards / f"{name}.npy"
    try:
        raw = read_regular_file(keys_path, KEY_BYTES * MAX_SHARD_ROWS)
        keys = [raw[start : start + KEY_BYTES] for start in range(0, len(raw) - len(raw) % KEY_BYTES, KEY_BYTES)]
        keep = [position for position, key in enumerate(keys) if not doomed(key)]
        if len(keep) == len(keys) and len(raw) % KEY_BYTES == 0:
            return 0
        rows = np.load(rows_path, allow_pickle=False) if keep else None
    except (OSError, ValueError):
        keep, keys, rows = [], [], None
    if keep and rows is not None and rows.ndim == 2 and len(rows) == len(keys):
        _write_shard(shards, [(("", keys[position]), rows[position]) for position in keep])
    keys_path.unlink(missing_ok=True)
    rows_path.unlink(missing_ok=True)
    return len(keys) - len(keep)


def _model_folder(model_id: str) -> str:
    return hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:32]


def _write_shard(shards: Path, rows: list[tuple[tuple[str, bytes], Vectors]]) -> None:
    """One shard of newly embedded rows, written under temporary names and renamed into place."""
    digests = b"".join(key for (_, key), _ in rows)
    name = hashlib.sha256(digests).hexdigest()[:32]
    shards.mkdir(parents=True, exist_ok=True)
    staged = shards / f".{name}.{os.getpid()}.{threading.get_ident()}"
    np.save(f"{staged}.npy", np.stack([row for _, row in rows]).astype(np.float32), allow_pickle=False)
    Path(f"{staged}.keys").write_bytes(digests)
    os.replace(f"{staged}.npy", shards / f"{name}.npy")
    os.replace(f"{staged}.keys", shards / f"{name}.keys")


EMBEDDING_MEMO = EmbeddingMemo(MEMO_BYTES.read())
