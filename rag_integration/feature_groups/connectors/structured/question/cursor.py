"""The parser's input and its cursor: a question's tokens, matched phrase by phrase with retreat on a miss, and
the column lookups at the cursor (the column named next, whether a comparison follows it) every construct shares."""

from __future__ import annotations

from collections.abc import Collection
from typing import NoReturn

from rag_integration.core.deadline import Budget
from rag_integration.feature_groups.connectors.structured.question.constructs import NOUNS
from rag_integration.feature_groups.connectors.structured.question.lexicon import PLANNING, Lexicon
from rag_integration.feature_groups.connectors.structured.question.phrases import (
    COMPARATIVE_OR_BETWEEN,
    COMPARISONS,
    DATE_COMPARISONS,
    OF,
    Phrases,
)
from rag_integration.feature_groups.connectors.structured.question.tokens import Token, tokenize
from rag_integration.feature_groups.connectors.structured.sql.columns import ColumnSpec


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

    def _match(self, table: Phrases) -> str | None:
        """Consume the longest phrase of ``table`` that the next tokens spell, case-insensitively, and return it;
        the table's first-word index was built with it, so this is a dict lookup and a few comparisons."""
        token = self._peek()
        if token is None:
            return None
        for phrase, keys in table.by_first_word.get(token.key, ()):
            if all(
                (token := self._peek(offset)) is not None and token.key == key
                for offset, key in enumerate(keys[1:], start=1)
            ):
                self.index += len(keys)
                return phrase
        return None

    def _ahead(self, table: Phrases) -> bool:
        start = self.index
        found = self._match(table) is not None
        self._retreat(start)
        return found

    def _fail(self, reason: str) -> NoReturn:
        raise NotUnderstood(reason)

    def _require(self, construct: str, phrase: str) -> None:
        if construct not in self.constructs:
            self._fail(f"{phrase!r} asks for {NOUNS[construct]}, which this backend does not compute")

    # Columns named at the cursor, and whether a comparison follows.

    def _skip_words(self, words: Collection[str]) -> list[str]:
        """Pass over filler ``words``, but never a column that a comparison follows ("where a is x" has column a)."""
        skipped: list[str] = []
        while (token := self._peek()) is not None and token.key in words and not self._column_comparison_ahead():
            skipped.append(token.key)
            self.index += 1
        return skipped

    def _table_word_ahead(self) -> bool:
        token = self._peek()
        return token is not None and token.key in self.lexicon.table_words

    def _skip_table_words(self) -> bool:
        skipped = self._skip_words(self.lexicon.table_words | {"the", "all", "of", "every"})
        return bool(set(skipped) & self.lexicon.table_words)

    def _read_column(self) -> tuple[ColumnSpec, bool] | None:
        """The column named next, by its name or words, singular or plural (longest match), and whether plural."""
        first = self._peek()
        best = None
        for spelling in self.lexicon.spellings.get(first.key if first else "", ()):
            if (best is None or len(spelling.words) > len(best.words)) and all(
                (token := self._peek(offset)) is not None and token.key == word
                for offset, word in enumerate(spelling.words)
            ):
                best = spelling
        if best is None:
            return None
        self.index += len(best.words)
        return best.column, best.plural

    def _column(self) -> ColumnSpec | None:
        found = self._read_column()
        return None if found is None else found[0]

    def _require_column(self, after: str, filler: Collection[str] = ()) -> ColumnSpec:
        start = self.index
        self._skip_words(filler)
        column = self._column()
        if column is None and self.index != start:
            self._retreat(start)
            column = self._column()
        if column is None:
            names = ", ".join(column.name for column in self.table.columns)
            self._fail(f"expected a column after {after!r}, one of: {names}")
        return column

    def _comparison_ahead(self, column: ColumnSpec) -> bool:
        """True when the next words compare ``column`` ("over", "is", "starts with", "of at least"), without
        consuming them."""
        start = self.index
        self._skip_of_before_comparison()
        found = self._ahead(DATE_COMPARISONS if column.type == "date" else COMPARISONS)
        self._retreat(start)
        return found

    def _skip_of_before_comparison(self) -> None:
        """ "a rating of at least 3", "a price of under 10": the "of" joining a noun to its comparison."""
        start = self.index
        if self._match(OF) and not self._ahead(COMPARATIVE_OR_BETWEEN):
            self._retreat(start)

    def _column_comparison_ahead(self) -> bool:
        start = self.index
        column = self._column()
        found = column is not None and self._comparison_ahead(column)
        self._retreat(start)
        return found

    def _hinted_column(self, phrase: str, hints: tuple[str, ...], kind: str | None) -> ColumnSpec:
        column = self.lexicon.column_hint(hints, kind)
        if column is None:
            self._fail(f"{phrase!r} names no column of this table; name the column")
        return column
