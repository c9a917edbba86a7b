"""``deadline_ms`` and ``sql_time_limit`` bound reading and loading too, not only the steps after them.

Time is made to pass by a fake clock (``core.deadline._clock``) that moves one second each time it is read, so the
tests say exactly which step ran out without depending on how fast this machine is."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from rag_integration.core import deadline
from rag_integration.core.deadline import Budget, Deadline
from rag_integration.core.errors import DeadlineExceededError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.structured import AggregateSql, BaseStructuredConnector, TableSpec
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE

ROWS = [{"n": number, "city": f"city {number % 7}"} for number in range(20_000)]
LARGE_TABLE = {"table_name": "numbers", "columns": ["n", "city"], "rows": ROWS, "structured_backend": "aggregate"}
CORPUS = [{"doc_id": f"d{number}", "text": f"document {number} about engine oil"} for number in range(20_000)]


@pytest.fixture
def slow_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read of the deadline clock is one second later than the one before."""
    ticks = itertools.count()
    monkeypatch.setattr(deadline, "_clock", lambda: float(next(ticks)))


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Questions that reached planning (none may, when loading ran out)."""
    seen: list[str] = []
    original = BaseStructuredConnector.ask.__func__  # type: ignore[attr-defined]

    def ask(cls: Any, sandbox: Any, text: str) -> Any:
        seen.append(text)
        return original(cls, sandbox, text)

    monkeypatch.setattr(BaseStructuredConnector, "ask", classmethod(ask))
    return seen


@pytest.mark.usefixtures("slow_clock")
def test_sql_time_limit_bounds_reading_a_large_table(asked: list[str]) -> None:
    with pytest.raises(
        DeadlineExceededError, match=r"option 'sql_time_limit' \(3\.0 s\) ran out while reading"
    ) as caught:
        run_feature(
            "structured_rows", {**LARGE_TABLE, "question": "how many numbers", "sql_time_limit": 3.0}, {AggregateSql}
        )
    assert "loading the table" in str(caught.value)
    assert asked == []


@pytest.mark.usefixtures("slow_clock")
def test_deadline_ms_bounds_reading_a_large_table_when_it_is_nearer(asked: list[str]) -> None:
    request = {**LARGE_TABLE, "question": "how many numbers", "sql_time_limit": 60.0, "deadline_ms": 2_000}
    with pytest.raises(
        DeadlineExceededError, match=r"option 'deadline_ms' \(2000 ms\) ran out while reading and loading"
    ):
        run_feature("structured_rows", request, {AggregateSql})
    assert asked == []


@pytest.mark.usefixtures("slow_clock")
def test_loading_rows_into_sqlite_is_bounded() -> None:
    table = TableSpec.read(OptionReader({"table_name": "numbers", "columns": ["n", "city"], "rows": ROWS}))
    budget = Budget(3.0, deadline._clock() + 3.0, "sql_time_limit", Deadline())
    with pytest.raises(DeadlineExceededError, match=r"sql_time_limit.*loading the table"):
        SqliteSandbox(table, time_limit=3.0, max_rows=10, budget=budget)


@pytest.mark.usefixtures("slow_clock")
def test_a_small_table_within_its_limits_still_answers() -> None:
    request = {"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "structured_backend": "aggregate"}
    [row] = run_feature(
        "structured_rows", {**request, "question": "how many employees", "sql_time_limit": 100.0}, {AggregateSql}
    )
    assert row["rows"] == [{"count": len(EMPLOYEES)}]


@pytest.mark.usefixtures("slow_clock")
def test_deadline_ms_bounds_reading_a_large_corpus() -> None:
    request = {"retrieve_backend": "bm25s", "query_text": "engine oil", "corpus": CORPUS, "deadline_ms": 3_000}
    with pytest.raises(
        DeadlineExceededError, match=r"deadline_ms.*while reading 'corpus' \(at document \d+ of 20000\)"
    ):
        run_feature("retrieved_passages", request, {Bm25sRetriever})


@pytest.mark.usefixtures("slow_clock")
def test_deadline_ms_bounds_reading_many_candidates() -> None:
    request = {"rerank_backend": "lexical", "query_text": "engine oil", "candidates": CORPUS, "deadline_ms": 3_000}
    with pytest.raises(DeadlineExceededError, match=r"deadline_ms.*while reading 'candidates'"):
        run_feature("reranked_passages", request, {LexicalReranker})


def test_without_a_deadline_a_large_table_is_read_and_answered() -> None:
    [row] = run_feature("structured_rows", {**LARGE_TABLE, "question": "how many numbers"}, {AggregateSql})
    assert row["rows"] == [{"count": len(ROWS)}]


@pytest.mark.usefixtures("slow_clock")
def test_deadline_ms_bounds_a_pipeline_stage_reading_its_rows() -> None:
    from rag_integration.feature_groups.rag_pipeline import STAGES

    options = {"document_source": "inline", "documents": CORPUS, "embedding_model": "hash", "deadline_ms": 3_000}
    with pytest.raises(DeadlineExceededError, match=r"deadline_ms.*while reading '(documents|docs)'"):
        run_feature("docs__embedded", options, set(STAGES))


def test_table_rows_keep_mlodas_planning_cheap_and_answer_like_a_list() -> None:
    """A large ``rows`` list is frozen once the backend matches (mloda then copies it in constant time); passed as
    ``TableRows`` by the caller, even the copies before matching are constant."""
    import copy
    import pickle

    from rag_integration.feature_groups.connectors.structured import TableRows

    frozen = TableRows(ROWS)
    assert copy.deepcopy(frozen) is frozen and copy.copy(frozen) is frozen
    assert repr(frozen).startswith("TableRows(20000 rows, sha256 ")
    assert pickle.loads(pickle.dumps(frozen)) == frozen
    changed = TableRows([*ROWS[:-1], {"n": -1, "city": "elsewhere"}])
    assert changed != frozen and repr(changed) != repr(frozen)
    assert isinstance(TableRows.of([{"n": lambda: 1}]), list)  # does not pickle: left a list
    request = {**LARGE_TABLE, "question": "how many numbers with city is city 3"}
    as_list = run_feature("structured_rows", request, {AggregateSql})
    assert run_feature("structured_rows", {**request, "rows": frozen}, {AggregateSql}) == as_list
    assert as_list[0]["rows"] == [{"count": sum(1 for row in ROWS if row["city"] == "city 3")}]


def test_a_million_character_query_is_answered_well_within_its_deadline() -> None:
    """Reading a query is linear: a 1,000,000-character query costs a fraction of a second once the process has
    imported its libraries (the first request of a fresh process pays those imports, which no deadline bounds)."""
    corpus = [{"doc_id": str(n), "text": f"note {n} about the engine oil and filter {n % 7}"} for n in range(200)]
    run_feature(
        "retrieved_passages", {"retrieve_backend": "bm25s", "corpus": corpus, "query_text": "oil"}, {Bm25sRetriever}
    )
    words = itertools.cycle(["oil", "filter3", "brake", "pressure", "water", "cherry"])
    query = " ".join(f"{word}{n}" for n, word in zip(range(125_000), words))[:1_000_000]
    request = {"retrieve_backend": "bm25s", "corpus": corpus, "query_text": query, "deadline_ms": 2000}
    [passages] = run_feature("retrieved_passages", request, {Bm25sRetriever})
    assert len(query) == 1_000_000 and isinstance(passages, list)
