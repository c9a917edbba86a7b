"""How the R2R backend reaches its answers: a JSON POST to a live server (stdlib only), or a recorded fixture file.

Every failure becomes a typed error: a late server ``DeadlineExceededError``, anything else from the server
``RemoteServiceError``, an unreadable fixture ``InvalidOptionError`` on ``r2r_fixture``.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import IO, Any

from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, RemoteServiceError, short_repr

PACKAGE = "rag_integration.feature_groups.connectors.orchestrator"
FIXTURE_SHAPE = 'a JSON file {"exchanges": [{"request": {"query": str}, "response": R2R RAG response}]}'


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect could send the query to another host; it is reported as an HTTP error instead."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        return None


# Direct connections only: proxy environment variables are ignored, so the request goes where r2r_base_url says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _RefuseRedirects())


def post_json(url: str, body: Mapping[str, Any], timeout: float) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as error:
        with error:
            detail = error.read(300).decode("utf-8", "replace")
        problem = f"answered HTTP {error.code} {short_repr(detail)}"
        raise RemoteServiceError("r2r_base_url", url, problem, status=error.code) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise _late(url, timeout) from error
        raise RemoteServiceError("r2r_base_url", url, f"could not be reached ({error.reason})") from error
    except TimeoutError as error:
        raise _late(url, timeout) from error
    except (OSError, http.client.HTTPException) as error:
        raise RemoteServiceError("r2r_base_url", url, f"broke off its answer ({error!r})") from error
    try:
        return json.loads(raw)
    except ValueError:
        raise RemoteServiceError("r2r_base_url", url, f"sent a body that is not JSON: {short_repr(raw)}") from None


def _late(url: str, timeout: float) -> DeadlineExceededError:
    return DeadlineExceededError(
        f"option 'r2r_timeout' ({timeout} s) ran out before the R2R server at {short_repr(url)} answered: "
        "expected a server that answers in time, or a larger r2r_timeout"
    )


def load_fixture(path: str | None) -> dict[str, Any]:
    """Recorded responses keyed by query: from ``path``, or the fixture shipped inside this package."""
    option_value = path if path is not None else "(the shipped fixture)"
    try:
        if path is None:
            text = resources.files(PACKAGE).joinpath("fixtures", "r2r_rag_response.json").read_text("utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        exchanges = json.loads(text)["exchanges"]
        responses = {exchange["request"]["query"]: exchange["response"] for exchange in exchanges}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} ({error!r})") from error
    if len(responses) != len(exchanges) or not all(isinstance(query, str) for query in responses):
        raise InvalidOptionError("r2r_fixture", option_value, f"{FIXTURE_SHAPE} with one exchange per query string")
    return responses
