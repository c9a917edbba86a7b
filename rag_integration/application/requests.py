"""The requests behind ``search`` and ``ask``: retrieval over a persisted store or over files read, chunked and
indexed in the run, optionally reranked; built from plain arguments, checked before anything runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mloda.provider import FeatureGroup
from mloda.user import Feature, Options

from rag_integration.application.arguments import backend, check_paths, choose, chunkers
from rag_integration.application.notes import RunNotes, files_cache_dir
from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import ArgumentError, ConnectorError
from rag_integration.core.extras import modules_installed
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.store import current_version
from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever
from rag_integration.feature_groups.rag_pipeline.embedding import EMBEDDING_STAGES

DEFAULT_EMBEDDING_MODEL = "minilm"
RERANK_DEPTH = 100
"""How many passages a reranked search retrieves for the reranker to order."""


@dataclass
class Request:
    """The feature a run answers, its options and the feature groups it enables."""

    feature: str
    options: dict[str, Any]
    groups: set[type[FeatureGroup]] = field(default_factory=set)

    def as_feature(self, **more: Any) -> Feature:
        return Feature(self.feature, options=Options(context={**self.options, **more}))


def retrieval(
    queries: Sequence[str],
    top_k: int,
    *,
    index_dir: Path | None,
    files: Sequence[Path] | None,
    backend_name: str,
    chunker: str,
    embedding_model: str | None,
    cache: bool,
    notes: RunNotes,
    language: str | None = None,
    principals: Sequence[str] | None = None,
    unlabelled: str = "hidden",
) -> Request:
    """``retrieved_passages`` over a store (``index_dir``) or over ``files`` read, chunked and indexed by
    ``backend_name``."""
    if (index_dir is None) == (not files):
        raise ArgumentError("index_dir / files", "give either {index_dir} or {files}")
    options: dict[str, Any] = {"query_text": list(queries), "top_k": top_k}
    options |= visibility_options(principals, unlabelled)  # every step of the run reads only what they may read
    if index_dir is not None:
        notes.warn_if_stale(index_dir, name_files=principals is None)
        model = embedding_model or store_model(index_dir)
        options |= {"retrieve_backend": "vector_store", "index_dir": str(index_dir), "embedding_model": model}
        return Request("retrieved_passages", options, {VectorStoreRetriever})
    notes.files_given = True
    check_paths(files or [], "files")
    choose("chunker", chunker, chunkers())
    refused = {
        str(VectorStoreRetriever.BACKEND): "it answers from a store written by `rag-integration index`: give that "
        "store with {index_dir} instead of {files}"
    }
    retriever = backend("retrieve", "backend_name", backend_name, refused)
    source = "docs__chunked" if chunker != "none" else "docs"
    options |= file_options(files or [], chunker) | {"retrieve_backend": backend_name, "corpus_source": source}
    if cache:
        options["index_dir"] = str(files_cache_dir())
    declared = retriever.declared_options()
    if "embedding_model" in declared:
        options["embedding_model"] = embedding_model or DEFAULT_EMBEDDING_MODEL
    if language is not None and "language" in declared:
        options["language"] = language
    return Request("retrieved_passages", options, {*STAGES, retriever})


def reranked(
    request: Request, rerank: str, top_k: int, flashrank_model_dir: Path | None, language: str | None = None
) -> Request:
    """``reranked_passages`` over ``request``'s retrieval, which retrieves ``RERANK_DEPTH`` candidates."""
    reranker = backend("rerank", "rerank", rerank)
    candidates = Feature(
        request.feature, options=Options(context={**request.options, "top_k": max(top_k, RERANK_DEPTH)})
    )
    options: dict[str, Any] = {
        "rerank_backend": rerank,
        "query_text": request.options["query_text"],
        "candidates_source": candidates,
        "top_k": top_k,
    }
    options |= {key: request.options[key] for key in VISIBILITY_KEYS if key in request.options}
    if flashrank_model_dir is not None:
        options["flashrank_model_dir"] = str(flashrank_model_dir)
    if language is not None and "language" in reranker.declared_options():
        options["language"] = language
    return Request("reranked_passages", options, {*request.groups, reranker})


def check_flashrank_dir(rerank: str | None, flashrank_model_dir: Path | None) -> None:
    """``flashrank_model_dir`` is FlashRank's model folder: refused with another reranker, or none."""
    if flashrank_model_dir is not None and rerank != "flashrank":
        given = ArgumentError.literal(rerank or "not given")
        raise ArgumentError(
            "flashrank_model_dir", f"only {{rerank}} flashrank reads a model folder ({{rerank}} is {given})"
        )


def store_model(index_dir: Path) -> str:
    """The embedding stage a store was built with, found by its manifest's model id among the stages whose extra is
    installed; ``minilm`` when none matches, so the retriever's own check names what the store holds."""
    try:
        version = current_version(index_dir)
    except ConnectorError:
        return DEFAULT_EMBEDDING_MODEL
    stored = None if version is None else version.claim.settings.get("embedding_model")
    for stage in EMBEDDING_STAGES:
        name = str(stage.BACKEND)
        if stored is not None and modules_installed(stage.REQUIRED_MODULES) and get_embedder(name).model_id == stored:
            return name
    return DEFAULT_EMBEDDING_MODEL


def file_options(paths: Sequence[Path], chunker: str) -> dict[str, Any]:
    """The files document source over ``paths``, chunked by ``chunker`` unless it is ``none``."""
    options: dict[str, Any] = {"document_source": "files", "paths": [str(path) for path in paths]}
    if chunker != "none":
        options["chunker"] = chunker
    return options


VISIBILITY_KEYS = ("principals", "unlabelled")


def visibility_options(principals: Sequence[str] | None, unlabelled: str) -> dict[str, Any]:
    """The options that limit a run to what ``principals`` may read; documents without ``readers`` among labelled
    ones are read by nobody, or by everyone with ``unlabelled="public"``."""
    choose("unlabelled", unlabelled, ("hidden", "public"))
    if principals is None:
        return {}
    return {"principals": list(principals), "unlabelled": unlabelled}


@contextlib.contextmanager
def naming_principals() -> Iterator[None]:
    """A run over documents that say who may read them, asked without principals: the caller's usage error."""
    try:
        yield
    except PrincipalsRequiredError as error:
        raise ArgumentError(
            "principals", "the documents say who may read them (readers): name who is asking with {principals}"
        ) from error
