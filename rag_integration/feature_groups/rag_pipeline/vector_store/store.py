"""The on-disk vector store: ``index.faiss``, a sidecar ``documents.jsonl`` (ids, texts, metadata) and a
``manifest.json`` (embedding model, dimension, count, corpus fingerprint, FAISS settings), written last."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rag_integration.core.documents import Document, corpus_fingerprint
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.index_cache import read_json_file, write_text_atomically
from rag_integration.core.vector_index import (
    FAISS_INDEX_FILE,
    faiss_index_bytes,
    faiss_index_from_bytes,
    read_faiss_index,
    write_faiss_index,
)

MANIFEST_FILE = "manifest.json"
DOCUMENTS_FILE = "documents.jsonl"
STORE_FORMAT_VERSION = 1
MANIFEST_KEYS = frozenset(
    {"format_version", "embedding_model", "dimension", "count", "corpus_fingerprint", "metadata_fingerprint", "faiss"}
)


@dataclass(frozen=True)
class VectorStore:
    """A loaded store. Pickles (to ship it to Spark executors) as FAISS's serial bytes and plain records, since
    neither a SWIG index nor a document's read-only metadata view pickles as it is."""

    index: Any
    documents: list[Document]
    manifest: Mapping[str, Any]

    def __reduce__(self) -> tuple[Any, ...]:
        records = [(doc.doc_id, doc.text, dict(doc.metadata)) for doc in self.documents]
        return (_restore_store, (faiss_index_bytes(self.index, "vector_store"), records, dict(self.manifest)))


def _restore_store(
    data: bytes, records: list[tuple[str, str, dict[str, Any]]], manifest: dict[str, Any]
) -> VectorStore:
    documents = [Document(doc_id, text, MappingProxyType(metadata)) for doc_id, text, metadata in records]
    return VectorStore(faiss_index_from_bytes(data, "vector_store"), documents, manifest)


def store_manifest(
    documents: Sequence[Document], embedding_model: str, dimension: int, faiss_settings: Mapping[str, Any]
) -> dict[str, Any]:
    """What the store holds; metadata is fingerprinted too, so a metadata-only change rewrites the store."""
    return {
        "format_version": STORE_FORMAT_VERSION,
        "embedding_model": embedding_model,
        "dimension": dimension,
        "count": len(documents),
        "corpus_fingerprint": corpus_fingerprint(documents),
        "metadata_fingerprint": hashlib.sha256(_metadata_json(documents).encode("ascii")).hexdigest(),
        "faiss": dict(faiss_settings),
    }


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


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The store's manifest, or None when ``folder`` holds no vector store (including another kind of index)."""
    manifest = read_json_file(folder / MANIFEST_FILE)
    if not isinstance(manifest, dict) or set(manifest) != MANIFEST_KEYS:
        return None
    return manifest


def write_store(folder: Path, index: Any, documents: Sequence[Document], manifest: Mapping[str, Any]) -> None:
    """Everything is serialised first and written under temporary names; only then are the files renamed into
    place, the manifest last, so a failure never leaves half a store or destroys the one already there."""
    lines = "".join(
        json.dumps({"doc_id": doc.doc_id, "text": doc.text, "metadata": dict(doc.metadata)}) + "\n" for doc in documents
    )
    staged_index = folder / f".{FAISS_INDEX_FILE}.tmp"
    staged_documents = folder / f".{DOCUMENTS_FILE}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_faiss_index(index, staged_index, "vector_store")
        staged_documents.write_text(lines, encoding="ascii")
        (folder / MANIFEST_FILE).unlink(missing_ok=True)
        os.replace(staged_index, folder / FAISS_INDEX_FILE)
        os.replace(staged_documents, folder / DOCUMENTS_FILE)
        write_text_atomically(folder / MANIFEST_FILE, json.dumps(dict(manifest), sort_keys=True, indent=2))
    except OSError as error:
        raise InvalidOptionError("index_dir", str(folder), f"a writable folder ({error.strerror})") from error
    finally:
        staged_index.unlink(missing_ok=True)
        staged_documents.unlink(missing_ok=True)


def read_store(folder: Path, manifest: Mapping[str, Any]) -> VectorStore:
    """Load a store whose manifest was already read; refuse files that disagree with it."""
    documents = []
    try:
        with (folder / DOCUMENTS_FILE).open(encoding="ascii") as lines:
            for line in lines:
                record = json.loads(line)
                documents.append(Document(record["doc_id"], record["text"], MappingProxyType(record["metadata"])))
        index = read_faiss_index(folder / FAISS_INDEX_FILE, "vector_store")
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
        raise IndexMismatchError("index_dir", str(folder), f"a complete vector store ({error})") from error
    if len(documents) != manifest["count"] or index.ntotal != manifest["count"]:
        raise IndexMismatchError("index_dir", str(folder), f"{manifest['count']} documents as its manifest says")
    if corpus_fingerprint(documents) != manifest["corpus_fingerprint"]:
        raise IndexMismatchError("index_dir", str(folder), "documents matching the manifest's corpus fingerprint")
    return VectorStore(index, documents, manifest)
