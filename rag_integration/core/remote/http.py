"""One JSON POST over the stdlib, bounded by a deadline and a size cap: how every remote engine is reached.

Every socket read gets only the time left until the deadline, so a server that trickles its answer cannot outlast
it; the body is read in chunks and refused past ``max_bytes``; the connection is direct (no proxy from the
environment) and a redirect is just a status, so a request goes only where its URL says. Failures become typed
errors naming the option that holds the URL or the time limit.
"""

from __future__ import annotations

import http.client
import io
import socket
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, RemoteServiceError, short_repr
from rag_integration.core.options import OptionReader

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Endpoint:
    """Where a request goes and how its errors are worded: the URL, the option holding it, the option holding the
    time limit (``timeout`` seconds for the whole exchange) and the service's name as users know it."""

    url: str
    url_option: str
    timeout_option: str
    timeout: float
    service: str


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: bytes


class _DeadlineReader(io.RawIOBase):
    """Socket reads that each get only the time left until ``deadline``, so a trickling server cannot outlast it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
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
        def __init__(
            self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None
        ) -> None:
            super().__init__(sock, debuglevel, method, url)
            self.fp.close()
            self.fp = io.BufferedReader(_DeadlineReader(sock, deadline))

    return DeadlineResponse


@overload
def read_http_url(reader: OptionReader, option: str, *, example: str, required: Literal[True] = True) -> str: ...


@overload
def read_http_url(reader: OptionReader, option: str, *, example: str, required: Literal[False]) -> str | None: ...


def read_http_url(reader: OptionReader, option: str, *, example: str, required: bool = True) -> str | None:
    """The http(s) URL in ``option``: a host the connection can name (IDNA labels of at most 63 characters) and an
    optional path prefix, never credentials (they would be shown in every error and log naming the URL), a query
    or a fragment (a request path is appended to the URL, so either would end up in the wrong place)."""
    value: str | None = reader.string(option) if required else reader.string(option, default=None)
    if value is None:
        return None
    expected = f"an http(s) URL such as {example!r}, without credentials, query or fragment"
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        raise InvalidOptionError(option, value, expected) from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise InvalidOptionError(
            option, "(a URL with credentials, not shown)", f"{expected}: pass secrets through the environment"
        )
    if not value.isprintable() or parts.scheme not in ("http", "https") or not parts.hostname or parts.port == 0:
        raise InvalidOptionError(option, value, expected)
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        shown = parts._replace(query="", fragment="").geturl() + "?(query not shown)"
        raise InvalidOptionError(option, shown, expected)
    try:
        parts.hostname.encode("idna")
    except UnicodeError:
        raise InvalidOptionError(
            option, value, f"{expected}, naming a valid host (labels of 1 to 63 characters)"
        ) from None
    return value


def post(endpoint: Endpoint, data: bytes, headers: Mapping[str, str], *, deadline: float, max_bytes: int) -> HttpReply:
    """POST ``data`` to ``endpoint.url`` and read the whole reply before ``deadline`` (``time.monotonic``).

    Any status comes back as a reply; only a connection, deadline or size failure raises.
    """
    url = endpoint.url
    parts = urllib.parse.urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise late(endpoint)
    connection = connection_class(parts.hostname or "", parts.port, timeout=remaining)
    connection.response_class = _response_class(deadline)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    try:
        try:
            connection.connect()
        except TimeoutError as error:
            raise late(endpoint) from error
        except (OSError, UnicodeError, ValueError) as error:  # UnicodeError: a host name IDNA cannot encode
            raise RemoteServiceError(endpoint.url_option, url, f"could not be reached ({error})") from error
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("connecting used up the request's time")
            connection.sock.settimeout(remaining)
            connection.request("POST", path, body=data, headers=dict(headers))
            response = connection.getresponse()
            body = _read_body(response, endpoint, max_bytes)
        except TimeoutError as error:
            raise late(endpoint) from error
        except (OSError, http.client.HTTPException, UnicodeError, ValueError) as error:
            raise RemoteServiceError(endpoint.url_option, url, f"broke off its answer ({error!r})") from error
    finally:
        connection.close()
    return HttpReply(response.status, {name.lower(): value for name, value in response.getheaders()}, body)


def _read_body(response: http.client.HTTPResponse, endpoint: Endpoint, max_bytes: int) -> bytes:
    """The whole body in chunks, refusing one larger than ``max_bytes`` before or while reading it."""
    too_large = f"sent a response larger than {max_bytes} bytes"
    declared = response.getheader("Content-Length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise RemoteServiceError(endpoint.url_option, endpoint.url, too_large, status=response.status)
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(min(READ_CHUNK, max_bytes - size + 1)):
        size += len(chunk)
        if size > max_bytes:
            raise RemoteServiceError(endpoint.url_option, endpoint.url, too_large, status=response.status)
        chunks.append(chunk)
    return b"".join(chunks)


def late(endpoint: Endpoint) -> DeadlineExceededError:
    """The error for a request whose time limit ran out before the whole answer was read."""
    option = endpoint.timeout_option
    return DeadlineExceededError(
        f"option '{option}' ({endpoint.timeout} s) ran out before the {endpoint.service} at "
        f"{short_repr(endpoint.url)} had answered in full (the limit covers connecting, sending and reading the "
        f"whole response): expected a server that answers in time, or a larger {option}"
    )
