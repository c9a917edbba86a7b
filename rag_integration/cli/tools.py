"""``demo``, ``swap-demo``, ``backends``, ``eval`` and ``certify``: parse, call the application, print."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rag_integration.application import (
    BROKEN_PLUGINS,
    available_backends,
    certify,
    evaluate_backends,
    run_demo,
    run_swap_demo,
)
from rag_integration.application.arguments import parse_options, split_list
from rag_integration.cli.base import ProgressOption, app
from rag_integration.console import print_table, printable_line, show_table


@app.command()
def demo(
    backend: Annotated[list[str] | None, typer.Option(help="retrieve backend to show (repeatable)")] = None,
    top_k: Annotated[int, typer.Option(min=1, help="passages per query")] = 3,
) -> int:
    """Retrieve over a small built-in corpus with every installed backend and print the rankings."""
    return run_demo(backend, top_k)


@app.command("swap-demo")
def swap_demo(
    embedding_model: Annotated[str, typer.Option(help="'minilm' or 'hash'")] = "minilm",
) -> int:
    """The same inputs through several backends and families: only options change."""
    return run_swap_demo(embedding_model)


@app.command()
def backends(as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False) -> int:
    """List every backend, ours and third-party ones beside them: family, selector value, class, extra, whether it
    is installed, its distribution and version, and the contract version."""
    rows = available_backends()
    for plugin in BROKEN_PLUGINS:  # listed, not fatal: it stops only a request that selects it
        print(printable_line(f"not loaded: plugin {plugin.entry_point!r}: {plugin.error}"), file=sys.stderr)
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
    report = evaluate_backends(
        dataset,
        split_list(backends_list, "backends", "retrieve backends"),
        rerank=rerank,
        split=split,
        metrics=split_list(metrics, "metrics", "metrics"),
        top_k=top_k,
        index_dir=index_dir,
        options=parse_options(option or [], "option"),
        progress=progress,
    )
    table = Table(title=printable_line(f"{report.dataset}: {report.documents} documents, {report.queries} queries"))
    for column in ["backend", *report.metric_names, "seconds"]:
        table.add_column(column, justify="left" if column == "backend" else "right")
    for label, result in report.results.items():
        table.add_row(
            printable_line(label),
            *(f"{result.metrics[name]:.4f}" for name in report.metric_names),
            f"{result.seconds:.1f}",
        )
    show_table(table)
    if json_path is not None:
        report.write_json(json_path)
    if plot_path is not None:
        report.plot(plot_path)
    return 0


@app.command("certify")
def certify_command(
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
    return certify(target or [], options=option or [], fixtures=fixture or [], report=report, kit=kit)
