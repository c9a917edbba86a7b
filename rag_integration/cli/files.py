"""``search`` and ``index``: parse, call the application, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from rag_integration.application import ArgumentError, RunNotes, search
from rag_integration.application import forget as forget_documents
from rag_integration.application import index as index_files
from rag_integration.application.arguments import DEFAULT_CHUNKER
from rag_integration.cli.base import (
    FILE_TYPES,
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
from rag_integration.console import console, echoed, print_table


@app.command()
def index(
    index_dir: Annotated[Path, typer.Option(help="folder the store is written to")],
    paths: Annotated[list[Path] | None, typer.Argument(help=f"files, folders or globs ({FILE_TYPES})")] = None,
    embedding_model: Annotated[
        str,
        typer.Option(
            help="'minilm' (default, English), 'multilingual-e5-small' (any language; the multilingual extra) or "
            "'hash'; `ask`/`search --index-dir` read the store with the same one"
        ),
    ] = "minilm",
    chunker: Annotated[
        str, typer.Option(help="'paragraph' (as ask and search), 'sentence', 'fixed' or 'none'")
    ] = DEFAULT_CHUNKER,
    keep: Annotated[int, typer.Option(min=1, help="store versions kept, this one counted; older ones are removed")] = 2,
    verbose: VerboseOption = False,
    progress: ProgressOption = True,
    forget: Annotated[
        list[str] | None,
        typer.Option(
            "--forget",
            help="instead of indexing, forget this doc_id (repeatable) and the chunks cut from it: the store is "
            "written again without them and nothing under --index-dir keeps their text, words or vectors",
        ),
    ] = None,
) -> int:
    """Read, chunk, embed and persist your documents as a FAISS store; `search --index-dir` and `ask --index-dir`
    answer from it. With --forget, remove documents from it instead."""
    if forget:
        if paths:
            raise ArgumentError("paths / forget", "give {paths} to index or {forget} ids to forget, not both")
        console().print(forget_documents(index_dir, forget).describe())
        return 0
    if not paths:
        raise ArgumentError("paths", "give the files, folders or globs to index")
    notes = RunNotes()
    try:
        report = index_files(
            paths,
            index_dir,
            embedding_model=embedding_model,
            chunker=chunker,
            keep=keep,
            progress=progress,
            notes=notes,
        )
    finally:
        show_notes(notes, verbose)  # also when nothing could be indexed: say what was skipped
    console().print(report.describe())
    return 0


@app.command("search")
def search_command(
    query: Annotated[list[str], typer.Argument(help="one or more queries")],
    index_dir: Annotated[Path | None, typer.Option(help="a store written by `rag-integration index`")] = None,
    files: Annotated[list[Path] | None, typer.Option(help="files, folders or globs to search (repeatable)")] = None,
    backend: Annotated[str, typer.Option(help="retrieve backend for --files")] = "bm25s",
    chunker: Annotated[
        str, typer.Option(help="chunking for --files: paragraph (as ask), sentence, fixed or none")
    ] = DEFAULT_CHUNKER,
    top_k: Annotated[int, typer.Option(min=1, help="passages per query")] = 5,
    embedding_model: EmbeddingModelOption = None,
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
    principal: PrincipalOption = None,
    unlabelled: UnlabelledOption = "hidden",
) -> int:
    """Search a persisted index (--index-dir) or files (--files) with one batched request for all queries. With
    --files, what one search embedded and analysed is kept in the user cache folder, so the next search over the
    same (or a slightly changed) folder embeds and analyses only what is new."""
    notes = RunNotes()
    try:
        result = search(
            list(query),
            files=files,
            index_dir=index_dir,
            backend_name=backend,
            chunker=chunker,
            top_k=top_k,
            embedding_model=embedding_model,
            rerank=rerank,
            flashrank_model_dir=flashrank_model_dir,
            metadata=as_json,  # where each passage comes from
            explain=explain,
            progress=progress and not as_json,
            cache=cache,
            notes=notes,
            principals=principal,
            unlabelled=unlabelled,
        )
    finally:
        show_notes(notes, verbose)
    if as_json:
        rankings = [{"query": text, "passages": ranking} for text, ranking in zip(result.queries, result.rankings)]
        print(json.dumps(rankings, indent=2))
        return 0
    rows = [
        [
            echoed(text) if passage["rank"] == 1 else "",
            str(passage["rank"]),
            passage["doc_id"],
            f"{passage['score']:.4f}",
            _snippet(passage["text"]),
            *([_why(passage["explanation"])] if explain else []),
        ]
        for text, ranking in zip(result.queries, result.rankings)
        for passage in ranking
    ]
    print_table(["query", "rank", "doc_id", "score", "text", *(["why"] if explain else [])], rows)
    for text, ranking in zip(result.queries, result.rankings):
        if not ranking:
            console().print(Text(f"no passage matched '{echoed(text)}': {result.no_match_reason()}"))
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


def _snippet(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
