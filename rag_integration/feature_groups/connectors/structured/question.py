"""Reading an English question about one table: a cursor over its tokens and the columns they name.

Every token must be understood; whatever is left over is an ``InvalidOptionError`` on ``question`` that lists
what the backend understands, so an unmapped question never turns into a silent "list everything". Filters are
read by ``filters``, their values by ``values``, ordering and grouping by ``clauses``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NoReturn

from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.structured.columns import ColumnSpec
from rag_integration.feature_groups.connectors.structured.filters import comparison_ahead
from rag_integration.feature_groups.connectors.structured.table import TableSpec
from rag_integration.feature_groups.connectors.structured.tokens import Token, tokenize

MAX_LIMIT = 1_000_000
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


class Question:
    """A cursor over one question's tokens: accepting phrases, passing over filler words and reading column names."""

    def __init__(self, text: str, table: TableSpec, understands: Sequence[str]) -> None:
        self.text = text
        self.table = table
        self.understands = understands
        self.tokens: list[Token] = tokenize(text, self.fail)
        self.position = 0
        words = {table.name.lower(), *table.name.lower().split("_")}
        self.table_words = words | {word + "s" for word in words} | {word[:-1] for word in words if word.endswith("s")}

    def fail(self, reason: str) -> NoReturn:
        raise InvalidOptionError(
            "question",
            self.text,
            f"a question this backend understands ({reason}); it understands: " + " | ".join(self.understands),
        )

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
        """Pass over filler ``words``, but never a column that a comparison follows ("where a is x" has column a)."""
        while (token := self.peek()) is not None and token.key in words and not self.column_comparison_ahead():
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

    def column_comparison_ahead(self) -> bool:
        """True when a column and then a comparison come next ("a is x"), without consuming them."""
        start = self.position
        found = self.read_column() is not None and comparison_ahead(self)
        self.position = start
        return found

    def require_column(self, after: str, *, filler: Collection[str] = ()) -> ColumnSpec:
        """The column named next, after optional ``filler`` words, which count as the column if none follows them."""
        start = self.position
        self.skip(filler)
        column = self.read_column()
        if column is None and self.position != start:
            self.position = start
            column = self.read_column()
        if column is None:
            names = ", ".join(column.name for column in self.table.columns)
            self.fail(f"expected a column after {after!r}, one of: {names}")
        return column
