"""A real Haystack pipeline: in-memory BM25 retrieval, then an extractive step quoting the best sentence."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar

from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import Document
from rag_integration.core.extras import require_module
from rag_integration.core.options import NoSettings
from rag_integration.feature_groups.connectors.orchestrator.base import (
    BaseOrchestratorConnector,
    EngineAnswer,
    EngineHit,
    OrchestratorRequest,
)

if TYPE_CHECKING:
    import haystack


class HaystackOrchestrator(BaseOrchestratorConnector[NoSettings]):
    """``orchestrator_backend="haystack"``: one Haystack pipeline per corpus, built once and reused."""

    BACKEND: ClassVar[str | None] = "haystack"
    EXTRA: ClassVar[str | None] = "orchestrator"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("haystack",)

    @classmethod
    def build_engine(cls, documents: Sequence[Document], settings: NoSettings) -> haystack.Pipeline:
        library = require_module("haystack", "haystack", "orchestrator")
        in_memory = require_module("haystack.document_stores.in_memory", "haystack", "orchestrator")
        retrievers = require_module("haystack.components.retrievers.in_memory", "haystack", "orchestrator")
        quoter = importlib.import_module("rag_integration.feature_groups.connectors.orchestrator.haystack_quoter")
        # A private store (shared=False keeps it out of Haystack's process-wide storage), written in doc_id order:
        # Haystack keeps store order among equal scores, so its ties already break by doc_id.
        store = in_memory.InMemoryDocumentStore(shared=False)
        ordered = sorted(documents, key=lambda document: document.doc_id)
        store.write_documents([library.Document(id=document.doc_id, content=document.text) for document in ordered])
        pipeline: haystack.Pipeline = library.Pipeline()
        pipeline.add_component("retriever", retrievers.InMemoryBM25Retriever(document_store=store))
        pipeline.add_component("quoter", quoter.BestSentenceQuoter())
        pipeline.connect("retriever.documents", "quoter.documents")
        return pipeline

    @classmethod
    def orchestrate(cls, request: OrchestratorRequest, settings: NoSettings) -> list[EngineAnswer]:
        pipeline = cls.cached_engine(request.documents, settings)
        with HAYSTACK_TELEMETRY.paused():
            answers = []
            for position, query in enumerate(request.queries):
                check_deadline(f"before query {position + 1} of {len(request.queries)} was asked")
                answers.append(_ask(pipeline, query, request.top_k))
            return answers


def _ask(pipeline: haystack.Pipeline, query: str, top_k: int) -> EngineAnswer:
    """One pipeline run (Haystack pipelines take one query at a time); a blank query matches nothing."""
    if not query.strip():
        return EngineAnswer("", ())
    output = pipeline.run({"retriever": {"query": query, "top_k": top_k}, "quoter": {"query": query}})["quoter"]
    hits = tuple(EngineHit(document.id, document.content, document.score) for document in output["documents"])
    return EngineAnswer(output["answer"], hits)


class HaystackTelemetrySwitch:
    """Keeps Haystack's usage telemetry off while our pipelines run, without environment variables.

    Haystack's own switch is the module-level ``haystack.telemetry._telemetry.telemetry`` (None means off). It is
    set to None only while at least one of our pipelines runs and then put back, so the user's own setting for
    their Haystack pipelines is left as it was.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._saved: object = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        module = require_module("haystack.telemetry._telemetry", "haystack", "orchestrator")
        with self._lock:
            if self._active == 0:
                self._saved, module.telemetry = module.telemetry, None
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    module.telemetry, self._saved = self._saved, None


HAYSTACK_TELEMETRY = HaystackTelemetrySwitch()
