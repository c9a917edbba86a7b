"""The question's word tables, and the phrase tables the parser matches them with.

Each table a parser matches against is a ``Phrases``: the phrases, and an index from a phrase's first word to the
phrases that start with it (``by_first_word``, longest first), built once when the table is made, so a match costs a dict lookup and
a check of the few phrases starting with the next word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class Phrases(tuple[str, ...]):
    """Phrases of one or more lowercase words, indexed by their first word."""

    by_first_word: dict[str, list[tuple[str, tuple[str, ...]]]]

    def __new__(cls, *parts: str | Iterable[str]) -> Phrases:
        phrases: list[str] = []
        for part in parts:
            phrases.extend([part] if isinstance(part, str) else part)
        return super().__new__(cls, phrases)

    def __init__(self, *parts: str | Iterable[str]) -> None:
        self.by_first_word = {}
        for phrase in self:
            words = tuple(phrase.split())
            self.by_first_word.setdefault(words[0], []).append((phrase, words))
        for entries in self.by_first_word.values():
            entries.sort(key=lambda entry: -len(entry[1]))


# Words that name a kind of column, shared by the superlative, comparative and verb tables below.
PAY = ("salary", "salaries", "pay", "wage", "wages", "income", "earnings", "compensation")
PRICE = ("price", "prices", "cost", "costs", "fee", "fees")
RATING = ("rating", "ratings", "score", "scores", "stars", "grade")
BIRTH = ("birth", "born", "dob", "birthday", "birthdate")
WHEN = ("date", "day", "when", "time", "start", "created", "added", "released", "published", "held", "on")
SIZE = ("size", "capacity", "attendees", "attendance", "population", "area", "quantity", "stock", "visitors", "guests")
LEADS = Phrases(
    "please", "can you", "could you", "would you", "can you tell me", "could you tell me", "tell me",
    "i want to know", "i'd like to know", "i would like to know", "do you know", "i need", "i want",
)  # fmt: skip
COUNT_WORDS = Phrases(
    "how many", "count", "count the", "count all", "number of", "the number of", "what is the number of",
    "what's the number of", "total number of", "the total number of", "what is the total number of",
)  # fmt: skip
AGGREGATE_LEADS = Phrases(
    "what is", "what's", "what was", "what are", "show", "show me", "give me", "compute", "calculate", "find",
    "get", "list", "tell me", "how much is", "return",
)  # fmt: skip
AGGREGATES: Mapping[str, tuple[str, ...]] = {
    "avg": ("average", "avg", "mean"),
    "min": ("minimum", "min", "lowest", "smallest", "earliest"),
    "max": ("maximum", "max", "highest", "largest", "biggest", "latest"),
    "sum": ("total", "sum", "sum of", "total of"),
    "median": ("median",),
}
LIST_WORDS = Phrases(
    "list", "list all", "show", "show me", "show all", "find", "find all", "get", "give me", "display", "return",
    "what are", "which are", "which", "who", "what is", "what's", "what", "fetch",
)  # fmt: skip
EXISTENTIAL = Phrases(
    "are there", "are there any", "is there", "is there any", "is there a", "is there an", "do we have",
    "do we have any", "does anyone", "do any", "does any", "any",
)  # fmt: skip
FILLER = Phrases(
    "are there", "is there", "do we have", "do i have", "does the table have", "exist", "exists", "in total",
    "overall", "altogether", "in the table", "in the data", "please", "there are", "there", "currently",
    "do we have in total", "are there in total", "are listed", "are recorded",
)  # fmt: skip
DISTINCT_WORDS = Phrases("distinct", "different", "unique", "separate")
GROUP_WORDS = Phrases(
    "per", "by", "for each", "for every", "in each", "in every", "grouped by", "group by", "broken down by",
    "split by", "each",
)  # fmt: skip
ORDER_WORDS = Phrases(
    "ordered by", "sorted by", "order by", "sort by", "sorted on", "ordered on", "by",
)  # fmt: skip
DESCENDING = Phrases(
    "descending", "desc", "in descending order", "highest first", "largest first", "latest first",
)  # fmt: skip
ASCENDING = Phrases(
    "ascending", "asc", "in ascending order", "lowest first", "smallest first", "earliest first",
)  # fmt: skip
CONDITION_LEADS: frozenset[str] = frozenset(
    ["with", "where", "whose", "who", "that", "which", "having", "is", "are", "was", "were", "the", "a", "an",
     "work", "works", "working", "live", "lives", "living", "based", "located", "have", "has", "do", "does",
     "did", "who's"]
)  # fmt: skip
"""Words that may introduce a filter ("who work in Berlin"); a column of the same name wins when compared."""
PRESENCE_LEADS: frozenset[str] = frozenset(["with", "have", "has", "having"])
NEGATIONS = Phrases(
    "not", "is not", "isn't", "are not", "aren't", "was not", "wasn't", "does not", "doesn't", "do not",
    "don't", "did not", "didn't", "never", "is not equal to", "does not equal", "not equal to", "!=", "<>",
)  # fmt: skip
EXCLUSIONS = Phrases(
    "except", "except for", "excluding", "other than", "outside", "outside of", "apart from", "but not",
)  # fmt: skip
ABSENCE = Phrases(
    "without", "without a", "without an", "without any", "with no", "no", "lacking", "lacking a", "missing",
    "missing a", "missing an",
)  # fmt: skip
VALUE_PREPOSITIONS = Phrases("in", "from", "at", "in the", "from the", "at the")
EQUAL = Phrases("is equal to", "equal to", "equals", "is", "are", "was", "were", "=", "==")
COMPARATIVES: Mapping[str, Phrases] = {
    ">=": Phrases("at least", "no less than", "not less than", "on or after", "since", ">=", "greater than or equal to"),
    "<=": Phrases("at most", "no more than", "not more than", "on or before", "up to", "<=", "less than or equal to",
           "until"),
    ">": Phrases("over", "above", "more than", "greater than", "higher than", "exceeding", "after", "later than", ">",
          "bigger than", "larger than"),
    "<": Phrases("below", "under", "less than", "lower than", "fewer than", "before", "earlier than", "<",
          "smaller than"),
}  # fmt: skip
DATE_RANGES = Phrases("in", "during", "in the year", "within", "on")
TEXT_MATCHES: Mapping[str, Phrases] = {
    "{}%": Phrases("starts with", "start with", "starting with", "begins with", "begin with", "beginning with"),
    "%{}": Phrases("ends with", "end with", "ending with"),
    "%{}%": Phrases("contains", "contain", "containing", "includes", "include", "including"),
}
NULL_WORDS = Phrases(
    "null", "empty", "missing", "unknown", "blank", "not set", "none", "not known", "not given",
)  # fmt: skip
NOT_NULL_WORDS = Phrases("not null", "not empty", "not missing", "known", "not blank")
JOINERS = Phrases(", and", ", or", "and", "or", ",", "but")
IMPLICIT_AND = Phrases(
    "with",
    "whose",
    "where",
    "who",
    "that",
    "having",
    "without",
    "in",
    "from",
)
"""Words that start another filter without 'and': "in Berlin with salary over 50k"."""
HIGH = Phrases("highest", "largest", "biggest", "greatest", "maximum", "max", "most", "latest")
LOW = Phrases("lowest", "smallest", "least", "minimum", "min", "earliest", "fewest")
RECENCY: Mapping[str, bool] = {
    "most recently": True, "last": True, "latest": True, "first": False, "earliest": False,
}  # fmt: skip
"""After a date column or its verb: whether the latest date is wanted."""
MOST: Mapping[str, bool] = {"the most": True, "most": True, "the least": False, "least": False}
SUPERLATIVES: Mapping[str, tuple[tuple[tuple[str, ...], bool, str | None], ...]] = {
    "oldest": ((("age",), True, "number"), (BIRTH, False, "date"), (WHEN, False, "date")),
    "youngest": ((("age",), False, "number"), (BIRTH, True, "date")),
    "newest": ((WHEN, True, "date"),),
    "latest": ((WHEN, True, "date"),),
    "most recent": ((WHEN, True, "date"),),
    "most recently": ((WHEN, True, "date"),),
    "last": ((WHEN, True, "date"),),
    "earliest": ((WHEN, False, "date"),),
    "first": ((WHEN, False, "date"),),
    "cheapest": ((PRICE, False, "number"),),
    "least expensive": ((PRICE, False, "number"),),
    "most expensive": ((PRICE, True, "number"),),
    "priciest": ((PRICE, True, "number"),),
    "best paid": ((PAY, True, "number"),),
    "highest paid": ((PAY, True, "number"),),
    "top paid": ((PAY, True, "number"),),
    "richest": ((PAY, True, "number"),),
    "lowest paid": ((PAY, False, "number"),),
    "worst paid": ((PAY, False, "number"),),
    "best rated": ((RATING, True, "number"),),
    "highest rated": ((RATING, True, "number"),),
    "top rated": ((RATING, True, "number"),),
    "best": ((RATING, True, "number"),),
    "worst rated": ((RATING, False, "number"),),
    "lowest rated": ((RATING, False, "number"),),
    "worst": ((RATING, False, "number"),),
    "largest": ((SIZE, True, "number"),),
    "biggest": ((SIZE, True, "number"),),
    "smallest": ((SIZE, False, "number"),),
    "most popular": ((SIZE, True, "number"),),
    "least popular": ((SIZE, False, "number"),),
    "longest": ((("duration", "length", "minutes", "hours", "days"), True, "number"),),
    "shortest": ((("duration", "length", "minutes", "hours", "days"), False, "number"),),
    "heaviest": ((("weight",), True, "number"),),
    "lightest": ((("weight",), False, "number"),),
}
"""A superlative word -> (column words it may mean, descending, column kind), tried in order."""
COMPARATIVE_ADJECTIVES: Mapping[str, tuple[tuple[tuple[str, ...], str, str | None], ...]] = {
    "older than": ((("age",), ">", "number"), (BIRTH, "<", "date")),
    "younger than": ((("age",), "<", "number"), (BIRTH, ">", "date")),
    "cheaper than": ((PRICE, "<", "number"),),
    "more expensive than": ((PRICE, ">", "number"),),
    "pricier than": ((PRICE, ">", "number"),),
    "longer than": ((("duration", "length", "minutes", "hours", "days"), ">", "number"),),
    "shorter than": ((("duration", "length", "minutes", "hours", "days"), "<", "number"),),
    "heavier than": ((("weight",), ">", "number"),),
    "lighter than": ((("weight",), "<", "number"),),
}
VERBS: Mapping[str, tuple[tuple[str, ...], str | None]] = {
    **dict.fromkeys(("earns", "earn", "earning", "earned", "makes", "make", "making", "is paid", "are paid",
                     "paid", "gets paid", "get paid", "getting paid"), (PAY, "number")),
    **dict.fromkeys(("costs", "cost", "costing", "priced", "priced at", "sells for", "sell for", "selling for",
                     "sold for"), (PRICE, "number")),
    **dict.fromkeys(("hired", "joined", "started", "began", "employed", "were hired", "was hired"),
                    (("hire", "hired", "start", "join", "joined", "joining", "employment"), "date")),
    **dict.fromkeys(("born", "was born", "were born"), (BIRTH, "date")),
    **dict.fromkeys(("aged",), (("age",), "number")),
    **dict.fromkeys(("weighs", "weighing", "weigh"), (("weight",), "number")),
    **dict.fromkeys(("rated", "scored", "scores", "scoring"), (RATING, "number")),
    **dict.fromkeys(("held", "happened", "happens", "took place", "takes place", "scheduled", "happening",
                     "occurs", "occurred", "is held", "was held", "are held", "were held", "taking place"),
                    (WHEN, "date")),
    **dict.fromkeys(("attended by", "lasts", "lasting", "lasted"),
                    (("attendees", "attendance", "duration", "length"), "number")),
    **dict.fromkeys(("in stock",), (("stock", "quantity"), "number")),
}  # fmt: skip
"""A verb -> the column words it means ("earns" is the salary) and that column's kind."""
MONTHS: Mapping[str, int] = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
NUMBER_WORDS: Mapping[str, int] = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
COMPARATIVE_PHRASES = Phrases(phrase for phrases in COMPARATIVES.values() for phrase in phrases)
TEXT_MATCH_PHRASES = Phrases(phrase for phrases in TEXT_MATCHES.values() for phrase in phrases)
COMPARISONS = Phrases(NEGATIONS, EQUAL, "between", COMPARATIVE_PHRASES, TEXT_MATCH_PHRASES)
DATE_COMPARISONS = Phrases(COMPARISONS, DATE_RANGES)
AGGREGATE_PHRASES = Phrases(phrase for phrases in AGGREGATES.values() for phrase in phrases)
CLAUSES = Phrases(GROUP_WORDS, ORDER_WORDS, FILLER, "top", "bottom")
STOP_WORDS: frozenset[str] = frozenset(
    ["and", "or", "order", "ordered", "sort", "sorted", "per", "by", "grouped", "group", "for", "top", "bottom",
     "first", "limit", "with", "where", "whose", "having", "in", "from", "at", "who", "that", "which", "but"]
)  # fmt: skip
"""Words that end an unquoted value no column stores: ``name is Zed and ...`` binds "Zed"."""


VERB_PHRASES = Phrases(VERBS)
SUPERLATIVE_PHRASES = Phrases(SUPERLATIVES)
RECENCY_PHRASES = Phrases(RECENCY)
NUMBER_WORD_PHRASES = Phrases(NUMBER_WORDS)
COMPARATIVE_ADJECTIVE_PHRASES = Phrases(COMPARATIVE_ADJECTIVES)
NEGATION_OR_EQUAL = Phrases(NEGATIONS, EQUAL)
MOST_OR_EXTREME = Phrases(MOST, "the highest", "the lowest")
HIGH_OR_LOW = Phrases(HIGH, LOW)
COMPARATIVE_OR_BETWEEN = Phrases(COMPARATIVE_PHRASES, "between")
CONDITION_CONTINUATIONS = Phrases(IMPLICIT_AND, VERBS, COMPARATIVE_ADJECTIVES)

# Short tables the grammar matches at one place each, built here once like the rest.
THE = Phrases("the")
OF = Phrases("of")
BY = Phrases("by")
COMMA = Phrases(",")
BETWEEN = Phrases("between")
RANGE_JOINERS = Phrases("and", "to")
"""Between the two ends of 'between 1 and 5'."""
TOP_OR_BOTTOM = Phrases("top", "bottom")
ONE_OF = Phrases("in", "one of", "any of")
HAVE = Phrases("have", "has", "with")
COLUMN_JOINERS = Phrases(",", "and", ", and")
"""Between the columns of a projection: 'name, city and salary of ...'."""
OWNER_LINKS = Phrases("of", "for", "from")
"""Between a projection and the value it is looked up by: 'the salary of Ada'."""
