"""The constructs a question may use, in one table: what a refusal calls each, what it understands, who has it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class Construct:
    """One kind of question: its name, how a refusal names it, what it understands, and the backends enabling it."""

    name: str
    noun: str
    understands: str
    backends: tuple[str, ...]


ALL = ("rule_based", "aggregate")
AGGREGATE = ("aggregate",)
CONSTRUCTS: tuple[Construct, ...] = (
    Construct(
        "aggregate",
        "an aggregate",
        "aggregate: '[what is the] average|minimum|maximum|total <column> [of <rows>] [filters] "
        "[per|by|in each|for every <column>]'",
        AGGREGATE,
    ),
    Construct("median", "a median", "median: 'median <column> [filters]'", AGGREGATE),
    Construct(
        "group",
        "grouping",
        "grouped count: 'how many <rows> [filters] per|by|in each|for every <column>'",
        AGGREGATE,
    ),
    Construct(
        "distinct_count",
        "a distinct count",
        "distinct count: 'how many [different] <column plural>' ('how many cities')",
        AGGREGATE,
    ),
    Construct(
        "superlative",
        "the rows with the highest or lowest value",
        "superlative: 'who earns the most', 'who has the highest <column>', 'the oldest|cheapest|latest <row>' "
        "(every tied row)",
        AGGREGATE,
    ),
    Construct("count", "a count", "count: 'how many <rows> [are there] [filters]'", ALL),
    Construct(
        "list",
        "a listing",
        "list: '[list|show|which|who] [<columns> of] <rows> [filters] [ordered by|by <column> [descending]]', "
        "or a bare '<rows> <filters>'; 'which|list <column plural>' gives distinct values",
        ALL,
    ),
    Construct("lookup", "a lookup", "lookup: '[what is] the <column> of <value>', \"<value>'s <column>\"", ALL),
    Construct(
        "top",
        "the top N rows",
        "top: '[list] top N <rows> by <column> [filters]', 'bottom N ... by <column>', 'the N cheapest <rows>'",
        ALL,
    ),
    Construct("order", "an ordering", "", ALL),
)
FILTERS = (
    "filters: '<column> is [not] <value>[, <value> or <value>]', '[not] in <value>[ or <value>]', "
    "'<column> over|above|at least|below|under|at most|between <number or date>', '<column> after|before|in <date, "
    "year or month>', '<column> starts with|ends with|contains <text>', '<column> is [not] null', "
    "'with|without <column>', 'earning|costing|hired <comparison>', joined by 'and'/'or'"
)
"""Filters are part of every construct, so every backend's description ends with them."""
NOUNS = {construct.name: construct.noun for construct in CONSTRUCTS}


def constructs_of(backend: str) -> frozenset[str]:
    """The constructs a parsing backend enables."""
    return frozenset(construct.name for construct in CONSTRUCTS if backend in construct.backends)


def understood(constructs: Collection[str]) -> tuple[str, ...]:
    """What a backend with these constructs understands, quoted when it refuses a question."""
    described = tuple(c.understands for c in CONSTRUCTS if c.name in constructs and c.understands)
    return (*described, FILTERS)
