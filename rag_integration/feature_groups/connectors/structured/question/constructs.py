"""The constructs the parser knows, in one table: what each is called in a refusal, the question shapes it
understands, and which backends enable it. ``Parser.NAMES``, the descriptions and each backend's ``CONSTRUCTS``
and ``UNDERSTANDS`` derive from it, so a construct is named once."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

RULE_BASED = "rule_based"
AGGREGATE = "aggregate"


@dataclass(frozen=True)
class Construct:
    """One construct: ``asks_for`` ends "... asks for <it>, which this backend does not compute"; ``shapes`` is
    quoted in a refusal (``None`` when another construct's shapes already show it); ``backends`` enable it."""

    name: str
    asks_for: str
    shapes: str | None
    backends: frozenset[str]


BOTH = frozenset({RULE_BASED, AGGREGATE})
AGGREGATE_ONLY = frozenset({AGGREGATE})

CONSTRUCTS: tuple[Construct, ...] = (
    Construct(
        "aggregate",
        "an aggregate",
        "aggregate: '[what is the] average|minimum|maximum|total <column> [of <rows>] [filters] "
        "[per|by|in each|for every <column>]'",
        AGGREGATE_ONLY,
    ),
    Construct("median", "a median", "median: 'median <column> [filters]'", AGGREGATE_ONLY),
    Construct(
        "group",
        "grouping",
        "grouped count: 'how many <rows> [filters] per|by|in each|for every <column>'",
        AGGREGATE_ONLY,
    ),
    Construct(
        "distinct_count",
        "a distinct count",
        "distinct count: 'how many [different] <column plural>' ('how many cities')",
        AGGREGATE_ONLY,
    ),
    Construct(
        "superlative",
        "the rows with the highest or lowest value",
        "superlative: 'who earns the most', 'who has the highest <column>', 'the oldest|cheapest|latest "
        "<row>' (every tied row)",
        AGGREGATE_ONLY,
    ),
    Construct("count", "a count", "count: 'how many <rows> [are there] [filters]'", BOTH),
    Construct(
        "list",
        "a listing",
        "list: '[list|show|which|who] [<columns> of] <rows> [filters] [ordered by|by <column> [descending]]', "
        "or a bare '<rows> <filters>'; 'which|list <column plural>' gives distinct values",
        BOTH,
    ),
    Construct("lookup", "a lookup", "lookup: '[what is] the <column> of <value>', \"<value>'s <column>\"", BOTH),
    Construct(
        "top",
        "the top N rows",
        "top: '[list] top N <rows> by <column> [filters]', 'bottom N ... by <column>', 'the N cheapest <rows>'",
        BOTH,
    ),
    Construct("order", "an ordering", None, BOTH),
)
"""Every construct, in the order a refusal lists what a backend understands."""

FILTERS = (
    "filters: '<column> is [not] <value>[, <value> or <value>]', '[not] in <value>[ or <value>]', "
    "'<column> over|above|at least|below|under|at most|between <number or date>', '<column> after|before|in <date, "
    "year or month>', '<column> starts with|ends with|contains <text>', '<column> is [not] null', "
    "'with|without <column>', 'earning|costing|hired <comparison>', joined by 'and'/'or'"
)
"""What filters understand; every backend has them, so they are no construct to enable."""

NAMES: Mapping[str, str] = {construct.name: construct.asks_for for construct in CONSTRUCTS}
DESCRIPTIONS: Mapping[str, str] = {
    **{construct.name: construct.shapes for construct in CONSTRUCTS if construct.shapes is not None},
    "filters": FILTERS,
}
"""What each construct understands, quoted in a refusal; filters are always on."""


def constructs_of(backend: str) -> frozenset[str]:
    """The names of the constructs ``backend`` enables."""
    return frozenset(construct.name for construct in CONSTRUCTS if backend in construct.backends)


def understood_by(constructs: Collection[str]) -> tuple[str, ...]:
    """The shapes a backend enabling ``constructs`` understands, filters last: its ``UNDERSTANDS``."""
    return tuple(text for name, text in DESCRIPTIONS.items() if name in constructs or name == "filters")
