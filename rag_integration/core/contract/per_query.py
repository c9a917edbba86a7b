"""``on_error``: what one failing query does to its batch, the same for every family whose row is a record.

``"raise"`` (the default) fails the request with the query's typed error, as always. ``"row"`` answers the rest of
the batch: the failing query's row carries its family's empty answer and ``error`` (``"GroundingError: ..."``), every
other row ``error: None``. Only a ``ConnectorError`` raised while that one query was answered is kept in its row; a
spent ``deadline_ms`` and errors in the request's options still fail the request, since no later query could fare
better.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from rag_integration.core.contract.schema import STRING, Shape
from rag_integration.core.deadline import check_deadline
from rag_integration.core.errors import ConnectorError, DeadlineExceededError
from rag_integration.core.options import OptionReader, OptionSpec

T = TypeVar("T")

ON_ERROR_OPTION = "on_error"
ON_ERROR_CHOICES = ("raise", "row")
ON_ERROR: OptionSpec[str] = OptionSpec(
    ON_ERROR_OPTION,
    "choice",
    "`row`: a query that fails gets a row with `error` (typed class and message) and the rest of the batch is answered",
    default="raise",
    choices=ON_ERROR_CHOICES,
)


def describe_error(error: ConnectorError) -> str:
    """How a row names its failure: the typed error's class, then its message."""
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class ErrorPolicy:
    """The request's ``on_error`` choice; ``rows`` is True for ``"row"``."""

    rows: bool = False

    @classmethod
    def read(cls, reader: OptionReader) -> ErrorPolicy:
        return cls(ON_ERROR.read(reader) == "row")

    def shape(self, shape: Mapping[str, Shape]) -> dict[str, Shape]:
        """The row shape under this policy: ``error`` is added in row mode."""
        return {**shape, "error": STRING} if self.rows else dict(shape)

    def answer_each(
        self,
        items: Sequence[T],
        answer_one: Callable[[T], dict[str, Any]],
        failed: Callable[[], dict[str, Any]],
        what: str,
    ) -> list[dict[str, Any]]:
        """``answer_one`` over ``items`` in order, the deadline checked before each; ``failed()`` is the family's
        empty row a failing item gets in row mode (``what`` names an item in the deadline's message)."""
        rows = []
        for position, item in enumerate(items):
            check_deadline(f"before {what} {position + 1} of {len(items)} was answered")
            rows.append(self.answer_one(partial(answer_one, item), failed))
        return rows

    def answer_one(self, answer: Callable[[], dict[str, Any]], failed: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``answer()``, or in row mode the ``failed()`` row naming the typed error it raised."""
        if not self.rows:
            return answer()
        try:
            return {**answer(), "error": None}
        except DeadlineExceededError:
            raise
        except ConnectorError as error:
            return {**failed(), "error": describe_error(error)}
