"""How the R2R backend reaches its answers: a JSON POST to a live server (stdlib only), or a recorded fixture file.

Every failure becomes a typed error: a server that has not answered in full by the query's ``Deadline``
``DeadlineExceededError``, anything else from the server ``RemoteServiceError``, an unreadable fixture
``InvalidOptionError`` on ``r2r_fixture``.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, RemoteServiceError, short_repr

PACKAGE = "rag_integration.feature_groups.connectors.orchestrator"
FIXTURE_SHAPE = 'a JSON file {"exchanges": [{"request": {"query": str}, "response": R2R RAG response}]}'
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""Largest response body read from a server; a 1000-chunk R2R answer is a few MB, so more is refused."""
READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Deadline:
    """One query's ``r2r_timeout``: connecting, sending, reading the response, parsing it and grounding the answer
    all count against it, so nothing a server sends can keep the request running past it."""

    seconds: float
    at: float
    query: str

    @classmethod
    def start(cls, seconds: float, query: str) -> Deadline:
        return cls(seconds, time.monotonic() + seconds, query)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        """Raise ``DeadlineExceededError`` once the time is up; called between steps of the work after the read."""
        if self.remaining() <= 0:
            raise self.exceeded()

    def exceeded(self) -> DeadlineExceededError:
        return DeadlineExceededError(
            f"option 'r2r_timeout' ({self.seconds} s) ran out before the R2R answer to {short_repr(self.query)} had "
            "been received and checked (the limit covers connecting, sending, reading the whole response, parsing "
            "it and grounding the answer in the corpus): expected a server that answers in time, or a larger "
            "r2r_timeout"
        )


class _DeadlineReader(io.RawIOBase):
    """Socket reads that each get only the time left until ``deadline``, so a trickling server cannot outlast it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's deadline has passed")
        self._sock.settimeout(remaining)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _response_class(deadline: float) -> type[http.client.HTTPResponse]:
    """http.client's response reader, reading the status line, headers and body under one deadline."""

    class DeadlineResponse(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            self.fp.close()
            self.fp = io.BufferedReader(_DeadlineReader(sock, deadline))

    return DeadlineResponse


def post_json(url: str, body: Mapping[str, Any], deadline: Deadline) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer, all before ``deadline``.

    The connection is direct (no proxy) and a redirect is an error, so the query goes only where ``url`` says.
    """
    parts = urllib.parse.urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=max(deadline.remaining(), 1e-3))
    connection.response_class = _response_class(deadline.at)
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    try:
        try:
            connection.connect()
        except TimeoutError as error:
            raise deadline.exceeded() from error
        except OSError as error:
            raise RemoteServiceError("r2r_base_url", url, f"could not be reached ({error})") from error
        try:
            remaining = deadline.remaining()
            if remaining <= 0:
                raise TimeoutError("connecting used up the request's time")
            connection.sock.settimeout(remaining)
            connection.request("POST", parts.path or "/", body=data, headers=headers)
            response = connection.getresponse()
            raw = _read_body(response, url)
        except TimeoutError as error:
            raise deadline.exceeded() from error
        except (OSError, http.client.HTTPException) as error:
            raise RemoteServiceError("r2r_base_url", url, f"broke off its answer ({error!r})") from error
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        detail = raw[:300].decode("utf-8", "replace")
        problem = f"answered HTTP {response.status} {short_repr(detail)}"
        raise RemoteServiceError("r2r_base_url", url, problem, status=response.status)
    deadline.check()
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser can follow
        raise RemoteServiceError("r2r_base_url", url, f"sent a body that is not JSON: {short_repr(raw)}") from None


def _read_body(response: http.client.HTTPResponse, url: str) -> bytes:
    """The whole body in chunks, refusing one larger than ``MAX_RESPONSE_BYTES`` before or while reading it."""
    too_large = f"sent a response larger than {MAX_RESPONSE_BYTES} bytes"
    declared = response.getheader("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise RemoteServiceError("r2r_base_url", url, too_large, status=response.status)
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(READ_CHUNK):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise RemoteServiceError("r2r_base_url", url, too_large, status=response.status)
        chunks.append(chunk)
    return b"".join(chunks)


def load_fixture(path: Path | None) -> dict[str, Any]:
    """Recorded responses keyed by query: from ``path``, or the fixture shipped inside this package."""
    option_value = str(path) if path is not None else "(the shipped fixture)"
    try:
        if path is None:
            text = resources.files(PACKAGE).joinpath("fixtures", "r2r_rag_response.json").read_text("utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        exchanges = json.loads(text)["exchanges"]
        responses = {exchange["request"]["query"]: exchange["response"] for exchange in exchanges}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} ({error!r})") from error
    if len(responses) != len(exchanges) or not all(isinstance(query, str) for query in responses):
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} with one exchange per query string")
    return responses
