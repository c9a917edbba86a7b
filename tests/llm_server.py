"""A deterministic OpenAI-compatible chat-completions server on 127.0.0.1, run in a thread of the test process.

``model`` maps the request's messages to the assistant's reply (a str), or to a ``Reply`` for a misbehaving
server; ``script`` replies come first, one per request, for retry tests. Every request is recorded with its headers.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rag_integration.core.text.grounding import quotable_sentences


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    """Seconds between single bytes of the body (a server whose every read is fast but which never finishes)."""


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
    ).encode()


Model = Callable[[list[dict[str, Any]]], "str | Reply"]


class FakeChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: Model) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.model = model
        self.script: list[str | Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reset(self) -> None:
        """Forget scripted replies and recorded requests (before each test)."""
        self.script.clear()
        self.requests.clear()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (the deadline tests) closes its socket; anything else is worth printing."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ChatHandler(BaseHTTPRequestHandler):
    server: FakeChatServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if self.path != "/v1/chat/completions":
            return self.send(Reply(404, b'{"error": "not found"}'))
        answer = self.server.script.pop(0) if self.server.script else self.server.model(body["messages"])
        self.send(answer if isinstance(answer, Reply) else Reply(200, completion(answer)))

    def send(self, reply: Reply) -> None:
        time.sleep(reply.delay)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if "Content-Length" not in reply.headers:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if not reply.trickle:
            self.wfile.write(reply.body)
            return
        for position in range(len(reply.body)):
            self.wfile.write(reply.body[position : position + 1])
            self.wfile.flush()
            time.sleep(reply.trickle)


@contextmanager
def running(model: Model) -> Iterator[FakeChatServer]:
    """The server, serving from a thread until the block ends."""
    server = FakeChatServer(model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


PASSAGE_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def prompt_of(messages: list[dict[str, Any]]) -> tuple[list[str], str]:
    """The numbered passages and the question of the responder's prompt."""
    user = messages[-1]["content"]
    passages = [text for _, text in PASSAGE_LINE.findall(user.split("\n\nQuestion: ")[0])]
    return passages, user.rsplit("Question: ", 1)[1]


def quoting_model(messages: list[dict[str, Any]]) -> str:
    """A model that answers with the (up to three, distinct) sentences sharing most words with the question, each
    followed by its passage's number, or NO_ANSWER: deterministic, and exactly what the passages say."""
    passages, question = prompt_of(messages)
    picks: list[str] = []
    seen: set[str] = set()
    for sentence in quotable_sentences(question, passages):
        if sentence.score <= 0.0 or len(picks) == 3:
            break
        if sentence.text.casefold() not in seen:
            seen.add(sentence.text.casefold())
            picks.append(f"{sentence.text} [{sentence.source + 1}]")
    return " ".join(picks) or "NO_ANSWER"


def serve_module(model: Model, servers: dict[str, FakeChatServer]) -> Iterator[FakeChatServer]:
    """A module fixture's body: the running server, also as ``servers["chat"]`` for the kits' class methods."""
    with running(model) as server:
        servers["chat"] = server
        yield server
    servers.clear()
