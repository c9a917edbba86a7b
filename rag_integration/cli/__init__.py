"""``rag-integration``: demos, search over your files or a persisted index, evaluation on IR test collections,
the backend list and certification. Each command parses its arguments, calls ``rag_integration.application`` and
prints; it imports nothing else of the package but the console.

Exit codes: 0 ok, 1 failure (bad data, a failed check), 2 usage (a wrong argument). A failure prints one line on
stderr; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from rag_integration.cli import ask, files, tools
from rag_integration.cli.base import FILE_TYPES, PROG, app

COMMANDS = (ask, files, tools)
"""The modules whose commands join ``app`` as they are imported."""


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: run one command, return its exit code."""
    command = typer.main.get_command(app)
    return int(command.main(list(sys.argv[1:] if argv is None else argv), PROG, standalone_mode=False))


__all__ = ["FILE_TYPES", "app", "main"]

if __name__ == "__main__":
    sys.exit(main())
