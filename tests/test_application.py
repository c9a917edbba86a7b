"""The application layer: every command's work called from Python, no typer involved; its answers are the ones the
command line prints, and a wrong argument is an ``ArgumentError`` naming the parameter (the CLI names the flag)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from rag_integration import application
from rag_integration.cli import main
from rag_integration.cli.base import flag as cli_flag
from rag_integration.core.errors import ArgumentError

QUESTION = "How often should the engine oil be changed?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "car.md").write_text(
        "# Servicing\n\nChange the engine oil every 10,000 km or once a year.\n\nCheck the tyre pressure monthly.\n",
        encoding="utf-8",
    )
    (docs / "bread.txt").write_text("Bake the bread at 220 degrees for thirty minutes.\n", encoding="utf-8")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n")
    return docs


def test_ask_returns_the_answer_the_command_line_prints(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = application.ask(QUESTION, files=[folder], cache=False)
    assert isinstance(answer, application.Answer)
    assert "10,000 km" in answer.text and answer.sources[0].file == str(folder / "car.md")
    assert main(["ask", QUESTION, "--files", str(folder), "--json", "--no-progress", "--no-cache"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == [answer.as_json()]


def test_ask_all_answers_each_question_and_notes_the_files_not_read(folder: Path) -> None:
    result = application.ask_all([QUESTION, "How hot is the bread baked?"], files=[str(folder)], cache=False)
    assert [answer.question for answer in result.answers] == [QUESTION, "How hot is the bread baked?"]
    assert "220 degrees" in result.answers[1].text
    assert [Path(file.path).name for file in result.notes.skipped] == [] or all(
        Path(file.path).suffix != ".md" for file in result.notes.skipped
    )
    assert not result.notes.no_documents


def test_search_ranks_the_passages_the_command_line_prints(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = application.search(["engine oil", "bread"], files=[folder], top_k=2, metadata=True, cache=False)
    tops = [ranking[0] for ranking in result.rankings]
    assert "Change the engine oil every 10,000 km" in tops[0]["text"] and tops[0]["metadata"]["source"] == str(
        folder / "car.md"
    )
    assert tops[1]["text"] == "Bake the bread at 220 degrees for thirty minutes."
    command = ["search", "engine oil", "bread", "--files", str(folder), "--top-k", "2", "--json", "--no-cache"]
    assert main(command) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == [{"query": query, "passages": ranking} for query, ranking in zip(result.queries, result.rankings)]


def test_index_then_ask_the_store(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = application.index([folder], store, embedding_model="hash")
    assert report.chunks >= 2 and report.added == report.chunks and report.embedded == report.chunks
    again = application.index([folder], store, embedding_model="hash")
    assert (again.added, again.changed, again.removed, again.embedded) == (0, 0, 0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the store is up to date: no warning
        answer = application.ask(QUESTION, index_dir=store)
    assert "10,000 km" in answer.text


def test_a_changed_file_makes_ask_warn_that_the_store_is_out_of_date(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    application.index([folder], store, embedding_model="hash")
    (folder / "new.md").write_text("Wash the car every week.\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="out of date: 1 file"):
        application.ask(QUESTION, index_dir=store)


@pytest.mark.parametrize(
    ("call", "argument", "flag"),
    [
        (lambda folder: application.ask(QUESTION, files=[folder], chunker="sentense"), "chunker", "--chunker"),
        (lambda folder: application.ask(QUESTION, files=[folder], backend_name="bm25"), "backend_name", "--backend"),
        (lambda folder: application.ask(QUESTION), "index_dir / files", "--index-dir / --files"),
        (lambda folder: application.ask(" ", files=[folder]), "question", "QUESTION"),
        (lambda folder: application.search(["x"], files=[folder / "none.md"]), "files", "--files"),
        (
            lambda folder: application.index([folder], folder.parent / "s", embedding_model="e5"),
            "embedding_model",
            "--embedding-model",
        ),
    ],
)
def test_a_wrong_argument_names_the_parameter_and_the_cli_its_flag(
    folder: Path, call: object, argument: str, flag: str
) -> None:
    with pytest.raises(ArgumentError) as raised:
        call(folder)  # type: ignore[operator]
    assert raised.value.argument == argument
    assert str(raised.value).startswith(f"argument '{argument}': ")
    assert "{" not in str(raised.value) and "--" not in raised.value.spelled(str).split(": ")[0]
    assert cli_flag(raised.value.argument) == flag


def test_the_cli_shows_an_argument_error_as_a_usage_error_naming_its_flag(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", QUESTION, "--files", str(folder), "--chunker", "sentense", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rag-integration: usage error: Invalid value for --chunker: got 'sentense'")
    assert "did you mean 'sentence'?" in err
    assert main(["ask", QUESTION]) == 2
    assert "Invalid value for --index-dir / --files: give either --index-dir or --files" in capsys.readouterr().err


def test_an_argument_error_keeps_braces_in_a_value_as_text() -> None:
    error = ArgumentError("chunker", f"got {ArgumentError.quoted('a{files}b')}: expected one of {{files}}")
    assert error.spelled(lambda name: "--" + name) == "got 'a{files}b': expected one of --files"
