"""``search``: rank passages of files or a persisted store for one or more queries, in one batched request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_integration.application.arguments import DEFAULT_CHUNKER
from rag_integration.application.notes import FILES_CACHE_STORES, NO_DOCUMENTS, RunNotes, files_cache_dir
from rag_integration.application.requests import check_flashrank_dir, naming_principals, reranked, retrieval
from rag_integration.core.contract.run import run_features
from rag_integration.core.indexes.retention import prune_index_stores
from rag_integration.core.progress import progress_display


@dataclass(frozen=True)
class SearchResult:
    """Per query, its passages (rows of ``retrieved_passages`` or ``reranked_passages``), and what the run noted."""

    queries: list[str]
    rankings: list[list[dict[str, Any]]]
    notes: RunNotes

    def no_match_reason(self) -> str:
        """Why a query has no passage: nothing could be read, or none of its words is in the indexed text."""
        return NO_DOCUMENTS if self.notes.no_documents else "none of its words is in the indexed text"


def search(
    queries: Sequence[str],
    *,
    files: Sequence[Path | str] | None = None,
    index_dir: Path | str | None = None,
    backend_name: str = "bm25s",
    chunker: str = DEFAULT_CHUNKER,
    top_k: int = 5,
    embedding_model: str | None = None,
    rerank: str | None = None,
    flashrank_model_dir: Path | None = None,
    metadata: bool = False,
    explain: bool = False,
    progress: bool = False,
    cache: bool = True,
    notes: RunNotes | None = None,
    principals: Sequence[str] | None = None,
    unlabelled: str = "hidden",
) -> SearchResult:
    """Rank the passages of ``files`` (read, chunked and indexed by ``backend_name``) or of the store in
    ``index_dir`` for every query, optionally reranked; ``metadata`` adds where each passage comes from, ``explain``
    why it ranked; ``principals`` (the caller's names) limit it to the documents whose ``readers`` name one of them."""
    notes = notes if notes is not None else RunNotes()
    request = retrieval(
        list(queries),
        top_k,
        index_dir=None if index_dir is None else Path(index_dir),
        files=None if files is None else [Path(path) for path in files],
        backend_name=backend_name,
        chunker=chunker,
        embedding_model=embedding_model,
        cache=cache,
        notes=notes,
        principals=principals,
        unlabelled=unlabelled,
    )
    if metadata:
        request.options["return_metadata"] = True
    check_flashrank_dir(rerank, flashrank_model_dir)
    if rerank is not None:
        request = reranked(request, rerank, top_k, flashrank_model_dir)
        if metadata:
            request.options["return_metadata"] = True
    if explain:
        request.options["explain"] = True
    with progress_display(progress), notes.reading_files(), naming_principals():
        columns = run_features([request.as_feature(show_progress=progress)], request.groups)
    if index_dir is None and cache:
        prune_index_stores(files_cache_dir(), keep=FILES_CACHE_STORES)
    return SearchResult(list(queries), columns[request.feature], notes)
