"""``rag-integration ask --generate llm`` against a deterministic chat-completions server on 127.0.0.1: a question
that really fails under ``--on-error row`` is reported while the others are answered, a model's ``NO_ANSWER`` is
said to be the model's, and a model's sentence is shown as its claim, never as a quote from the file."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeChatServer, prompt_of, quoting_model, serve_module
from rich.console import Console

from rag_integration.application.answers import answer_of, error_of
from rag_integration.cli import main
from rag_integration.cli.ask import print_answers

SERVERS: dict[str, FakeChatServer] = {}
FOUNDED = "Acme was founded in 2011 by Jonas Becker in Berlin."
ROLLBACK = "The rollback plan is owned by the platform team."


def model(messages: list[dict[str, Any]]) -> str:
    """Invents a founder for Acme (a claim no passage supports), quotes what matches otherwise."""
    _, question = prompt_of(messages)
    if "founded" in question:
        return "Acme was founded in 1850 by Jane Doe. [1]"
    return quoting_model(messages)


@pytest.fixture(scope="module", autouse=True)
def chat_server() -> Iterator[FakeChatServer]:
    yield from serve_module(model, SERVERS)


@pytest.fixture(autouse=True)
def fresh_script(chat_server: FakeChatServer) -> None:
    chat_server.reset()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "acme.md").write_text(f"{FOUNDED}\n\n{ROLLBACK}\n", encoding="utf-8")
    return docs


def ask_llm(capsys: pytest.CaptureFixture[str], folder: Path, *arguments: str) -> tuple[int, str, str]:
    llm = ["--generate", "llm", "--llm-base-url", SERVERS["chat"].url, "--llm-model", "fake"]
    code = main(["ask", *arguments, "--files", str(folder), *llm, "--no-progress", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


QUESTIONS = ("Who founded Acme?", "Who owns the rollback plan?")


def test_on_error_row_reports_the_failing_question_and_answers_the_others(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask_llm(capsys, folder, *QUESTIONS, "--on-error", "row")
    assert code == 1, err  # documented: a question that failed under --on-error row makes the run a failure
    assert "unexpected" not in err and "Traceback" not in err
    founded, rollback = out.split("\n\n", 1)
    assert founded.splitlines()[0] == "Who founded Acme?"
    assert founded.splitlines()[1].startswith("error: GroundingError: ")
    assert rollback.splitlines()[0] == "Who owns the rollback plan?"
    assert f"{ROLLBACK} [1]" in rollback


def test_on_error_row_with_json_gives_the_error_its_type_and_message(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask_llm(capsys, folder, *QUESTIONS, "--on-error", "row", "--json")
    assert code == 1, err
    founded, rollback = json.loads(out)
    assert founded["answer"] == "" and founded["sources"] == []
    assert founded["error"]["type"] == "GroundingError" and "Jane Doe" in founded["error"]["message"]
    assert "error" not in rollback and rollback["answer"] == f"{ROLLBACK} [1]"


def test_without_on_error_row_the_failing_question_stops_the_run(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask_llm(capsys, folder, *QUESTIONS)
    assert code == 1 and out == ""
    assert err.startswith("rag-integration: error: GroundingError: ") and err.count("\n") == 1


def test_a_model_that_finds_no_answer_is_said_to_have_found_none(
    folder: Path, capsys: pytest.CaptureFixture[str], chat_server: FakeChatServer
) -> None:
    chat_server.script.append("NO_ANSWER")
    code, out, _ = ask_llm(capsys, folder, "Who owns the rollback plan?")
    assert code == 0
    assert out.strip().startswith("No answer: the model found no answer to the question in the ")
    assert "content word" not in out


def test_the_model_s_sentence_is_its_claim_not_a_quote(
    folder: Path, capsys: pytest.CaptureFixture[str], chat_server: FakeChatServer
) -> None:
    claim = "Acme was founded in 2011 by Jonas Becker."  # the file goes on: "... in Berlin."
    chat_server.script.append(f"{claim} [1]")
    code, out, err = ask_llm(capsys, folder, "When was Acme founded?")
    assert code == 0, err
    answer, sources = out.split("\n\n", 1)
    assert answer == f"{claim} [1]"
    assert sources.splitlines()[0].startswith(f"[1] {folder / 'acme.md'}")
    assert sources.splitlines()[1] == f"    the model's claim from it: {claim}"
    assert "“" not in out
    chat_server.script.append(f"{claim} [1]")
    code, out, _ = ask_llm(capsys, folder, "When was Acme founded?", "--json")
    [row] = json.loads(out)
    assert row["sources"][0]["claims"] == [claim] and row["sources"][0]["quotes"] == []
    assert row["unsupported"] == []


def test_sentences_the_model_wrote_and_lost_are_counted_under_its_answer() -> None:
    passage = {"doc_id": "acme.md", "text": FOUNDED, "metadata": {"source": "acme.md", "line_start": 3, "line_end": 3}}
    row = {"answer": "Acme was founded in 2011. [1]", "citations": ["acme.md"], "unsupported": ["It has 500 staff."]}
    answer = answer_of("When was Acme founded?", row, [passage])
    out = io.StringIO()
    print_answers([answer], Console(file=out, soft_wrap=True, width=160))
    assert out.getvalue().splitlines()[:2] == [
        "Acme was founded in 2011. [1]",
        "(1 sentence(s) the model wrote were dropped: no passage supports them)",
    ]
    assert answer.as_json()["unsupported"] == ["It has 500 staff."]
    assert answer.sources[0].lines == (3, 3) and answer.sources[0].claims == ("Acme was founded in 2011.",)


def test_a_failed_row_s_error_is_read_as_every_family_writes_it() -> None:
    assert error_of("GroundingError: the answer cites nothing") == {
        "type": "GroundingError",
        "message": "the answer cites nothing",
    }
    assert error_of({"type": "RemoteServiceError", "message": "503"}) == {
        "type": "RemoteServiceError",
        "message": "503",
    }
    assert error_of("something odd") == {"type": "Error", "message": "something odd"}
