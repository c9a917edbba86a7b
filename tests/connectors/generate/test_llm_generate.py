"""``generate_backend="llm"`` against a deterministic chat-completions server on 127.0.0.1: the generate kit, the
retrieve -> rerank -> llm chain, citation verification in every ``citation_check`` mode, and a server that fails."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeChatServer, Reply, completion, prompt_of, quoting_model, serve_module
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.errors import (
    DeadlineExceededError,
    GroundingError,
    InvalidOptionError,
    MissingOptionError,
    RemoteServiceError,
)
from rag_integration.core.indexes.embedders import HashEmbedder, get_embedder
from rag_integration.core.options import OptionReader
from rag_integration.core.remote.llm_client import MAX_RESPONSE_BYTES, LlmSettings
from rag_integration.core.text import grounding
from rag_integration.core.text.grounding import support_score
from rag_integration.feature_groups.connectors.generate import LlmResponder
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.generate import GenerateContractTests
from rag_integration.testing.runner import run_feature

SERVERS: dict[str, FakeChatServer] = {}
SECRET = "sk-test-0123456789abcdef"
PASSAGES = [
    {"doc_id": "safety", "text": "Never mix bleach and ammonia. The fumes are toxic."},
    {"doc_id": "oil", "text": "Change the engine oil every 10,000 km. Use 4.5 litres for a small car."},
]


@pytest.fixture(scope="module", autouse=True)
def chat_server() -> Iterator[FakeChatServer]:
    yield from serve_module(quoting_model, SERVERS)


@pytest.fixture(autouse=True)
def fresh_script(chat_server: FakeChatServer) -> None:
    chat_server.reset()


def llm_options(**extra: Any) -> dict[str, Any]:
    return {"generate_backend": "llm", "llm_base_url": SERVERS["chat"].url, "llm_model": "fake", **extra}


def answer(reply: str | Reply | None = None, **options: Any) -> dict[str, Any]:
    if reply is not None:
        SERVERS["chat"].script.append(reply)
    request = {"query_text": "bleach and ammonia", "passages": PASSAGES, **llm_options(**options)}
    # An option given as None is left out (an explicit None is refused on its own).
    request = {key: value for key, value in request.items() if value is not None}
    [row] = run_feature("generated_answer", request, {LlmResponder})
    return dict(row)


class TestLlmResponderKit(GenerateContractTests):
    """The generate kit, answered by a model that quotes what best matches the question (so the kit's verbatim
    checks hold as for a quoting backend)."""

    @classmethod
    def connector_class(cls) -> Any:
        return LlmResponder

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"llm_base_url": SERVERS["chat"].url, "llm_model": "fake"}

    @classmethod
    def empty_answer(cls) -> dict[str, Any]:
        return {"answer": "", "citations": [], "unsupported": []}


def test_retrieve_rerank_llm_chain_in_one_run_all(chat_server: FakeChatServer) -> None:
    queries = ["how much engine oil for a small car", "can I mix bleach and ammonia"]
    corpus = [*PASSAGES, {"doc_id": "bread", "text": "Sourdough bread needs a starter."}]
    retrieve = Feature(
        "retrieved_passages",
        options=Options(context={"retrieve_backend": "bm25s", "query_text": queries, "corpus": corpus, "top_k": 2}),
    )
    rerank = Feature(
        "reranked_passages",
        options=Options(context={"rerank_backend": "lexical", "query_text": queries, "candidates_source": retrieve}),
    )
    generate = Feature(
        "generated_answer", options=Options(context={**llm_options(), "query_text": queries, "passages_source": rerank})
    )
    result = mlodaAPI.run_all(
        [generate],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, LexicalReranker, LlmResponder}),
    )
    [answers] = [frame["generated_answer"] for frame in result if "generated_answer" in frame]
    assert answers[0]["citations"][0] == "oil" and "4.5 litres" in answers[0]["answer"]
    assert answers[1] == {"answer": "Never mix bleach and ammonia. [1]", "citations": ["safety"], "unsupported": []}
    body = chat_server.requests[0]["body"]
    assert body["temperature"] == 0.0 and body["seed"] == 0 and body["model"] == "fake" and not body["stream"]
    assert "[1] " in body["messages"][1]["content"] and body["messages"][0]["role"] == "system"


def test_the_documented_chain_runs_as_written(chat_server: FakeChatServer) -> None:
    """docs/generate.md's retrieve -> rerank -> llm example, pointed at this server instead of Ollama."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "generate.md").read_text(encoding="utf-8")
    [block] = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "LlmResponder" in block]
    assert "http://127.0.0.1:11434/v1" in block
    namespace: dict[str, Any] = {}
    exec(block.replace("http://127.0.0.1:11434/v1", chat_server.url), namespace)
    [answers] = [frame["generated_answer"] for frame in namespace["result"] if "generated_answer" in frame]
    assert answers[0]["answer"].startswith("Use 4.5 litres for a small car. [1]")
    assert answers[0]["citations"] == ["oil"] and answers[0]["unsupported"] == []


def test_a_paraphrase_that_keeps_the_claim_is_supported_and_renumbered() -> None:
    row = answer("Oil needs changing every 10,000 km [2]. Bleach and ammonia must never be mixed [1].")
    assert row == {
        "answer": "Oil needs changing every 10,000 km. [1] Bleach and ammonia must never be mixed. [2]",
        "citations": ["oil", "safety"],
        "unsupported": [],
    }


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Mix bleach and ammonia [1].", "support score 0.00"),  # the negation dropped
        ("Use 5.5 litres for a small car [2].", "support score 0.00"),  # a number the passage does not hold
        ("Bleach cleans carpets beautifully [1].", "below support_threshold"),
        ("Never mix bleach and ammonia [3].", r"cites \[3\] while only 2 passage"),
        ("Never mix bleach and ammonia [0].", r"cites \[0\]"),
        ("Never mix bleach and ammonia.", "cites no passage"),
        ("Never mix bleach and ammonia [1]. The moon is made of cheese.", "cites no passage"),
    ],
)
def test_strict_refuses_an_unsupported_sentence_naming_it(reply: str, problem: str) -> None:
    with pytest.raises(GroundingError, match=problem) as caught:
        answer(reply)
    assert "citation_check='strict'" in str(caught.value)


def test_drop_removes_unsupported_sentences_and_lists_them() -> None:
    reply = (
        "Never mix bleach and ammonia [1]. Mix bleach and ammonia for cleaning [1]. "
        "The moon is made of cheese. Use 4.5 litres for a small car [3]. The fumes are toxic [1]."
    )
    row = answer(reply, citation_check="drop")
    assert row == {
        "answer": "Never mix bleach and ammonia. [1] The fumes are toxic. [1]",
        "citations": ["safety"],
        "unsupported": [
            "Mix bleach and ammonia for cleaning.",
            "The moon is made of cheese.",
            "Use 4.5 litres for a small car.",
        ],
    }


def test_drop_of_every_sentence_gives_an_empty_answer_listing_them() -> None:
    row = answer("Bleach cleans carpets beautifully [1].", citation_check="drop")
    assert row == {"answer": "", "citations": [], "unsupported": ["Bleach cleans carpets beautifully."]}


def test_off_skips_the_support_score_but_not_the_markers() -> None:
    row = answer("Bleach cleans carpets beautifully [1]. Moon cheese [7].", citation_check="off")
    assert row == {
        "answer": "Bleach cleans carpets beautifully. [1]",
        "citations": ["safety"],
        "unsupported": ["Moon cheese."],
    }


def test_threshold_and_dense_support_model() -> None:
    paraphrase = "Bleach and ammonia produce toxic fumes [1]."
    score = support_score("Bleach and ammonia produce toxic fumes.", [PASSAGES[0]["text"]])
    assert 0.0 < score < 1.0
    assert answer(paraphrase, support_threshold=score)["citations"] == ["safety"]
    with pytest.raises(GroundingError, match="below support_threshold"):
        answer(paraphrase, support_threshold=min(1.0, score + 0.01))
    dense = answer(paraphrase, support_model="hash", support_threshold=0.3)
    assert dense["citations"] == ["safety"]


def test_each_passage_is_split_and_each_text_embedded_once_per_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sentences citing one passage: the passage is split once and no text is embedded twice, although the
    reply is verified and then checked against the generate contract."""
    split_texts: list[str] = []
    real_split = grounding.split_sentences
    monkeypatch.setattr(grounding, "split_sentences", lambda text: split_texts.append(text) or real_split(text))
    embedder = get_embedder("hash", "support_model")
    assert isinstance(embedder, HashEmbedder)
    before = embedder.texts_embedded
    reply = "Never mix bleach and ammonia [1]. The fumes are toxic [1]."
    row = answer(reply, support_model="hash", support_threshold=0.3)
    assert row["answer"] == "Never mix bleach and ammonia. [1] The fumes are toxic. [1]"
    assert split_texts.count(PASSAGES[0]["text"]) == 1
    # each claim quotes the passage sentence it is closest to: two distinct texts, each embedded once
    assert embedder.texts_embedded - before == 2


def test_list_replies_are_read_line_by_line() -> None:
    reply = "Here is what the passages say:\n1. Never mix bleach and ammonia [1]\n2. Change the engine oil every 10,000 km [2]"
    row = answer(reply, citation_check="drop")
    assert row == {
        "answer": "Never mix bleach and ammonia [1] Change the engine oil every 10,000 km [2]",
        "citations": ["safety", "oil"],
        "unsupported": ["Here is what the passages say:"],
    }


def test_no_answer_and_marker_styles() -> None:
    assert answer("NO_ANSWER") == {"answer": "", "citations": [], "unsupported": []}
    both = answer("Never mix bleach and ammonia [1, 2].")
    assert both == {"answer": "Never mix bleach and ammonia. [1][2]", "citations": ["safety", "oil"], "unsupported": []}
    row = answer("<think>the passages say [9]</think>Never mix bleach and ammonia [1].")
    assert row["answer"] == "Never mix bleach and ammonia. [1]"


@pytest.mark.parametrize(
    ("options", "error", "option"),
    [
        ({"llm_base_url": None}, MissingOptionError, "llm_base_url"),
        ({"llm_model": None}, MissingOptionError, "llm_model"),
        ({"llm_base_url": "ftp://127.0.0.1/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "http://user:pw@127.0.0.1/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "ftp://user:pw@127.0.0.1/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "http://127.0.0.1:99999/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "http://[::1/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "http://127.0.0.1/v1?key=pw"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": f"http://{'a' * 64}.example/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_base_url": "http://127.0.0.1:0/v1"}, InvalidOptionError, "llm_base_url"),
        ({"llm_timeout": 0}, InvalidOptionError, "llm_timeout"),
        ({"llm_timeout": True}, InvalidOptionError, "llm_timeout"),
        ({"llm_max_tokens": 0}, InvalidOptionError, "llm_max_tokens"),
        ({"llm_api_key_env": "NOT A NAME"}, InvalidOptionError, "llm_api_key_env"),
        ({"llm_api_key_env": "RAG_TEST_UNSET_KEY"}, InvalidOptionError, "llm_api_key_env"),
        ({"citation_check": "lenient"}, InvalidOptionError, "citation_check"),
        ({"support_threshold": 1.5}, InvalidOptionError, "support_threshold"),
        ({"support_model": "nonsense"}, InvalidOptionError, "support_model"),
    ],
)
def test_bad_llm_options_are_typed_errors(options: dict[str, Any], error: type[Exception], option: str) -> None:
    with pytest.raises(error, match=f"option '{option}'") as caught:
        answer(**options)
    assert "pw" not in str(caught.value).replace("a URL with credentials", "")


def test_retries_429_and_5xx_within_the_deadline_honouring_retry_after(chat_server: FakeChatServer) -> None:
    chat_server.script += [
        Reply(429, b'{"error": "slow down"}', {"Retry-After": "0.05"}),
        Reply(503, b'{"error": "loading model"}'),
        Reply(500, b"oops"),
    ]
    row = answer(llm_timeout=10)
    assert row["citations"] == ["safety"]
    assert len(chat_server.requests) == 4


def test_a_retry_after_past_the_deadline_is_a_deadline_error(chat_server: FakeChatServer) -> None:
    chat_server.script.append(Reply(429, b"{}", {"Retry-After": "30"}))
    with pytest.raises(DeadlineExceededError, match="llm_timeout"):
        answer(llm_timeout=1)
    assert len(chat_server.requests) == 1


def test_retries_stop_after_llm_max_retries(chat_server: FakeChatServer) -> None:
    chat_server.script += [Reply(500, b"down")] * 3
    with pytest.raises(RemoteServiceError, match="HTTP 500") as caught:
        answer(llm_max_retries=2)
    assert caught.value.status == 500 and len(chat_server.requests) == 3


@pytest.mark.parametrize(
    ("reply", "error", "problem"),
    [
        (Reply(401, b'{"error": "bad key"}'), RemoteServiceError, "HTTP 401"),
        (Reply(200, b"not json at all"), RemoteServiceError, "not JSON"),
        (Reply(200, b'{"choices": []}'), RemoteServiceError, "choices"),
        (Reply(200, b'{"choices": [{"message": {"content": 5}}]}'), RemoteServiceError, "choices"),
        (Reply(200, b"[" * 100_000), RemoteServiceError, "not JSON"),
        (Reply(200, b"x", {"Content-Length": str(MAX_RESPONSE_BYTES + 1)}), RemoteServiceError, "larger than"),
        (Reply(200, b" " * (MAX_RESPONSE_BYTES + 10)), RemoteServiceError, "larger than"),
        (Reply(200, completion("Never mix bleach and ammonia [1]."), delay=2.0), DeadlineExceededError, "llm_timeout"),
        (Reply(200, completion("x" * 100), trickle=0.05), DeadlineExceededError, "llm_timeout"),
    ],
)
def test_a_misbehaving_server_is_a_typed_error(reply: Reply, error: type[Exception], problem: str) -> None:
    with pytest.raises(error, match=problem):
        answer(reply, llm_timeout=0.5, llm_max_retries=0)


def test_the_api_key_is_sent_as_bearer_and_never_shown(
    chat_server: FakeChatServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("RAG_TEST_LLM_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    options = {"llm_api_key_env": "RAG_TEST_LLM_KEY"}
    assert answer(**options)["citations"] == ["safety"]
    assert chat_server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    echo = Reply(500, f'{{"error": "bad request from Bearer {SECRET}"}}'.encode())
    messages = []
    for reply in (echo, Reply(200, f"not json {SECRET}".encode()), Reply(429, SECRET.encode(), {"Retry-After": "99"})):
        with pytest.raises((RemoteServiceError, DeadlineExceededError)) as caught:
            answer(reply, llm_max_retries=0, llm_timeout=2, **options)
        messages += [str(caught.value), repr(caught.value), repr(caught.value.__cause__)]
    settings = LlmSettings.read(OptionReader(llm_options(**options)))
    messages += [repr(settings), str(settings)]
    assert any("***" in message for message in messages)
    assert not [message for message in messages if SECRET in message]
    assert caplog.records and not [record for record in caplog.records if SECRET in record.getMessage()]
    assert SECRET not in caplog.text
    assert os.environ["RAG_TEST_LLM_KEY"] == SECRET


def test_the_prompt_numbers_passages_without_forged_markers(chat_server: FakeChatServer) -> None:
    answer(passages=[{"doc_id": "x", "text": "Tides rise [3] twice a day."}], query_text="tides")
    passages, question = prompt_of(chat_server.requests[-1]["body"]["messages"])
    assert passages == ["Tides rise twice a day."] and question == "tides"


def test_minilm_support_model_credits_a_paraphrase_with_synonyms() -> None:
    """The dense score (all-MiniLM-L6-v2 from the faiss extra, offline) averaged with the term share."""
    reply = "Bleach combined with ammonia gives off poisonous fumes [1]."
    with pytest.raises(GroundingError, match="below support_threshold"):
        answer(reply)
    row = answer(reply, support_model="minilm", support_threshold=0.35)
    assert row["citations"] == ["safety"] and row["unsupported"] == []
    with pytest.raises(GroundingError, match="below support_threshold"):  # no term of its polarity: at most 0.5
        answer("Mix bleach and ammonia [1].", support_model="minilm", support_threshold=0.35)


def test_a_claim_in_a_script_without_spaces_is_checked_by_its_character_pairs() -> None:
    """A Chinese sentence is one run of word characters: compared whole, a paraphrase of its source would find
    nothing; by character pairs it is supported by its source and not by another passage."""
    source = ["北京是中华人民共和国的首都,也是政治和文化中心。", "上海是中国最大的港口城市。"]
    assert support_score("北京是中国的首都", source[:1]) >= 0.8
    assert support_score("北京是中国的首都", source[1:]) < 0.4
    assert support_score("Mix bleach and ammonia", ["Never mix bleach and ammonia."]) == 0.0  # polarity as before
