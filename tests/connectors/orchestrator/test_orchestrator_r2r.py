"""The R2R orchestrator: the contract kit in fixture mode and against a live loopback server, and its failures.

The live server is ``http.server`` on 127.0.0.1 (port 0), started by these tests; it replays the shipped fixture's
R2R responses, honours ``search_settings.limit``, and has a few queries that misbehave on purpose.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.corpus import read_documents
from rag_integration.core.errors import (
    ConnectorError,
    DeadlineExceededError,
    GroundingError,
    InvalidOptionError,
    RankingContractError,
)
from rag_integration.core.remote.http import Endpoint, post
from rag_integration.core.text.sentences import split_sentences
from rag_integration.feature_groups.connectors.orchestrator import (
    BaseOrchestratorConnector,
    HaystackOrchestrator,
    OrchestratorRequest,
    R2RFixtureOrchestrator,
    RemoteServiceError,
    r2r_transport,
)
from rag_integration.feature_groups.connectors.orchestrator.r2r_orchestrator import CITATION_MARKER, MAX_TIMEOUT
from rag_integration.feature_groups.connectors.orchestrator.r2r_transport import MAX_RESPONSE_BYTES, load_fixture
from rag_integration.testing.orchestrator import CORPUS, KIT_QUERIES, TWINS, OrchestratorContractTests
from rag_integration.testing.runner import run_feature

RECORDED = load_fixture(None)


def rag_response(answer: str, chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"results": {"generated_answer": answer, "search_results": {"chunk_search_results": chunks}}}


def chunk(doc_id: str, text: str, score: Any, **extra: Any) -> dict[str, Any]:
    return {"id": f"chunk-{doc_id}", "document_id": f"uuid-{doc_id}", "score": score, "text": text, **extra}


ENGINE_TEXT = next(doc["text"] for doc in CORPUS if doc["doc_id"] == "engine")
ENGINE_FIRST = "Change the engine oil and the oil filter of the car every year."


class ReplayServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ReplayHandler)
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (the timeout test) closes its socket; anything else is a bug worth printing."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ReplayHandler(BaseHTTPRequestHandler):
    server: ReplayServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body})
        if self.path != "/v3/retrieval/rag":
            return self.reply(404, b'{"detail": "Not Found"}')
        misbehaviour = MISBEHAVIOURS.get(body["query"])
        if misbehaviour is not None:
            return misbehaviour(self)
        response = json.loads(json.dumps(RECORDED[body["query"]]))
        search = response["results"]["search_results"]
        search["chunk_search_results"] = search["chunk_search_results"][: body["search_settings"]["limit"]]
        return self.reply(200, json.dumps(response).encode())

    def reply(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def reply_late(self) -> None:
        self.server.release.wait(timeout=10)
        self.reply(200, json.dumps(rag_response("", [])).encode())

    def trickle_body(self) -> None:
        """Headers at once, then a valid R2R body one byte every 10 ms: each read is quick, the whole is not."""
        payload = json.dumps(rag_response("", [])).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.flush()
        for byte in payload:
            self.server.release.wait(timeout=0.01)
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def trickle_headers(self) -> None:
        """The status line and headers themselves one byte every 10 ms."""
        payload = json.dumps(rag_response("", [])).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(payload)}\r\n" + "X-Padding: slow\r\n" * 5 + "\r\n"
        for byte in head.encode() + payload:
            self.server.release.wait(timeout=0.01)
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
        self.close_connection = True

    def announce_huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(MAX_RESPONSE_BYTES + 1))
        self.end_headers()
        self.wfile.write(b'{"results": ')

    def stream_endless(self) -> None:
        """No Content-Length: the body runs until the connection closes, here well past the size cap."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        block = b" " * 65536
        for _ in range(MAX_RESPONSE_BYTES // len(block) + 64):
            self.wfile.write(block)
        self.close_connection = True

    def odd_length(self) -> None:
        """A Content-Length of "²" (byte 0xb2): a digit to str.isdigit, not to int; the body runs to the close."""
        self.send_response(200)
        self.send_header("Content-Length", "\u00b2")
        self.end_headers()
        self.wfile.write(json.dumps(rag_response("", [])).encode())
        self.close_connection = True

    def redirect(self) -> None:
        self.send_response(307)
        self.send_header("Location", f"{self.server.url}/v3/retrieval/rag")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


def json_reply(payload: Any) -> Callable[[ReplayHandler], None]:
    return lambda handler: handler.reply(200, json.dumps(payload).encode())


MISBEHAVIOURS: dict[str, Callable[[ReplayHandler], None]] = {
    "slow": ReplayHandler.reply_late,
    "trickle body": ReplayHandler.trickle_body,
    "trickle headers": ReplayHandler.trickle_headers,
    "announce huge": ReplayHandler.announce_huge,
    "stream endless": ReplayHandler.stream_endless,
    "status 500": lambda handler: handler.reply(500, b'{"detail": "Internal Server Error"}'),
    "status 503": lambda handler: handler.reply(503, b"Service Unavailable"),
    "status 401": lambda handler: handler.reply(401, b'{"detail": "Not authenticated"}'),
    "redirect": ReplayHandler.redirect,
    "odd length": ReplayHandler.odd_length,
    "malformed json": lambda handler: handler.reply(200, b'{"results": {"generated_answer": "x", '),
    "not r2r": json_reply({"answer": "hello"}),
    "score is text": json_reply(rag_response("", [chunk("engine", ENGINE_TEXT, "high")])),
    "unknown document": json_reply(rag_response("", [chunk("moon-base", "A base on the moon.", 0.9)])),
    "foreign text": json_reply(
        rag_response("", [chunk("engine", "Engines love cheap oil.", 0.9, metadata={"doc_id": "engine"})])
    ),
    "made-up answer": json_reply(
        rag_response("Oil never needs changing.", [chunk("engine", ENGINE_TEXT, 0.9, metadata={"doc_id": "engine"})])
    ),
    "rising scores": json_reply(
        rag_response(
            "",
            [
                chunk("engine", ENGINE_TEXT, 0.2, metadata={"doc_id": "engine"}),
                chunk("cat", CORPUS[0]["text"], 0.9, metadata={"doc_id": "cat"}),
            ],
        )
    ),
}


@pytest.fixture(scope="module")
def replay_server() -> Iterator[ReplayServer]:
    server = ReplayServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def ask(**options: Any) -> list[Any]:
    return run_feature("orchestrated_answer", {"orchestrator_backend": "r2r", **options}, {R2RFixtureOrchestrator})


def live(server: ReplayServer, query: str, **options: Any) -> list[Any]:
    return ask(r2r_base_url=server.url, query_text=query, corpus=CORPUS, **options)


class TestR2RFixtureContract(OrchestratorContractTests):
    """Fixture mode with no option at all: the fixture shipped in the package answers the kit's queries."""

    @classmethod
    def connector_class(cls) -> type[BaseOrchestratorConnector]:
        return R2RFixtureOrchestrator

    @classmethod
    def engine_holds_its_own_corpus(cls) -> bool:
        return True


class TestR2RLiveContract(OrchestratorContractTests):
    """Live mode: a real HTTP client of the loopback R2R server."""

    base_url: ClassVar[str] = ""

    @pytest.fixture(autouse=True)
    def _point_at_server(self, replay_server: ReplayServer) -> None:
        type(self).base_url = replay_server.url

    @classmethod
    def connector_class(cls) -> type[BaseOrchestratorConnector]:
        return R2RFixtureOrchestrator

    @classmethod
    def engine_holds_its_own_corpus(cls) -> bool:
        return True

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"r2r_base_url": cls.base_url, "r2r_timeout": 10.0}


def test_shipped_fixture_answers_every_kit_query() -> None:
    assert sorted(RECORDED) == sorted(KIT_QUERIES)


@pytest.mark.parametrize("query", KIT_QUERIES)
def test_shipped_fixture_is_what_its_about_field_says(query: str) -> None:
    """BM25 order of the Haystack pipeline, one sentence per chunk, the answer quoting the top document."""
    documents = read_documents(TWINS + CORPUS if query == "comets" else CORPUS, "corpus")
    [expected] = HaystackOrchestrator.orchestrate(OrchestratorRequest([query], documents, 10), {})
    results = RECORDED[query]["results"]
    chunks = results["search_results"]["chunk_search_results"]
    assert [chunk["metadata"]["doc_id"] for chunk in chunks] == [hit.doc_id for hit in expected.hits]
    text_of = {document.doc_id: document.text for document in documents}
    for chunk in chunks:
        assert chunk["text"] in split_sentences(text_of[chunk["metadata"]["doc_id"]])
    if chunks:
        answer = CITATION_MARKER.sub("", results["generated_answer"])
        assert answer in split_sentences(text_of[chunks[0]["metadata"]["doc_id"]])


def test_client_posts_r2r_rag_requests(replay_server: ReplayServer) -> None:
    replay_server.requests.clear()
    live(replay_server, "engine oil", top_k=3)
    assert replay_server.requests == [
        {"path": "/v3/retrieval/rag", "body": {"query": "engine oil", "search_settings": {"limit": 3}}}
    ]
    replay_server.requests.clear()
    live(replay_server, "engine oil", top_k=5000)
    assert replay_server.requests[0]["body"]["search_settings"] == {"limit": 1000}


def test_citation_markers_are_not_part_of_the_answer() -> None:
    assert "[" in RECORDED["engine oil"]["results"]["generated_answer"]
    [row] = ask(query_text="engine oil", corpus=CORPUS)
    assert row["answer"] == ENGINE_FIRST


@pytest.mark.parametrize("query", ["slow", "trickle body", "trickle headers"])
def test_r2r_timeout_limits_the_whole_request(replay_server: ReplayServer, query: str) -> None:
    """A server that trickles its answer (every single read is fast) still hits the one deadline."""
    with pytest.raises(DeadlineExceededError, match="r2r_timeout"):
        live(replay_server, query, r2r_timeout=0.2)


@pytest.mark.parametrize("query", ["announce huge", "stream endless"])
def test_oversized_responses_are_refused(replay_server: ReplayServer, query: str) -> None:
    with pytest.raises(RemoteServiceError, match=f"larger than {MAX_RESPONSE_BYTES} bytes"):
        live(replay_server, query)


def test_trickled_answers_within_the_deadline_are_read(replay_server: ReplayServer) -> None:
    [row] = live(replay_server, "trickle body", r2r_timeout=60.0)
    assert row == {"answer": "", "documents": []}


def test_the_largest_r2r_timeout_is_usable(replay_server: ReplayServer) -> None:
    """The documented maximum still fits every socket timeout (1e300 once overflowed inside urllib)."""
    [row] = live(replay_server, "engine oil", r2r_timeout=MAX_TIMEOUT)
    assert row["answer"] == ENGINE_FIRST


def test_fixture_mode_refuses_a_query_it_has_no_recording_for() -> None:
    with pytest.raises(InvalidOptionError, match="option 'query_text'") as caught:
        ask(query_text="how do I bake bread", corpus=CORPUS)
    message = str(caught.value)
    assert "fixture mode only replays recorded answers" in message and "r2r_base_url" in message
    assert "engine oil" in message


@pytest.mark.parametrize("status", [500, 503, 401])
def test_http_errors_raise_remote_service_error(replay_server: ReplayServer, status: int) -> None:
    with pytest.raises(RemoteServiceError, match=f"HTTP {status}") as caught:
        live(replay_server, f"status {status}")
    assert caught.value.status == status and caught.value.option == "r2r_base_url"


def test_wrong_path_and_redirects_are_errors(replay_server: ReplayServer) -> None:
    with pytest.raises(RemoteServiceError, match="HTTP 404"):
        ask(r2r_base_url=f"{replay_server.url}/elsewhere", query_text="engine oil", corpus=CORPUS)
    with pytest.raises(RemoteServiceError, match="HTTP 307"):
        live(replay_server, "redirect")


@pytest.mark.parametrize(
    ("query", "problem"),
    [("malformed json", "not JSON"), ("not r2r", "'results'"), ("score is text", "score")],
)
def test_unreadable_responses_raise_remote_service_error(replay_server: ReplayServer, query: str, problem: str) -> None:
    with pytest.raises(RemoteServiceError, match=problem):
        live(replay_server, query)


@pytest.mark.parametrize(
    ("query", "error", "problem"),
    [
        ("unknown document", GroundingError, "never given"),
        ("foreign text", GroundingError, "not in that document"),
        ("made-up answer", GroundingError, "none of the 1 returned documents"),
        ("rising scores", RankingContractError, "never increase"),
    ],
)
def test_ungrounded_answers_are_refused(
    replay_server: ReplayServer, query: str, error: type[Exception], problem: str
) -> None:
    with pytest.raises(error, match=problem):
        live(replay_server, query)


def test_refused_connection_raises_remote_service_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with pytest.raises(RemoteServiceError, match="could not be reached"):
        ask(r2r_base_url=f"http://127.0.0.1:{closed_port}", query_text="engine oil", corpus=CORPUS)


def test_a_content_length_that_is_no_number_is_ignored(replay_server: ReplayServer) -> None:
    assert live(replay_server, "odd length") == [{"answer": "", "documents": []}]


def test_a_host_idna_cannot_encode_is_a_remote_service_error() -> None:
    endpoint = Endpoint(f"http://{'a' * 64}.example/", "r2r_base_url", "r2r_timeout", 5.0, "R2R server")
    with pytest.raises(RemoteServiceError, match="could not be reached"):
        post(endpoint, b"{}", {}, deadline=time.monotonic() + 5.0, max_bytes=1024)


def test_credentials_in_the_base_url_are_refused_and_never_shown() -> None:
    with pytest.raises(InvalidOptionError, match="r2r_base_url") as caught:
        ask(r2r_base_url="http://user:hunter2@127.0.0.1:7272", query_text="engine oil", corpus=CORPUS)
    assert "hunter2" not in str(caught.value)


def test_a_fixture_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "r2r.json"
    os.mkfifo(fifo)
    with pytest.raises(InvalidOptionError, match="r2r_fixture"):
        ask(r2r_fixture=str(fifo), query_text="engine oil", corpus=CORPUS)


def test_a_fixture_past_the_size_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r2r_transport, "MAX_FIXTURE_BYTES", 16)
    path = write_fixture(tmp_path, {"engine oil": rag_response("", [])})
    with pytest.raises(InvalidOptionError, match="r2r_fixture"):
        ask(r2r_fixture=path, query_text="engine oil", corpus=CORPUS)


def write_fixture(folder: Path, responses: dict[str, Any]) -> str:
    path = folder / "r2r.json"
    exchanges = [{"request": {"query": query}, "response": response} for query, response in responses.items()]
    path.write_text(json.dumps({"exchanges": exchanges}), encoding="utf-8")
    return str(path)


def test_own_fixture_maps_chunks_onto_corpus_documents(tmp_path: Path) -> None:
    """Chunks name documents by metadata (or document_id); chunks of one document merge; ties go by doc_id."""
    corpus = [{"doc_id": "uuid-engine", "text": ENGINE_TEXT}, *CORPUS[:2], {"doc_id": "b", "text": "Twin."}]
    corpus.append({"doc_id": "a", "text": "Twin."})
    response = rag_response(
        f"{ENGINE_FIRST} [1]",
        [
            chunk("engine", ENGINE_FIRST, 0.9),
            chunk("engine", "Old oil wears the engine out.", 0.8),
            chunk("x", "The cat purrs", 0.5, metadata={"doc_id": "cat"}),
            chunk("y", "Twin.", 0.4, metadata={"doc_id": "b"}),
            chunk("z", "Twin.", 0.4, metadata={"doc_id": "a"}),
        ],
    )
    [row] = ask(r2r_fixture=write_fixture(tmp_path, {"engine oil": response}), query_text="engine oil", corpus=corpus)
    assert row["answer"] == ENGINE_FIRST
    assert [(p["doc_id"], p["score"], p["rank"]) for p in row["documents"]] == [
        ("uuid-engine", 0.9, 1),
        ("cat", 0.5, 2),
        ("a", 0.4, 3),
        ("b", 0.4, 4),
    ]
    assert row["documents"][0]["text"] == ENGINE_TEXT


def test_doc_id_field_option(tmp_path: Path) -> None:
    response = rag_response("", [chunk("x", ENGINE_FIRST, 0.7, metadata={"source_id": "engine"})])
    fixture = Path(write_fixture(tmp_path, {"oil": response}))
    [row] = ask(r2r_fixture=fixture, r2r_doc_id_field="source_id", query_text="oil", corpus=CORPUS)
    assert row == {"answer": "", "documents": [{"doc_id": "engine", "text": ENGINE_TEXT, "score": 0.7, "rank": 1}]}


@pytest.mark.parametrize(
    ("options", "option_name"),
    [
        ({"r2r_timeout": 0}, "r2r_timeout"),
        ({"r2r_timeout": -1.5}, "r2r_timeout"),
        ({"r2r_timeout": True}, "r2r_timeout"),
        ({"r2r_timeout": "5"}, "r2r_timeout"),
        ({"r2r_timeout": float("inf")}, "r2r_timeout"),
        ({"r2r_timeout": float("nan")}, "r2r_timeout"),
        ({"r2r_timeout": 1e300}, "r2r_timeout"),
        ({"r2r_timeout": MAX_TIMEOUT + 1}, "r2r_timeout"),
        ({"r2r_fixture": "   "}, "r2r_fixture"),
        ({"r2r_fixture": ["f.json"]}, "r2r_fixture"),
        ({"r2r_base_url": "ftp://127.0.0.1:7272"}, "r2r_base_url"),
        ({"r2r_base_url": "127.0.0.1:7272"}, "r2r_base_url"),
        ({"r2r_base_url": "http://127.0.0.1:7272/?x=1"}, "r2r_base_url"),
        ({"r2r_base_url": 7272}, "r2r_base_url"),
        ({"r2r_base_url": "http://127.0.0.1:port"}, "r2r_base_url"),
        ({"r2r_base_url": "http://[::1"}, "r2r_base_url"),
        ({"r2r_base_url": ""}, "r2r_base_url"),
        ({"r2r_base_url": "http://127.0.0.1:7272/#top"}, "r2r_base_url"),
        ({"r2r_base_url": f"http://{'a' * 64}.example:7272"}, "r2r_base_url"),
        ({"r2r_fixture": "/dev/zero"}, "r2r_fixture"),
        ({"r2r_fixture": 5}, "r2r_fixture"),
        ({"r2r_fixture": ""}, "r2r_fixture"),
        ({"r2r_fixture": "/nonexistent/r2r.json"}, "r2r_fixture"),
        ({"r2r_fixture": "f.json", "r2r_base_url": "http://127.0.0.1:1"}, "r2r_fixture"),
        ({"r2r_doc_id_field": ""}, "r2r_doc_id_field"),
        ({"query_text": "never recorded"}, "query_text"),
    ],
)
def test_bad_options_are_typed_errors(options: dict[str, Any], option_name: str) -> None:
    with pytest.raises(InvalidOptionError, match=option_name):
        ask(**{"query_text": "engine oil", "corpus": CORPUS, **options})


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        '{"exchanges": [{"request": {}}]}',
        '{"exchanges": [{"request": {"query": "oil"}, "response": {}}, {"request": {"query": "oil"}, "response": {}}]}',
        '{"exchanges": [{"request": {"query": "oil"}, "response": {"results": {"generated_answer": 3}}}]}',
    ],
)
def test_malformed_fixture_files_are_typed_errors(tmp_path: Path, content: str) -> None:
    path = tmp_path / "r2r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="r2r_fixture"):
        ask(r2r_fixture=str(path), query_text="oil", corpus=CORPUS)


def test_a_score_beyond_the_float_range_is_a_typed_error(tmp_path: Path) -> None:
    response = rag_response(f"{ENGINE_FIRST} [1]", [chunk("engine", ENGINE_FIRST, 0.9)])
    response["results"]["search_results"]["chunk_search_results"][0]["score"] = 10**400
    fixture = tmp_path / "huge.json"
    fixture.write_text(
        json.dumps({"exchanges": [{"request": {"query": "engine oil"}, "response": response}]}), encoding="utf-8"
    )
    corpus = [{"doc_id": "uuid-engine", "text": ENGINE_TEXT}]
    with pytest.raises(ConnectorError, match="score"):
        ask(r2r_fixture=str(fixture), query_text="engine oil", corpus=corpus)


def test_json_nested_past_the_parser_is_a_typed_error(tmp_path: Path) -> None:
    fixture = tmp_path / "deep.json"
    fixture.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="r2r_fixture"):
        ask(r2r_fixture=str(fixture), query_text="engine oil", corpus=CORPUS)
