"""One rule for text that is not valid Unicode, applied wherever a query or a document enters the package.

A Python ``str`` can hold lone surrogates (U+D800-U+DFFF), typically from bytes decoded with
``errors="surrogateescape"``. They cannot be encoded as UTF-8, so tokenizers (the MiniLM embedder's raises a bare
``TypeError``), SQLite and JSON writers fail on them deep inside a run, each differently. The package refuses such
text where it is read, with ``InvalidTextError`` naming the option, the position and the code point, rather than
silently replacing characters: a replaced query would be answered as a different question.
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_integration.core.errors import InvalidOptionError

FIX = "decode the bytes with errors='replace' (or fix their encoding) before passing the text"


class InvalidTextError(InvalidOptionError):
    """A query or document text holds a lone surrogate, so it is not valid Unicode (it cannot be UTF-8 encoded)."""

    def __init__(self, option: str, value: str, position: int) -> None:
        self.position = position
        self.code_point = ord(value[position])
        super().__init__(
            option,
            value,
            f"valid Unicode text, but character {position} is the lone surrogate U+{self.code_point:04X}; {FIX}",
        )


def surrogate_position(text: str) -> int | None:
    """Where the first lone surrogate of ``text`` is, or None. An ASCII str (flagged by CPython) is never read; any
    other is encoded once, which is several times faster than a regex search and fails exactly on surrogates."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def require_valid_text(text: str, option: str) -> str:
    """``text`` unchanged, or ``InvalidTextError`` on ``option`` if it is not valid Unicode."""
    position = surrogate_position(text)
    if position is not None:
        raise InvalidTextError(option, text, position)
    return text


def require_valid_texts(texts: Iterable[str], option: str) -> None:
    """Check every text; the error names ``option[position]`` of the first invalid one."""
    for index, text in enumerate(texts):
        position = surrogate_position(text)
        if position is not None:
            raise InvalidTextError(f"{option}[{index}]", text, position)
