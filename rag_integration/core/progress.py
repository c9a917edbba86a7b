"""Progress of the slow steps (embedding, index builds, evaluations): always logged, drawn as bars only when asked.

Every step is logged on the ``rag_integration`` logger (INFO when it starts and ends, with its duration), which
stays silent unless the application configures logging. Bars are drawn on stderr with rich when a request sets
``show_progress=True`` (off by default), and for every step inside ``progress_display()``, which the command line
opens so that all steps of a run share one display.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rag_integration.core.options import OptionSpec

if TYPE_CHECKING:
    from rich.progress import Progress

LOGGER = logging.getLogger("rag_integration")

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("rag_integration_show_progress", default=False)
_DISPLAY_LOCK = threading.Lock()
SHOW_PROGRESS: OptionSpec[bool] = OptionSpec(
    "show_progress", "boolean", "draw progress bars on stderr for this feature group's steps", default=False
)
_display: Progress | None = None
"""The rich ``Progress`` open in this process (shared by every thread), or None."""

Advance = Callable[[int], None]


@contextlib.contextmanager
def showing_progress(enabled: bool) -> Iterator[None]:
    """Draw bars for the steps inside (a request's ``show_progress`` option)."""
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


@contextlib.contextmanager
def progress_display(enabled: bool = True) -> Iterator[None]:
    """One live display on stderr for every step inside, nested or not; with ``enabled`` False, nothing is drawn."""
    if not enabled:
        yield
        return
    with _live_display():
        yield


@contextlib.contextmanager
def _live_display() -> Iterator[Progress]:
    global _display
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    console = Console(stderr=True, markup=False, highlight=False, emoji=False)
    display = Progress(*columns, console=console, transient=console.is_terminal)  # a terminal keeps the result only
    with _DISPLAY_LOCK:
        previous, _display = _display, display
    display.start()
    try:
        with showing_progress(True):
            yield display
    finally:
        display.stop()
        with _DISPLAY_LOCK:
            _display = previous


@contextlib.contextmanager
def step(description: str, total: int | None = None) -> Iterator[Advance]:
    """A slow step: logged, and drawn as a bar (``total`` known) or a spinner while progress is shown.

    Yields ``advance(n)``, to call as units of ``total`` complete.
    """
    LOGGER.info("%s ...", description)
    started = time.perf_counter()
    with _task(description, total) as advance:
        yield advance
    LOGGER.info("%s: done in %.1f s", description, time.perf_counter() - started)


@contextlib.contextmanager
def _task(description: str, total: int | None) -> Iterator[Advance]:
    if _display is None and not _ENABLED.get():
        yield _ignore
        return
    with contextlib.ExitStack() as stack:
        display = _display if _display is not None else stack.enter_context(_live_display())
        task = display.add_task(description, total=total)
        try:
            yield lambda done: display.advance(task, done)
        finally:
            if total is None:
                display.update(task, total=1, completed=1)
            else:
                display.update(task, completed=total)


def _ignore(done: int) -> None:
    """``advance`` when no bar is drawn."""
