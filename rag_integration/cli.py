"""``rag-integration``: ``demo`` retrieves over the built-in corpus, ``backends`` lists what can be selected."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rag_integration.registry import available_backends


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rag-integration", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="retrieve over a small built-in corpus and print the rankings")
    demo.add_argument("--backend", action="append", help="retrieve backend(s) to show (default: every installed one)")
    demo.add_argument("--top-k", type=int, default=3)
    swap = commands.add_parser("swap-demo", help="the same inputs through several backends and families")
    swap.add_argument("--embedding-model", default="minilm", help="'minilm' (default) or 'hash'")
    certify = commands.add_parser("certify", help="run the families' contract kits against installed backends")
    certify.add_argument("backend", nargs="*", help="class names or selector values (default: every installed one)")
    certify.add_argument("--option", action="append", default=[], help="KEY=VALUE added to every kit request")
    listing = commands.add_parser("backends", help="list every family, selector value, class, extra, installed")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    arguments = parser.parse_args(argv)
    if arguments.command == "backends":
        return _print_backends(arguments.json)
    if arguments.command == "certify":
        from rag_integration.testing.certify import certify as run_certify

        return run_certify(arguments.backend, arguments.option)
    if arguments.command == "swap-demo":
        from rag_integration.demo.swap import run_swap_demo

        return run_swap_demo(arguments.embedding_model)
    from rag_integration.demo.run import run_demo

    return run_demo(arguments.backend, arguments.top_k)


def _print_backends(as_json: bool) -> int:
    rows = available_backends()
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = ["family", "feature", "selector", "value", "class", "extra", "installed"]
    table = [[_cell(row[column]) for column in columns] for row in rows]
    print_table(columns, table)
    return 0


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: Any = None) -> None:
    stream = out or sys.stdout
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    line = "  ".join(str(name).ljust(width) for name, width in zip(header, widths))
    print(line, file=stream)
    print("  ".join("-" * width for width in widths), file=stream)
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)), file=stream)


if __name__ == "__main__":
    raise SystemExit(main())
