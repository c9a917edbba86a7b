"""Structured planning is linear in the question's length: plan questions of n and 10n characters over 100k values.

Run: ``uv run --all-extras python benchmarks/structured_plan_bench.py``. Prints the best-of-20 planning CPU time
(process time, as the machine may be shared) of each question shape at both lengths and their ratio (linear: about
10x; issue 9 allows at most 12x), then one whole ``ask`` (plan, guard, SQL) of the longest question. The lexicon
is built once per table, in time linear in its cells.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from rag_integration.core.errors import ConnectorError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.structured import AggregateSql, TableSpec
from rag_integration.feature_groups.connectors.structured.lexicon import Lexicon, PlanningDeadline
from rag_integration.feature_groups.connectors.structured.parser import NotUnderstood, Parser, Question
from rag_integration.feature_groups.connectors.structured.sandbox import SqliteSandbox

ROWS = 100_000
SHORT, LONG = 200, 2_000
REPEATS = 20


def table() -> TableSpec:
    rows = [{"name": f"person{number}", "city": f"town{number}", "salary": number} for number in range(ROWS)]
    columns = ["name", "city", {"name": "salary", "type": "integer"}]
    return TableSpec.read(OptionReader({"table_name": "people", "columns": columns, "rows": rows}))


def repeated(head: str, part: Callable[[int], str], length: int) -> str:
    text, number = head, 0
    while len(text) + len(part(number)) <= length:
        text += part(number)
        number += 1
    return text


SHAPES: dict[str, Callable[[int], str]] = {
    "value list": lambda length: repeated("list people in town0", lambda n: f", town{n + 1}", length),
    "filters": lambda length: repeated("people with salary over 1", lambda n: f" and salary below {n + 9}", length),
    "unstored words": lambda length: repeated("list people where name is", lambda n: f" w{n}", length),
    "refused": lambda length: repeated("list people", lambda n: f" zz{n}", length),
}


def plan_seconds(lexicon: Lexicon, text: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.process_time()
        with contextlib.suppress(NotUnderstood, ConnectorError):
            Parser(Question(text, lexicon, PlanningDeadline(60.0)), AggregateSql.CONSTRUCTS).parse()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    table_spec = table()
    started = time.process_time()
    lexicon = Lexicon.of(table_spec)
    print(f"lexicon of {ROWS} rows ({len(lexicon.values)} distinct text values): {time.process_time() - started:.2f} s")
    for name, shape in SHAPES.items():
        short, long = plan_seconds(lexicon, shape(SHORT)), plan_seconds(lexicon, shape(LONG))
        print(
            f"{name:>15}: {SHORT} chars {short * 1000:7.2f} ms, {LONG} chars {long * 1000:7.2f} ms, x{long / short:.1f}"
        )
    whole_ask(table_spec)


def whole_ask(table_spec: TableSpec) -> None:
    """The case issue 9 reported at 66 s: a 2,000-character question over 100k distinct values, end to end."""
    question = SHAPES["value list"](LONG)
    with SqliteSandbox(table_spec, time_limit=60.0, max_rows=1_000_000) as sandbox:
        started = time.perf_counter()
        rows = AggregateSql.ask(sandbox, question)["rows"]
        print(f"whole ask, {len(question)} chars, {len(rows)} rows: {time.perf_counter() - started:.2f} s wall")


if __name__ == "__main__":
    main()
