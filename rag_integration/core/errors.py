"""Typed errors shared by every connector and pipeline stage.

All derive from ``ConnectorError(ValueError)`` so callers can catch one class;
each message names the option, the offending value (cut short) and what was expected.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence

from mloda.provider import PluginRegistryCollisionError


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with one more cut: an int too long to print whole is named by its size, since ``repr`` of a
    5,000-digit int raises ``ValueError`` (Python's int/str conversion limit) instead of describing it."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 192:  # more than 57 digits: longer than the cut anyway
            return f"<int of about {int(x.bit_length() * 0.30103) + 1} digits>"
        return super().repr_int(x, level)


_SHORT_REPR = _ShortRepr()
_SHORT_REPR.maxstring = 60
_SHORT_REPR.maxother = 60
_SHORT_REPR.maxlist = 4
_SHORT_REPR.maxdict = 4


def short_repr(value: object) -> str:
    """A repr that stays readable even for a 10k-document corpus."""
    return _SHORT_REPR.repr(value)


SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "auth"}
)
"""Words of an option key that say its value may be a credential (``api_key``, ``llm_api_key_env``, ``auth_token``)."""
HIDDEN = "<hidden>"


def names_a_secret(option: str) -> bool:
    """Whether ``option``'s value may be a credential, by the words of its key: such a value is never quoted in an
    error, even a misspelled key's (which no backend declares, so no ``SECRET_OPTIONS`` can name it)."""
    return not SECRET_WORDS.isdisjoint(option.lower().replace("-", "_").split("_"))


class ConnectorError(ValueError):
    """Base class of every error this package raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its class, message and attributes, so an error raised on a Spark executor reaches the driver
        as the same typed error (subclasses' constructors take other arguments than the message)."""
        return (_restored_error, (type(self), str(self), dict(self.__dict__)))


def _restored_error(kind: type[ConnectorError], message: str, attributes: dict[str, object]) -> ConnectorError:
    error = kind.__new__(kind)
    Exception.__init__(error, message)
    error.__dict__.update(attributes)
    return error


class MissingOptionError(ConnectorError):
    """A required option is absent."""

    def __init__(self, option: str, expected: str, *, owner: str | None = None) -> None:
        self.option = option
        where = f" for {owner}" if owner else ""
        super().__init__(f"option '{option}' is required{where}: expected {expected}")


class InvalidOptionError(ConnectorError):
    """An option is present but has the wrong type or value."""

    def __init__(self, option: str, value: object, expected: str) -> None:
        self.option = option
        secret = names_a_secret(option)
        self.value = HIDDEN if secret else value
        shown = HIDDEN if secret else short_repr(value)
        super().__init__(f"option '{option}' got {shown} ({type(value).__name__}): expected {expected}")


class UnknownOptionError(InvalidOptionError):
    """A request carries an option key that no feature group in it declares (a typo, or an option of another backend)."""

    def __init__(self, option: str, value: object, suggestions: Sequence[str] = (), *, hint: str = "") -> None:
        secret = any(names_a_secret(name) for name in (option, *suggestions))  # "llm_api_kye" is one too
        self.option = option
        self.value = HIDDEN if secret else value
        self.suggestions = tuple(suggestions)
        guess = " or ".join(repr(name) for name in self.suggestions)
        advice = hint or (f"did you mean {guess}?" if guess else "remove it, or check the spelling against the docs")
        shown = f"{HIDDEN} ({type(value).__name__})" if secret else short_repr(value)
        ConnectorError.__init__(
            self, f"option '{option}' (given {shown}) is not an option of any feature group in this request: {advice}"
        )


class UnknownBackendError(InvalidOptionError):
    """A selector option names no backend enabled for this run."""

    def __init__(
        self,
        option: str,
        value: object,
        valid: Sequence[str],
        *,
        not_enabled: str = "",
        suggestions: Sequence[str] = (),
    ) -> None:
        self.option = option
        self.value = value
        self.valid = tuple(valid)
        guess = f" (did you mean {suggestions[0]!r}?)" if suggestions else ""
        listed = ", ".join(repr(name) for name in self.valid) or "none (no backend of this family is enabled)"
        reason = (
            f"it selects {not_enabled}, which exists but is not enabled in the PluginCollector (add it there); "
            if not_enabled
            else ""
        )
        ConnectorError.__init__(
            self,
            f"option '{option}' got {short_repr(value)}: {reason}expected one of the enabled backends: {listed}{guess}",
        )


class IndexMismatchError(InvalidOptionError):
    """A persisted index was built from another corpus or embedding model than the request names."""


class UnsafePathError(InvalidOptionError):
    """A path leads outside its folder, through a link not to be followed, or to something not a regular file."""


class DuplicateDocIdError(ConnectorError):
    """Two documents (or candidates) share one effective doc_id."""

    def __init__(self, option: str, doc_id: str, first: int | None = None, second: int | None = None) -> None:
        self.option = option
        self.doc_id = doc_id
        where = "twice" if first is None else f"at positions {first} and {second}"
        super().__init__(
            f"option '{option}' has duplicate doc_id {short_repr(doc_id)} {where}: expected unique doc_ids"
        )


class RankingContractError(ConnectorError):
    """A backend produced rows that break the ranking contract (a bug in the backend)."""


class GroundingError(ConnectorError):
    """An answer or document is not grounded in the supplied passages or corpus."""


class UnservedItemError(GroundingError):
    """A backend returned an item it was never given (a passage, a document): refused and not named, since it may
    be one the caller may not read."""

    def __init__(self, backend: str, what: str, count: int = 1) -> None:
        self.backend = backend
        super().__init__(
            f"{backend} returned {count} {what}(s) it was never given: expected only the supplied ones (a backend "
            "that ranks, cites or returns anything else is refused, as it could be something the caller may not read)"
        )


class SqlSafetyError(ConnectorError):
    """Generated or supplied SQL failed the safety guard; nothing was executed."""


class DeadlineExceededError(ConnectorError):
    """An operation ran past its time limit and was stopped."""


class RemoteServiceError(ConnectorError):
    """A remote engine refused the connection, answered with an HTTP error, or sent a body we cannot read."""

    def __init__(self, option: str, url: str, problem: str, *, status: int | None = None) -> None:
        self.option = option
        self.url = url
        self.status = status
        super().__init__(
            f"option '{option}' points at {short_repr(url)}, which {problem}: "
            "expected a reachable server answering with a JSON response"
        )


class BackendUnavailableError(ConnectorError):
    """A backend needs an optional extra that is not installed."""

    def __init__(self, backend: str, extra: str, missing: str, *, distribution: str = "rag-integration") -> None:
        self.backend = backend
        self.extra = extra
        self.distribution = distribution
        super().__init__(
            f"backend '{backend}' needs the optional module '{missing}', which is not installed: "
            + install_hint(distribution, extra)
        )


OWN_DISTRIBUTION = "rag-integration"


def install_hint(distribution: str, extra: str) -> str:
    """How to install ``distribution``'s ``extra``. This package installs from its clone: the same name on PyPI
    belongs to another project, so a ``pip install`` by name would fetch a stranger's package."""
    if distribution == OWN_DISTRIBUTION:
        return f'uv sync --extra {extra} in the clone (or uv pip install ".[{extra}]" from it)'
    return f'pip install "{distribution}[{extra}]"'


class DatasetFormatError(ConnectorError):
    """An evaluation dataset file is missing or malformed; the message names the file, the line and what is expected."""

    def __init__(self, path: object, line: int | None, problem: str, expected: str) -> None:
        self.path = str(path)
        self.line = line
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"dataset file {where}: {problem}: expected {expected}")


class ContractVersionError(ConnectorError):
    """A backend's declared contract versions do not include its family's (or are not ``"MAJOR.MINOR"``)."""

    def __init__(self, backend: str, distribution: str, family: str, supported: Sequence[str], problem: str) -> None:
        self.backend = backend
        self.distribution = distribution
        super().__init__(
            f"backend {backend!r} (distribution {distribution}) {problem}: its family's contract is {family}, "
            f"the backend supports {list(supported)}"
        )


class UnknownProfileError(InvalidOptionError):
    """Option ``profile`` names a profile the selected backend does not declare."""

    def __init__(self, backend: str, value: object, declared: Sequence[str]) -> None:
        self.option = "profile"
        self.value = value
        self.declared = tuple(declared)
        ConnectorError.__init__(
            self,
            f"option 'profile' got {short_repr(value)}: backend {backend!r} declares the profiles "
            f"{', '.join(repr(name) for name in self.declared)}",
        )


class PluginError(ConnectorError):
    """A backend found through the ``mloda.feature_groups`` entry point group cannot be used as declared."""


class PluginImportError(PluginError):
    """An entry point's manifest failed to import or to build (a missing dependency is named with its extra)."""


class MalformedPluginError(PluginError):
    """An entry point's manifest, or a backend class in it, breaks what its family declares."""


class ArgumentError(ConnectorError):
    """An argument of an application call (``rag_integration.application``) is wrong. ``detail`` names arguments as
    ``{name}`` so each caller spells them its own way: Python by the parameter's name, the command line by its flag;
    a value quoted into it goes through ``quoted`` so its braces stay text."""

    def __init__(self, argument: str, detail: str) -> None:
        self.argument = argument
        self.detail = detail
        super().__init__(f"argument '{argument}': {self.spelled(str)}")

    def spelled(self, spell: Callable[[str], str]) -> str:
        """``detail`` with each ``{name}`` written as ``spell(name)``."""
        return self.detail.format_map(_Spelling(spell))

    @staticmethod
    def literal(text: str) -> str:
        """``text`` made safe to stand in ``detail`` as it is."""
        return text.replace("{", "{{").replace("}", "}}")

    @staticmethod
    def quoted(value: object) -> str:
        """``repr(value)`` made safe to stand in ``detail``."""
        return ArgumentError.literal(repr(value))


class _Spelling(dict[str, str]):
    def __init__(self, spell: Callable[[str], str]) -> None:
        super().__init__()
        self._spell = spell

    def __missing__(self, name: str) -> str:
        return self._spell(name)


class DuplicateBackendError(PluginError, PluginRegistryCollisionError):
    """Two backend classes claim one selector value in one family: mloda's registry collision, named by both sides."""


__all__ = [
    "ArgumentError",
    "BackendUnavailableError",
    "ConnectorError",
    "ContractVersionError",
    "DatasetFormatError",
    "DeadlineExceededError",
    "DuplicateBackendError",
    "DuplicateDocIdError",
    "GroundingError",
    "IndexMismatchError",
    "InvalidOptionError",
    "MalformedPluginError",
    "MissingOptionError",
    "PluginError",
    "PluginImportError",
    "RankingContractError",
    "RemoteServiceError",
    "SqlSafetyError",
    "UnknownBackendError",
    "UnknownOptionError",
    "UnknownProfileError",
    "UnsafePathError",
    "short_repr",
]
