"""``rag-integration``: demos, search over your files or a persisted index, evaluation on IR test collections,
the backend list and certification.

Exit codes: 0 ok, 1 failure (bad data, a failed check), 2 usage (a wrong argument). A failure prints one line on
stderr; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from rag_integration.console import console, print_table, table_console
from rag_integration.core.errors import ConnectorError
from rag_integration.core.progress import progress_display, step
from rag_integration.registry import available_backends

PROG = "rag-integration"


class _Commands(TyperGroup):
    """Runs a command and turns what goes wrong into an exit code and one line on stderr (the traceback with
    ``--debug``), the same from the console script, ``main([...])`` and typer's ``CliRunner``."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        arguments = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in arguments[: arguments.index("--") if "--" in arguments else None]
        code = _run(
            lambda: super(_Commands, self).main(arguments, prog_name or PROG, complete_var, False, **extra), debug
        )
        if standalone_mode:
            sys.exit(code)
        return code


def _run(command: Callable[[], object], debug: bool) -> int:
    try:
        returned = command()
    except typer.Abort as error:
        return _fail(1, "aborted", debug, error)
    except ConnectorError as error:
        return _fail(1, f"{type(error).__name__}: {error}", debug, error)
    except OSError as error:  # an unwritable --json path, a full disk
        return _fail(1, str(error), debug, error)
    except Exception as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare `rag-integration`: the help, as usage
            print(error.format_message(), file=sys.stderr)  # type: ignore[attr-defined]
            return 2
        if hasattr(error, "format_message") and hasattr(error, "exit_code"):  # click's (typer vendors its own click)
            usage = any(kind.__name__ == "UsageError" for kind in type(error).__mro__)
            return _fail(2 if usage else int(error.exit_code), error.format_message(), debug, error)
        return _fail(1, f"unexpected {type(error).__name__}: {error}", debug, error)
    return returned if isinstance(returned, int) else 0


def _fail(code: int, message: str, debug: bool, error: BaseException) -> int:
    if debug:
        traceback.print_exception(error)
    first_line = message.strip().splitlines()[0] if message.strip() else type(error).__name__
    print(f"{PROG}: {'usage error' if code == 2 else 'error'}: {first_line}", file=sys.stderr)
    return code


app = typer.Typer(
    cls=_Commands,
    name=PROG,
    help="Demos, search over your files or a persisted index, evaluation on IR test collections, the backend list "
    "and certification. Exit codes: 0 ok, 1 failure, 2 usage; --debug shows tracebacks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


ProgressOption = Annotated[bool, typer.Option(help="draw progress bars on stderr")]
VerboseOption = Annotated[bool, typer.Option("--verbose", help="list every file not read, with why")]
CacheOption = Annotated[
    bool, typer.Option(help="with --files: keep indexes, embeddings and analysed text in the user cache folder")
]
FILE_TYPES = ".txt, .md, .rst, .html, .htm, .pdf, .docx (extra docx), .jsonl, .csv"
"""The file types the files source reads (its ``SUFFIXES``), as the help names them."""
FlashRankDirOption = Annotated[
    Path | None,
    typer.Option(
        help="--rerank flashrank: the folder holding the unzipped model folder (ms-marco-TinyBERT-L-2-v2/), or that "
        "folder itself; nothing is downloaded: fetch and unzip the archive by hand as docs/rerank.md says ('Getting "
        "a FlashRank model onto the machine'); default: FlashRank's cache folder; refused without --rerank flashrank"
    ),
]
"""Options several commands share, declared once."""


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of a failure")] = False,
) -> None:
    """Read by ``_Commands.main`` before the command runs."""


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: run one command, return its exit code."""
    command = typer.main.get_command(app)
    return int(command.main(list(sys.argv[1:] if argv is None else argv), PROG, standalone_mode=False))


def _split_list(text: str, what: str) -> list[str]:
    values = [value.strip() for value in text.split(",") if value.strip()]
    if not values or len(set(values)) != len(values):
        raise typer.BadParameter(f"expected a comma-separated list of distinct {what}, got {text!r}")
    return values


def _parse_options(texts: Sequence[str]) -> dict[str, Any]:
    from rag_integration.testing.certify import parse_option

    try:
        return dict(parse_option(text) for text in texts)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--option") from error


@app.command()
def demo(
    backend: Annotated[list[str] | None, typer.Option(help="retrieve backend to show (repeatable)")] = None,
    top_k: Annotated[int, typer.Option(min=1, help="passages per query")] = 3,
) -> int:
    """Retrieve over a small built-in corpus with every installed backend and print the rankings."""
    from rag_integration.demo.run import run_demo

    return run_demo(backend, top_k)


@app.command("swap-demo")
def swap_demo(
    embedding_model: Annotated[str, typer.Option(help="'minilm' or 'hash'")] = "minilm",
) -> int:
    """The same inputs through several backends and families: only options change."""
    from rag_integration.demo.swap import run_swap_demo

    return run_swap_demo(embedding_model)


@app.command()
def backends(as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False) -> int:
    """List every backend, ours and third-party ones beside them: family, selector value, class, extra, whether it
    is installed, its distribution and version, and the contract version."""
    rows = available_backends()
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = ["family", "feature", "selector", "value", "class", "extra", "installed", "distribution", "version"]
    columns += ["contract", "profiles"]
    print_table(columns, [[_cell(row[column]) for column in columns] for row in rows])
    return 0


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):  # profiles: name and budget
        return ", ".join(f"{name} ({profile['budget_ms']} ms)" for name, profile in value.items())
    return str(value)


@app.command()
def index(
    paths: Annotated[list[Path], typer.Argument(help=f"files, folders or globs ({FILE_TYPES})")],
    index_dir: Annotated[Path, typer.Option(help="folder the store is written to")],
    embedding_model: Annotated[
        str,
        typer.Option(
            help="'minilm' (default, English), 'multilingual-e5-small' (any language; the multilingual extra) or "
            "'hash'; `ask`/`search --index-dir` read the store with the same one"
        ),
    ] = "minilm",
    chunker: Annotated[str, typer.Option(help="'sentence', 'paragraph', 'fixed' or 'none'")] = "sentence",
    keep: Annotated[int, typer.Option(min=1, help="store versions kept, this one counted; older ones are removed")] = 2,
    verbose: VerboseOption = False,
    progress: ProgressOption = True,
) -> int:
    """Read, chunk, embed and persist your documents as a FAISS store; `search --index-dir` and `ask --index-dir`
    answer from it."""
    from rag_integration.core.documents.files import READ_FILES, SKIPPED_FILES
    from rag_integration.core.documents.source_record import save_record
    from rag_integration.core.indexes.embedders import get_embedder
    from rag_integration.core.indexes.store import current_version
    from rag_integration.feature_groups.rag_pipeline import STAGES
    from rag_integration.feature_groups.rag_pipeline.embedding import EMBEDDING_STAGES

    _check_paths(paths, "PATHS")
    _choose("--chunker", chunker, _chunkers())
    stages = sorted(str(stage.BACKEND) for stage in EMBEDDING_STAGES)
    why = (
        f"expected one of {_listed(stages)}, the models `index` has an embedding stage for (other embedders serve "
        "`ask`/`search --files` with a dense --backend)"
    )
    _choose("--embedding-model", embedding_model, stages, why)
    feature_name = "docs__chunked__embedded__indexed" if chunker != "none" else "docs__embedded__indexed"
    absolute = [Path(os.path.abspath(path)) for path in paths]  # a store's citations point at files from anywhere
    options = _file_options(absolute, chunker) | {
        "embedding_model": embedding_model,
        "vector_store": "faiss",
        "index_dir": str(index_dir),
        "keep_versions": keep,
    }
    before = _stored_chunks(index_dir)
    embedder = get_embedder(embedding_model)
    embedded = embedder.texts_embedded
    _forget_file_reports()
    try:
        with progress_display(progress), step(f"indexing {len(paths)} path(s) into {index_dir}"):
            rows = _run_feature(feature_name, options, set(STAGES), progress)
    finally:
        _report_skipped(SKIPPED_FILES.take(), verbose)  # also when nothing could be indexed: say what was skipped
    read = READ_FILES.take()
    live = current_version(index_dir)
    if live is not None:
        save_record(index_dir, live.name, [str(path) for path in paths], read)
    after = {str(row["doc_id"]): str(row["text"]) for row in rows}
    added = sum(1 for doc_id in after if doc_id not in before)
    changed = sum(1 for doc_id, text in after.items() if doc_id in before and before[doc_id] != text)
    removed = sum(1 for doc_id in before if doc_id not in after)
    console().print(
        f"indexed {len(rows)} chunks into {index_dir}: {added} added, {changed} changed, {removed} removed, "
        f"{len(after) - added - changed} unchanged; {embedder.texts_embedded - embedded} embedded"
    )
    return 0


def _stored_chunks(index_dir: Path) -> dict[str, str]:
    """doc_id -> text of the store already in ``index_dir`` (none when there is none, or it fails its checks)."""
    from rag_integration.core.indexes.store import verified_version
    from rag_integration.feature_groups.rag_pipeline.vector_store.store import check_store_claim, load_store_documents

    try:
        version = verified_version(index_dir)
        if version is None:
            return {}
        check_store_claim(version.claim, index_dir)
        return {document.doc_id: document.text for document in load_store_documents(version)}
    except (ConnectorError, OSError, ValueError):
        return {}


@app.command()
def search(
    query: Annotated[list[str], typer.Argument(help="one or more queries")],
    index_dir: Annotated[Path | None, typer.Option(help="a store written by `rag-integration index`")] = None,
    files: Annotated[list[Path] | None, typer.Option(help="files, folders or globs to search (repeatable)")] = None,
    backend: Annotated[str, typer.Option(help="retrieve backend for --files")] = "bm25s",
    chunker: Annotated[
        str, typer.Option(help="chunking for --files: paragraph (as ask), sentence, fixed or none")
    ] = "paragraph",
    top_k: Annotated[int, typer.Option(min=1, help="passages per query")] = 5,
    embedding_model: Annotated[
        str | None,
        typer.Option(
            help="the embedding model of a dense --backend (default 'minilm'); with --index-dir the store's own "
            "by default"
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="print one JSON array: per query its passages, each with its metadata (the file as 'source', "
            "'line_start'/'line_end' or 'page', 'chunk_index')",
        ),
    ] = False,
    progress: ProgressOption = True,
    cache: CacheOption = True,
    rerank: Annotated[
        str | None, typer.Option(help="rerank backend applied to the retrieved passages ('lexical', 'flashrank')")
    ] = None,
    flashrank_model_dir: FlashRankDirOption = None,
    verbose: VerboseOption = False,
    explain: Annotated[
        bool, typer.Option(help="say why each passage ranked: its explanation in --json, a 'why' column otherwise")
    ] = False,
) -> int:
    """Search a persisted index (--index-dir) or files (--files) with one batched request for all queries. With
    --files, what one search embedded and analysed is kept in the user cache folder, so the next search over the
    same (or a slightly changed) folder embeds and analyses only what is new."""
    options, groups = _retrieval(list(query), top_k, index_dir, files, backend, chunker, embedding_model, cache)
    feature = "retrieved_passages"
    if as_json:
        options["return_metadata"] = True  # where each passage comes from
    _check_flashrank_dir(rerank, flashrank_model_dir)
    if rerank is not None:
        groups.add(_backend("rerank", "--rerank", rerank))
        feature, options = _reranked(options, rerank, top_k, flashrank_model_dir)
        if as_json:
            options["return_metadata"] = True
    if explain:
        options["explain"] = True
    _forget_file_reports()
    with progress_display(progress and not as_json):
        rankings = _run_feature(feature, options, groups, progress and not as_json)
    if index_dir is None and cache:
        prune_stores(files_cache_dir(), keep=FILES_CACHE_STORES)
    no_documents = _report_files(files is not None, verbose)
    if as_json:
        print(json.dumps([{"query": text, "passages": ranking} for text, ranking in zip(query, rankings)], indent=2))
        return 0
    rows = [
        [
            text if passage["rank"] == 1 else "",
            str(passage["rank"]),
            passage["doc_id"],
            f"{passage['score']:.4f}",
            _snippet(passage["text"]),
            *([_why(passage["explanation"])] if explain else []),
        ]
        for text, ranking in zip(query, rankings)
        for passage in ranking
    ]
    print_table(["query", "rank", "doc_id", "score", "text", *(["why"] if explain else [])], rows)
    for text, ranking in zip(query, rankings):
        if not ranking:
            reason = NO_DOCUMENTS if no_documents else "none of its words is in the indexed text"
            console().print(Text(f"no passage matched {text!r}: {reason}"))
    return 0


def _why(explanation: dict[str, Any]) -> str:
    """An explanation in a table cell: the rank it came in at, then its largest parts (term, ranker or part)."""
    parts = []
    if "input_rank" in explanation:
        parts.append(f"was #{explanation['input_rank']}")
    for part in explanation.get("contributions", [])[:3]:
        name = part.get("term") or part.get("ranker") or part.get("part") or "?"
        parts.append(f"{name} {part['contribution']:+.3f}")
    if "similarity" in explanation:
        parts.append(f"cosine {explanation['similarity']:.3f}")
    return ", ".join(parts) or str(explanation.get("kind", ""))


DEFAULT_EMBEDDING_MODEL = "minilm"


def _store_model(index_dir: Path) -> str:
    """The embedding stage a store was built with, found by its manifest's model id among the stages whose extra is
    installed; ``minilm`` when none matches, so the retriever's own check names what the store holds."""
    from rag_integration.core.extras import modules_installed
    from rag_integration.core.indexes.embedders import get_embedder
    from rag_integration.core.indexes.store import current_version
    from rag_integration.feature_groups.rag_pipeline.embedding import EMBEDDING_STAGES

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


def _retrieval(
    queries: list[str],
    top_k: int,
    index_dir: Path | None,
    files: list[Path] | None,
    backend: str,
    chunker: str,
    embedding_model: str | None,
    cache: bool,
    language: str | None = None,
) -> tuple[dict[str, Any], set[type[Any]]]:
    """The ``retrieved_passages`` options and feature groups of ``search`` and ``ask``: a store (``--index-dir``)
    or files read, chunked and indexed by ``backend`` (``--files``)."""
    from rag_integration.feature_groups.rag_pipeline import STAGES, VectorStoreRetriever

    if (index_dir is None) == (not files):
        raise typer.BadParameter("give either --index-dir or --files", param_hint="--index-dir / --files")
    options: dict[str, Any] = {"query_text": queries, "top_k": top_k}
    if index_dir is not None:
        _warn_if_stale(index_dir)
        model = embedding_model or _store_model(index_dir)
        options |= {"retrieve_backend": "vector_store", "index_dir": str(index_dir), "embedding_model": model}
        return options, {VectorStoreRetriever}
    _check_paths(files or [], "--files")
    _choose("--chunker", chunker, _chunkers())
    refused = {
        str(VectorStoreRetriever.BACKEND): "it answers from a store written by `rag-integration index`: give that "
        "store with --index-dir instead of --files"
    }
    retriever = _backend("retrieve", "--backend", backend, refused)
    source = "docs__chunked" if chunker != "none" else "docs"
    options |= _file_options(files or [], chunker) | {"retrieve_backend": backend, "corpus_source": source}
    if cache:
        options["index_dir"] = str(files_cache_dir())
    declared = retriever.declared_options()
    if "embedding_model" in declared:
        options["embedding_model"] = embedding_model or DEFAULT_EMBEDDING_MODEL
    if language is not None and "language" in declared:
        options["language"] = language
    return options, {*STAGES, retriever}


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
    ] = "paragraph",
    rerank: Annotated[str | None, typer.Option(help="rerank backend ('lexical', 'flashrank')")] = None,
    flashrank_model_dir: FlashRankDirOption = None,
    generate: Annotated[str, typer.Option(help="generate backend: extractive, template or llm")] = "extractive",
    sentence_model: Annotated[
        str,
        typer.Option(
            help="extractive/template: 'overlap' (words shared with the question) or an embedder "
            "('multilingual-e5-small' with the multilingual extra) whose similarity helps choose the sentence"
        ),
    ] = "overlap",
    top_k: Annotated[int, typer.Option(min=1, help="passages the answer is drawn from")] = 3,
    language: Annotated[
        str, typer.Option(help="the texts' language as an ISO 639-1 code, or 'auto': detected for each text")
    ] = "auto",
    embedding_model: Annotated[
        str | None,
        typer.Option(
            help="the embedding model of a dense --backend (default 'minilm'); with --index-dir the store's own "
            "by default"
        ),
    ] = None,
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
) -> int:
    """Answer a question from your files (--files) or a persisted index (--index-dir): the answer with its [n]
    markers, then each cited source with its file, chunk, page or lines and the sentence quoted from it (with
    --generate llm: the model's claim it was checked against). Exit codes: 0 answered (an empty answer says why),
    1 a failure (a question that failed under --on-error row included), 2 a usage error."""
    from mloda.user import Feature, Options

    from rag_integration.ask import MAX_QUESTIONS_BYTES, answer_of, print_answers, read_questions
    from rag_integration.core.documents.files import read_named_file

    texts = list(question or [])
    if any(not text.strip() for text in texts):
        raise typer.BadParameter("a question holds no text (an unset shell variable?)", param_hint="QUESTION")
    if questions is not None:
        data = (
            sys.stdin.buffer.read(MAX_QUESTIONS_BYTES + 1)
            if str(questions) == "-"
            else read_named_file(questions, "--questions", MAX_QUESTIONS_BYTES)
        )
        if len(data) > MAX_QUESTIONS_BYTES:
            raise typer.BadParameter(f"at most {MAX_QUESTIONS_BYTES:,} bytes of questions", param_hint="--questions")
        texts += read_questions(questions, data)
    if not texts:
        raise typer.BadParameter("give a question, or --questions FILE", param_hint="QUESTION / --questions")
    _choose("--on-error", on_error, ("raise", "row"))
    options, groups = _retrieval(texts, top_k, index_dir, files, backend, chunker, embedding_model, cache, language)
    options["return_metadata"] = True  # where each cited passage comes from
    name = "retrieved_passages"
    _check_flashrank_dir(rerank, flashrank_model_dir)
    if rerank is not None:
        reranker = _backend("rerank", "--rerank", rerank)
        groups.add(reranker)
        name, options = _reranked(options, rerank, top_k, flashrank_model_dir)
        options["return_metadata"] = True
        if "language" in reranker.declared_options():
            options["language"] = language
    groups.add(_backend("generate", "--generate", generate))
    shown = progress and not as_json
    passages = Feature(name, options=Options(context={**options, "show_progress": shown}))
    llm = {"llm_base_url": llm_base_url, "llm_model": llm_model, "llm_api_key_env": llm_api_key_env}
    answer_options = {
        "generate_backend": generate,
        "query_text": texts,
        "passages_source": passages,
        "on_error": on_error,
        "show_progress": shown,
        **{key: value for key, value in llm.items() if value is not None},
    }
    if generate in ("extractive", "template"):
        answer_options["sentence_model"] = sentence_model
    _forget_file_reports()
    with progress_display(shown):
        columns = _run_features(
            [Feature("generated_answer", options=Options(context=answer_options)), passages], groups
        )
    if index_dir is None and cache:
        prune_stores(files_cache_dir(), keep=FILES_CACHE_STORES)
    no_documents = _report_files(files is not None, verbose)
    answers = [
        answer_of(text, row, ranking, NO_DOCUMENTS if no_documents else None)
        for text, row, ranking in zip(texts, columns["generated_answer"], columns[name], strict=True)
    ]
    if as_json:
        print(json.dumps([answer.as_json() for answer in answers], indent=2, ensure_ascii=False))
    else:
        print_answers(answers, console())
    return 1 if any(answer.error for answer in answers) else 0


NO_DOCUMENTS = "no documents: none of the files given could be read"


def _forget_file_reports() -> None:
    from rag_integration.core.documents.files import READ_FILES, SKIPPED_FILES

    READ_FILES.take()
    SKIPPED_FILES.take()


def _report_files(files_given: bool, verbose: bool) -> bool:
    """Count on stderr the files a run did not read (``--verbose``: each with why); whether ``--files`` were given
    and none of them could be read."""
    from rag_integration.core.documents.files import READ_FILES, SKIPPED_FILES

    read = READ_FILES.take()
    skipped = SKIPPED_FILES.take()
    _report_skipped(skipped, verbose)
    unread = {os.path.realpath(file.path) for file in skipped}  # read, then found to hold no text
    return files_given and all(file.path in unread for file in read)


def _report_skipped(skipped: Sequence[Any], verbose: bool) -> None:
    """Count on stderr the files not read (``SkippedFile``), each with why under ``--verbose``."""
    if skipped:
        hint = "" if verbose else " (--verbose lists them)"
        print(f"skipped {len(skipped)} file(s) not read{hint}", file=sys.stderr)
        if verbose:
            for file in skipped:
                print(f"  {file.path}: {file.reason}", file=sys.stderr)


def _warn_if_stale(index_dir: Path) -> None:
    """Say on stderr when the files a store was indexed from changed since (``index`` keeps their record)."""
    from rag_integration.core.documents.files import FileRules
    from rag_integration.core.documents.source_record import changes_since
    from rag_integration.core.indexes.store import current_version
    from rag_integration.feature_groups.rag_pipeline.documents.file_source import SUFFIXES

    try:
        live = current_version(index_dir, "--index-dir")
    except ConnectorError:
        return  # the search itself reports a broken store
    changes = None if live is None else changes_since(index_dir, live.name, FileRules(suffixes=SUFFIXES))
    if changes:
        print(
            f"warning: {index_dir} is out of date: {changes.describe()} since it was indexed; "
            "run `rag-integration index` again to update it",
            file=sys.stderr,
        )


RERANK_DEPTH = 100
"""How many passages ``search --rerank`` retrieves for the reranker to order."""


def _reranked(
    options: dict[str, Any], rerank: str, top_k: int, flashrank_model_dir: Path | None = None
) -> tuple[str, dict[str, Any]]:
    """The reranking feature over the retrieval ``options`` ask for, retrieving ``RERANK_DEPTH`` candidates."""
    from mloda.user import Feature, Options

    retrieve = Feature("retrieved_passages", options=Options(context={**options, "top_k": max(top_k, RERANK_DEPTH)}))
    rerank_options: dict[str, Any] = {
        "rerank_backend": rerank,
        "query_text": options["query_text"],
        "candidates_source": retrieve,
        "top_k": top_k,
    }
    if flashrank_model_dir is not None:
        rerank_options["flashrank_model_dir"] = str(flashrank_model_dir)
    return "reranked_passages", rerank_options


def _check_flashrank_dir(rerank: str | None, flashrank_model_dir: Path | None) -> None:
    """``--flashrank-model-dir`` is FlashRank's model folder: refused with another reranker, or none."""
    if flashrank_model_dir is not None and rerank != "flashrank":
        raise typer.BadParameter(
            f"only --rerank flashrank reads a model folder (--rerank is {rerank or 'not given'})",
            param_hint="--flashrank-model-dir",
        )


def _choose(flag: str, value: str, valid: Sequence[str], why: str = "") -> str:
    """``value`` when it is one of ``valid``; else a usage error naming ``flag``, listing the valid values (or saying
    ``why``) with a did-you-mean when one is close."""
    from rag_integration.core.contract.declarations import near_spellings

    if value in valid:
        return value
    near = near_spellings(value, valid)
    guess = f" (did you mean {near[0]!r}?)" if near else ""
    raise typer.BadParameter(f"got {value!r}: {why or 'expected one of ' + _listed(valid)}{guess}", param_hint=flag)


def _listed(values: Sequence[str]) -> str:
    return ", ".join(repr(value) for value in sorted(values))


def _backend(family: str, flag: str, value: str, refused: dict[str, str] | None = None) -> type[Any]:
    """The installed backend of ``family`` that ``value`` selects; a usage error naming ``flag`` otherwise: a value
    no backend has (the valid ones listed, with a did-you-mean), one ``refused`` here (with why), or one whose
    extra is not installed."""
    from rag_integration.evaluation.run import backend_class
    from rag_integration.registry import backend_classes

    refused = refused or {}
    if value in refused:
        raise typer.BadParameter(f"got {value!r}: {refused[value]}", param_hint=flag)
    valid = sorted({str(cls.BACKEND) for cls in backend_classes() if family == cls.FAMILY} - set(refused))
    _choose(flag, value, valid)
    try:
        return backend_class(family, flag, value)
    except ConnectorError as error:
        raise typer.BadParameter(str(error), param_hint=flag) from error


def _chunkers() -> list[str]:
    """The ``--chunker`` values: every chunking stage, and ``none`` (a whole file is one passage)."""
    from rag_integration.feature_groups.rag_pipeline import STAGES, BaseChunker

    return [*(str(stage.BACKEND) for stage in STAGES if issubclass(stage, BaseChunker)), "none"]


def _check_paths(paths: Sequence[Path], flag: str) -> None:
    """A usage error naming ``flag`` for a path that can name no file (``files.missing``): checked before any
    folder is walked."""
    from rag_integration.core.documents.files import missing
    from rag_integration.feature_groups.rag_pipeline.documents.file_source import SUFFIXES

    for path in paths:
        expected = missing(str(path), SUFFIXES)
        if expected is not None:
            raise typer.BadParameter(f"got {str(path)!r}: expected {expected}", param_hint=flag)


FILES_CACHE_STORES = 8
"""Indexes of searched folders kept in the user cache; the embeddings and analysed text they share stay."""


def files_cache_dir() -> Path:
    """Where ``search --files`` keeps what it built: ``files/`` under the evaluation's cache folder."""
    from rag_integration.evaluation.run import default_index_dir

    return default_index_dir().parent / "files"


def _file_options(paths: Sequence[Path], chunker: str) -> dict[str, Any]:
    options: dict[str, Any] = {"document_source": "files", "paths": [str(path) for path in paths]}
    if chunker != "none":
        options["chunker"] = chunker
    return options


def _run_features(features: list[Any], groups: set[type[Any]]) -> dict[str, list[Any]]:
    """Each requested feature's column, from one run (a feature another one needs is computed once)."""
    from mloda.user import PluginCollector, mlodaAPI
    from mloda.user.python_dict import PythonDictFramework

    from rag_integration.core.contract.frames import frame_column

    result = mlodaAPI.run_all(
        features,
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(groups),
    )
    columns: dict[str, list[Any]] = {}
    for frame in result:
        for name in (str(feature.name) for feature in features):
            if name in frame and name not in columns:
                columns[name] = frame_column(frame, name)
    return columns


def _run_feature(name: str, options: dict[str, Any], groups: set[type[Any]], progress: bool) -> list[Any]:
    from mloda.user import Feature, Options, PluginCollector, mlodaAPI
    from mloda.user.python_dict import PythonDictFramework

    from rag_integration.core.contract.frames import frame_column

    result = mlodaAPI.run_all(
        [Feature(name, options=Options(context={**options, "show_progress": progress}))],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(groups),
    )
    return next(frame_column(frame, name) for frame in result if name in frame)


def prune_stores(folder: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently written index stores of ``folder`` (folders ``<backend>-<hash>``
    beside ``embeddings/`` and ``analysis/``, which every index reuses)."""
    try:
        stores = [entry for entry in folder.iterdir() if entry.is_dir() and STORE_NAME.fullmatch(entry.name)]
    except OSError:
        return
    stores.sort(key=lambda entry: (entry.stat().st_mtime, entry.name), reverse=True)
    for stale in stores[keep:]:
        shutil.rmtree(stale, ignore_errors=True)


STORE_NAME = re.compile(r"[a-z0-9_]+-[0-9a-f]{20}")


def _snippet(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


@app.command("eval")
def evaluate_command(
    dataset: Annotated[
        Path, typer.Option(exists=True, file_okay=False, help="a BEIR folder or a SMART collection (Cranfield)")
    ],
    backends_list: Annotated[str, typer.Option("--backends", help="comma-separated retrieve backends")] = "bm25s",
    rerank: Annotated[str | None, typer.Option(help="rerank backend applied after each retrieve backend")] = None,
    split: Annotated[str, typer.Option(help="qrels split of a BEIR folder")] = "test",
    metrics: Annotated[str, typer.Option(help="comma-separated: nDCG@k, Recall@k, MRR@k, MAP")] = (
        "nDCG@10,Recall@100,MRR@10,MAP"
    ),
    top_k: Annotated[int, typer.Option(min=1, help="passages retrieved per query")] = 100,
    index_dir: Annotated[
        Path | None, typer.Option(help="where indexes persist (default: the user cache folder)")
    ] = None,
    option: Annotated[list[str] | None, typer.Option(help="KEY=VALUE passed to every backend (repeatable)")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the results as JSON")] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="write a bar chart (PNG) of the results")] = None,
    progress: ProgressOption = True,
) -> int:
    """Evaluate retrieve backends (each optionally followed by --rerank) on a test collection."""
    from rag_integration.evaluation import evaluate, load_dataset
    from rag_integration.evaluation.metrics import read_metrics
    from rag_integration.evaluation.run import default_index_dir

    chosen = _split_list(backends_list, "retrieve backends")
    metric_names = _split_list(metrics, "metrics")
    try:
        read_metrics(metric_names, "--metrics")
    except ConnectorError as error:
        raise typer.BadParameter(str(error)) from error
    for name in chosen:
        _backend("retrieve", "--backends", name)
    if rerank is not None:
        _backend("rerank", "--rerank", rerank)
    extra = _parse_options(option or [])
    folder = index_dir if index_dir is not None else default_index_dir()
    results = {}
    with progress_display(progress):
        with step(f"loading {dataset}"):
            collection = load_dataset(dataset, split)
        for name in chosen:
            label = name if rerank is None else f"{name}+{rerank}"
            with step(f"evaluating {label} on {collection.name} ({len(collection.queries)} queries)"):
                results[label] = evaluate(
                    collection,
                    name,
                    options=extra,
                    rerank_backend=rerank,
                    metrics=metric_names,
                    top_k=top_k,
                    index_dir=folder,
                    show_progress=progress,
                )
    table = Table(title=f"{collection.name}: {len(collection.documents)} documents, {len(collection.queries)} queries")
    for column in ["backend", *metric_names, "seconds"]:
        table.add_column(column, justify="left" if column == "backend" else "right")
    for label, result in results.items():
        table.add_row(label, *(f"{result.metrics[name]:.4f}" for name in metric_names), f"{result.seconds:.1f}")
    table_console().print(table)
    if json_path is not None:
        document = {
            "dataset": collection.name,
            "split": split,
            "documents": len(collection.documents),
            "queries": len(collection.queries),
            "top_k": top_k,
            "rerank": rerank,
            "results": {label: result.metrics for label, result in results.items()},
            "seconds": {label: round(result.seconds, 3) for label, result in results.items()},
        }
        json_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if plot_path is not None:
        from rag_integration.evaluation.plot import plot_metrics

        title = f"{collection.name} ({len(collection.queries)} queries)"
        plot_metrics({label: result.metrics for label, result in results.items()}, plot_path, title)
    return 0


@app.command()
def certify(
    target: Annotated[
        list[str] | None,
        typer.Argument(help="backends by selector value or class name, or a backend class as module:Class"),
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write a JSON report of every check")] = None,
    option: Annotated[list[str] | None, typer.Option(help="KEY=VALUE added to every kit request")] = None,
    fixture: Annotated[
        list[Path] | None,
        typer.Option(help="a JSON fixture: a request and its expected first answers (repeatable)"),
    ] = None,
    kit: Annotated[
        bool, typer.Option(help="run the family's contract kit; --no-kit runs the certify checks only")
    ] = True,
) -> int:
    """Certify backends (default: every one with a kit): the family's contract kit, then on each fixture (the kit's
    sample request without --fixture) the expected answer, replay, invalid requests, each profile's budget and
    secrets. Exit 0 certified, 1 not, 2 usage."""
    from rag_integration.testing.certify import certify as run_certify
    from rag_integration.testing.certify import resolve_targets
    from rag_integration.testing.certify_fixtures import CertifyUsageError, fixtures_for, load_fixture

    _parse_options(option or [])
    try:
        chosen = resolve_targets(target or [])
    except CertifyUsageError as error:
        raise typer.BadParameter(str(error), param_hint="TARGET") from error
    try:
        fixtures_for([cls.FAMILY for cls in chosen], [load_fixture(path) for path in fixture or []])
    except CertifyUsageError as error:
        raise typer.BadParameter(str(error), param_hint="--fixture") from error
    return run_certify(target or [], option or [], report=report, fixtures=fixture or [], kit=kit)


if __name__ == "__main__":
    sys.exit(main())
