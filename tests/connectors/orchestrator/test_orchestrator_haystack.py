"""The Haystack orchestrator: the contract kit, pipeline reuse, the answer step, and telemetry kept off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from haystack.telemetry import _telemetry

from rag_integration.core.documents.corpus import read_documents
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder
from rag_integration.feature_groups.connectors.orchestrator import BaseOrchestratorConnector, HaystackOrchestrator
from rag_integration.feature_groups.connectors.orchestrator.haystack_orchestrator import HAYSTACK_TELEMETRY
from rag_integration.feature_groups.connectors.orchestrator.haystack_quoter import best_sentence
from rag_integration.testing.orchestrator import CORPUS, OrchestratorContractTests
from rag_integration.testing.runner import run_feature


class TestHaystackContract(OrchestratorContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseOrchestratorConnector]:
        return HaystackOrchestrator


def ask(**options: Any) -> list[Any]:
    return run_feature("orchestrated_answer", {"orchestrator_backend": "haystack", **options}, {HaystackOrchestrator})


@pytest.fixture(autouse=True)
def fresh_index_cache() -> None:
    INDEX_CACHE.clear()


def test_pipeline_is_built_once_per_corpus_and_rebuilt_for_a_changed_one() -> None:
    ask(query_text="cat", corpus=CORPUS)
    ask(query_text=["dog", "oil"], corpus=CORPUS, top_k=2)
    assert INDEX_CACHE.stats.builds == 1 and INDEX_CACHE.stats.hits >= 1
    changed = [dict(doc, text="Nothing about felines here.") if doc["doc_id"] == "cat" else doc for doc in CORPUS]
    [row] = ask(query_text="cat windowsill purrs", corpus=changed)
    assert INDEX_CACHE.stats.builds == 2
    assert "cat" not in [passage["doc_id"] for passage in row["documents"]]


def test_answer_quotes_the_best_sentence_not_the_first() -> None:
    [row] = ask(query_text="does the cat chase moths at night", corpus=CORPUS, top_k=2)
    assert row["documents"][0]["doc_id"] == "cat"
    assert row["answer"] == "At night it hunts moths in the garden."


def test_best_sentence_prefers_score_then_rank_then_position() -> None:
    texts = ["Tea is hot. Tea leaves steep in water.", "Water boils. Hot water and leaves."]
    assert best_sentence("hot water leaves", texts) == "Hot water and leaves."
    assert best_sentence("tea", texts) == "Tea is hot."
    assert best_sentence("the of and", texts) == ""
    assert best_sentence("tea", []) == ""


QUOTER_TEXTS = ["Water is wet. Water and tea are hot. Water, tea and more water.", "Autumn leaves fall."]


@pytest.mark.parametrize("query", ["water tea leaves", "hot tea leaves", "water leaves", "wet", "the of and"])
def test_quoter_picks_the_sentence_generate_would(query: str) -> None:
    """One scoring rule for both families: the quote is extractive generate's first sentence without its marker
    (extractive may add the sentence after it)."""
    passages = [{"doc_id": f"p{position}", "text": text} for position, text in enumerate(QUOTER_TEXTS)]
    request = {"generate_backend": "extractive", "query_text": query, "passages": passages}
    [row] = run_feature("generated_answer", request, {ExtractiveResponder})
    assert best_sentence(query, QUOTER_TEXTS) == row["answer"].split(" [1]")[0]


def test_blank_query_gets_an_empty_answer() -> None:
    assert ask(query_text=["", "   "], corpus=CORPUS) == [{"answer": "", "documents": []}] * 2


def test_metadata_and_integer_doc_ids_do_not_disturb_the_pipeline() -> None:
    corpus = [{"doc_id": 7, "text": "Comet tails glow near the sun.", "tags": ["space"]}, *CORPUS]
    [row] = ask(query_text="comet tails", corpus=corpus)
    assert row["documents"][0]["doc_id"] == "7" and row["answer"] == "Comet tails glow near the sun."


class RecordingTelemetry:
    """Stands in for Haystack's Telemetry object: records events instead of sending them."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def send_event(self, event_name: str, event_properties: dict[str, Any] | None = None) -> None:
        self.events.append(event_name)


def test_telemetry_is_off_while_our_pipeline_runs_and_the_users_setting_is_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder = RecordingTelemetry()
    monkeypatch.setattr(_telemetry, "telemetry", recorder)
    ask(query_text=["cat", "engine oil"], corpus=CORPUS)
    assert recorder.events == []
    assert _telemetry.telemetry is recorder
    pipeline = HaystackOrchestrator.cached_engine(read_documents(CORPUS, "corpus"), {})
    pipeline.run({"retriever": {"query": "cat"}, "quoter": {"query": "cat"}})
    assert recorder.events, "outside our switch the same pipeline reports to telemetry, so the test can fail"


def test_overlapping_pauses_restore_the_setting_only_when_the_last_one_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = RecordingTelemetry()
    monkeypatch.setattr(_telemetry, "telemetry", recorder)
    with HAYSTACK_TELEMETRY.paused():
        with HAYSTACK_TELEMETRY.paused():
            assert _telemetry.telemetry is None
        assert _telemetry.telemetry is None
    assert _telemetry.telemetry is recorder


NO_NETWORK_SCRIPT = """
import json, os, sys
attempts = []
sys.addaudithook(lambda event, args: attempts.append(event) if event.startswith(("socket.connect", "socket.getaddrinfo")) else None)
from rag_integration.testing.runner import run_feature
from rag_integration.testing.orchestrator import CORPUS
from rag_integration.feature_groups.connectors.orchestrator import HaystackOrchestrator
from rag_integration.core.documents.corpus import read_documents
from rag_integration.core.indexes.cache import INDEX_CACHE
from haystack.telemetry import _telemetry
options = {"orchestrator_backend": "haystack", "query_text": ["cat", "engine oil"], "corpus": CORPUS}
rows = run_feature("orchestrated_answer", options, {HaystackOrchestrator})
rows = run_feature("orchestrated_answer", options, {HaystackOrchestrator})
[pipeline] = INDEX_CACHE._entries.values()
print(json.dumps({
    "attempts": attempts,
    "telemetry": type(_telemetry.telemetry).__name__,
    "telemetry_runs": pipeline._telemetry_runs,
    "env": "HAYSTACK_TELEMETRY_ENABLED" in os.environ,
    "answer": rows[1]["documents"][0]["doc_id"],
}))
"""


def test_nothing_is_sent_even_when_haystack_telemetry_is_enabled(tmp_path: Path) -> None:
    """In a fresh process with Haystack's telemetry on (no opt-out variable), a run opens no socket at all."""
    environment = {key: value for key, value in os.environ.items() if key != "HAYSTACK_TELEMETRY_ENABLED"}
    environment["HOME"] = str(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-c", NO_NETWORK_SCRIPT], capture_output=True, text=True, env=environment, check=True
    )
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report == {
        "attempts": [],
        "telemetry": "Telemetry",
        "telemetry_runs": 0,
        "env": False,
        "answer": "engine",
    }
