"""The orchestrator family's one error beyond the shared set: a remote engine that failed to give a usable answer.

It lives here until the shared error module adopts it; it is a ``ConnectorError`` like every other.
"""

from __future__ import annotations

from rag_integration.core.errors import ConnectorError, short_repr


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
