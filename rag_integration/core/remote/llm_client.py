"""One client for every OpenAI-compatible chat-completions server (Ollama, llama.cpp's server, vLLM, hosted APIs).

It sends one ``POST {llm_base_url}/chat/completions`` at temperature 0 with a fixed seed, retries a 429 or 5xx with
backoff (honouring ``Retry-After``) only while ``llm_timeout`` allows, reads at most ``MAX_RESPONSE_BYTES`` and
returns ``choices[0].message.content``. The API key is read from the environment variable that ``llm_api_key_env``
names at the moment of sending; it is never stored in the settings, and any text that goes into an error or a log
line has it masked first.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_integration.core.deadline import within_deadline
from rag_integration.core.errors import DeadlineExceededError, InvalidOptionError, RemoteServiceError, short_repr
from rag_integration.core.options import OptionReader, option, option_specs, read_options
from rag_integration.core.remote.http import Endpoint, HttpReply, late, post, read_http_url

LOG = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
DEFAULT_MAX_TOKENS = 512
DEFAULT_SEED = 0
DEFAULT_MAX_RETRIES = 3
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""Largest reply read from a server; a chat completion of a few thousand tokens is a few kB."""
FIRST_BACKOFF = 0.25
MAX_BACKOFF = 8.0
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)

Message = Mapping[str, str]

SECRET_OPTIONS: Mapping[str, str] = {"llm_api_key_env": "env"}
"""What a backend asking this client declares secret: the variable ``llm_api_key_env`` names holds the key."""


@dataclass(frozen=True)
class LlmSettings:
    """Where and how to ask; ``api_key_env`` is the *name* of the variable holding the key, never the key."""

    base_url: str = option(
        "llm_base_url",
        "string",
        "the server's OpenAI-compatible base (`.../v1`); `/chat/completions` is appended. No credentials, query or "
        "fragment in the URL, and a host name that can be encoded (labels of at most 63 characters)",
        shown_as="http(s) URL",
    )
    model: str = option("llm_model", "string", "the model name the server knows")
    api_key_env: str | None = option(
        "llm_api_key_env",
        "string",
        "the *name* of an environment variable holding the API key, sent as `Authorization: Bearer ...`. The key is "
        "read when the request is sent, never stored in options or settings, and masked (`***`) in any error or log "
        "text, even when a server echoes it",
        default=None,
    )
    timeout: float = option(
        "llm_timeout",
        "number",
        "seconds for the whole request: connecting, sending, reading, and every retry and pause; past it, "
        "`DeadlineExceededError`",
        default=DEFAULT_TIMEOUT,
        minimum=0.0,
        maximum=MAX_TIMEOUT,
        exclusive_minimum=True,
        shown_as="number > 0, at most 3600",
    )
    max_tokens: int = option(
        "llm_max_tokens", "integer", "the reply's token limit", default=DEFAULT_MAX_TOKENS, minimum=1, maximum=1_000_000
    )
    temperature: float = option(
        "llm_temperature",
        "number",
        "sampling temperature; 0 (with the fixed seed) for answers that repeat",
        default=0.0,
        minimum=0.0,
        maximum=2.0,
    )
    seed: int = option(
        "llm_seed", "integer", "the seed sent with every request", default=DEFAULT_SEED, minimum=0, maximum=2**31 - 1
    )
    max_retries: int = option(
        "llm_max_retries",
        "integer",
        "retries after HTTP 429, 500, 502, 503 or 504, with backoff (0.25 s doubling, at most 8 s) or the server's "
        "`Retry-After` seconds; a pause that would end past `llm_timeout` raises `DeadlineExceededError` instead",
        default=DEFAULT_MAX_RETRIES,
        minimum=0,
        maximum=10,
    )

    @classmethod
    def read(cls, reader: OptionReader) -> LlmSettings:
        """The declared options, with the URL checked by the one HTTP rule and the key's variable name checked."""
        api_key_env = reader.string("llm_api_key_env", default=None)
        if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
            raise InvalidOptionError("llm_api_key_env", api_key_env, "the name of an environment variable")
        base_url = read_http_url(reader, "llm_base_url", example="http://127.0.0.1:11434/v1")
        return dataclasses.replace(read_options(cls, reader), base_url=base_url)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def chat(settings: LlmSettings, messages: Sequence[Message]) -> str:
    """The assistant's reply to ``messages``; retried on 429 and 5xx while ``settings.timeout`` and the request's
    ``deadline_ms`` allow.

    Raises ``DeadlineExceededError`` when the time runs out, ``RemoteServiceError`` for any other failure.
    """
    return within_deadline(
        settings.timeout,
        lambda seconds: _chat(dataclasses.replace(settings, timeout=seconds), messages),
        "waiting for the chat-completions server",
    )


def _chat(settings: LlmSettings, messages: Sequence[Message]) -> str:
    secret = _api_key(settings)
    endpoint = Endpoint(settings.url, "llm_base_url", "llm_timeout", settings.timeout, "chat-completions server")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    body = {
        "model": settings.model,
        "messages": [dict(message) for message in messages],
        "temperature": settings.temperature,
        "seed": settings.seed,
        "max_tokens": settings.max_tokens,
        "stream": False,
    }
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    deadline = time.monotonic() + settings.timeout
    attempt = 0
    while True:
        reply = post(endpoint, data, headers, deadline=deadline, max_bytes=MAX_RESPONSE_BYTES)
        LOG.debug("chat completion from %s: HTTP %s (attempt %s)", settings.url, reply.status, attempt + 1)
        if 200 <= reply.status < 300:
            return _content(reply, settings.url, secret)
        problem = f"answered HTTP {reply.status} {_detail(reply.body, secret)}"
        if reply.status not in RETRIED_STATUSES or attempt >= settings.max_retries:
            raise RemoteServiceError("llm_base_url", settings.url, problem, status=reply.status)
        pause = _retry_after(reply) or min(MAX_BACKOFF, FIRST_BACKOFF * 2**attempt)
        if time.monotonic() + pause >= deadline:
            raise DeadlineExceededError(f"{late(endpoint)} (last answer: {problem}, retry asked after {pause} s)")
        LOG.info("chat completion from %s: HTTP %s, retrying in %.2f s", settings.url, reply.status, pause)
        time.sleep(pause)
        attempt += 1


def _api_key(settings: LlmSettings) -> str | None:
    if settings.api_key_env is None:
        return None
    secret = os.environ.get(settings.api_key_env)
    if not secret:
        raise InvalidOptionError(
            "llm_api_key_env", settings.api_key_env, "the name of an environment variable that is set to the API key"
        )
    if not secret.isprintable() or any(character.isspace() for character in secret):
        raise InvalidOptionError(
            "llm_api_key_env", settings.api_key_env, "a variable holding one printable token without spaces"
        )
    return secret


def _masked(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def _detail(body: bytes, secret: str | None) -> str:
    return short_repr(_masked(body[:300].decode("utf-8", "replace"), secret))


def _retry_after(reply: HttpReply) -> float | None:
    """The server's ``Retry-After`` in seconds (the delta form; an HTTP date is ignored in favour of backoff)."""
    value = reply.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0.0 <= seconds <= MAX_TIMEOUT else None


def _content(reply: HttpReply, url: str, secret: str | None) -> str:
    """``choices[0].message.content`` of a chat completion, a reasoning model's leading ``<think>`` block removed."""
    try:
        payload = json.loads(reply.body)
    except (ValueError, RecursionError):
        raise RemoteServiceError(
            "llm_base_url", url, f"sent a body that is not JSON: {_detail(reply.body, secret)}"
        ) from None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        problem = f"sent no choices[0].message.content string: {_detail(reply.body, secret)}"
        raise RemoteServiceError("llm_base_url", url, problem)
    return _THINKING.sub("", content, count=1).strip()


OPTIONS = tuple(spec.key for spec in option_specs(LlmSettings))
"""The option keys every LLM backend reads, from ``LlmSettings``'s declarations."""
