"""The reply shapes chat models actually send to ``structured_backend="llm"``: a JSON object, plain SQL, a fenced
block (labelled or not) and prose with one fenced block all give rows; two statements or two blocks are refused
with ``SqlSafetyError`` and nothing runs. Each test starts its own server on 127.0.0.1 and stops it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llm_server import running

from rag_integration.core.errors import InvalidOptionError, SqlSafetyError
from rag_integration.feature_groups.connectors.structured import LlmSql
from rag_integration.feature_groups.connectors.structured.llm_sql import bind_literals, read_reply
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE

BERLIN_SQL = "SELECT COUNT(*) AS count FROM employees WHERE city = 'Berlin'"
GUARDED = 'SELECT COUNT(*) AS "count" FROM "employees" WHERE "city" = ?'
SHAPES = {
    "json object": json.dumps({"sql": "SELECT COUNT(*) AS count FROM employees WHERE city = ?", "params": ["Berlin"]}),
    "plain sql": BERLIN_SQL,
    "plain sql with a semicolon": BERLIN_SQL + ";\n",
    "sql fence": f"```sql\n{BERLIN_SQL}\n```",
    "unlabelled fence": f"```\n{BERLIN_SQL};\n```",
    "one-line fence": f"```{BERLIN_SQL}```",
    "indented label": f"The SQL:\n``` sql\r\n{BERLIN_SQL}\r\n```",
    "prose then a fence": f"Here is the query you asked for:\n\n```sql\n{BERLIN_SQL}\n```",
    "prose around a fence": f"Sure.\n```SQL\n{BERLIN_SQL}\n```\nIt counts the rows whose city is Berlin.",
    "prose then a json fence": "The answer:\n```json\n"
    + json.dumps({"sql": "SELECT COUNT(*) AS count FROM employees WHERE city = ?", "params": ["Berlin"]})
    + "\n```",
}
REFUSED = {
    "two statements": "SELECT COUNT(*) FROM employees; SELECT * FROM employees",
    "two statements in a fence": "```sql\nSELECT COUNT(*) FROM employees;\nSELECT name FROM employees;\n```",
    "two fenced blocks": "Either\n```sql\nSELECT COUNT(*) FROM employees\n```\nor\n```sql\nSELECT name FROM employees\n```",
    "an unclosed fence": "```sql\nSELECT COUNT(*) FROM employees",
    "a python block": "```python\nprint('hi')\n```",
    "prose without a fence": "The count of employees is what you want.",
}


def ask_with(reply: str, **options: Any) -> tuple[list[dict[str, Any]], int]:
    """Rows of one question answered by a server that always sends ``reply``, and how many requests it got."""
    with running(lambda messages: reply) as server:
        request = {
            "table_name": TABLE,
            "columns": COLUMNS,
            "rows": EMPLOYEES,
            "question": "how many employees are in Berlin?",
            "structured_backend": "llm",
            "llm_base_url": server.url,
            "llm_model": "fake",
            **options,
        }
        rows = run_feature("structured_rows", request, {LlmSql})
        return [dict(row) for row in rows], len(server.requests)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_reply_shape_gives_rows(shape: str) -> None:
    rows, requests = ask_with(SHAPES[shape])
    assert rows == [{"sql": GUARDED, "params": ["Berlin"], "rows": [{"count": 3}]}]
    assert requests == 1


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_two_statements_or_blocks_are_refused_and_nothing_runs(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(LlmSql, "run_sql", classmethod(lambda cls, sandbox, sql, params: ran.append(sql)))
    with pytest.raises(SqlSafetyError, match="asked twice") as caught:
        ask_with(REFUSED[shape])
    assert "nothing ran" in str(caught.value)
    assert ran == []


def test_two_blocks_are_named_in_the_refusal() -> None:
    with pytest.raises(SqlSafetyError, match="holds 2 fenced blocks"):
        read_reply(REFUSED["two fenced blocks"], "q")
    with pytest.raises(SqlSafetyError, match="exactly one statement, found 2"):
        ask_with(REFUSED["two statements"])


def test_plain_sql_still_goes_through_the_guard() -> None:
    with pytest.raises(SqlSafetyError, match="guard refused"):
        ask_with("```sql\nDELETE FROM employees WHERE city = 'Berlin'\n```")
    with pytest.raises(SqlSafetyError, match="guard refused"):
        ask_with("SELECT * FROM employees WHERE salary > (SELECT AVG(salary) FROM employees)")


def test_literals_are_bound_in_order_and_limit_stays_literal() -> None:
    sql, params = bind_literals("SELECT name FROM t WHERE name = 'O''Brien' AND salary > -5.5 AND age < 40 LIMIT 3")
    assert sql == "SELECT name FROM t WHERE name = ? AND salary > -? AND age < ? LIMIT 3"
    assert params == ["O'Brien", 5.5, 40]
    with pytest.raises(SqlSafetyError, match="not a str"):
        bind_literals("SELECT * FROM t WHERE n = 99999999999999999999999")


def test_placeholders_without_params_are_refused() -> None:
    with pytest.raises(SqlSafetyError, match="placeholder"):
        ask_with("SELECT * FROM employees WHERE city = ?")


def test_an_unanswerable_json_reply_in_a_fence_is_still_unanswerable() -> None:
    with pytest.raises(InvalidOptionError, match="unanswerable"):
        read_reply('Sorry.\n```json\n{"unanswerable": "no such column"}\n```', "q")
