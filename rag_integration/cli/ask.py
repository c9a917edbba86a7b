"""``ask``: parse, call the application, print each answer with its cited sources."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from rag_integration.application import Answer, InvalidOptionError, RunNotes, questions_from
from rag_integration.application.answering import BEST_SENTENCE_MODEL, ask_lines, question_lines_from
from rag_integration.application.arguments import DEFAULT_CHUNKER
from rag_integration.cli.base import (
    CacheOption,
    EmbeddingModelOption,
    FlashRankDirOption,
    PrincipalOption,
    ProgressOption,
    UnlabelledOption,
    VerboseOption,
    app,
    show_notes,
)
from rag_integration.console import console, echoed, printable, printable_line


@app.command()
def ask(
    question: Annotated[list[str] | None, typer.Argument(help="the question; several are each answered")] = None,
    files: Annotated[list[Path] | None, typer.Option(help="files, folders or globs to ask (repeatable)")] = None,
    index_dir: Annotated[Path | None, typer.Option(help="a store written by `rag-integration index`")] = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            help="a file of questions ('-': standard input): one per line, or JSON Lines with a 'question' (or "
            "'query', 'text') key"
        ),
    ] = None,
    backend: Annotated[str, typer.Option(help="retrieve backend for --files")] = "bm25s",
    chunker: Annotated[
        str, typer.Option(help="chunking for --files: paragraph, sentence, fixed or none")
    ] = DEFAULT_CHUNKER,
    rerank: Annotated[str | None, typer.Option(help="rerank backend ('lexical', 'flashrank')")] = None,
    flashrank_model_dir: FlashRankDirOption = None,
    generate: Annotated[str, typer.Option(help="generate backend: extractive, template or llm")] = "extractive",
    sentence_model: Annotated[
        str,
        typer.Option(
            help="extractive/template: 'overlap' (words shared with the question), an embedder "
            "('multilingual-e5-small', the multilingual extra) whose similarity helps choose the sentence, or 'best' "
            "(default): the embedder when its extra is installed, else overlap"
        ),
    ] = BEST_SENTENCE_MODEL,
    top_k: Annotated[int, typer.Option(min=1, help="passages the answer is drawn from")] = 3,
    language: Annotated[
        str, typer.Option(help="the texts' language as an ISO 639-1 code, or 'auto': detected for each text")
    ] = "auto",
    embedding_model: EmbeddingModelOption = None,
    llm_base_url: Annotated[str | None, typer.Option(help="--generate llm: the chat-completions server")] = None,
    llm_model: Annotated[str | None, typer.Option(help="--generate llm: the model name")] = None,
    llm_api_key_env: Annotated[
        str | None, typer.Option(help="--generate llm: the environment variable holding the API key")
    ] = None,
    on_error: Annotated[str, typer.Option(help="'raise' stops at a failing question; 'row' reports it")] = "raise",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="print one JSON array, an object per question: question, answer, citations, sources ('reason' when "
            "empty, 'error' when it failed, 'unsupported' with --generate llm)",
        ),
    ] = False,
    verbose: VerboseOption = False,
    progress: ProgressOption = True,
    cache: CacheOption = True,
    principal: PrincipalOption = None,
    unlabelled: UnlabelledOption = "hidden",
) -> int:
    """Answer a question from your files (--files) or a persisted index (--index-dir): the answer with its [n]
    markers, then each cited source with its file, chunk, page or lines and the sentence quoted from it (with
    --generate llm: the model's claim it was checked against). Exit codes: 0 answered (an empty answer says why),
    1 a failure (a question that failed under --on-error row included), 2 a usage error."""
    texts: list[str | InvalidOptionError] = list(question or [])
    if questions is not None and all(isinstance(text, str) and text.strip() for text in texts):
        texts += (
            question_lines_from(questions, "--questions")
            if on_error == "row"
            else questions_from(questions, "--questions")
        )
    notes = RunNotes()
    try:
        result = ask_lines(
            texts,
            files=files,
            index_dir=index_dir,
            backend_name=backend,
            chunker=chunker,
            rerank=rerank,
            flashrank_model_dir=flashrank_model_dir,
            generate=generate,
            sentence_model=sentence_model,
            top_k=top_k,
            language=language,
            embedding_model=embedding_model,
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_api_key_env=llm_api_key_env,
            on_error=on_error,
            progress=progress and not as_json,
            cache=cache,
            notes=notes,
            principals=principal,
            unlabelled=unlabelled,
        )
    finally:
        show_notes(notes, verbose)
    if as_json:
        print(json.dumps([answer.as_json() for answer in result.answers], indent=2, ensure_ascii=False))
    else:
        print_answers(result.answers, console())
    return 1 if any(answer.error for answer in result.answers) else 0


INDENT = 4
"""Columns a source's quotes and claims are indented by, kept on every line a terminal wraps them onto."""


def print_answers(answers: Sequence[Answer], out: Console) -> None:
    """Each answer, then its sources; a question above its answer when there are several. A quote is printed in
    quotation marks; a model's claim is labelled as its claim, in its own words."""
    for position, answer in enumerate(answers):
        if position:
            out.print()
        if len(answers) > 1:
            out.print(Text(echoed(answer.question), style="bold"))
        if answer.error is not None:
            out.print(
                Text(printable(f"error: {answer.error.get('type', 'Error')}: {answer.error.get('message', '')}"), "red")
            )
            continue
        if not answer.text:
            out.print(Text(f"No answer: {answer.reason}.", style="yellow"))
            continue
        out.print(Text(printable(answer.text)))
        if answer.missing_words:
            words = printable(", ".join(answer.missing_words))
            out.print(
                Text(f"(not in the cited passages: {words}; the answer may not be about what was asked)", "yellow")
            )
        if answer.unsupported:
            dropped = len(answer.unsupported)
            out.print(Text(f"({dropped} sentence(s) the model wrote were dropped: no passage supports them)", "yellow"))
        out.print()
        for source in answer.sources:
            out.print(Text(f"[{source.number}] ", style="bold") + Text(printable_line(source.where())))
            for quote in source.quotes:
                _indented(out, Text(printable(f"“{quote}”"), style="dim"))
            for claim in source.claims:
                _indented(
                    out, Text("the model's claim from it: ", style="italic") + Text(printable(claim), style="dim")
                )


def _indented(out: Console, text: Text) -> None:
    """``text`` indented by ``INDENT``: on every line a terminal wraps it onto, and as one line when the console
    does not wrap (piped or redirected output)."""
    if out.soft_wrap:
        out.print(Text(" " * INDENT) + text)
    else:
        out.print(Padding(text, (0, 0, 0, INDENT)))
