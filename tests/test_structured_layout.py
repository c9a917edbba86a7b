"""The structured family's pieces: phrase tables match longest-first from an index built once, one construct table
gives every backend's constructs and refusal text, and the SQL back end never imports the question front end."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NoReturn

import pytest

from rag_integration.feature_groups.connectors.structured import AggregateSql, Parser, RuleBasedSql
from rag_integration.feature_groups.connectors.structured.question import constructs
from rag_integration.feature_groups.connectors.structured.question.phrases import PhraseGroups, PhraseMap, Phrases
from rag_integration.feature_groups.connectors.structured.question.tokens import Token, tokenize

FAMILY = Path(__file__).resolve().parents[1] / "rag_integration" / "feature_groups" / "connectors" / "structured"


def tokens(text: str) -> list[Token]:
    def fail(reason: str) -> NoReturn:
        raise AssertionError(reason)

    return tokenize(text, fail)


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("greater than or equal to 5", 0, ("greater than or equal to", 5)),
        ("greater than 5", 0, ("greater than", 2)),
        ("salary Greater Than 5", 1, ("greater than", 3)),
        ("greater", 0, None),
        ("salary over 5", 0, None),
        ("over", 1, None),
    ],
)
def test_phrases_match_the_longest_phrase_at_a_position(
    text: str, start: int, expected: tuple[str, int] | None
) -> None:
    table = Phrases("greater than", "greater than or equal to", "over")
    assert table.match(tokens(text), start) == expected


def test_phrases_join_in_order_and_test_membership_by_phrase() -> None:
    joined = Phrases("a b", "c") + Phrases("d")
    assert joined.phrases == ("a b", "c", "d")
    assert "a b" in joined and "a" not in joined
    assert list(joined) == ["a b", "c", "d"]


def test_phrase_map_and_groups_give_each_phrase_its_meaning() -> None:
    verbs = PhraseMap({"earns": "salary", "is paid": "salary", "costs": "price"})
    assert verbs.match(tokens("is paid more"), 0) == ("is paid", 2)
    assert verbs["costs"] == "price"
    groups = PhraseGroups({">=": ("at least",), ">": ("over", "at least")})
    assert groups.phrases.phrases == ("at least", "over", "at least")
    assert groups.label("at least") == ">="  # the first group holding a phrase names it
    assert groups.label("over") == ">"
    assert list(groups.groups) == [">=", ">"]


def test_one_construct_table_gives_names_descriptions_and_backend_constructs() -> None:
    names = [construct.name for construct in constructs.CONSTRUCTS]
    assert len(names) == len(set(names))
    assert dict(Parser.NAMES) == {construct.name: construct.asks_for for construct in constructs.CONSTRUCTS}
    assert {"count", "list", "lookup", "order", "top"} == RuleBasedSql.CONSTRUCTS
    assert set(names) == AggregateSql.CONSTRUCTS
    for backend in (RuleBasedSql, AggregateSql):
        assert constructs.constructs_of(str(backend.BACKEND)) == backend.CONSTRUCTS
        assert backend.UNDERSTANDS[-1] == constructs.FILTERS
        shown = [text.split(":")[0] for text in backend.UNDERSTANDS]
        assert len(shown) == len(set(shown))
    assert "median" not in " ".join(RuleBasedSql.UNDERSTANDS)
    assert any(text.startswith("median:") for text in AggregateSql.UNDERSTANDS)


def test_every_construct_the_grammar_requires_is_in_the_table() -> None:
    source = (FAMILY / "question" / "parser.py").read_text(encoding="utf-8")
    calls = [
        line.split("self._require(", 1)[1].split(",")[0] for line in source.splitlines() if "self._require(" in line
    ]
    required = {word for call in calls for word in re.findall(r'"(\w+)"', call)}
    assert required, "the grammar names the constructs it requires"
    assert required <= set(Parser.NAMES)


def test_the_sql_back_end_does_not_import_the_question_front_end() -> None:
    for path in sorted((FAMILY / "sql").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [module for module in imported if ".structured.question" in module], path.name
        assert not [module for module in imported if module.endswith(".structured") or "_sql" in module], path.name
