"""``deadline_ms``: the time budget of one feature group's answer, checked between steps by every family.

A feature group opens the budget when it starts answering (``deadline_scope``); code anywhere below it calls
``check_deadline`` between batches, queries or hops, and time limits of a family's own (``sql_time_limit``,
``r2r_timeout``) are cut to the time left (``Deadline.budget``, ``within_deadline``) so the two never disagree.
Work inside one library call (a FAISS search, one SQL statement) is bounded by that library only where it lets us
interrupt it.

The budget is per feature group, not per ``run_all``: mloda 0.18 gives a feature group no handle on its run, and
options objects may be reused across runs, so no clock could safely be shared by the steps of one run. A chain of
steps therefore gets one budget per step (docs/options.md).
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from rag_integration.core.errors import DeadlineExceededError
from rag_integration.core.options import OptionReader, OptionSpec

T = TypeVar("T")

_clock = time.monotonic
"""The clock deadlines are measured on (a module attribute, so a test can make time pass)."""

DEADLINE_OPTION = "deadline_ms"
MAX_DEADLINE_MS = 7 * 24 * 3600 * 1000  # a week: keeps every derived socket timeout finite and representable
DEADLINE_MS: OptionSpec[int | None] = OptionSpec(
    DEADLINE_OPTION,
    "integer",
    "time budget of this feature group's answer (each step of a chain has its own): `DeadlineExceededError` past it",
    default=None,
    minimum=1,
    maximum=MAX_DEADLINE_MS,
    shown_as="int >= 1",
)


@dataclass(frozen=True)
class Deadline:
    """``limit_ms`` after ``started`` (``time.monotonic``); no limit when ``limit_ms`` is None."""

    limit_ms: int | None = None
    started: float = 0.0
    """When the budget opened, on ``_clock``."""

    @classmethod
    def read(cls, reader: OptionReader) -> Deadline:
        limit = DEADLINE_MS.read(reader)
        return cls(limit, _clock())

    @property
    def ends(self) -> float:
        return math.inf if self.limit_ms is None else self.started + self.limit_ms / 1000

    def seconds_left(self) -> float:
        """Time left (never negative); ``math.inf`` without a limit."""
        return max(0.0, self.ends - _clock())

    def binds(self, own_limit: float) -> bool:
        """True when this deadline, not a family's ``own_limit`` (seconds from now), ends first."""
        return self.seconds_left() < own_limit

    def budget(self, own_limit: float, own_option: str) -> Budget:
        """A piece of work held to a family's own time limit (``own_limit`` seconds from now, ``own_option``) and to
        this deadline: it ends at the nearer of the two, and runs out naming the option that set that end."""
        if self.binds(own_limit):
            return Budget(max(self.seconds_left(), 1e-3), self.ends, DEADLINE_OPTION, self)
        return Budget(own_limit, _clock() + own_limit, own_option, self)

    def check(self, step: str) -> None:
        """Raise ``DeadlineExceededError`` naming ``step`` once the budget is spent."""
        if _clock() > self.ends:
            raise self.exceeded(step)

    def exceeded(self, step: str) -> DeadlineExceededError:
        return DeadlineExceededError(
            f"option '{DEADLINE_OPTION}' ({self.limit_ms} ms) ran out {step}: "
            "expected the answer to finish in time; raise deadline_ms or ask for less"
        )


@dataclass(frozen=True)
class Budget:
    """The time one piece of work has (an R2R query, planning a SQL question): ``seconds`` long, over at ``ends``
    (on ``_clock``), set by ``option``, either ``deadline_ms`` or the family's own limit, whichever ends first."""

    seconds: float
    ends: float
    option: str
    deadline: Deadline
    """The feature group's ``deadline_ms``, which reports running out when it is the nearer limit."""

    def seconds_left(self) -> float:
        return max(0.0, self.ends - _clock())

    def check(self, step: str, expected: str = "") -> None:
        """Raise ``DeadlineExceededError`` naming ``step`` once the time is up."""
        if _clock() > self.ends:
            raise self.exceeded(step, expected)

    def exceeded(self, step: str, expected: str = "") -> DeadlineExceededError:
        """The error naming the option that ran out; ``expected`` says more about the family's own limit."""
        if self.option == DEADLINE_OPTION:
            return self.deadline.exceeded(step)
        return DeadlineExceededError(
            f"option '{self.option}' ({self.seconds} s) ran out {step}: "
            f"expected {expected or 'the work to finish in time'}, or a larger {self.option}"
        )


NO_DEADLINE = Deadline()
_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("rag_integration_deadline", default=None)


@contextmanager
def deadline_scope(deadline: Deadline) -> Iterator[Deadline]:
    """Make ``deadline`` the one ``check_deadline`` and ``current_deadline`` see until the block ends."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def current_deadline() -> Deadline:
    """The deadline of the feature group answering (unlimited outside one, e.g. on a Spark executor)."""
    return _CURRENT.get() or NO_DEADLINE


def check_deadline(step: str) -> None:
    """Raise ``DeadlineExceededError`` when the answering feature group's ``deadline_ms`` has passed."""
    current_deadline().check(step)


def within_deadline(own_limit: float, call: Callable[[float], T], step: str) -> T:
    """``call(limit)`` with the smaller of a family's own time limit (seconds) and the ``deadline_ms`` time left.

    When ``deadline_ms`` is the smaller one, a ``DeadlineExceededError`` from ``call`` is reported against
    ``deadline_ms`` (the option that actually ran out) instead of the family's own limit.
    """
    deadline = current_deadline()
    deadline.check(step)
    if not deadline.binds(own_limit):
        return call(own_limit)
    try:
        return call(max(deadline.seconds_left(), 0.001))
    except DeadlineExceededError as error:
        raise deadline.exceeded(step) from error
