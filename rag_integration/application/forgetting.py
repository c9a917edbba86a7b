"""``forget``: remove documents from an ``index_dir`` so that nothing under it holds them any longer: not their text
(the store), their words (an analysed corpus's vocabulary), their vectors (the store, the embedding shards) or an
index built over them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.core.documents.corpus import Document, read_documents, text_digests
from rag_integration.core.documents.source_record import move_record
from rag_integration.core.errors import ArgumentError
from rag_integration.core.indexes.cache import INDEX_CACHE, VIEW_CACHE
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO, text_key
from rag_integration.core.indexes.retention import prune_index_stores
from rag_integration.core.indexes.shards import forget_shards
from rag_integration.core.indexes.store import current_version, live_version_name, remove_store
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO
from rag_integration.core.indexes.vector_index import faiss_vectors
from rag_integration.feature_groups.rag_pipeline.vector_store.store import (
    STORE_KIND,
    check_store_claim,
    load_store,
    store_claim,
    write_store,
)

PARENT_KEY = "parent_id"
"""The metadata key naming the document a chunk was cut from: forgetting a document forgets its chunks."""


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget`` removed from ``index_dir``."""

    index_dir: Path
    forgotten: int
    """Documents (chunks) taken out of the store, or named in ``documents``."""
    remaining: int
    not_found: list[str]
    vectors: int
    """Rows dropped from the embedding shards."""
    analyses: int
    """Analysed corpora removed (their vocabularies named the documents' words)."""
    indexes: int
    """Index stores removed: each is made from a corpus again on the next request."""
    shards: int
    """Shards of a sharded corpus (``index_shards``) removed with what they kept: built again on the next request."""
    held: int
    """Older store versions a reader still holds: removed by the next write once released."""

    def describe(self) -> str:
        missing = f"; {len(self.not_found)} id(s) not found" if self.not_found else ""
        held = f"; {self.held} older version(s) still being read, removed on the next write" if self.held else ""
        return (
            f"forgot {self.forgotten} document(s) in {self.index_dir} ({self.remaining} remain): {self.vectors} "
            f"vector(s), {self.analyses} analysed corpus(es), {self.indexes} index(es) and {self.shards} shard(s) "
            f"removed{missing}{held}"
        )


def forget(
    index_dir: Path | str, doc_ids: Iterable[str], *, documents: Sequence[dict[str, Any]] | None = None
) -> ForgetReport:
    """Forget ``doc_ids`` (and the chunks cut from them) in ``index_dir``: a store written by ``index`` is written
    again without them and its older versions removed; in every case the embedding shards, analysed corpora and
    index stores under ``index_dir`` that hold their texts go. A folder a retrieve backend keeps its indexes in has
    no store naming documents: give the corpus it was built from as ``documents``."""
    folder = Path(index_dir)
    ids = _ids(doc_ids)
    version = current_version(folder)
    if version is not None and version.claim.kind == STORE_KIND:
        check_store_claim(version.claim, folder)
        stored = load_store(version)
        corpus: list[Document] = list(stored.documents)
    elif documents is not None:
        stored, corpus = None, read_documents(documents, "documents")
    else:
        raise ArgumentError(
            "documents",
            f"{folder} holds no store written by `index`: give the corpus it was built from as {{documents}}",
        )
    named = [_named(document, ids) for document in corpus]
    gone = [position for position, is_named in enumerate(named) if is_named]
    kept = [position for position, is_named in enumerate(named) if not is_named]
    found = {corpus[position].doc_id for position in gone} | {
        str(corpus[position].metadata[PARENT_KEY]) for position in gone if PARENT_KEY in corpus[position].metadata
    }
    held = 0
    if stored is not None and gone:
        remaining = [corpus[position] for position in kept]
        if remaining:
            vectors = faiss_vectors(stored.index, kept, "vector_store")
            claim = store_claim(
                remaining, stored.settings["embedding_model"], vectors.shape[1], stored.settings["faiss"]
            )
            write_store(folder, vectors, remaining, claim, keep=1)
            live = live_version_name(folder)
            sources = {str(corpus[position].metadata.get("source")) for position in gone}
            sources -= {str(document.metadata.get("source")) for document in remaining}
            if live is not None:
                move_record(folder, stored.version, live, sources)
            held = sum(1 for path in folder.glob("v-*") if path.name != live)
        elif not remove_store(folder):
            held = 1
    live_texts = {corpus[position].text for position in kept}
    texts = sorted({corpus[position].text for position in gone} - live_texts)
    vector_keys = {text_key(text) for text in texts}
    analysis_keys = set(text_digests([Document("", text) for text in texts]))
    INDEX_CACHE.clear()  # built indexes hold the texts' words and vectors; the memos drop just those texts below
    VIEW_CACHE.clear()
    return ForgetReport(
        index_dir=folder,
        forgotten=len(gone),
        remaining=len(kept),
        not_found=sorted(ids - found),
        vectors=EMBEDDING_MEMO.forget(folder, vector_keys.__contains__) if texts else 0,
        analyses=ANALYSIS_MEMO.forget(folder, analysis_keys.__contains__) if texts else 0,
        indexes=prune_index_stores(folder, keep=0) if texts else 0,
        shards=forget_shards(folder, lambda doc_id, metadata: _named(Document(doc_id, "", metadata), ids)),
        held=held,
    )


def _ids(doc_ids: Iterable[str]) -> set[str]:
    if isinstance(doc_ids, str):
        raise ArgumentError("doc_ids", "a list of doc_ids, not one string")
    ids = list(doc_ids)
    if not ids or not all(isinstance(doc_id, str) and doc_id for doc_id in ids):
        raise ArgumentError("doc_ids", "one or more non-empty doc_ids")
    return set(ids)


def _named(document: Document, ids: set[str]) -> bool:
    return document.doc_id in ids or document.metadata.get(PARENT_KEY) in ids
