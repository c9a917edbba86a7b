"""The command group every command joins: it runs a command and turns what goes wrong into an exit code and one
line on stderr (the traceback with ``--debug``); and the options several commands share."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from rag_integration.application import ArgumentError, ConnectorError, RunNotes
from rag_integration.console import printable_line

PROG = "rag-integration"

POSITIONAL = {"paths": "PATHS", "question": "QUESTION", "target": "TARGET"}
FLAGS = {"backend_name": "--backend", "principals": "--principal"}
"""Application argument names the command line spells otherwise than ``--name-with-dashes``."""


def flag(argument: str) -> str:
    """How the command line names an application argument (``index_dir`` -> ``--index-dir``)."""
    if " / " in argument:
        return " / ".join(flag(part) for part in argument.split(" / "))
    return POSITIONAL.get(argument) or FLAGS.get(argument) or "--" + argument.replace("_", "-")


class _Commands(TyperGroup):
    """Runs a command the same way from the console script, ``main([...])`` and typer's ``CliRunner``."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        arguments = list(sys.argv[1:] if args is None else args)
        end = arguments.index("--") if "--" in arguments else len(arguments)
        debug = "--debug" in arguments[:end]
        if debug:  # the group's option, accepted wherever it is written (``ask --debug ...`` too)
            arguments = ["--debug", *(argument for argument in arguments[:end] if argument != "--debug")]
            arguments += list(args if args is not None else sys.argv[1:])[end:]
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
    except ArgumentError as error:  # the application's word for a usage error
        usage = typer.BadParameter(error.spelled(flag), param_hint=flag(error.argument))
        return _fail(2, usage.format_message(), debug, error)
    except ConnectorError as error:
        return _fail(1, f"{type(error).__name__}: {error}", debug, error)
    except OSError as error:  # an unwritable --json path, a full disk
        return _fail(1, str(error), debug, error)
    except Exception as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare `rag-integration`: the help, as usage
            print(error.format_message(), file=sys.stderr)  # type: ignore[attr-defined]
            return 2
        if hasattr(error, "format_message") and hasattr(error, "exit_code"):  # click's (typer vendors its own click)
            usage_error = any(kind.__name__ == "UsageError" for kind in type(error).__mro__)
            return _fail(2 if usage_error else int(error.exit_code), error.format_message(), debug, error)
        return _fail(1, f"unexpected {type(error).__name__}: {error}", debug, error)
    return returned if isinstance(returned, int) else 0


def _fail(code: int, message: str, debug: bool, error: BaseException) -> int:
    if debug:
        traceback.print_exception(error)
    first_line = message.strip().splitlines()[0] if message.strip() else type(error).__name__
    print(f"{PROG}: {'usage error' if code == 2 else 'error'}: {printable_line(first_line)}", file=sys.stderr)
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


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of a failure")] = False,
) -> None:
    """Read by ``_Commands.main`` before the command runs."""


ProgressOption = Annotated[bool, typer.Option(help="draw progress bars on stderr")]
VerboseOption = Annotated[bool, typer.Option("--verbose", help="list every file not read, with why")]
CacheOption = Annotated[
    bool, typer.Option(help="with --files: keep indexes, embeddings and analysed text in the user cache folder")
]
PrincipalOption = Annotated[
    list[str] | None,
    typer.Option(
        "--principal",
        help="who is asking (repeatable: user and groups); only documents whose 'readers' name one of them, or '*', "
        "are used. Required when the documents carry 'readers'",
    ),
]
UnlabelledOption = Annotated[
    str,
    typer.Option(
        help="with --principal, who reads a document without 'readers' among labelled ones: 'hidden' (nobody) or "
        "'public' (everyone)"
    ),
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
EmbeddingModelOption = Annotated[
    str | None,
    typer.Option(
        help="the embedding model of a dense --backend (default 'minilm'); with --index-dir the store's own by default"
    ),
]
"""Options several commands share, declared once."""


def show_notes(notes: RunNotes, verbose: bool) -> None:
    """What a run noted, on stderr: each warning, then the count of files not read (``--verbose``: each with why)."""
    for warning in notes.warnings:
        print(f"warning: {printable_line(warning)}", file=sys.stderr)
    if notes.skipped:
        hint = "" if verbose else " (--verbose lists them)"
        print(f"skipped {len(notes.skipped)} file(s) not read{hint}", file=sys.stderr)
        if verbose:
            for file in notes.skipped:
                print(f"  {printable_line(str(file.path))}: {printable_line(file.reason)}", file=sys.stderr)
    for detail in notes.details if verbose else ():
        print(printable_line(detail), file=sys.stderr)
