"""Every example in docs/structured.md runs and gives the documented SQL, parameters and rows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.structured import AggregateSql, BaseStructuredConnector, RuleBasedSql
from rag_integration.testing.runner import run_feature

DOC = Path(__file__).resolve().parents[3] / "docs" / "structured.md"
BACKENDS: dict[str, type[BaseStructuredConnector]] = {"rule_based": RuleBasedSql, "aggregate": AggregateSql}


def section(marker: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"<!-- structured-docs:{marker} -->")
    return text[start:].split("\n\n", 1)[0]


def table_rows(marker: str) -> list[list[str]]:
    lines = [line for line in section(marker).splitlines() if line.startswith("| ")][1:]
    return [[cell.strip().strip("`") for cell in line.strip().strip("|").split(" | ")] for line in lines]


def documented_table() -> dict[str, Any]:
    block = re.search(r"```json\n(.*?)```", section("table"), re.DOTALL)
    assert block is not None
    return dict(json.loads(block.group(1)))


EXAMPLES = table_rows("examples")
REFUSED = table_rows("refused")


def ask(backend: str, question: str) -> dict[str, Any]:
    options = {"structured_backend": backend, "question": question, **documented_table()}
    return dict(run_feature("structured_rows", options, {BACKENDS[backend]})[0])


def test_docs_cover_both_backends() -> None:
    assert {row[0] for row in EXAMPLES} == set(BACKENDS) and len(EXAMPLES) >= 15
    assert {row[0] for row in REFUSED} == set(BACKENDS)


@pytest.mark.parametrize(("backend", "question", "sql", "params", "rows"), EXAMPLES)
def test_documented_example(backend: str, question: str, sql: str, params: str, rows: str) -> None:
    result = ask(backend, question)
    assert result == {"sql": sql, "params": json.loads(params), "rows": json.loads(rows)}


@pytest.mark.parametrize(("backend", "question", "why"), REFUSED)
def test_documented_refusal(backend: str, question: str, why: str) -> None:
    with pytest.raises(InvalidOptionError, match="option 'question'"):
        ask(backend, question)
