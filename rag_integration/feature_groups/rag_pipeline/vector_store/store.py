"""The on-disk vector store, in the one store format of ``core.indexes.store``: ``vectors.npy`` (one float32 row per
document) and ``documents.jsonl`` (ids, texts, metadata), under a manifest of kind ``vector_store`` whose settings
record the embedding model's id, the dimension, the count, a metadata fingerprint and the FAISS settings."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.corpus import Document, corpus_fingerprint
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.indexes import store as index_store
from rag_integration.core.indexes.store import StoreClaim, StoredVersion
from rag_integration.core.indexes.vector_index import (
    FAISS_VECTORS_FILE,
    FaissSettings,
    faiss_index_bytes,
    faiss_index_from_bytes,
    faiss_index_nbytes,
    load_faiss_index,
)
from rag_integration.core.options import OptionReader

if TYPE_CHECKING:
    import faiss

STORE_KIND = "vector_store"
DOCUMENTS_FILE = "documents.jsonl"
SETTINGS_KEYS = frozenset({"embedding_model", "dimension", "count", "metadata_fingerprint", "faiss"})
FAISS_KEYS = frozenset({"faiss_index", "hnsw_m", "ivf_nlist", "hnsw_ef_search", "ivf_nprobe"})
MAX_DIMENSION = 65536


@dataclass(frozen=True)
class VectorStore:
    """A loaded store: its index, documents and the settings its manifest records (checked on load). Pickles (to
    ship it to Spark executors) as FAISS's serial bytes and plain records, since neither a SWIG index nor a
    document's read-only metadata view pickles as it is."""

    index: faiss.Index
    documents: list[Document]
    settings: Mapping[str, Any]
    version: str

    @property
    def nbytes(self) -> int:
        """What the cache counts for this store: its index and its documents' text, without serialising either."""
        return faiss_index_nbytes(self.index) + sum(len(doc.doc_id) + len(doc.text) for doc in self.documents)

    def __reduce__(self) -> tuple[Any, ...]:
        records = [(doc.doc_id, doc.text, dict(doc.metadata)) for doc in self.documents]
        data = faiss_index_bytes(self.index, "vector_store")
        return (_restore_store, (data, records, dict(self.settings), self.version))


def _restore_store(
    data: bytes, records: list[tuple[str, str, dict[str, Any]]], settings: dict[str, Any], version: str
) -> VectorStore:
    documents = [Document(doc_id, text, MappingProxyType(metadata)) for doc_id, text, metadata in records]
    return VectorStore(faiss_index_from_bytes(data, "vector_store"), documents, settings, version)


def store_claim(
    documents: Sequence[Document], model_id: str, dimension: int, faiss_settings: Mapping[str, Any]
) -> StoreClaim:
    """What the store holds; metadata is fingerprinted too, so a metadata-only change rewrites the store."""
    settings = {
        "embedding_model": model_id,
        "dimension": dimension,
        "count": len(documents),
        "metadata_fingerprint": hashlib.sha256(_metadata_json(documents).encode("ascii")).hexdigest(),
        "faiss": dict(faiss_settings),
    }
    return StoreClaim(STORE_KIND, settings, corpus_fingerprint(documents))


def _metadata_json(documents: Sequence[Document]) -> str:
    """The documents' metadata as JSON, or a typed error naming the first value JSON cannot hold.

    The store must read back exactly what it was given, so nothing is converted on the way (a date is not
    silently turned into a string): such a value is refused before anything is written.
    """
    for document in documents:
        try:
            json.dumps(dict(document.metadata), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidOptionError(
                f"{document.doc_id}.metadata",
                dict(document.metadata),
                "metadata the vector store can keep as JSON: str keys; str, int, float, bool, None, lists and dicts",
            ) from error
    return json.dumps([dict(document.metadata) for document in documents], sort_keys=True)


def write_store(
    folder: Path,
    vectors: npt.NDArray[np.float32],
    documents: Sequence[Document],
    claim: StoreClaim,
    keep: int | None = None,
) -> None:
    """Stage the store's files and swap them in whole (``core.indexes.store``): the store already there survives
    any failure."""
    lines = "".join(
        json.dumps({"doc_id": doc.doc_id, "text": doc.text, "metadata": dict(doc.metadata)}) + "\n" for doc in documents
    )

    def save(staging: Path) -> None:
        index_store.save_npy(staging / FAISS_VECTORS_FILE, np.asarray(vectors, dtype=np.float32))
        (staging / DOCUMENTS_FILE).write_text(lines, encoding="ascii")

    index_store.write_store(folder, claim, save, keep=keep)


def check_store_claim(claim: StoreClaim, folder: Path) -> None:
    """Refuse a claim that is not a well-formed vector store's (another kind of index, or settings out of bounds)."""
    if claim.kind != STORE_KIND:
        raise IndexMismatchError("index_dir", str(folder), f"a vector store (this folder holds a '{claim.kind}' index)")
    _check_settings(claim.settings, folder)


def load_store(version: StoredVersion) -> VectorStore:
    """The store of a version whose claim passed ``check_store_claim``: every file verified against the manifest,
    every count and shape against the claim, before anything is read."""
    return index_store.load_version(version, lambda path: _load(path, version))


def _check_settings(settings: Mapping[str, Any], folder: Path) -> None:
    faiss = settings.get("faiss")
    shaped = (
        set(settings) == SETTINGS_KEYS
        and isinstance(settings["embedding_model"], str)
        and type(settings["dimension"]) is int
        and 1 <= settings["dimension"] <= MAX_DIMENSION
        and type(settings["count"]) is int
        and settings["count"] >= 1
        and isinstance(settings["metadata_fingerprint"], str)
        and isinstance(faiss, dict)
        and set(faiss) == FAISS_KEYS
    )
    if not shaped:
        raise IndexMismatchError("index_dir", str(folder), "a vector store manifest with well-formed settings")
    assert isinstance(faiss, dict)
    FaissSettings.read(OptionReader(faiss))  # the same bounds as the options that wrote them


def load_store_documents(version: StoredVersion) -> list[Document]:
    """The documents of a version whose claim passed ``check_store_claim``, verified as ``load_store`` verifies
    them, without building its FAISS index."""
    return index_store.load_version(version, lambda path: _documents(path, version))


def _load(path: Path, version: StoredVersion) -> VectorStore:
    settings = version.claim.settings
    documents = _documents(path, version)
    index = load_faiss_index(path, settings["faiss"], settings["count"], settings["dimension"], "vector_store")
    return VectorStore(index, documents, settings, version.name)


def _documents(path: Path, version: StoredVersion) -> list[Document]:
    count = version.claim.settings["count"]
    documents: list[Document] = []
    with (path / DOCUMENTS_FILE).open(encoding="ascii") as lines:
        for line in lines:
            if len(documents) == count:
                raise IndexMismatchError("index_dir", str(path), f"{count} documents as its manifest says")
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("metadata"), dict):
                raise IndexMismatchError("index_dir", str(path), "one document record per line")
            documents.append(Document(record["doc_id"], record["text"], MappingProxyType(record["metadata"])))
    if len(documents) != count:
        raise IndexMismatchError("index_dir", str(path), f"{count} documents as its manifest says")
    if corpus_fingerprint(documents) != version.claim.corpus_fingerprint:
        raise IndexMismatchError("index_dir", str(path), "documents matching the manifest's corpus fingerprint")
    return documents
