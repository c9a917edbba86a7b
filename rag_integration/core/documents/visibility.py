"""Who may read what: an item's ``readers`` (principal names, ``"*"`` for everyone) and a request's ``principals``.

Every family hands its backends only what the caller may read: a view of the data as if the hidden items had never
been given, so scores, statistics, neighbours and aggregates are computed from the visible items alone. Data that
carries no ``readers`` anywhere is not labelled, and every item of it is visible, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader, OptionSpec

T = TypeVar("T")
READERS = "readers"
"""The key of an item (a document's metadata, a graph node, a table row) naming who may read it."""
EVERYONE = "*"
MAX_PRINCIPAL_CHARS = 256
READERS_EXPECTED = (
    f"a list of principal names (non-empty strings of at most {MAX_PRINCIPAL_CHARS} characters, '*' for everyone)"
)

PRINCIPALS: OptionSpec[list[object] | None] = OptionSpec(
    "principals",
    "sequence",
    "the caller's names (user and groups): only items whose `readers` name one of them, or `*`, are used; required "
    "when the data carries `readers`",
    default=None,
    shown_as="list of str",
)
UNLABELLED: OptionSpec[str] = OptionSpec(
    "unlabelled",
    "choice",
    "in data that carries `readers`, who may read an item without them: `hidden` (nobody) or `public` (everyone)",
    default="hidden",
    choices=("hidden", "public"),
)


class PrincipalsRequiredError(MissingOptionError):
    """The data names its readers but the request does not say who is asking: answering anyway would use all of it."""


class InvalidReadersError(InvalidOptionError):
    """An item's ``readers`` is not a list of principal names."""


@dataclass(frozen=True)
class Visibility:
    """A request's principals (None when it names none) and whether unlabelled items of labelled data are public."""

    principals: frozenset[str] | None = None
    unlabelled_public: bool = False

    @classmethod
    def read(cls, reader: OptionReader) -> Visibility:
        raw = PRINCIPALS.read(reader)
        principals = None if raw is None else frozenset(_names(raw, PRINCIPALS.key))
        return cls(principals, UNLABELLED.read(reader) == "public")

    def visible(self, labels: Sequence[object] | Labels, option: str, *, labelled: bool = False) -> list[int] | None:
        """The positions of the items the caller may read, given each item's ``readers`` (``ABSENT`` where it has
        none) or their ``Labels``; None when no item has any (unlabelled data, all visible) unless ``labelled`` says
        other items of the same request have. ``option`` names the items in errors."""
        found = labels if isinstance(labels, Labels) else Labels.of(labels, option)
        if not (labelled or found.labelled):
            return None
        if self.principals is None:
            raise PrincipalsRequiredError(
                PRINCIPALS.key,
                f"the caller's principal names (a list of str, [] for only what is marked '{EVERYONE}'), as "
                f"'{option}' says who may read its items",
            )
        readable = np.array([self._may_read(label) for label in found.classes], dtype=bool)
        positions: list[int] = np.flatnonzero(readable[found.class_of]).tolist()
        return positions

    def _may_read(self, readers: tuple[str, ...] | None) -> bool:
        if readers is None:
            return self.unlabelled_public
        return EVERYONE in readers or (self.principals is not None and not self.principals.isdisjoint(readers))

    def visible_lists(self, lists: Sequence[Sequence[T]], labels: Callable[[T], object], option: str) -> list[list[T]]:
        """Each list of a request (one per query) cut to what the caller may read; the lists are one body of data,
        so one labelled item makes every list's unlabelled items hidden (or public, ``unlabelled``)."""
        labelled = any(labels(item) is not ABSENT for items in lists for item in items)
        if not labelled:
            return [list(items) for items in lists]
        cut = []
        for items in lists:
            positions = self.visible([labels(item) for item in items], option, labelled=True) or []
            cut.append([items[position] for position in positions])
        return cut


@dataclass(frozen=True)
class Labels:
    """Items' ``readers``, checked once: each distinct label (None for an item without one) and each item's label by
    number, so deciding what a set of principals may read costs one check per distinct label, not per item. A
    ``Corpus`` keeps its own."""

    classes: tuple[tuple[str, ...] | None, ...]
    class_of: npt.NDArray[np.int32]

    @property
    def labelled(self) -> bool:
        return any(label is not None for label in self.classes)

    @classmethod
    def of(cls, labels: Sequence[object], option: str) -> Labels:
        """The labels of items given as each one's ``readers`` (``ABSENT`` where it has none), each checked: one that
        is not a list of principal names is an ``InvalidReadersError`` naming its item."""
        if all(label is ABSENT for label in labels):  # unlabelled data, every request's case: nothing to number
            return cls((None,) if labels else (), np.zeros(len(labels), dtype=np.int32))
        number: dict[object, int] = {}
        classes: list[tuple[str, ...] | None] = []
        class_of = np.empty(len(labels), dtype=np.int32)
        for position, label in enumerate(labels):
            if label is ABSENT:
                key: object = ABSENT
            else:
                if hasattr(label, "tolist") and not isinstance(label, (str, bytes)):
                    label = label.tolist()  # a list column of a pandas or NumPy frame
                if not isinstance(label, (list, tuple)):
                    raise InvalidReadersError(f"{option}[{position}].{READERS}", label, READERS_EXPECTED)
                key = tuple(label)
            try:
                found = number.get(key)
            except TypeError:  # an unhashable name: not a string
                raise InvalidReadersError(f"{option}[{position}].{READERS}", label, READERS_EXPECTED) from None
            if found is None:
                checked = (
                    None
                    if key is ABSENT
                    else tuple(_names(label, f"{option}[{position}].{READERS}", InvalidReadersError))
                )
                found = number[key] = len(classes)
                classes.append(checked)
            class_of[position] = found
        return cls(tuple(classes), class_of)


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""The label of an item without ``readers``."""


def label_of(item: Mapping[str, Any]) -> object:
    """An item's ``readers`` as given, or ``ABSENT``."""
    return item.get(READERS, ABSENT)


def _names(value: object, option: str, error: type[InvalidOptionError] = InvalidOptionError) -> list[str]:
    """A list of principal names, checked: never a lone string read as its characters."""
    if not isinstance(value, (list, tuple)):
        raise error(option, value, READERS_EXPECTED)
    for name in value:
        if not isinstance(name, str) or not name or len(name) > MAX_PRINCIPAL_CHARS:
            raise error(option, value, READERS_EXPECTED)
    return list(value)


NO_PRINCIPALS = Visibility()
"""A request that names no principals: fine over unlabelled data, an error over labelled data."""
