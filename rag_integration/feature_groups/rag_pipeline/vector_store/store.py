"""The on-disk vector store: ``index.faiss``, a sidecar ``documents.jsonl`` (ids, texts, metadata) and a
``manifest.json`` (embedding model, dimension, count, corpus fingerprint, FAISS settings), written last."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.documents import Document, corpus_fingerprint
from rag_integration.core.errors import IndexMismatchError, InvalidOptionError
from rag_integration.core.vector_index import read_faiss_index, write_faiss_index

MANIFEST_FILE = "manifest.json"
INDEX_FILE = "index.faiss"
DOCUMENTS_FILE = "documents.jsonl"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class VectorStore:
    index: Any
    documents: list[Document]
    manifest: Mapping[str, Any]


def store_manifest(
    documents: Sequence[Document], embedding_model: str, dimension: int, faiss_settings: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "embedding_model": embedding_model,
        "dimension": dimension,
        "count": len(documents),
        "corpus_fingerprint": corpus_fingerprint(documents),
        "faiss": dict(faiss_settings),
    }


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise InvalidOptionError("index_dir", str(folder), f"a readable {MANIFEST_FILE} ({error})") from error
    return manifest if isinstance(manifest, dict) else None


def write_store(folder: Path, index: Any, documents: Sequence[Document], manifest: Mapping[str, Any]) -> None:
    """Each file goes to a temporary name and is renamed; the manifest comes last, so it never describes half a store."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST_FILE).unlink(missing_ok=True)
    write_faiss_index(index, folder / f".{INDEX_FILE}.tmp", "vector_store")
    os.replace(folder / f".{INDEX_FILE}.tmp", folder / INDEX_FILE)
    lines = (
        json.dumps({"doc_id": doc.doc_id, "text": doc.text, "metadata": dict(doc.metadata)}, ensure_ascii=False)
        for doc in documents
    )
    _replace_text(folder / DOCUMENTS_FILE, "".join(line + "\n" for line in lines))
    _replace_text(folder / MANIFEST_FILE, json.dumps(dict(manifest), sort_keys=True, indent=2))


def read_store(folder: Path, manifest: Mapping[str, Any]) -> VectorStore:
    """Load a store whose manifest was already read; refuse files that disagree with it."""
    documents = []
    with (folder / DOCUMENTS_FILE).open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            documents.append(Document(record["doc_id"], record["text"], record["metadata"]))
    index = read_faiss_index(folder / INDEX_FILE, "vector_store")
    if len(documents) != manifest["count"] or index.ntotal != manifest["count"]:
        raise IndexMismatchError("index_dir", str(folder), f"{manifest['count']} documents as its manifest says")
    if corpus_fingerprint(documents) != manifest["corpus_fingerprint"]:
        raise IndexMismatchError("index_dir", str(folder), "documents matching the manifest's corpus fingerprint")
    return VectorStore(index, documents, manifest)


def _replace_text(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)
