"""R2R's retrieval/RAG API shape: answered by a live R2R server over HTTP, or replayed from a JSON fixture.

Fixture mode (the default) is for offline demos and tests of R2R's response shape: it replays answers recorded
for exact queries and refuses any other query with ``InvalidOptionError``; ``r2r_base_url`` asks a real server.

Each query is one ``POST /v3/retrieval/rag``; the response's ``results.generated_answer`` and
``results.search_results.chunk_search_results`` become the answer and the engine's hits. A chunk names its corpus
document through ``metadata[r2r_doc_id_field]`` (set when the corpus was ingested), else through its ``document_id``.

Each query's whole exchange (the HTTP call, parsing and grounding) runs under one ``r2r_timeout`` deadline, and an
answer with more than ``MAX_HITS`` chunks or a ``generated_answer`` longer than ``MAX_ANSWER_CHARS`` is refused.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.errors import ConnectorError, InvalidOptionError, RemoteServiceError, short_repr
from rag_integration.core.options import OptionReader, option, read_options
from rag_integration.core.remote.http import read_http_url
from rag_integration.core.text.grounding import citation_markers
from rag_integration.feature_groups.connectors.orchestrator.base import (
    BaseOrchestratorConnector,
    EngineAnswer,
    EngineHit,
    OrchestratorRequest,
)
from rag_integration.feature_groups.connectors.orchestrator.r2r_transport import QueryDeadline, load_fixture, post_json

RAG_PATH = "/v3/retrieval/rag"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0  # an hour bounds one RAG call and keeps every socket timeout a finite, representable number
R2R_MAX_LIMIT = 1000  # R2R refuses a search_settings.limit above this
MAX_HITS = R2R_MAX_LIMIT
"""Most chunks one answer may carry: R2R never returns more than its largest limit, so more is a broken answer."""
MAX_ANSWER_CHARS = 65_536
"""Longest ``generated_answer`` read: far above what an LLM writes for one query, and it bounds grounding's work."""
R2R_MARKER_IDS = r"\d{1,3}|[0-9a-f]{7,8}"
"""R2R marks citations as [1] or with a short chunk id such as [e41ac2d], several in one pair of brackets too."""
CITATION_MARKER = citation_markers(R2R_MARKER_IDS, listed=True, space_before=True)
"""R2R's markers with the whitespace before them, in grounding's one marker grammar: they are not part of the quote."""

ShapeError = Callable[[str], ConnectorError]


@dataclass(frozen=True)
class R2RSettings:
    """Where answers come from (a live server or a fixture), how long a query may take, and where doc_ids are."""

    base_url: str | None = option(
        "r2r_base_url",
        "string",
        "talk to this live R2R server instead of the fixture; no credentials, query or fragment (the same rule as "
        "`llm_base_url`)",
        default=None,
        shown_as="str, `http(s)://host[:port][/prefix]`",
    )
    timeout: float = option(
        "r2r_timeout",
        "number",
        "total time limit for each query: connecting, sending, reading the whole response, parsing it and "
        "grounding the answer",
        default=DEFAULT_TIMEOUT,
        minimum=0.0,
        maximum=MAX_TIMEOUT,
        exclusive_minimum=True,
        shown_as="finite number > 0 and <= 3600 (seconds)",
    )
    fixture: Path | None = option(
        "r2r_fixture",
        "path",
        "recorded R2R responses to replay (fixture mode): a regular file of at most 64 MiB (no FIFO, device or "
        "`/proc`, `/sys`, `/dev` file); none: the shipped fixture",
        default=None,
        shown_as="file path (non-empty str or `os.PathLike`)",
    )
    doc_id_field: str = option(
        "r2r_doc_id_field",
        "string",
        "the chunk metadata key that holds the corpus `doc_id`",
        default="doc_id",
        shown_as="non-empty str",
    )


class R2RFixtureOrchestrator(BaseOrchestratorConnector[R2RSettings]):
    """``orchestrator_backend="r2r"``: a fixture file by default (``r2r_fixture``), a live server with ``r2r_base_url``."""

    BACKEND: ClassVar[str | None] = "r2r"
    SETTINGS: ClassVar[type[Any] | None] = R2RSettings

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """R2R answers from the corpus it ingested, not the one a request hands it."""
        return {"engine_holds_its_own_corpus": True}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> R2RSettings:
        """The declared options, with the URL checked by the rule every HTTP client here follows."""
        declared = read_options(R2RSettings, reader)
        base_url = read_http_url(reader, "r2r_base_url", example="http://127.0.0.1:7272", required=False)
        if base_url is not None and declared.fixture is not None:
            raise InvalidOptionError(
                "r2r_fixture", str(declared.fixture), "either r2r_fixture or r2r_base_url, not both"
            )
        return dataclasses.replace(declared, base_url=base_url)

    @classmethod
    def orchestrate(cls, request: OrchestratorRequest, settings: R2RSettings) -> list[EngineAnswer]:
        ask = _asker(request, settings)
        return [ask(query, QueryDeadline.start(settings.timeout, query)) for query in request.queries]

    @classmethod
    def timed_answers(
        cls, request: OrchestratorRequest, settings: R2RSettings
    ) -> Iterator[tuple[EngineAnswer, Callable[[], None] | None]]:
        """One query at a time, so each query's deadline covers its exchange and its grounding."""
        ask = _asker(request, settings)
        for query in request.queries:
            deadline = QueryDeadline.start(settings.timeout, query)
            yield ask(query, deadline), deadline.check


def _asker(request: OrchestratorRequest, settings: R2RSettings) -> Callable[[str, QueryDeadline], EngineAnswer]:
    """How one query is answered: a POST to the live server, or its recording (every query checked up front)."""
    doc_id_field = settings.doc_id_field
    if settings.base_url is not None:
        url = settings.base_url.rstrip("/") + RAG_PATH
        body = {"search_settings": {"limit": min(request.top_k, R2R_MAX_LIMIT)}}
        server_error = _server_error(url)
        return lambda query, deadline: read_rag_response(
            post_json(url, {"query": query, **body}, deadline), doc_id_field, server_error, deadline.check
        )
    recorded = load_fixture(settings.fixture)
    missing = [query for query in request.queries if query not in recorded]
    if missing:
        raise InvalidOptionError(
            "query_text",
            missing[0],
            f"in fixture mode, one of the queries recorded in {_fixture_name(settings.fixture)} "
            f"({short_repr(sorted(recorded))}); fixture mode only replays recorded answers, "
            "set r2r_base_url to ask a live R2R server anything",
        )
    fixture_error = _fixture_error(settings.fixture)
    return lambda query, deadline: read_rag_response(recorded[query], doc_id_field, fixture_error, deadline.check)


def read_rag_response(
    payload: object, doc_id_field: str, fail: ShapeError, check_time: Callable[[], None] | None = None
) -> EngineAnswer:
    """Map one R2R RAG response (``{"results": {"generated_answer", "search_results": {...}}}``) onto our terms;
    more than ``MAX_HITS`` chunks or an answer over ``MAX_ANSWER_CHARS`` is refused through ``fail``."""
    results = payload.get("results") if isinstance(payload, Mapping) else None
    if not isinstance(results, Mapping):
        raise fail("has no 'results' object")
    answer = results.get("generated_answer")
    if not isinstance(answer, str):
        raise fail(f"results.generated_answer is {short_repr(answer)}, not a string")
    if len(answer) > MAX_ANSWER_CHARS:
        raise fail(f"results.generated_answer has {len(answer)} characters, more than the {MAX_ANSWER_CHARS} read")
    search = results.get("search_results", results)
    chunks = search.get("chunk_search_results") if isinstance(search, Mapping) else None
    if not isinstance(chunks, list):
        raise fail("results.search_results.chunk_search_results is not a list")
    if len(chunks) > MAX_HITS:
        raise fail(f"results.search_results.chunk_search_results has {len(chunks)} chunks, more than R2R's {MAX_HITS}")
    hits = []
    for position, chunk in enumerate(chunks):
        if check_time is not None:
            check_time()
        hits.append(_chunk_hit(chunk, position, doc_id_field, fail))
    return EngineAnswer(CITATION_MARKER.sub("", answer).strip(), tuple(hits))


def _chunk_hit(chunk: object, position: int, doc_id_field: str, fail: ShapeError) -> EngineHit:
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


def _server_error(url: str) -> ShapeError:
    return lambda problem: RemoteServiceError("r2r_base_url", url, f"sent an R2R response whose {problem}")


def _fixture_name(path: Path | None) -> str:
    return str(path) if path is not None else "the shipped fixture"


def _fixture_error(path: Path | None) -> ShapeError:
    shown = _fixture_name(path)
    return lambda problem: InvalidOptionError("r2r_fixture", shown, f"R2R RAG responses, but one {problem}")
