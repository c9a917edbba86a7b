"""Strict, typed option reading: wrong types are errors, never coerced."""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, Protocol, TypeVar, cast

from rag_integration.core.errors import InvalidOptionError, MissingOptionError


class OptionSource(Protocol):
    """What we need of mloda's ``Options`` (or a plain dict): a ``get`` that looks in group, then context."""

    def get(self, key: str, default: None = None) -> object: ...


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Final = _Missing()
"""The default of an option that must be given: reading it absent is a ``MissingOptionError``."""
T = TypeVar("T")
D = TypeVar("D")
V = TypeVar("V")
SettingsT = TypeVar("SettingsT")
"""A backend's settings type, which family bases are generic over (``BaseRerankConnector[LexicalSettings]``)."""


class OptionReader:
    """Reads one request's options with the checks the SPEC promises (bools are not ints, ints are not strs)."""

    def __init__(self, options: OptionSource | Mapping[str, object], owner: str = "") -> None:
        self._options = options
        self.owner = owner

    def raw(self, key: str) -> object:
        """The value as given, or None when absent. A request never carries an explicit None: it is refused while
        mloda matches the request (``core.contract.declarations``), so None here always means the key was left out."""
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

    def _absent(self, key: str, default: D | _Missing, expected: str) -> D:
        if isinstance(default, _Missing):
            raise MissingOptionError(key, expected, owner=self.owner or None)
        return default

    def string(self, key: str, *, default: D | _Missing = REQUIRED, allow_empty: bool = False) -> str | D:
        value = self.raw(key)
        expected = "a string" if allow_empty else "a non-empty string"
        if value is None:
            return self._absent(key, default, expected)
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            raise InvalidOptionError(key, value, expected)
        return value

    def string_or_strings(self, key: str, *, default: D | _Missing = REQUIRED) -> str | list[str] | D:
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
        self, key: str, *, default: D | _Missing = REQUIRED, minimum: int | None = None, maximum: int | None = None
    ) -> int | D:
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
        default: D | _Missing = REQUIRED,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> float | D:
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

    def boolean(self, key: str, *, default: D | _Missing = REQUIRED) -> bool | D:
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a bool")
        if not isinstance(value, bool):
            raise InvalidOptionError(key, value, "a bool (True or False)")
        return value

    def choice(self, key: str, choices: Collection[str], *, default: D | _Missing = REQUIRED) -> str | D:
        value = self.raw(key)
        expected = "one of " + ", ".join(repr(choice) for choice in sorted(choices))
        if value is None:
            return self._absent(key, default, expected)
        if not isinstance(value, str) or value not in choices:
            raise InvalidOptionError(key, value, expected)
        return value

    def path(self, key: str, *, default: D | _Missing = REQUIRED) -> Path | D:
        """A filesystem path given as a non-empty str or an ``os.PathLike``."""
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a path (str or os.PathLike)")
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
            return Path(value)
        raise InvalidOptionError(key, value, "a path (str or os.PathLike)")

    def mapping(self, key: str, *, default: D | _Missing = REQUIRED) -> dict[str, object] | D:
        """A dict with str keys (its values are the reader's caller's to check)."""
        value = self.raw(key)
        if value is None:
            return self._absent(key, default, "a dict")
        if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
            raise InvalidOptionError(key, value, "a dict with str keys")
        return dict(value)

    def sequence(self, key: str, *, default: D | _Missing = REQUIRED) -> list[object] | D:
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


@dataclass(frozen=True)
class NoSettings:
    """The settings of a backend without options of its own."""


KINDS = ("string", "integer", "number", "boolean", "choice", "path", "sequence", "mapping", "string_or_strings")


@dataclass(frozen=True)
class OptionSpec(Generic[V]):
    """One option, declared once: its key, kind, default, bounds or choices and a line of help. Reading, the
    ``OPTIONS`` a backend declares and the options tables in the docs all derive from it. ``V`` is the type a read
    gives (``OptionSpec[int]`` for an integer with a default), stated where the option is declared."""

    key: str
    kind: str
    help: str
    default: object = REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    allow_empty: bool = False
    shown_as: str = ""
    """The type column of the docs' tables, when the kind and bounds alone would say too little."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.key!r}: kind {self.kind!r} is not one of {KINDS}")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"option {self.key!r}: choices go with kind 'choice', and only with it")

    def read(self, reader: OptionReader) -> V:
        """The request's value, checked as declared, or the default."""
        return cast(V, self._read(reader))

    def _read(self, reader: OptionReader) -> object:
        if self.kind == "integer":
            minimum = None if self.minimum is None else int(self.minimum)
            maximum = None if self.maximum is None else int(self.maximum)
            return reader.integer(self.key, default=self.default, minimum=minimum, maximum=maximum)
        if self.kind == "number":
            return reader.number(
                self.key,
                default=self.default,
                minimum=self.minimum,
                maximum=self.maximum,
                exclusive_minimum=self.exclusive_minimum,
            )
        if self.kind == "choice":
            return reader.choice(self.key, self.choices, default=self.default)
        if self.kind == "string":
            return reader.string(self.key, default=self.default, allow_empty=self.allow_empty)
        readers: dict[str, Callable[..., object]] = {
            "boolean": reader.boolean,
            "path": reader.path,
            "sequence": reader.sequence,
            "mapping": reader.mapping,
            "string_or_strings": reader.string_or_strings,
        }
        return readers[self.kind](self.key, default=self.default)

    def field(self) -> Any:
        """A dataclass field carrying this declaration (a fresh one per class that uses it), with the option's
        default as the field's, so settings can also be made by hand."""
        if self.default is REQUIRED:
            return dataclasses.field(metadata={OPTION_METADATA: self})
        return dataclasses.field(default=self.default, metadata={OPTION_METADATA: self})

    def type_text(self) -> str:
        """The kind with its bounds, as the options tables print it."""
        if self.shown_as:
            return self.shown_as
        if self.kind == "choice":
            return "one of " + ", ".join(f"`{choice}`" for choice in self.choices)
        names = {"integer": "int", "number": "number", "boolean": "bool", "string": "str", "path": "path"}
        text = names.get(self.kind, self.kind.replace("_", " "))
        if self.minimum is not None and self.maximum is not None:
            if self.exclusive_minimum:
                return f"{text} in ({_bound(self.minimum)}, {_bound(self.maximum)}]"
            return f"{text} {_bound(self.minimum)}..{_bound(self.maximum)}"
        if self.minimum is not None:
            return f"{text} {'>' if self.exclusive_minimum else '>='} {_bound(self.minimum)}"
        return text

    def default_text(self) -> str:
        if self.default is REQUIRED:
            return "required"
        if self.default is None:
            return "none"
        if isinstance(self.default, str):
            return f"`{self.default}`"
        if isinstance(self.default, (int, float)) and not isinstance(self.default, bool):
            return _bound(self.default)
        return str(self.default)


OPTION_METADATA = "rag_integration.option"


def option(
    key: str,
    kind: str,
    help: str,
    *,
    default: object = REQUIRED,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    choices: tuple[str, ...] = (),
    shown_as: str = "",
) -> Any:
    """A settings dataclass field declaring one option: ``k1: float = option("bm25_k1", "number", "...", ...)``."""
    spec: OptionSpec[object] = OptionSpec(
        key, kind, help, default, minimum, maximum, exclusive_minimum, choices, shown_as=shown_as
    )
    return spec.field()


DeclaredFields = tuple[tuple[str, "OptionSpec[Any] | type[object]"], ...]
_DECLARED_FIELDS: dict[type[object], DeclaredFields] = {}


def _declared_fields(settings: type[object]) -> DeclaredFields:
    """``(field name, its OptionSpec or its nested settings class)`` per declared field, resolved once per class:
    reading string annotations is too slow to repeat on every request and every match."""
    known = _DECLARED_FIELDS.get(settings)
    if known is not None:
        return known
    if not dataclasses.is_dataclass(settings):
        raise TypeError(f"{settings.__name__} is not a settings dataclass")
    hints = typing.get_type_hints(settings)
    declared: list[tuple[str, OptionSpec[Any] | type[object]]] = []
    for field in dataclasses.fields(settings):
        spec = field.metadata.get(OPTION_METADATA)
        if spec is not None:
            declared.append((field.name, spec))
        elif dataclasses.is_dataclass(hints.get(field.name)):
            declared.append((field.name, hints[field.name]))
    _DECLARED_FIELDS[settings] = tuple(declared)
    return _DECLARED_FIELDS[settings]


def option_keys(*specs: OptionSpec[Any]) -> tuple[str, ...]:
    """The keys of ``specs``: what a class lists in ``OPTIONS`` for options declared as module constants."""
    return tuple(spec.key for spec in specs)


def option_specs(settings: type[object]) -> tuple[OptionSpec[Any], ...]:
    """Every option a settings dataclass declares, its nested settings' included, in field order."""
    specs: list[OptionSpec[Any]] = []
    for _, declared in _declared_fields(settings):
        specs.extend([declared] if isinstance(declared, OptionSpec) else option_specs(declared))
    return tuple(specs)


def read_options(settings: type[T], reader: OptionReader) -> T:
    """An instance of the settings dataclass with every declared option read (nested settings read alike)."""
    values = {
        name: declared.read(reader) if isinstance(declared, OptionSpec) else read_options(declared, reader)
        for name, declared in _declared_fields(settings)
    }
    return settings(**values)


def options_table(settings: type[object]) -> str:
    """The Markdown rows of the docs' options tables (option, type, default, meaning) for ``settings``."""
    return option_rows(option_specs(settings))


def option_rows(specs: Iterable[OptionSpec[Any]]) -> str:
    """The Markdown rows (option, type, default, meaning) of ``specs``."""
    return "\n".join(f"| `{spec.key}` | {spec.type_text()} | {spec.default_text()} | {spec.help} |" for spec in specs)


def _bound(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else str(value)
