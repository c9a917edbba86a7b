"""The parser's input and its cursor: a question's tokens, matched phrase by phrase with retreat on a miss."""

from __future__ import annotations

import datetime
import math
from collections.abc import Collection
from typing import NoReturn

from rag_integration.core.deadline import Budget
from rag_integration.feature_groups.connectors.structured.question.constructs import NOUNS
from rag_integration.feature_groups.connectors.structured.question.lexicon import PLANNING, Lexicon
from rag_integration.feature_groups.connectors.structured.question.phrases import (
    MONTHS,
    NUMBER_WORD_PHRASES,
    NUMBER_WORDS,
    Phrases,
)
from rag_integration.feature_groups.connectors.structured.question.tokens import Token, number_value, tokenize
from rag_integration.feature_groups.connectors.structured.sql.columns import INT64, is_iso_date

MAX_LIMIT = 1_000_000
"""Largest N of 'top N' and of a LIMIT."""


class NotUnderstood(Exception):
    """Raised inside parsing with the reason; the backend turns it into ``InvalidOptionError`` on ``question``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Question:
    """One question about one table: its text, tokens and the table's lexicon, and the deadline for planning it."""

    def __init__(self, text: str, lexicon: Lexicon, deadline: Budget) -> None:
        self.text = text
        self.lexicon = lexicon
        self.table = lexicon.table
        self.deadline = deadline
        self.tokens: list[Token] = tokenize(text, self.fail)

    def fail(self, reason: str) -> NoReturn:
        raise NotUnderstood(reason)

    def check_deadline(self) -> None:
        self.deadline.check(PLANNING)


class Cursor:
    """A position in one question's tokens; ``constructs`` are the constructs the backend enables."""

    def __init__(self, question: Question, constructs: Collection[str]) -> None:
        self.question = question
        self.tokens = question.tokens
        self.lexicon = question.lexicon
        self.table = question.table
        self.constructs = frozenset(constructs)
        self.index = 0
        self.unknown_owner = -1
        """Where "<columns> of" was followed by no stored value: named in the refusal if parsing stops there."""

    def _peek(self, offset: int = 0) -> Token | None:
        index = self.index + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def _retreat(self, index: int) -> None:
        self.index = index

    def _match(self, *phrases: str | Phrases) -> str | None:
        """Consume the longest of ``phrases`` (one phrase table, or a few literal phrases) that the next tokens
        spell, case-insensitively, and return it."""
        token = self._peek()
        if token is None:
            return None
        table = phrases[0] if len(phrases) == 1 and isinstance(phrases[0], Phrases) else Phrases(*phrases)
        for phrase, keys in table.by_first_word.get(token.key, ()):
            if all(
                (token := self._peek(offset)) is not None and token.key == key
                for offset, key in enumerate(keys[1:], start=1)
            ):
                self.index += len(keys)
                return phrase
        return None

    def _ahead(self, *phrases: str | Phrases) -> bool:
        start = self.index
        found = self._match(*phrases) is not None
        self._retreat(start)
        return found

    def _fail(self, reason: str) -> NoReturn:
        raise NotUnderstood(reason)

    def _require(self, construct: str, phrase: str) -> None:
        if construct not in self.constructs:
            self._fail(f"{phrase!r} asks for {NOUNS[construct]}, which this backend does not compute")

    # Literals: numbers, whole numbers and the days a date, year or month stands for.

    def _parse_number(self, after: str) -> int | float:
        token = self._peek()
        if token is None or token.kind != "number":
            self._fail(f"expected a number after {after!r}")
        self.index += 1
        number = number_value(token.text)
        word = self._match(NUMBER_WORD_PHRASES)
        if word:
            number = number * NUMBER_WORDS[word]
        if isinstance(number, float) and not math.isfinite(number):
            self._fail(f"{token.text} is outside the range SQLite stores")
        if isinstance(number, int) and not INT64[0] <= number <= INT64[1]:
            self._fail(f"{token.text} is outside the range SQLite stores")
        return number

    def _parse_int(self, after: str) -> int:
        token = self._peek()
        number = self._parse_number(after)
        if not isinstance(number, int) or not 1 <= number <= MAX_LIMIT or token is None or "." in token.text:
            self._fail(f"expected a whole number between 1 and {MAX_LIMIT} after {after!r}")
        return number

    def _parse_dates(self) -> tuple[str, str] | None:
        """The first and last day an ISO date, a year ("2020") or a month ("March 2021") stands for."""
        token = self._peek()
        if token is None:
            return None
        if is_iso_date(token.value) and token.kind in ("date", "quoted"):
            self.index += 1
            return token.value, token.value
        month = MONTHS.get(token.key)
        year_token = self._peek(1 if month else 0)
        if year_token is None or year_token.kind != "number" or not year_token.text.isdigit():
            return None
        if len(year_token.text) != 4 or not 1000 <= int(year_token.text) <= 9999:
            return None
        year = int(year_token.text)
        self.index += 2 if month else 1
        if month is None:
            return f"{year}-01-01", f"{year}-12-31"
        following = datetime.date(year + month // 12, month % 12 + 1, 1)
        return datetime.date(year, month, 1).isoformat(), (following - datetime.timedelta(days=1)).isoformat()
