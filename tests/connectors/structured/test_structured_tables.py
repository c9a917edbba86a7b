"""The structured front end's tables: phrase tables index themselves once, constructs are declared once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rag_integration.feature_groups.connectors.structured import AggregateSql, RuleBasedSql
from rag_integration.feature_groups.connectors.structured.question import parser
from rag_integration.feature_groups.connectors.structured.question.constructs import CONSTRUCTS, NOUNS, constructs_of
from rag_integration.feature_groups.connectors.structured.question.phrases import COMPARISONS, Phrases


def test_a_phrase_table_indexes_each_phrase_by_its_first_word_longest_first() -> None:
    table = Phrases("is", "is not", ("is equal to", "at least"), "at")
    assert tuple(table) == ("is", "is not", "is equal to", "at least", "at")
    assert [phrase for phrase, _ in table.by_first_word["is"]] == ["is equal to", "is not", "is"]
    assert [phrase for phrase, _ in table.by_first_word["at"]] == ["at least", "at"]
    for phrase in COMPARISONS:
        assert (phrase, tuple(phrase.split())) in COMPARISONS.by_first_word[phrase.split()[0]]


def test_backends_take_their_constructs_from_the_one_table() -> None:
    assert RuleBasedSql.CONSTRUCTS == constructs_of("rule_based") == {"count", "list", "lookup", "order", "top"}
    assert {construct.name for construct in CONSTRUCTS} == AggregateSql.CONSTRUCTS
    assert RuleBasedSql.UNDERSTANDS[-1].startswith("filters:")


def test_every_construct_the_grammar_requires_is_in_the_table() -> None:
    source = Path(parser.__file__).read_text(encoding="utf-8")
    required = set(re.findall(r'_require\("(\w+)"', source))
    assert required and required <= set(NOUNS)


def test_the_sql_back_end_never_imports_the_question_front_end() -> None:
    """``sql/`` turns a plan into checked SQL; the plan is the only thing the two halves share."""
    family = Path(parser.__file__).resolve().parents[1]
    for path in sorted((family / "sql").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        modules += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        assert not [module for module in modules if ".structured.question" in module], path.name


def test_the_grammar_matches_only_phrase_tables_built_once() -> None:
    """Every ``_match``/``_ahead`` in the grammar is handed a table from ``phrases`` (or a group of one), never
    literal words that would be indexed again on each call."""
    source = Path(parser.__file__).read_text(encoding="utf-8")
    calls = re.findall(r"self\._(?:match|ahead)\(([^)]*)\)", source)
    assert calls
    assert all(call.startswith("phrases.") or call == "group" for call in calls), calls
