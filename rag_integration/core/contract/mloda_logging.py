"""Keep mloda from logging a traceback for each of our typed errors.

When a feature group raises inside ``run_all``, mloda logs the traceback (type names and frames, no message) on
``mloda.core.runtime.run`` and then re-raises the exception itself. For a ``ConnectorError`` that log only repeats,
at ERROR level, what the caller already receives, so a filter on that one logger drops those records; every other
record, including tracebacks of real bugs (any other exception type), still gets through.
"""

from __future__ import annotations

import logging

from rag_integration.core.errors import ConnectorError

MLODA_RUN_LOGGER = "mloda.core.runtime.run"


class ConnectorErrorTracebackFilter(logging.Filter):
    """Drops a mloda failure record whose traceback ends in a ``ConnectorError`` subclass."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not isinstance(record.msg, str):
            return True
        lines = record.msg.rstrip().splitlines()
        if not lines or not lines[0].startswith("Traceback"):
            return True
        return lines[-1].strip() not in _connector_error_names()


def _connector_error_names() -> set[str]:
    names: set[str] = set()
    pending: list[type[ConnectorError]] = [ConnectorError]
    while pending:
        error = pending.pop()
        names.add(f"{error.__module__}.{error.__qualname__}")
        pending.extend(error.__subclasses__())
    return names


def quiet_connector_error_tracebacks() -> None:
    """Install the filter once on mloda's run logger (idempotent)."""
    logger = logging.getLogger(MLODA_RUN_LOGGER)
    if not any(isinstance(existing, ConnectorErrorTracebackFilter) for existing in logger.filters):
        logger.addFilter(ConnectorErrorTracebackFilter())
