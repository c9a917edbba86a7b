"""Strict, typed option reading: wrong types are errors, never coerced."""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

from rag_integration.core.errors import InvalidOptionError, MissingOptionError


class OptionSource(Protocol):
    """What we need of mloda's ``Options`` (or a plain dict): a ``get`` that looks in group, then context."""

    def get(self, key: str, default: Any = None) -> Any: ...


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Missing()


class OptionReader:
    """Reads one request's options with the checks the SPEC promises (bools are not ints, ints are not strs)."""

    def __init__(self, options: OptionSource | Mapping[str, Any], owner: str = "") -> None:
        self._options = options
        self.owner = owner

    def raw(self, key: str) -> Any:
        """The value as given, or None when absent. A request never carries an explicit None: it is refused while
        mloda matches the request (``core.declarations``), so None here always means the key was left out."""
        return self._options.get(key)

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def snapshot(self, without: tuple[str, ...] = ()) -> OptionReader:
        """The same options as a plain dict (group over context, as mloda looks them up), less ``without``, to ship
        to another process: mloda's ``Options`` carries planning state that need not travel."""
        group = getattr(self._options, "group", None)
        context = getattr(self._options, "context", None)
        if isinstance(group, Mapping) and isinstance(context, Mapping):
            merged = {**context, **group}
        elif isinstance(self._options, Mapping):
            merged = dict(self._options)
        else:
            raise TypeError(f"cannot copy options of type {type(self._options).__name__}")
        return OptionReader({key: value for key, value in merged.items() if key not in without}, self.owner)

    def _absent(self, key: str, default: Any, expected: str) -> Any:
        if default is REQUIRED:
            raise MissingOptionError(key, expected, owner=self.owner or None)
        return default

    def string(self, key: str, *, default: Any = REQUIRED, allow_empty: bool = False) -> Any:
        value = self.raw(key)
        expected = "a string" if allow_empty else "a non-empty string"
        if value is None:
            return self._absent(key, default, expected)
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            raise InvalidOptionError(key, value, expected)
        return value

    def string_or_strings(self, key: str, *, default: Any = REQUIRED) -> Any:
        """A str, or a non-empty list/tuple of str (used for one query or a batch of queries)."""
        value = self.raw(key)
        expected = "a string or a non-empty list of strings"
        if value is None:
            return self._absent(key, default, expected)
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)) and value and all(isinstance(item, str) for item in value):
            return list(value)
        raise InvalidOptionError(key, value, expected)

    def integer(
        self, key: str, *, default: Any = REQUIRED, minimum: int | None = None, maximum: int | None = None
    ) -> Any:
        value = self.raw(key)
        expected = _range_text("an int", minimum, maximum)
        if value is None:
            return self._absent(key, default, expected)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidOptionError(key, value, expected)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise InvalidOptionError(key, value, expected)
        return value

    def number(
        self,
        key: str,
        *,
        default: Any = REQUIRED,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> Any:
        value = self.raw(key)
        expected = _range_text("a finite number", minimum, maximum, exclusive_minimum)
        if value is None:
            return self._absent(key, default, expected)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidOptionError(key, value, expected)
        number = float(value)
        if minimum is not None and (number < minimum or (exclusive_minimum and number == minimum)):
            raise InvalidOptionError(key, value, expected)
        if maximum is not None and number > maximum:
            raise InvalidOptionError(key, value, expected)
        return number

    def boolean(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a bool")
        if not isinstance(value, bool):
            raise InvalidOptionError(key, value, "a bool (True or False)")
        return value

    def choice(self, key: str, choices: Collection[str], *, default: Any = REQUIRED) -> Any:
        value = self.raw(key)
        expected = "one of " + ", ".join(repr(choice) for choice in sorted(choices))
        if value is None:
            return self._absent(key, default, expected)
        if not isinstance(value, str) or value not in choices:
            raise InvalidOptionError(key, value, expected)
        return value

    def path(self, key: str, *, default: Any = REQUIRED) -> Any:
        """A filesystem path given as a non-empty str or an ``os.PathLike``."""
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a path (str or os.PathLike)")
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
            return Path(value)
        raise InvalidOptionError(key, value, "a path (str or os.PathLike)")

    def sequence(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a list")
        if not isinstance(value, (list, tuple)):
            raise InvalidOptionError(key, value, "a list")
        return list(value)


def _range_text(kind: str, minimum: float | None, maximum: float | None, exclusive: bool = False) -> str:
    if minimum is not None and maximum is not None:
        return f"{kind} between {minimum} and {maximum}"
    if minimum is not None:
        return f"{kind} {'>' if exclusive else '>='} {minimum}"
    if maximum is not None:
        return f"{kind} <= {maximum}"
    return kind
