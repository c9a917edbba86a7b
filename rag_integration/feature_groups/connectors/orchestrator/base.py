"""The orchestrator contract: a whole RAG engine answers each query, and this base proves the answer is grounded.

A backend only runs its engine and reports what the engine said (``EngineAnswer``); the base reads the options,
checks every reported document against the supplied corpus, ranks and cuts them, and checks the answer text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.documents import Document, corpus_fingerprint
from rag_integration.core.errors import (
    GroundingError,
    RankingContractError,
    short_repr,
)
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.index_cache import INDEX_CACHE, IndexKey
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import passage_row
from rag_integration.core.queries import read_corpus, read_queries
from rag_integration.core.sentences import split_sentences


@dataclass(frozen=True)
class EngineHit:
    """One search result as the engine reported it: the corpus doc_id it names, the text it returned, its score."""

    doc_id: str
    text: str
    score: float


@dataclass(frozen=True)
class EngineAnswer:
    """What the engine said for one query: its answer text and its hits, best first in the engine's own order."""

    answer: str
    hits: tuple[EngineHit, ...]


@dataclass(frozen=True)
class OrchestratorRequest:
    """One validated request: the queries, the corpus every answer must be grounded in, and the cut."""

    queries: list[str]
    documents: Sequence[Document]
    top_k: int

    @classmethod
    def read(cls, reader: OptionReader, data: Any) -> OrchestratorRequest:
        return cls(
            queries=read_queries(reader, data),
            documents=read_corpus(reader, data),
            top_k=reader.integer("top_k", default=10, minimum=1),
        )


class BaseOrchestratorConnector(SelectorFeatureGroup):
    """``orchestrated_answer``: ``{"answer": str, "documents": [passage]}`` per query, grounded in the corpus."""

    FAMILY: ClassVar[str] = "orchestrator"
    FEATURE_NAME: ClassVar[str] = "orchestrated_answer"
    SELECTOR: ClassVar[str] = "orchestrator_backend"
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"queries_source": "query_text", "corpus_source": "corpus"}

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        request = OrchestratorRequest.read(reader, data)
        settings = cls.read_settings(reader)
        INDEX_CACHE.resize(reader.integer("index_cache_size", default=INDEX_CACHE.capacity, minimum=0))
        return {cls.FEATURE_NAME: cls.orchestrated_rows(request, settings)}

    @classmethod
    def orchestrated_rows(cls, request: OrchestratorRequest, settings: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One grounded row per query; an empty corpus has nothing to ground in, so the engine is not asked."""
        if not request.documents:
            return [{"answer": "", "documents": []} for _ in request.queries]
        answers = cls.orchestrate(request, settings)
        if len(answers) != len(request.queries):
            raise RankingContractError(
                f"backend '{cls.BACKEND}' answered {len(answers)} of {len(request.queries)} queries: expected one each"
            )
        by_id = {document.doc_id: document for document in request.documents}
        return [ground_answer(answer, by_id, request.top_k, str(cls.BACKEND)) for answer in answers]

    @classmethod
    def cached_engine(cls, documents: Sequence[Document], settings: Mapping[str, Any]) -> Any:
        """The engine built for this corpus and these settings, reused until the corpus or a setting changes."""
        key = IndexKey.of(str(cls.BACKEND), settings, corpus_fingerprint(documents))
        return INDEX_CACHE.get_or_build(key, lambda: cls.build_engine(documents, settings))

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        """Backend options, validated before anything runs; JSON-serialisable (part of the engine's cache key)."""
        return {}

    @classmethod
    def build_engine(cls, documents: Sequence[Document], settings: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    @classmethod
    def orchestrate(cls, request: OrchestratorRequest, settings: Mapping[str, Any]) -> list[EngineAnswer]:
        """What the engine answers for each query of ``request``, in order."""
        raise NotImplementedError


def ground_answer(answer: EngineAnswer, by_id: Mapping[str, Document], top_k: int, backend: str) -> dict[str, Any]:
    """Check every hit against the corpus, keep each document once, rank (ties by doc_id), cut, check the answer."""
    best: dict[str, float] = {}
    previous = math.inf
    for position, hit in enumerate(answer.hits, start=1):
        document = by_id.get(hit.doc_id)
        if document is None:
            raise GroundingError(
                f"backend '{backend}' returned doc_id {short_repr(hit.doc_id)} as result {position}, "
                "which is not in the corpus: expected only documents of the supplied corpus"
            )
        if not _is_part_of(hit.text, document.text):
            raise GroundingError(
                f"backend '{backend}' returned text {short_repr(hit.text)} for doc_id {short_repr(hit.doc_id)}, "
                "which is not in that document: expected the corpus text of the document or a verbatim part of it"
            )
        score = float(hit.score)
        if not math.isfinite(score) or score > previous:
            raise RankingContractError(
                f"backend '{backend}' scored result {position} {score} after {previous}: "
                "expected finite scores that never increase down the engine's ranking"
            )
        previous = score
        best.setdefault(hit.doc_id, score)
    ordered = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    documents = [passage_row(by_id[doc_id], score, rank) for rank, (doc_id, score) in enumerate(ordered, start=1)]
    _check_answer_text(answer.answer, documents, backend)
    return {"answer": answer.answer, "documents": documents}


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def _is_part_of(piece: str, text: str) -> bool:
    piece, text = normalise_space(piece), normalise_space(text)
    return piece == text or (bool(piece) and piece in text)


def _check_answer_text(answer: str, documents: Sequence[Mapping[str, Any]], backend: str) -> None:
    """Every sentence of a non-empty answer must be quoted from one of the documents returned with it."""
    if not answer.strip():
        return
    if not documents:
        raise GroundingError(
            f"backend '{backend}' answered {short_repr(answer)} but returned no document: "
            "expected an empty answer when no document is returned"
        )
    texts = [normalise_space(document["text"]) for document in documents]
    for sentence in split_sentences(answer):
        if not any(normalise_space(sentence) in text for text in texts):
            raise GroundingError(
                f"backend '{backend}' answered with {short_repr(sentence)}, which is in none of the "
                f"{len(documents)} returned documents: expected an answer quoted from the returned documents"
            )
