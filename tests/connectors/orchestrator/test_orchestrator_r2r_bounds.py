"""R2R's bounds on what a server sends: one deadline over the exchange, parsing and grounding; caps on chunks and on
the answer; grounding linear in the body (a large valid body, long whitespace runs, nested markers).

Bodies are generated here and served by a loopback ``http.server`` (127.0.0.1, port 0) that these tests start and
stop; each query names the body to send.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_integration.core import deadline as deadline_module
from rag_integration.core.deadline import Deadline, deadline_scope
from rag_integration.core.errors import DeadlineExceededError, RemoteServiceError
from rag_integration.core.text.grounding import quote_form
from rag_integration.feature_groups.connectors.orchestrator import R2RFixtureOrchestrator
from rag_integration.feature_groups.connectors.orchestrator import base as orchestrator_base
from rag_integration.feature_groups.connectors.orchestrator.r2r_orchestrator import MAX_ANSWER_CHARS, MAX_HITS
from rag_integration.feature_groups.connectors.orchestrator.r2r_transport import QueryDeadline
from rag_integration.testing.runner import run_feature


class BodyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), BodyHandler)
        self.bodies: dict[str, bytes] = {}
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class BodyHandler(BaseHTTPRequestHandler):
    server: BodyServer

    def do_POST(self) -> None:
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["query"]
        payload = self.server.bodies[query]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def server() -> Iterator[BodyServer]:
    body_server = BodyServer()
    thread = threading.Thread(target=body_server.serve_forever, daemon=True)
    thread.start()
    yield body_server
    body_server.shutdown()
    body_server.server_close()
    thread.join(timeout=10)


def rag_body(answer: str, chunks: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {"results": {"generated_answer": answer, "search_results": {"chunk_search_results": chunks}}}
    ).encode()


def hit(doc_id: str, text: str, score: float) -> dict[str, Any]:
    return {"text": text, "score": score, "metadata": {"doc_id": doc_id}}


def ask(server: BodyServer, query: str, body: bytes, corpus: list[dict[str, str]], **options: Any) -> list[Any]:
    server.bodies[query] = body
    options = {
        "orchestrator_backend": "r2r",
        "r2r_base_url": server.url,
        "query_text": query,
        "corpus": corpus,
        **options,
    }
    return run_feature("orchestrated_answer", options, {R2RFixtureOrchestrator})


def document_text(number: int, sentences: int) -> str:
    return " ".join(f"Document {number} sentence {i} tells about engine oil and filters." for i in range(sentences))


def test_a_large_valid_body_is_read_and_grounded(server: BodyServer) -> None:
    """About 3 MB: the most chunks R2R sends, each a long verbatim part of its document, and an answer near the cap
    quoted from the best document; all of it is grounded well inside the deadline."""
    corpus = [{"doc_id": f"d{number:04d}", "text": document_text(number, 50)} for number in range(MAX_HITS)]
    chunks = [
        hit(document["doc_id"], document["text"].split(" ", 6)[6], 1.0 - number / MAX_HITS)
        for number, document in enumerate(corpus)
    ]
    first = corpus[0]["text"]
    answer = first[: first.rfind(".", 0, MAX_ANSWER_CHARS - 100) + 1] + " [1]"
    body = rag_body(answer, chunks)
    assert len(body) > 3_000_000
    [row] = ask(server, "large", body, corpus, top_k=3, r2r_timeout=120.0)
    assert [passage["doc_id"] for passage in row["documents"]] == ["d0000", "d0001", "d0002"]
    assert row["answer"] == answer.removesuffix(" [1]")


def test_more_chunks_than_r2r_sends_is_refused(server: BodyServer) -> None:
    corpus = [{"doc_id": "a", "text": "Oil."}]
    body = rag_body("", [hit("a", "Oil.", 1.0)] * (MAX_HITS + 1))
    with pytest.raises(RemoteServiceError, match=f"has {MAX_HITS + 1} chunks, more than R2R's {MAX_HITS}"):
        ask(server, "too many chunks", body, corpus)


def test_an_answer_over_the_cap_is_refused(server: BodyServer) -> None:
    corpus = [{"doc_id": "a", "text": "Oil."}]
    body = rag_body("Oil. " * (MAX_ANSWER_CHARS // 5 + 1), [hit("a", "Oil.", 1.0)])
    with pytest.raises(RemoteServiceError, match=f"more than the {MAX_ANSWER_CHARS} read"):
        ask(server, "long answer", body, corpus)


def test_the_deadline_covers_grounding(server: BodyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body arrives at once; grounding it is made slow, and the same r2r_timeout stops it with a typed error."""
    real_quote_form = orchestrator_base.quote_form

    def slow_quote_form(text: str) -> str:
        threading.Event().wait(0.05)
        return real_quote_form(text)

    monkeypatch.setattr(orchestrator_base, "quote_form", slow_quote_form)
    corpus = [{"doc_id": f"d{number}", "text": f"Fact {number}. More {number}."} for number in range(40)]
    body = rag_body("", [hit(f"d{number}", f"More {number}.", 1.0) for number in range(40)])
    with pytest.raises(DeadlineExceededError, match=r"r2r_timeout.*grounding"):
        ask(server, "slow grounding", body, corpus, r2r_timeout=0.5)


def test_long_whitespace_runs_and_nested_markers_stay_linear(server: BodyServer) -> None:
    """A megabyte of spaces in a chunk and nested marker-like brackets once took time quadratic in their length."""
    text = "Oil " + " " * 1_000_000 + "wears out." + " x" + "[1" * 20_000 + "]" * 20_000 + " done."
    corpus = [{"doc_id": "a", "text": text}]
    answer = "Oil " + " " * 30_000 + "wears out."
    [row] = ask(server, "spaces", rag_body(answer, [hit("a", text[:1_000_016], 1.0)]), corpus)
    assert row["answer"] == answer and [passage["doc_id"] for passage in row["documents"]] == ["a"]


def repeated_marker_removal(text: str) -> str:
    """The definition ``quote_form`` follows: remove marker-like ``[n]`` (and the whitespace before it) until none
    is left, then collapse whitespace; quadratic on nested brackets, so only for short texts."""
    removed = 1
    while removed:
        text, removed = re.subn(r"\s*\[\d+\]", "", text)
    return re.sub(r"\s+", " ", text).strip()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" [[]]12a\n\u00a0\u0663\x1c\u2028", max_size=16))
def test_quote_form_removes_nested_markers_in_one_pass_as_defined(text: str) -> None:
    assert quote_form(text) == repeated_marker_removal(text)
    long_text = (text + " word") * 400  # past the length where ASCII text with single spaces is not split
    assert quote_form(long_text) == repeated_marker_removal(long_text)


def test_a_nearer_deadline_ms_sets_the_query_deadline_and_its_error() -> None:
    """Each query's limit is the nearer of r2r_timeout and the request's time left, and errors name that option."""
    with deadline_scope(Deadline(limit_ms=200, started=deadline_module._clock())):
        bound = QueryDeadline.start(5.0, "q")
    assert 0 < bound.seconds <= 0.2 and "deadline_ms" in str(bound.exceeded())
    free = QueryDeadline.start(5.0, "q")
    assert free.seconds == 5.0 and re.search(r"r2r_timeout.*grounding", str(free.exceeded()))
