"""R2R's retrieval/RAG API shape: answered by a live R2R server over HTTP, or replayed from a JSON fixture.

Fixture mode (the default) is for offline demos and tests of R2R's response shape: it replays answers recorded
for exact queries and refuses any other query with ``InvalidOptionError``; ``r2r_base_url`` asks a real server.

Each query is one ``POST /v3/retrieval/rag``; the response's ``results.generated_answer`` and
``results.search_results.chunk_search_results`` become the answer and the engine's hits. A chunk names its corpus
document through ``metadata[r2r_doc_id_field]`` (set when the corpus was ingested), else through its ``document_id``.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.deadline import within_deadline
from rag_integration.core.errors import ConnectorError, InvalidOptionError, RemoteServiceError, short_repr
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.orchestrator.base import (
    BaseOrchestratorConnector,
    EngineAnswer,
    EngineHit,
    OrchestratorRequest,
)
from rag_integration.feature_groups.connectors.orchestrator.r2r_transport import load_fixture, post_json

RAG_PATH = "/v3/retrieval/rag"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0  # an hour bounds one RAG call and keeps every socket timeout a finite, representable number
R2R_MAX_LIMIT = 1000  # R2R refuses a search_settings.limit above this
# R2R marks citations as [1] or with a short chunk id such as [e41ac2d]; the markers are not part of the quote.
CITATION_MARKER = re.compile(r"\s*\[(?:\d{1,3}|[0-9a-f]{7,8})(?:\s*,\s*(?:\d{1,3}|[0-9a-f]{7,8}))*\]")

ShapeError = Callable[[str], ConnectorError]


class R2RFixtureOrchestrator(BaseOrchestratorConnector):
    """``orchestrator_backend="r2r"``: a fixture file by default (``r2r_fixture``), a live server with ``r2r_base_url``."""

    BACKEND: ClassVar[str | None] = "r2r"
    OPTIONS: ClassVar[tuple[str, ...]] = ("r2r_base_url", "r2r_fixture", "r2r_timeout", "r2r_doc_id_field")

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        base_url = _read_base_url(reader)
        fixture = reader.path("r2r_fixture", default=None)
        if base_url is not None and fixture is not None:
            raise InvalidOptionError("r2r_fixture", str(fixture), "either r2r_fixture or r2r_base_url, not both")
        timeout = reader.number(
            "r2r_timeout", default=DEFAULT_TIMEOUT, minimum=0.0, exclusive_minimum=True, maximum=MAX_TIMEOUT
        )
        return {
            "base_url": base_url,
            "fixture": fixture,
            "timeout": timeout,
            "doc_id_field": reader.string("r2r_doc_id_field", default="doc_id"),
        }

    @classmethod
    def orchestrate(cls, request: OrchestratorRequest, settings: Mapping[str, Any]) -> list[EngineAnswer]:
        if settings["base_url"] is not None:
            url = settings["base_url"].rstrip("/") + RAG_PATH
            fail = _server_error(url)
            limit = min(request.top_k, R2R_MAX_LIMIT)
            payloads = [_ask_server(url, query, limit, settings["timeout"]) for query in request.queries]
        else:
            fail = _fixture_error(settings["fixture"])
            recorded = load_fixture(settings["fixture"])
            missing = [query for query in request.queries if query not in recorded]
            if missing:
                raise InvalidOptionError(
                    "query_text",
                    missing[0],
                    f"in fixture mode, one of the queries recorded in {_fixture_name(settings['fixture'])} "
                    f"({short_repr(sorted(recorded))}); fixture mode only replays recorded answers, "
                    "set r2r_base_url to ask a live R2R server anything",
                )
            payloads = [recorded[query] for query in request.queries]
        return [read_rag_response(payload, settings["doc_id_field"], fail) for payload in payloads]


def _ask_server(url: str, query: str, limit: int, timeout: float) -> Any:
    """One RAG call, given the smaller of ``r2r_timeout`` and the time the request's ``deadline_ms`` leaves."""
    body = {"query": query, "search_settings": {"limit": limit}}
    return within_deadline(timeout, lambda seconds: post_json(url, body, seconds), "waiting for the R2R server")


def read_rag_response(payload: Any, doc_id_field: str, fail: ShapeError) -> EngineAnswer:
    """Map one R2R RAG response (``{"results": {"generated_answer", "search_results": {...}}}``) onto our terms."""
    results = payload.get("results") if isinstance(payload, Mapping) else None
    if not isinstance(results, Mapping):
        raise fail("has no 'results' object")
    answer = results.get("generated_answer")
    if not isinstance(answer, str):
        raise fail(f"results.generated_answer is {answer!r}, not a string")
    search = results.get("search_results", results)
    chunks = search.get("chunk_search_results") if isinstance(search, Mapping) else None
    if not isinstance(chunks, list):
        raise fail("results.search_results.chunk_search_results is not a list")
    hits = tuple(_chunk_hit(chunk, position, doc_id_field, fail) for position, chunk in enumerate(chunks))
    return EngineAnswer(CITATION_MARKER.sub("", answer).strip(), hits)


def _chunk_hit(chunk: Any, position: int, doc_id_field: str, fail: ShapeError) -> EngineHit:
    where = f"chunk_search_results[{position}]"
    if not isinstance(chunk, Mapping):
        raise fail(f"{where} is not an object")
    text, score, metadata = chunk.get("text"), chunk.get("score"), chunk.get("metadata") or {}
    if not isinstance(text, str):
        raise fail(f"{where}.text is not a string")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(_as_float(score)):
        raise fail(f"{where}.score is {short_repr(score)}, not a finite number")
    if not isinstance(metadata, Mapping):
        raise fail(f"{where}.metadata is not an object")
    doc_id = metadata.get(doc_id_field, chunk.get("document_id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise fail(f"{where} names no document: neither metadata.{doc_id_field} nor document_id is a str or int")
    return EngineHit(str(doc_id), text, float(score))


def _as_float(number: int | float) -> float:
    try:
        return float(number)
    except OverflowError:  # an int beyond the float range
        return math.inf


def _read_base_url(reader: OptionReader) -> str | None:
    base_url = reader.string("r2r_base_url", default=None)
    if base_url is None:
        return None
    try:
        parts = urllib.parse.urlsplit(base_url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:
        valid = False
    if not valid or parts.query or parts.fragment:
        raise InvalidOptionError("r2r_base_url", base_url, "an http(s) URL of an R2R server, e.g. http://host:7272")
    return str(base_url)


def _server_error(url: str) -> ShapeError:
    return lambda problem: RemoteServiceError("r2r_base_url", url, f"sent an R2R response whose {problem}")


def _fixture_name(path: Path | None) -> str:
    return str(path) if path is not None else "the shipped fixture"


def _fixture_error(path: Path | None) -> ShapeError:
    shown = _fixture_name(path)
    return lambda problem: InvalidOptionError("r2r_fixture", shown, f"R2R RAG responses, but one {problem}")
