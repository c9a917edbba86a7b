"""Reading an English question about one table: tokens, column references, filters, ordering and grouping.

Every token must be understood; whatever is left over is an ``InvalidOptionError`` on ``question`` that lists
what the backend understands, so an unmapped question never turns into a silent "list everything".
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.structured.plan import Condition
from rag_integration.feature_groups.connectors.structured.table import (
    INT64,
    ColumnSpec,
    TableSpec,
    is_iso_date,
    is_utf8,
)

TOKEN = re.compile(
    r"""(?P<quoted>"[^"\n]*"|'[^'\n]*')
    |(?P<date>\d{4}-\d{2}-\d{2})(?![\w-])
    |(?P<number>-?\d+(?:\.\d+)?)(?![\w.])
    |(?P<op>>=|<=|!=|<>|==|=|>|<)
    |(?P<word>\w+(?:['\u2019.&-]\w+)*)
    |(?P<comma>,)
    |(?P<space>\s+)""",
    re.VERBOSE,
)
MAX_QUESTION_LENGTH = 2_000
MAX_LIMIT = 1_000_000

STOP_WORDS = frozenset(
    [
        "and",
        "or",
        "order",
        "ordered",
        "sort",
        "sorted",
        "per",
        "by",
        "grouped",
        "group",
        "for",
        "top",
        "bottom",
        "first",
        "limit",
        "with",
        "where",
        "whose",
        "having",
        "in",
        "from",
        "at",
        "who",
        "that",
        "which",
    ]
)
CONDITION_LEADS = frozenset(
    [
        "with",
        "where",
        "whose",
        "who",
        "that",
        "which",
        "having",
        "is",
        "are",
        "was",
        "were",
        "the",
        "a",
        "an",
        "work",
        "works",
        "working",
        "live",
        "lives",
        "living",
        "based",
        "located",
        "have",
        "has",
    ]
)
TABLE_NOISE = frozenset(
    [
        "the",
        "all",
        "of",
        "rows",
        "row",
        "records",
        "record",
        "entries",
        "entry",
        "items",
        "item",
        "everything",
        "everyone",
    ]
)
COMPARATIVES: dict[str, tuple[str, ...]] = {
    ">=": ("at least", "no less than", "not less than", "on or after", "since", ">=", "greater than or equal to"),
    "<=": ("at most", "no more than", "not more than", "on or before", "up to", "<=", "less than or equal to"),
    ">": ("over", "above", "more than", "greater than", "higher than", "exceeding", "after", "later than", ">"),
    "<": ("below", "under", "less than", "lower than", "fewer than", "before", "earlier than", "<"),
}
NOT_EQUAL = ("is not equal to", "does not equal", "is not", "isn't", "not", "!=", "<>")
EQUAL = ("is equal to", "equal to", "equals", "is", "are", "was", "=", "==")
DESCENDING = ("descending", "desc", "in descending order", "highest first", "largest first", "latest first")
ASCENDING = ("ascending", "asc", "in ascending order", "lowest first", "smallest first", "earliest first")
GROUP_WORDS = ("per", "by", "for each", "for every", "in each", "grouped by", "group by", "broken down by")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str

    @property
    def key(self) -> str:
        return self.text.lower() if self.kind in ("word", "op", "comma") else ""

    @property
    def value(self) -> str:
        return self.text[1:-1] if self.kind == "quoted" else self.text


class Question:
    """A cursor over one question's tokens, with the phrase readers every structured backend shares."""

    def __init__(self, text: str, table: TableSpec, understands: Sequence[str]) -> None:
        self.text = text
        self.table = table
        self.understands = understands
        self.tokens = self._tokenize(text)
        self.position = 0
        words = {table.name.lower(), *table.name.lower().split("_")}
        self.table_words = words | {word + "s" for word in words} | {word[:-1] for word in words if word.endswith("s")}

    def fail(self, reason: str) -> NoReturn:
        raise InvalidOptionError(
            "question",
            self.text,
            f"a question this backend understands ({reason}); it understands: " + " | ".join(self.understands),
        )

    def _tokenize(self, text: str) -> list[Token]:
        if len(text) > MAX_QUESTION_LENGTH:
            self.fail(f"at most {MAX_QUESTION_LENGTH} characters")
        if not is_utf8(text):
            self.fail("text that can be encoded as UTF-8")
        body = text.strip().rstrip("?.! ")
        tokens: list[Token] = []
        position = 0
        while position < len(body):
            match = TOKEN.match(body, position)
            if match is None or match.lastgroup is None:
                self.fail(f'unexpected character {body[position]!r} at position {position}; quote values with "..."')
            if match.lastgroup != "space":
                tokens.append(Token(match.lastgroup, match.group(match.lastgroup)))
            position = match.end()
        if not tokens:
            self.fail("the question is empty")
        return tokens

    def peek(self, offset: int = 0) -> Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.position >= len(self.tokens)

    def accept(self, *phrases: str) -> str | None:
        """Consume the longest of ``phrases`` that the next tokens spell (case-insensitively) and return it."""
        for phrase in sorted(phrases, key=lambda phrase: -len(phrase.split())):
            keys = phrase.split()
            if all((token := self.peek(offset)) is not None and token.key == key for offset, key in enumerate(keys)):
                self.position += len(keys)
                return phrase
        return None

    def skip(self, words: Collection[str]) -> None:
        while (token := self.peek()) is not None and token.key in words:
            self.position += 1

    def skip_table_words(self) -> None:
        self.skip(TABLE_NOISE | self.table_words)

    def finish(self) -> None:
        if not self.at_end():
            rest = " ".join(token.text for token in self.tokens[self.position :])
            self.fail(f"could not understand {rest!r}")

    def read_int(self, after: str) -> int:
        token = self.peek()
        if token is None or token.kind != "number" or not token.text.lstrip("-").isdigit():
            self.fail(f"expected a whole number after {after!r}")
        number = int(token.text)
        if not 1 <= number <= MAX_LIMIT:
            self.fail(f"expected a number between 1 and {MAX_LIMIT} after {after!r}")
        self.position += 1
        return number

    def read_column(self) -> ColumnSpec | None:
        """The column named next, by its name (``start_date``) or its words ("start date"); longest match wins."""
        best: tuple[int, ColumnSpec] | None = None
        for column in self.table.columns:
            for spelling in ((column.name.lower(),), column.words):
                fits = all(
                    (token := self.peek(offset)) is not None and token.key == word
                    for offset, word in enumerate(spelling)
                )
                if fits and (best is None or len(spelling) > best[0]):
                    best = (len(spelling), column)
        if best is None:
            return None
        self.position += best[0]
        return best[1]

    def require_column(self, after: str) -> ColumnSpec:
        column = self.read_column()
        if column is None:
            names = ", ".join(column.name for column in self.table.columns)
            self.fail(f"expected a column after {after!r}, one of: {names}")
        return column

    def read_conditions(self) -> tuple[tuple[Condition, ...], ...]:
        """Filters joined by and/or (and binds tighter, as in SQL), as OR-groups of AND-ed conditions."""
        groups: list[tuple[Condition, ...]] = []
        current: list[Condition] = []
        joiner: str | None = None
        before = self.position
        while (condition := self.read_condition()) is not None:
            if joiner is not None and joiner.endswith("or"):
                groups.append(tuple(current))
                current = []
            current.append(condition)
            before = self.position
            joiner = self.accept(", and", ", or", "and", "or", ",")
            if joiner is None:
                break
        else:
            self.position = before
        if current:
            groups.append(tuple(current))
        return tuple(groups)

    def comparison_ahead(self) -> bool:
        """True when the next words compare a column ("over", "is", "between"), without consuming them."""
        start = self.position
        phrases = [*NOT_EQUAL, *EQUAL, "between", *(phrase for group in COMPARATIVES.values() for phrase in group)]
        found = self.accept(*phrases) is not None
        self.position = start
        return found

    def read_condition(self) -> Condition | None:
        start = self.position
        self.skip(CONDITION_LEADS)
        if self.accept("in", "from", "at"):
            return self._value_only()
        column = self.read_column()
        if column is None:
            self.position = start
            return None
        return self._comparison(column)

    def _comparison(self, column: ColumnSpec) -> Condition:
        if self.accept(*NOT_EQUAL):
            return self._equality(column, negated=True)
        said_is = self.accept(*EQUAL)
        if self.accept("between"):
            low = self._ordered_value(column, "between")
            if not self.accept("and", "to"):
                self.fail(f"expected 'and' in '{column.name} between ... and ...'")
            return Condition(column.name, "between", (low, self._ordered_value(column, "between")))
        for operator, phrases in COMPARATIVES.items():
            phrase = self.accept(*phrases)
            if phrase:
                return Condition(column.name, operator, (self._ordered_value(column, phrase),))
        if said_is:
            return self._equality(column, negated=False)
        self.fail(f"expected a comparison after column '{column.name}' (is, over, at least, below, at most, between)")

    def _ordered_value(self, column: ColumnSpec, after: str) -> Any:
        token = self.peek()
        if not column.numeric and column.type != "date":
            self.fail(f"'{after}' needs a number or date column, but '{column.name}' is {column.type}")
        if token is not None and column.numeric and token.kind == "number":
            number = float(token.text) if "." in token.text else int(token.text)
            if not math.isfinite(number) or (isinstance(number, int) and not INT64[0] <= number <= INT64[1]):
                self.fail(f"{token.text} is outside the range SQLite stores")
            self.position += 1
            return number
        if token is not None and column.type == "date" and is_iso_date(token.value):
            self.position += 1
            return token.value
        kind = "a number" if column.numeric else "an ISO date YYYY-MM-DD"
        self.fail(f"expected {kind} after '{column.name} {after}'")

    def _equality(self, column: ColumnSpec, *, negated: bool) -> Condition:
        if column.numeric or column.type == "date":
            value = self._ordered_value(column, "is not" if negated else "is")
            return Condition(column.name, "!=" if negated else "=", (value,))
        tokens = self._value_tokens()
        if not tokens:
            self.fail(f"expected a value after '{column.name} is'")
        self.position += len(tokens)
        value = " ".join(token.value for token in tokens)
        variants = [stored for stored in self.table.text_values(column) if stored.casefold() == value.casefold()]
        values = tuple(sorted(variants)) if variants else (value,)
        if len(values) == 1:
            return Condition(column.name, "!=" if negated else "=", values)
        return Condition(column.name, "not in" if negated else "in", values)

    def _value_tokens(self) -> list[Token]:
        """A quoted value, or the words up to the next joining or stop word."""
        first = self.peek()
        if first is not None and first.kind == "quoted":
            return [first]
        tokens: list[Token] = []
        while (token := self.peek(len(tokens))) is not None and token.kind in ("word", "number", "date"):
            if token.key in STOP_WORDS:
                break
            tokens.append(token)
        return tokens

    def _value_only(self) -> Condition:
        """A value without its column ("in Berlin"): the text column storing it; the longest stored prefix wins."""
        self.skip({"the"})
        tokens = self._value_tokens()
        for size in range(len(tokens), 0, -1):
            value = " ".join(token.value for token in tokens[:size]).casefold()
            found = {
                column.name: sorted(stored for stored in self.table.text_values(column) if stored.casefold() == value)
                for column in self.table.columns
                if column.type == "text"
            }
            holders = {name: variants for name, variants in found.items() if variants}
            if len(holders) > 1:
                self.fail(f"the value {value!r} is in several columns ({', '.join(sorted(holders))}); name one")
            if holders:
                self.position += size
                name, variants = holders.popitem()
                column = self.table.column(name)
                if column is not None and self.read_column() not in (None, column):
                    self.fail(f"the value {value!r} is in column '{name}'")
                return Condition(name, "=" if len(variants) == 1 else "in", tuple(variants))
        shown = " ".join(token.value for token in tokens) or "(nothing)"
        self.fail(f"no text column holds the value {shown!r}; name the column, e.g. '<column> is {shown}'")

    def read_order(self) -> tuple[ColumnSpec, bool] | None:
        start = self.position
        self.accept(",")
        if not self.accept("ordered by", "sorted by", "order by", "sort by", "sorted on", "ordered on"):
            self.position = start
            return None
        column = self.require_column("ordered by")
        descending = self.accept(*DESCENDING) is not None
        if not descending:
            self.accept(*ASCENDING)
        return column, descending

    def read_top(self) -> tuple[int, ColumnSpec, bool] | None:
        """Top or bottom N: "top 3 by salary" (highest first), "bottom 3 by salary" (lowest first)."""
        start = self.position
        self.accept(",")
        word = self.accept("top", "bottom")
        if word is None:
            self.position = start
            return None
        count = self.read_int(word)
        self.skip_table_words()
        if not self.accept("by"):
            self.fail(f"'{word} N' needs 'by <column>'")
        return count, self.require_column(f"{word} {count} by"), word == "top"

    def read_group(self) -> ColumnSpec | None:
        phrase = self.accept(*GROUP_WORDS)
        return None if phrase is None else self.require_column(phrase)
