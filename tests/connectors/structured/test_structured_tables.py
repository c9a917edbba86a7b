"""The structured front end's tables: phrase tables index themselves once, constructs are declared once."""

from __future__ import annotations

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
