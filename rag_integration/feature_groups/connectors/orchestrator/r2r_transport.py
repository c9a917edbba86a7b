"""How the R2R backend reaches its answers: a JSON POST to a live server (stdlib only), or a recorded fixture file.

Every failure becomes a typed error: a server that has not answered in full by the query's ``QueryDeadline``
``DeadlineExceededError``, anything else from the server ``RemoteServiceError``, an unreadable fixture
``InvalidOptionError`` on ``r2r_fixture``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rag_integration.core.deadline import Budget, current_deadline
from rag_integration.core.documents.files import read_named_file
from rag_integration.core.errors import (
    ConnectorError,
    DeadlineExceededError,
    InvalidOptionError,
    RemoteServiceError,
    short_repr,
)
from rag_integration.core.remote.http import Endpoint, post

PACKAGE = "rag_integration.feature_groups.connectors.orchestrator"
FIXTURE_SHAPE = 'a JSON file {"exchanges": [{"request": {"query": str}, "response": R2R RAG response}]}'
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""Largest response body read from a server; a 1000-chunk R2R answer is a few MB, so more is refused."""
MAX_FIXTURE_BYTES = 64 * 1024 * 1024
"""Largest ``r2r_fixture`` file read: room for many recorded answers, while ``/dev/zero`` or a huge file is refused."""


@dataclass(frozen=True)
class QueryDeadline:
    """One query's time limit: ``r2r_timeout``, or the time ``deadline_ms`` leaves when that ends first
    (``Deadline.budget``). Connecting, sending, reading the response, parsing it and grounding the answer all count
    against it, so nothing a server sends can keep the request running past it."""

    budget: Budget
    query: str

    @classmethod
    def start(cls, seconds: float, query: str) -> QueryDeadline:
        request = current_deadline()
        request.check(f"before the R2R server was asked {short_repr(query)}")
        return cls(request.budget(seconds, "r2r_timeout"), query)

    @property
    def seconds(self) -> float:
        return self.budget.seconds

    @property
    def at(self) -> float:
        return self.budget.ends

    def check(self) -> None:
        """Raise ``DeadlineExceededError`` once the time is up; called between steps of the work after the read."""
        if self.budget.seconds_left() <= 0:
            raise self.exceeded()

    def exceeded(self) -> DeadlineExceededError:
        return self.budget.exceeded(
            f"before the R2R answer to {short_repr(self.query)} had been received and checked",
            "a server that answers in time (r2r_timeout covers connecting, sending, reading the whole response, "
            "parsing it and grounding the answer in the corpus)",
        )


def post_json(url: str, body: Mapping[str, Any], deadline: QueryDeadline) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer, all before ``deadline``
    (``core.remote.http``: direct connection, no redirects, size-capped)."""
    endpoint = Endpoint(url, "r2r_base_url", "r2r_timeout", deadline.seconds, "R2R server")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    data = json.dumps(body).encode("utf-8")
    try:
        reply = post(endpoint, data, headers, deadline=deadline.at, max_bytes=MAX_RESPONSE_BYTES)
    except DeadlineExceededError as error:
        raise deadline.exceeded() from error
    if not 200 <= reply.status < 300:
        detail = reply.body[:300].decode("utf-8", "replace")
        problem = f"answered HTTP {reply.status} {short_repr(detail)}"
        raise RemoteServiceError("r2r_base_url", url, problem, status=reply.status)
    deadline.check()
    try:
        return json.loads(reply.body)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser can follow
        raise RemoteServiceError(
            "r2r_base_url", url, f"sent a body that is not JSON: {short_repr(reply.body)}"
        ) from None


def load_fixture(path: Path | None) -> dict[str, Any]:
    """Recorded responses keyed by query: from ``path``, or the fixture shipped inside this package."""
    option_value = str(path) if path is not None else "(the shipped fixture)"
    try:
        if path is None:
            text = resources.files(PACKAGE).joinpath("fixtures", "r2r_rag_response.json").read_text("utf-8")
        else:
            text = read_named_file(path, "r2r_fixture", MAX_FIXTURE_BYTES).decode("utf-8")
        exchanges = json.loads(text)["exchanges"]
        responses = {exchange["request"]["query"]: exchange["response"] for exchange in exchanges}
    except ConnectorError:  # the file reader's own typed refusal (not a regular file, too large) already names it
        raise
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} ({error!r})") from error
    if len(responses) != len(exchanges) or not all(isinstance(query, str) for query in responses):
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} with one exchange per query string")
    return responses
