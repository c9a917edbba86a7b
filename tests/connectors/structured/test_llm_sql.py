"""``structured_backend="llm"`` against a deterministic chat-completions server on 127.0.0.1: the structured kit, and
every hostile SQL of the structured test set coming from the "model", refused with nothing run."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeChatServer, Reply, serve_module

from rag_integration.core.contract import per_query
from rag_integration.core.errors import InvalidOptionError, RemoteServiceError, SqlSafetyError
from rag_integration.core.options import OptionReader
from rag_integration.core.remote.llm_client import LlmSettings
from rag_integration.feature_groups.connectors.structured import LlmSql, TableSpec, llm_sql
from rag_integration.feature_groups.connectors.structured.llm_sql import describe_table
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import (
    COLUMNS,
    EMPLOYEES,
    HOSTILE_SQL,
    TABLE,
    StructuredContractTests,
    sandbox_snapshot,
)

SERVERS: dict[str, FakeChatServer] = {}
COUNT_WHERE_NAME = re.compile(r'^how many employees where name is "(.*)"$', re.DOTALL)
KNOWN: dict[str, dict[str, Any]] = {
    "how many employees are in Berlin?": {
        "sql": "SELECT COUNT(*) AS count FROM employees WHERE city = ?",
        "params": ["Berlin"],
    },
    "list employees with salary over 50000 ordered by salary descending": {
        "sql": "SELECT * FROM employees WHERE salary > ? ORDER BY salary DESC",
        "params": [50000],
    },
    "how many employees": {"sql": "SELECT COUNT(*) AS count FROM employees", "params": []},
    "which department has the highest average salary?": {
        "sql": "SELECT department, AVG(salary) AS avg_salary FROM employees GROUP BY department "
        "ORDER BY AVG(salary) DESC LIMIT 1",
        "params": [],
    },
    "earliest start date per department": {
        "sql": "SELECT department, MIN(start_date) AS first_start FROM employees GROUP BY department "
        "ORDER BY department",
        "params": [],
    },
}


def question_of(messages: list[dict[str, Any]]) -> str:
    return str(messages[1]["content"]).rsplit("\n\nQuestion: ", 1)[1]


def sql_model(messages: list[dict[str, Any]]) -> str:
    """Known questions get their SQL (values bound); anything else is unanswerable."""
    question = question_of(messages)
    if question in KNOWN:
        return json.dumps(KNOWN[question])
    match = COUNT_WHERE_NAME.match(question)
    if match:
        return json.dumps({"sql": "SELECT COUNT(*) AS count FROM employees WHERE name = ?", "params": [match[1]]})
    return json.dumps({"unanswerable": "the table holds no such thing"})


@pytest.fixture(scope="module", autouse=True)
def chat_server() -> Iterator[FakeChatServer]:
    yield from serve_module(sql_model, SERVERS)


@pytest.fixture(autouse=True)
def fresh_script(chat_server: FakeChatServer) -> None:
    chat_server.reset()


def llm_options(**extra: Any) -> dict[str, Any]:
    return {"structured_backend": "llm", "llm_base_url": SERVERS["chat"].url, "llm_model": "fake", **extra}


class TestLlmSqlKit(StructuredContractTests):
    @classmethod
    def connector_class(cls) -> Any:
        return LlmSql

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"llm_base_url": SERVERS["chat"].url, "llm_model": "fake"}


def ask_request() -> dict[str, Any]:
    return {"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "question": "anything", **llm_options()}


def ask(*replies: str | Reply, **options: Any) -> dict[str, Any]:
    SERVERS["chat"].script += list(replies)
    [row] = run_feature("structured_rows", {**ask_request(), **options}, {LlmSql})
    return dict(row)


def model_reply(sql: str, params: list[Any] | None = None) -> str:
    return json.dumps({"sql": sql, "params": ["x"] * sql.count("?") if params is None else params})


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqliteSandbox]:
    monkeypatch.chdir(tmp_path)
    spec = TableSpec.read(OptionReader({"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES}))
    with SqliteSandbox(spec, time_limit=2.0, max_rows=100_000) as opened:
        yield opened
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("hostile", HOSTILE_SQL)
def test_hostile_sql_from_the_model_is_refused_and_nothing_runs(
    hostile: str, sandbox: SqliteSandbox, chat_server: FakeChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    executed: list[str] = []
    monkeypatch.setattr(sandbox, "run", lambda sql, params: executed.append(sql) or ([], []))
    before = sandbox_snapshot(sandbox)
    chat_server.script += [model_reply(hostile), model_reply(hostile)]
    settings = LlmSettings.read(OptionReader(llm_options()))
    with pytest.raises(SqlSafetyError, match="asked twice") as caught:
        LlmSql.ask_model(sandbox, "list employees", settings, describe_table(sandbox.table))
    assert "nothing ran" in str(caught.value)
    assert executed == []
    assert sandbox_snapshot(sandbox) == before
    assert len(chat_server.requests) == 2
    retry = chat_server.requests[1]["body"]["messages"]
    assert retry[-2] == {"role": "assistant", "content": model_reply(hostile)}
    assert retry[-1]["content"].startswith("That was refused:")


def test_one_retry_tells_the_model_why_and_may_succeed(chat_server: FakeChatServer) -> None:
    row = ask(
        model_reply("SELECT COUNT(*) AS count FROM employees WHERE city = 'Berlin'", []),
        model_reply("SELECT COUNT(*) AS count FROM employees WHERE city = ?", ["Berlin"]),
    )
    assert row == {
        "sql": 'SELECT COUNT(*) AS "count" FROM "employees" WHERE "city" = ?',
        "params": ["Berlin"],
        "rows": [{"count": 3}],
    }
    refusal = chat_server.requests[1]["body"]["messages"][-1]["content"]
    assert "values must be bound parameters" in refusal


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ('{"sql": "SELECT * FROM employees"', "not a JSON object"),
        ('{"sql": 5}', "is not"),
        ('{"sql": "SELECT * FROM employees", "params": "x"}', "is not"),
        (model_reply("SELECT * FROM employees WHERE name = ?", []), "placeholder"),
        (model_reply("SELECT * FROM employees WHERE name = ?", [True]), "not a str, int, float or null"),
        (model_reply("SELECT * FROM employees WHERE name = ?", [["Ada"]]), "not a str, int, float or null"),
        (model_reply("SELECT * FROM employees WHERE name = ?", [2**70]), "not a str, int, float or null"),
    ],
)
def test_unusable_replies_are_refused_after_one_retry(reply: str, problem: str) -> None:
    with pytest.raises(SqlSafetyError, match=problem):
        ask(reply, reply)
    assert len(SERVERS["chat"].requests) == 2


def test_a_fenced_json_reply_and_dates_are_read() -> None:
    fenced = "```json\n" + json.dumps(KNOWN["earliest start date per department"]) + "\n```"
    row = ask(fenced)
    assert row["rows"] == [
        {"department": "Engineering", "first_start": "2017-06-20"},
        {"department": "Marketing", "first_start": "2022-02-01"},
        {"department": "Sales", "first_start": "2020-01-10"},
    ]


def test_the_model_sees_the_schema_and_sample_values(chat_server: FakeChatServer) -> None:
    ask(question="how many employees")
    prompt = chat_server.requests[0]["body"]["messages"][1]["content"]
    assert "Table: employees" in prompt
    assert '- name (text), e.g. "Ada", "Ben", "Cem"' in prompt
    assert "- salary (integer), e.g. 72000, 48000, 51000" in prompt
    assert prompt.endswith("Question: how many employees")


def test_the_table_is_described_once_per_request_and_the_deadline_checked_per_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    described: list[str] = []
    checked: list[str] = []
    monkeypatch.setattr(llm_sql, "describe_table", lambda table: described.append(table.name) or describe_table(table))
    monkeypatch.setattr(per_query, "check_deadline", checked.append)
    questions = ["how many employees", "how many employees", "how many employees"]
    rows = run_feature("structured_rows", {**ask_request(), "question": questions}, {LlmSql})
    assert len(rows) == 3
    assert described == [TABLE]
    assert checked == [f"before question {number} of 3 was answered" for number in (1, 2, 3)]


def test_describe_stops_reading_a_column_once_it_has_its_samples() -> None:
    class CountedRows(tuple[tuple[Any, ...], ...]):
        read = 0

        def __iter__(self) -> Iterator[tuple[Any, ...]]:
            for row in super().__iter__():
                CountedRows.read += 1
                yield row

    spec = TableSpec.read(
        OptionReader({"table_name": TABLE, "columns": ["n"], "rows": [{"n": i} for i in range(1000)]})
    )
    counted = dataclasses.replace(spec, rows=CountedRows(spec.rows))
    assert describe_table(counted).endswith("- n (integer), e.g. 0, 1, 2")
    assert CountedRows.read == 3


def test_unanswerable_is_an_invalid_question() -> None:
    with pytest.raises(InvalidOptionError, match="option 'question'") as caught:
        ask(question="what is the weather")
    assert "unanswerable" in str(caught.value) and "understands" in str(caught.value)


def test_a_failing_server_is_a_remote_service_error() -> None:
    with pytest.raises(RemoteServiceError, match="HTTP 500"):
        ask(Reply(500, b"down"), llm_max_retries=0)


def test_the_documented_example_runs_as_written(chat_server: FakeChatServer) -> None:
    """docs/structured.md's llm example, pointed at this server instead of Ollama."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "structured.md").read_text(encoding="utf-8")
    [block] = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "LlmSql" in block]
    assert "http://127.0.0.1:11434/v1" in block
    namespace: dict[str, Any] = {}
    exec(block.replace("http://127.0.0.1:11434/v1", chat_server.url), namespace)
    [rows] = [frame["structured_rows"] for frame in namespace["result"] if "structured_rows" in frame]
    assert rows == [
        {
            "sql": 'SELECT "department", AVG("salary") AS "avg_salary" FROM "employees" GROUP BY "department" '
            'ORDER BY AVG("salary") DESC LIMIT 1',
            "params": [],
            "rows": [{"department": "Engineering", "avg_salary": 72000.0}],
        }
    ]
