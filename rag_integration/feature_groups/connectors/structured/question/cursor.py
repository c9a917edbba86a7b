"""The question and a cursor over its tokens: what the parser's grammar moves, matches phrase tables with and
retreats on when a construct does not fit."""

from __future__ import annotations

from typing import NoReturn

from rag_integration.core.deadline import Budget
from rag_integration.feature_groups.connectors.structured.question.lexicon import PLANNING, Lexicon
from rag_integration.feature_groups.connectors.structured.question.phrases import Phrases
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
    """A position in one question's tokens, and the table's lexicon to read column names with."""

    def __init__(self, question: Question) -> None:
        self.question = question
        self.tokens = question.tokens
        self.lexicon = question.lexicon
        self.table = question.table
        self.index = 0

    def _peek(self, offset: int = 0) -> Token | None:
        index = self.index + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def _retreat(self, index: int) -> None:
        self.index = index

    def _match(self, phrases: Phrases) -> str | None:
        """Consume the longest of ``phrases`` that the next tokens spell (case-insensitively) and return it."""
        found = phrases.match(self.tokens, self.index)
        if found is None:
            return None
        phrase, self.index = found
        return phrase

    def _ahead(self, phrases: Phrases) -> bool:
        return phrases.match(self.tokens, self.index) is not None

    def _table_word_ahead(self) -> bool:
        token = self._peek()
        return token is not None and token.key in self.lexicon.table_words

    def _fail(self, reason: str) -> NoReturn:
        raise NotUnderstood(reason)

    def _hinted_column(self, phrase: str, hints: tuple[str, ...], kind: str | None) -> ColumnSpec:
        column = self.lexicon.column_hint(hints, kind)
        if column is None:
            self._fail(f"{phrase!r} names no column of this table; name the column")
        return column
