"""A language model writes the SQL; the family's guard and locked sandbox decide whether it runs.

The model sees the table's name, its typed columns and a few sample values, and is asked for a JSON object
``{"sql": ..., "params": [...]}`` (values bound to ``?``) or ``{"unanswerable": reason}``. Models often send plain
SQL, a fenced block or a sentence and one fenced block instead, so those shapes are read too (``read_reply``); two
statements or two blocks are refused rather than guessed between. The SQL goes through ``guard_sql`` like every
backend's; a refusal is told to the model once, and a second refusal raises
``SqlSafetyError`` with the reason. Nothing the guard refused ever reaches SQLite.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.contract.per_query import ErrorPolicy
from rag_integration.core.errors import InvalidOptionError, SqlSafetyError, short_repr
from rag_integration.core.options import OptionReader
from rag_integration.core.remote.llm_client import OPTIONS as LLM_OPTIONS
from rag_integration.core.remote.llm_client import SECRET_OPTIONS as LLM_SECRET_OPTIONS
from rag_integration.core.remote.llm_client import LlmSettings, Message, chat
from rag_integration.feature_groups.connectors.structured.base import BaseStructuredConnector, guard_sql
from rag_integration.feature_groups.connectors.structured.sql.columns import INT64, is_utf8
from rag_integration.feature_groups.connectors.structured.sql.table import TableSpec

if TYPE_CHECKING:
    from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox

SAMPLE_VALUES = 3
SAMPLE_CHARACTERS = 40
_FENCED_BLOCK = re.compile(r"```(?:[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n)?(.*?)```", re.DOTALL)
"""A Markdown code fence: its label (``sql``, ``json``, none, ...) when a line break follows it, and its body (a
one-line fence such as ```` ```SELECT 1``` ```` has no label)."""
FENCE_LABELS = frozenset({"", "sql", "sqlite", "json"})
"""Fence labels whose block is read; a block labelled as anything else (``python``) is not SQL."""
SYSTEM_PROMPT = (
    "You translate a question about one SQLite table into one SELECT statement over that table. Reply with a JSON "
    'object only: {"sql": "<one SELECT>", "params": [<values>]}. Write every value as a ? placeholder and list the '
    "values in params in order; the only literals allowed are LIMIT and OFFSET numbers. Use only the table and its "
    "columns, and the functions count, avg, min, max, sum, lower, upper, abs, round, length, coalesce; no comments, "
    'subqueries, joins, unions or CTEs. If the table cannot answer the question, reply {"unanswerable": "<why>"}.'
)


class LlmSql(BaseStructuredConnector):
    """``structured_backend="llm"``: an OpenAI-compatible chat model writes the SQL, with at most one retry after a
    refusal (the model is told why); refused SQL raises ``SqlSafetyError`` and runs nothing."""

    BACKEND: ClassVar[str | None] = "llm"
    EXTRA: ClassVar[str | None] = "llm"
    SECRET_OPTIONS: ClassVar[Mapping[str, str]] = LLM_SECRET_OPTIONS
    OPTIONS: ClassVar[tuple[str, ...]] = LLM_OPTIONS
    UNDERSTANDS: ClassVar[tuple[str, ...]] = ("any question one guarded SELECT over the table answers",)

    @classmethod
    def answer_questions(
        cls, sandbox: SqliteSandbox, questions: list[str], reader: OptionReader
    ) -> list[dict[str, Any]]:
        settings = LlmSettings.read(reader)
        description = describe_table(sandbox.table)
        return ErrorPolicy.read(reader).answer_each(
            questions,
            lambda question: cls.ask_model(sandbox, question, settings, description),
            cls.failed_row,
            "question",
        )

    @classmethod
    def ask_model(
        cls, sandbox: SqliteSandbox, question: str, settings: LlmSettings, description: str
    ) -> dict[str, Any]:
        """Ask, guard (retrying once with the refusal reason), then run only the guard's regenerated SQL;
        ``description`` is the table as ``describe_table`` tells it, computed once per request."""
        if not is_utf8(question):
            raise InvalidOptionError("question", question, "a question in valid UTF-8 text")
        table = sandbox.table
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{description}\n\nQuestion: {question}"},
        ]
        for attempt in (1, 2):
            reply = chat(settings, messages)
            try:
                sql, params = read_reply(reply, question)
                guarded = guard_sql(sql, table.name, [column.name for column in table.columns])
                if guarded.count("?") != len(params):
                    raise SqlSafetyError(
                        f"SQL {short_repr(sql)} has {guarded.count('?')} placeholder(s) for {len(params)} params"
                    )
            except SqlSafetyError as refusal:
                if attempt == 2:
                    raise SqlSafetyError(f"{cls.__name__} asked twice; {refusal}; nothing ran") from None
                messages += [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": f"That was refused: {refusal}. Reply again with the JSON object."},
                ]
                continue
            labels, rows = cls.run_sql(sandbox, guarded, params)
            sources = _label_sources(guarded, table)
            restored = [
                {label: table.restore(sources.get(label), value) for label, value in zip(labels, row)} for row in rows
            ]
            return {"sql": guarded, "params": params, "rows": restored}
        raise AssertionError("unreachable: the second attempt returns or raises")


def describe_table(table: TableSpec) -> str:
    """The table as the model sees it: name, typed columns and up to ``SAMPLE_VALUES`` distinct values of each (a
    column's walk over the rows stops once it has them)."""
    lines = [f"Table: {table.name}", "Columns:"]
    for position, column in enumerate(table.columns):
        values: dict[Any, None] = {}
        for row in table.rows:
            if row[position] is not None:
                values[row[position]] = None
                if len(values) == SAMPLE_VALUES:
                    break
        shown = ", ".join(_sample(value) for value in values)
        lines.append(f"- {column.name} ({column.type})" + (f", e.g. {shown}" if shown else ""))
    return "\n".join(lines)


def _sample(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value[:SAMPLE_CHARACTERS], ensure_ascii=False)
    return repr(value)


def read_reply(reply: str, question: str) -> tuple[str, list[Any]]:
    """The SQL and parameters of the model's reply, in any shape models send: a JSON object, plain SQL, one fenced
    block (```` ```sql ````, ```` ```json ```` or unlabelled) alone or after or around prose. Two fenced blocks, an
    unclosed fence or a block of another language is a refusal (``SqlSafetyError``); so are two statements, which
    the guard refuses. An ``unanswerable`` reply is an ``InvalidOptionError`` on ``question``."""
    text = _fenced_body(reply)
    if text.startswith("{"):
        return _read_json(text, reply, question)
    if not text:
        raise SqlSafetyError(f"the model's reply {short_repr(reply)} holds no SQL")
    return bind_literals(text)


def _fenced_body(reply: str) -> str:
    """The body of the reply's one fenced block, or the whole reply when it has none."""
    blocks = _FENCED_BLOCK.findall(reply)
    if len(blocks) > 1:
        raise SqlSafetyError(
            f"the model's reply {short_repr(reply)} holds {len(blocks)} fenced blocks; expected one SQL statement"
        )
    if not blocks:
        if "```" in reply:
            raise SqlSafetyError(f"the model's reply {short_repr(reply)} opens a fence it never closes")
        return reply.strip()
    label, body = blocks[0]
    if label.lower() not in FENCE_LABELS:
        raise SqlSafetyError(f"the model's reply {short_repr(reply)} holds a {label!r} block, not SQL or JSON")
    if "```" in _FENCED_BLOCK.sub("", reply):
        raise SqlSafetyError(f"the model's reply {short_repr(reply)} opens a fence it never closes")
    return str(body).strip()


def _read_json(text: str, reply: str, question: str) -> tuple[str, list[Any]]:
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        raise SqlSafetyError(f"the model's reply {short_repr(reply)} is not a JSON object") from None
    if isinstance(payload, dict) and isinstance(payload.get("unanswerable"), str):
        raise InvalidOptionError(
            "question",
            question,
            f"a question LlmSql understands, i.e. {LlmSql.UNDERSTANDS[0]} "
            f"(the model found it unanswerable: {short_repr(payload['unanswerable'])})",
        )
    sql = payload.get("sql") if isinstance(payload, dict) else None
    params = payload.get("params", []) if isinstance(payload, dict) else None
    if not isinstance(sql, str) or not isinstance(params, list):
        raise SqlSafetyError(f'the model\'s reply {short_repr(reply)} is not {{"sql": str, "params": list}}')
    bad = [value for value in params if not _bindable(value)]
    if bad:
        raise SqlSafetyError(f"parameter {short_repr(bad[0])} is not a str, int, float or null")
    return sql, params


def bind_literals(sql: str) -> tuple[str, list[Any]]:
    """Plain SQL with its string and number literals turned into ``?`` parameters, in the order written.

    A model writing SQL without JSON has nowhere to put ``params``, so it writes ``city = 'Berlin'``; binding the
    value it wrote is what it meant, and the guard (which refuses literals) then checks the SQL as usual. LIMIT and
    OFFSET counts stay literal. SQL that already has ``?`` placeholders gets no parameters for them and is refused
    by the placeholder count.
    """
    from sqlglot import TokenType, tokenize
    from sqlglot.errors import SqlglotError

    try:
        tokens = tokenize(sql, read="sqlite")
    except SqlglotError as error:
        raise SqlSafetyError(f"the model's reply {short_repr(sql)} is not SQL ({str(error)[:120]})") from error
    pieces: list[str] = []
    params: list[Any] = []
    written = 0
    previous = None
    for token in tokens:
        if token.token_type == TokenType.STRING or (
            token.token_type == TokenType.NUMBER and previous not in (TokenType.LIMIT, TokenType.OFFSET)
        ):
            pieces += [sql[written : token.start], "?"]
            written = token.end + 1
            params.append(token.text if token.token_type == TokenType.STRING else _number(token.text))
        previous = token.token_type
    pieces.append(sql[written:])
    bad = [value for value in params if not _bindable(value)]
    if bad:
        raise SqlSafetyError(f"literal {short_repr(bad[0])} is not a str, 64-bit int or finite float")
    return "".join(pieces), params


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise SqlSafetyError(f"number literal {short_repr(text)} is not a decimal int or float") from None


def _bindable(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return INT64[0] <= value <= INT64[1]
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and is_utf8(value)


def _label_sources(guarded: str, table: TableSpec) -> dict[str, str]:
    """Output label -> the column whose values it carries unchanged (a column, or its min/max), for restoring dates."""
    from sqlglot import exp, parse_one

    statement = parse_one(guarded, read="sqlite")
    sources: dict[str, str] = {}
    for projection in statement.expressions:
        if isinstance(projection, exp.Star):
            sources.update({column.name: column.name for column in table.columns})
            continue
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(inner, (exp.Min, exp.Max)) and isinstance(projection, exp.Alias):
            inner = inner.this
        column = table.column(inner.name) if isinstance(inner, exp.Column) else None
        if column is not None:
            sources[projection.alias_or_name] = column.name
    return sources
