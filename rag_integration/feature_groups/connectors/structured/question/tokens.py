"""Splitting a question into tokens: quoted values, ISO dates, numbers, comparison signs, words and commas.

Any other character (``;``, ``(``, ``*``, ``--``) outside quotes makes the question unreadable, so SQL punctuation
can never slip through as part of a word. Numbers may carry a currency sign, thousands separators and a
suffix (``$50,000``, ``50k``, ``1.5m``); ``number_value`` reads them exactly, without float rounding.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NoReturn

from rag_integration.feature_groups.connectors.structured.sql.columns import is_utf8

TOKEN = re.compile(
    r"""(?P<quoted>"[^"\n]*"|'[^'\n]*')
    |(?P<date>\d{4}-\d{2}-\d{2})(?![\w-])
    |(?P<number>-?[$\u20ac\u00a3]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[kKmM]|bn)?)(?![\w.])
    |(?P<op>>=|<=|!=|<>|==|=|>|<)
    |(?P<word>\w+(?:['\u2019.&-]\w+)*)
    |(?P<comma>,)
    |(?P<space>\s+)""",
    re.VERBOSE,
)
MAX_QUESTION_LENGTH = 2_000
SUFFIXES = {"k": 1_000, "m": 1_000_000, "bn": 1_000_000_000}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    key: str = field(init=False)
    """What grammar words are matched against: lower-cased words, signs and commas; never a value's text."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.text.lower() if self.kind in ("word", "op", "comma") else "")

    @property
    def value(self) -> str:
        return self.text[1:-1] if self.kind == "quoted" else self.text


def number_value(text: str) -> int | float:
    """``-$1,500.5k`` -> -1500500: signs, currency and separators dropped, the suffix multiplied in exactly."""
    body = text.lower().lstrip("-").lstrip("$\u20ac\u00a3").replace(",", "")
    suffix = next((name for name in ("bn", "k", "m") if body.endswith(name)), "")
    number = Decimal(body[: len(body) - len(suffix)]) * SUFFIXES.get(suffix, 1)
    number = -number if text.startswith("-") else number
    return int(number) if number == number.to_integral_value() and ("." not in body or suffix) else float(number)


def tokenize(text: str, fail: Callable[[str], NoReturn]) -> list[Token]:
    """The tokens of ``text`` without its trailing ``?``, ``.`` or ``!``; ``fail(reason)`` when it cannot be read."""
    if len(text) > MAX_QUESTION_LENGTH:
        fail(f"at most {MAX_QUESTION_LENGTH} characters")
    if not is_utf8(text):
        fail("text that can be encoded as UTF-8")
    body = text.strip().rstrip("?.! ")
    tokens: list[Token] = []
    position = 0
    while position < len(body):
        match = TOKEN.match(body, position)
        if match is None or match.lastgroup is None:
            fail(f'unexpected character {body[position]!r} at position {position}; quote values with "..."')
        if match.lastgroup != "space":
            tokens.append(Token(match.lastgroup, match.group(match.lastgroup)))
        position = match.end()
    if not tokens:
        fail("the question is empty")
    return tokens
