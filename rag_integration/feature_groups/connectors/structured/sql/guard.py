"""The SQL guard: one plain SELECT over one table, whitelisted identifiers and functions, values bound.

It works on sqlglot's parse tree with an allow-list of node types, so anything it does not know (a CTE, a
subquery, a join, PRAGMA, ATTACH, an unknown function such as ``load_extension``) is refused by default, and it
returns the SQL regenerated from that tree, so what runs is exactly what was checked.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.errors import SqlglotError

from rag_integration.core.errors import SqlSafetyError, short_repr
from rag_integration.feature_groups.connectors.structured.sql.columns import (
    IDENTIFIER,
    LABEL,
    read_columns,
    read_identifier,
)

MAX_SQL_LENGTH = 20_000
MAX_NESTING = 16
"""Deepest nesting (parentheses, CASE, runs of NOT or signs) the guard parses; sqlglot's parser and generator
recurse once per level, so deeper SQL is refused from the token stream before it can exhaust Python's stack."""
OPENERS = frozenset({TokenType.L_PAREN, TokenType.CASE})
CLOSERS = frozenset({TokenType.R_PAREN, TokenType.END})
PREFIX_OPERATORS = frozenset({TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE})

ALLOWED_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.Count: "count",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Sum: "sum",
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.Abs: "abs",
    exp.Round: "round",
    exp.Length: "length",
    exp.Coalesce: "coalesce",
    exp.Like: "like",
}
"""sqlglot node -> the SQLite function it becomes; the sandbox's authorizer allows exactly these names."""

ALLOWED_NODES: frozenset[type[exp.Expr]] = frozenset(
    {
        exp.Select,
        exp.From,
        exp.Table,
        exp.Identifier,
        exp.Column,
        exp.Star,
        exp.Alias,
        exp.Distinct,
        exp.Where,
        exp.And,
        exp.Or,
        exp.Not,
        exp.Paren,
        exp.EQ,
        exp.NEQ,
        exp.GT,
        exp.GTE,
        exp.LT,
        exp.LTE,
        exp.Between,
        exp.In,
        exp.Is,
        exp.Null,
        exp.Placeholder,
        exp.Literal,
        exp.Group,
        exp.Order,
        exp.Ordered,
        exp.Limit,
        exp.Offset,
        exp.Escape,
        *ALLOWED_FUNCTIONS,
    }
)


def guard_sql(sql: str, table_name: str, columns: Any) -> str:
    """The SQL regenerated (SQLite dialect) from its parse tree, or ``SqlSafetyError`` if it is not safe to run.

    ``columns`` takes the same forms as the ``columns`` option: names or ``{"name", "type"}`` dicts.
    """
    table = read_identifier("table_name", table_name).lower()
    allowed_columns = {column.name.lower() for column, _ in read_columns(columns)}
    if not isinstance(sql, str):
        raise SqlSafetyError(f"guard refused {short_repr(sql)}: expected the SQL as a str")
    statement = _single_select(sql)
    if len(list(statement.find_all(exp.Table))) != 1:
        raise SqlSafetyError(f"guard refused SQL {short_repr(sql)}: expected FROM {table_name} and no other table")
    for node in statement.walk():
        reason = _refusal(node, table, allowed_columns)
        if reason:
            raise SqlSafetyError(f"guard refused SQL {short_repr(sql)}: {reason}")
    regenerated = _regenerate(statement, sql)
    if _regenerate(_single_select(regenerated), sql) != regenerated:
        raise SqlSafetyError(f"guard refused SQL {short_repr(sql)}: it does not survive a parse round trip")
    return regenerated


def _single_select(sql: str) -> exp.Select:
    refused = f"guard refused SQL {short_repr(sql)}"
    if len(sql) > MAX_SQL_LENGTH:
        raise SqlSafetyError(f"{refused}: longer than {MAX_SQL_LENGTH} characters")
    try:
        tokens = sqlglot.tokenize(sql, read="sqlite")
    except SqlglotError as error:
        raise SqlSafetyError(f"{refused}: sqlglot cannot read it ({str(error)[:120]})") from error
    if any(token.comments for token in tokens):
        raise SqlSafetyError(f"{refused}: comments are not allowed")
    if _nesting(tokens) > MAX_NESTING:
        raise SqlSafetyError(f"{refused}: nested deeper than {MAX_NESTING} levels")
    try:
        statements = [statement for statement in sqlglot.parse(sql, read="sqlite") if statement is not None]
    except SqlglotError as error:
        raise SqlSafetyError(f"{refused}: sqlglot cannot parse it ({str(error)[:120]})") from error
    except RecursionError:
        raise SqlSafetyError(f"{refused}: nested too deeply for the parser") from None
    if len(statements) != 1:
        raise SqlSafetyError(f"{refused}: expected exactly one statement, found {len(statements)}")
    statement = statements[0]
    if not isinstance(statement, exp.Select):
        raise SqlSafetyError(f"{refused}: expected a SELECT, found {type(statement).__name__.upper()}")
    return statement


def _nesting(tokens: list[Token]) -> int:
    """How deep the SQL nests: open parentheses and CASEs, plus the run of prefix operators (NOT NOT ...) at hand."""
    depth = deepest = run = 0
    for token in tokens:
        depth += (token.token_type in OPENERS) - (token.token_type in CLOSERS)
        run = run + 1 if token.token_type in PREFIX_OPERATORS else 0
        deepest = max(deepest, depth + run)
    return deepest


def _regenerate(statement: exp.Select, sql: str) -> str:
    try:
        return statement.sql(dialect="sqlite", identify=True)
    except RecursionError:
        raise SqlSafetyError(f"guard refused SQL {short_repr(sql)}: nested too deeply to regenerate") from None


def _refusal(node: exp.Expr, table: str, columns: set[str]) -> str | None:
    """Why ``node`` may not run, or None when it is on the allow-list and names only this table's columns."""
    kind = type(node)
    if kind not in ALLOWED_NODES:
        name = node.name if isinstance(node, exp.Anonymous) else kind.__name__
        return f"{short_repr(name)} is not allowed (only one plain SELECT over the table, with harmless functions)"
    if node.comments:
        return "comments are not allowed"
    if isinstance(node, exp.Select) and (node.parent is not None or node.args.get("kind") or node.args.get("into")):
        return "only one top-level SELECT is allowed (no subqueries)"
    if isinstance(node, exp.Table) and (
        node.name.lower() != table or node.args.get("db") or node.args.get("catalog") or node.alias
    ):
        return f"only the table '{table}' may be read, not {short_repr(node.sql(dialect='sqlite'))}"
    if isinstance(node, exp.Column):
        if node.args.get("db") or node.args.get("catalog") or (node.table and node.table.lower() != table):
            return f"column {short_repr(node.sql(dialect='sqlite'))} must belong to '{table}'"
        if not isinstance(node.this, exp.Star) and node.name.lower() not in columns:
            return f"unknown column {short_repr(node.name)}: expected one of {sorted(columns)}"
    if isinstance(node, exp.Identifier) and not _identifier_allowed(node, table, columns):
        return f"identifier {short_repr(node.name)} is not the table, one of its columns or a plain alias"
    if isinstance(node, exp.Placeholder) and (node.this or node.args):
        return "only positional '?' parameters are allowed"
    if isinstance(node, exp.Literal) and not (node.is_int and isinstance(node.parent, (exp.Limit, exp.Offset))):
        return f"literal {short_repr(node.sql(dialect='sqlite'))}: values must be bound parameters ('?')"
    if isinstance(node, exp.Star) and not isinstance(node.parent, (exp.Select, exp.Count, exp.Column)):
        return "'*' is only allowed as the projection or in COUNT(*)"
    return None


def _identifier_allowed(node: exp.Identifier, table: str, columns: set[str]) -> bool:
    if isinstance(node.parent, exp.Alias):
        return node.parent.args.get("alias") is node and LABEL.fullmatch(node.name) is not None
    if not IDENTIFIER.fullmatch(node.name):
        return False
    name = node.name.lower()
    return (isinstance(node.parent, exp.Table) and name == table) or (
        isinstance(node.parent, exp.Column) and name in columns | {table}
    )
