"""``index``: read, chunk, embed and persist documents as a FAISS store that ``search``/``ask`` answer from, with a
record of the files read so a later search can say when the store is out of date."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_integration.application.arguments import DEFAULT_CHUNKER, check_paths, choose, chunkers, listed
from rag_integration.application.notes import RunNotes
from rag_integration.application.requests import DEFAULT_EMBEDDING_MODEL, file_options
from rag_integration.core.contract.run import run_feature
from rag_integration.core.documents.source_record import save_record
from rag_integration.core.errors import ConnectorError
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO, text_key
from rag_integration.core.indexes.store import current_version, verified_version
from rag_integration.core.progress import progress_display, step
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.feature_groups.rag_pipeline.embedding import EMBEDDING_STAGES
from rag_integration.feature_groups.rag_pipeline.vector_store.store import check_store_claim, load_store_documents


@dataclass(frozen=True)
class IndexReport:
    """What an ``index`` run changed in the store, by chunk, and how many texts it embedded."""

    index_dir: Path
    chunks: int
    added: int
    changed: int
    removed: int
    unchanged: int
    embedded: int
    notes: RunNotes
    files: int = 0
    """How many files the store holds now, and how many of them the run added, changed or removed."""
    files_touched: int = 0

    def describe(self) -> str:
        """Files first (what a user thinks in), then the chunks they are cut into."""
        return (
            f"indexed {self.files} file(s) into {self.index_dir}: {self.files_touched} added, changed or removed; "
            f"{self.chunks} chunks: {self.added} added, {self.changed} changed, {self.removed} removed, "
            f"{self.unchanged} unchanged; {self.embedded} embedded"
        )


def index_models() -> list[str]:
    """The embedding models ``index`` has a stage for."""
    return sorted(str(stage.BACKEND) for stage in EMBEDDING_STAGES)


def index(
    paths: Sequence[Path | str],
    index_dir: Path | str,
    *,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    chunker: str = DEFAULT_CHUNKER,
    keep: int = 2,
    progress: bool = False,
    notes: RunNotes | None = None,
) -> IndexReport:
    """Persist ``paths`` (files, folders or globs) as a store in ``index_dir``, keeping its ``keep`` latest
    versions; ``notes`` (filled also when the run fails) lists the files not read."""
    notes = notes if notes is not None else RunNotes()
    folder = Path(index_dir)
    check_paths(list(paths), "paths")
    choose("chunker", chunker, chunkers())
    why = (
        f"expected one of {listed(index_models())}, the models `index` has an embedding stage for (other embedders "
        "serve `ask`/`search --files` with a dense --backend)"
    )
    choose("embedding_model", embedding_model, index_models(), why)
    feature = "docs__chunked__embedded__indexed" if chunker != "none" else "docs__embedded__indexed"
    absolute = [Path(os.path.abspath(path)) for path in paths]  # a store's citations point at files from anywhere
    options = file_options(absolute, chunker) | {
        "embedding_model": embedding_model,
        "vector_store": "faiss",
        "index_dir": str(folder),
        "keep_versions": keep,
        "show_progress": progress,
    }
    before = stored_chunks(folder)
    embedder = get_embedder(embedding_model)
    embedded = embedder.texts_embedded
    with progress_display(progress), step(f"indexing {len(paths)} path(s) into {folder}"), notes.reading_files():
        rows = run_feature(feature, options, set(STAGES))
    live = current_version(folder)
    if live is not None:
        save_record(folder, live.name, [str(path) for path in paths], notes.read)
    after = {str(row["doc_id"]): str(row["text"]) for row in rows}
    if live is not None and not any(path.name != live.name for path in folder.glob("v-*")):
        # no older version holds a removed document any longer: nor does an embedding shard
        kept = {text_key(text) for text in after.values()}
        EMBEDDING_MEMO.forget(folder, lambda key: key not in kept)
    added = sum(1 for doc_id in after if doc_id not in before)
    changed = sum(1 for doc_id, text in after.items() if doc_id in before and before[doc_id] != text)
    removed = sum(1 for doc_id in before if doc_id not in after)
    unchanged = len(after) - added - changed
    touched = {
        _file_of(doc_id)
        for doc_id in {*after, *before}
        if doc_id not in before or doc_id not in after or before[doc_id] != after[doc_id]
    }
    files = len({_file_of(doc_id) for doc_id in after})
    embedded_now = embedder.texts_embedded - embedded
    return IndexReport(folder, len(rows), added, changed, removed, unchanged, embedded_now, notes, files, len(touched))


def _file_of(doc_id: str) -> str:
    """The file a chunk was cut from: its doc_id before the chunk number (``notes.txt#3``)."""
    head, separator, tail = doc_id.rpartition("#")
    return head if separator and tail.isdigit() else doc_id


def stored_chunks(index_dir: Path) -> dict[str, str]:
    """doc_id -> text of the store already in ``index_dir`` (none when there is none, or it fails its checks)."""
    try:
        version = verified_version(index_dir)
        if version is None:
            return {}
        check_store_claim(version.claim, index_dir)
        return {document.doc_id: document.text for document in load_store_documents(version)}
    except (ConnectorError, OSError, ValueError):
        return {}
