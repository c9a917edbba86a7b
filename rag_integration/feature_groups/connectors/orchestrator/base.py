"""The orchestrator contract: a whole RAG engine answers each query, and this base proves the answer is grounded.

A backend only runs its engine and reports what the engine said (``EngineAnswer``); the base reads the options,
checks every reported document against the supplied corpus, ranks and cuts them (``core.ranking.passages.rank_hits``), and
checks the answer text is quoted from the documents it returns (``core.text.grounding``).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.per_query import ON_ERROR, ErrorPolicy
from rag_integration.core.contract.queries import read_corpus, read_queries
from rag_integration.core.contract.request_options import FILTERS, TOP_K, read_metadata_filter
from rag_integration.core.contract.schema import STRING, Shape, passages_shape
from rag_integration.core.contract.sources import CORPUS, QUERIES, Source
from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import Corpus, Document, corpus_fingerprint, labels_of
from rag_integration.core.documents.visibility import Visibility
from rag_integration.core.errors import (
    GroundingError,
    RankingContractError,
    UnservedItemError,
    short_repr,
)
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey
from rag_integration.core.options import OptionReader, SettingsT, option_keys
from rag_integration.core.ranking.passages import rank_hits
from rag_integration.core.text.grounding import check_quoted_answer, quote_form

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame


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
    excluded_ids: frozenset[str] = frozenset()
    """Corpus documents failing ``filters``: not in ``documents``, and dropped if a remote engine returns them."""
    hidden_ids: frozenset[str] = frozenset()
    """Corpus documents the principals may not read: not in ``documents``; a remote engine that holds its own copy
    of the corpus and returns one has its answer withheld, as it may be drawn from them."""

    @classmethod
    def read(cls, reader: OptionReader, data: ReadableFrame | None) -> OrchestratorRequest:
        queries = read_queries(reader, data)
        given = read_corpus(reader, data)
        top_k = TOP_K.read(reader)
        visible = Visibility.read(reader).visible(labels_of(given, "corpus"), "corpus")
        corpus = given if visible is None else Corpus.part_of(given, visible)
        metadata_filter = read_metadata_filter(reader)
        kept = corpus if metadata_filter is None else metadata_filter.apply(corpus)
        if len(kept) == len(given):
            return cls(queries, kept, top_k)
        hidden = frozenset(document.doc_id for document in given) - {document.doc_id for document in corpus}
        excluded = frozenset(document.doc_id for document in corpus) - {document.doc_id for document in kept}
        return cls(queries, kept, top_k, excluded, hidden)


class BaseOrchestratorConnector(SelectorFeatureGroup, Generic[SettingsT]):
    """``orchestrated_answer``: ``{"answer": str, "documents": [passage]}`` per query, grounded in the corpus."""

    FAMILY: ClassVar[str] = "orchestrator"
    CONTRACT_VERSION: ClassVar[str] = "1.0"
    FEATURE_NAME: ClassVar[str] = "orchestrated_answer"
    SELECTOR: ClassVar[str] = "orchestrator_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(TOP_K, FILTERS, ON_ERROR)
    SOURCES: ClassVar[tuple[Source, ...]] = (QUERIES, CORPUS)

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        request = OrchestratorRequest.read(reader, data)
        settings = cls.read_settings(reader)
        return {cls.FEATURE_NAME: cls.orchestrated_rows(request, settings, ErrorPolicy.read(reader))}

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        return ErrorPolicy.read(reader).shape({"answer": STRING, "documents": passages_shape()})

    @staticmethod
    def failed_row() -> dict[str, Any]:
        """A row with nothing grounded: an empty corpus's, or one whose grounding failed under ``on_error="row"``."""
        return {"answer": "", "documents": []}

    @classmethod
    def orchestrated_rows(
        cls, request: OrchestratorRequest, settings: SettingsT, policy: ErrorPolicy | None = None
    ) -> list[dict[str, Any]]:
        """One grounded row per query; an empty corpus has nothing to ground in, so the engine is not asked. Under
        ``on_error="row"`` an answer that fails its grounding check becomes its own error row."""
        policy = policy or ErrorPolicy()
        if not request.documents:
            return [policy.answer_one(cls.failed_row, cls.failed_row) for _ in request.queries]
        position_of = {document.doc_id: position for position, document in enumerate(request.documents)}
        quoted: dict[int, str] = {}
        rows = []
        check_deadline(f"before {cls.__name__} was asked")
        for position, (answer, check_time) in enumerate(cls.timed_answers(request, settings)):
            check_deadline(f"before answer {position + 1} of {len(request.queries)} was grounded")
            rows.append(
                policy.answer_one(
                    partial(
                        ground_answer,
                        answer,
                        request.documents,
                        position_of,
                        request.top_k,
                        str(cls.BACKEND),
                        request.excluded_ids,
                        request.hidden_ids,
                        quoted=quoted,
                        check_time=check_time,
                    ),
                    cls.failed_row,
                )
            )
        return rows

    @classmethod
    def timed_answers(
        cls, request: OrchestratorRequest, settings: SettingsT
    ) -> Iterator[tuple[EngineAnswer, Callable[[], None] | None]]:
        """The engine's answers in query order, each with the check its grounding calls between steps (none here);
        a backend with a time limit yields one answer at a time, so its limit also covers that answer's grounding."""
        answers = cls.orchestrate(request, settings)
        if len(answers) != len(request.queries):
            raise RankingContractError(
                f"backend '{cls.BACKEND}' answered {len(answers)} of {len(request.queries)} queries: expected one each"
            )
        for answer in answers:
            yield answer, None

    @classmethod
    def cached_engine(cls, documents: Sequence[Document], settings: SettingsT) -> Any:
        """The engine built for this corpus and these settings, reused until the corpus or a setting changes."""
        key = IndexKey.of(str(cls.BACKEND), settings, corpus_fingerprint(documents))
        return INDEX_CACHE.get_or_build(key, lambda: cls.build_engine(documents, settings))

    @classmethod
    def build_engine(cls, documents: Sequence[Document], settings: SettingsT) -> Any:
        """The engine (a pipeline, a client) for this corpus, built once and cached under the corpus's fingerprint
        and ``settings`` (``cached_engine``); only backends that call ``cached_engine`` need it.

        Raises:
            BackendUnavailableError: the library is not installed.
        """
        raise NotImplementedError

    @classmethod
    @abstractmethod
    def orchestrate(cls, request: OrchestratorRequest, settings: SettingsT) -> list[EngineAnswer]:
        """What the engine answers for each query of ``request``, in order.

        Args:
            request: the queries, the corpus every answer must be grounded in, ``top_k`` and the filters.
            settings: what ``read_settings`` returned for the request.

        Raises:
            RemoteServiceError: a remote engine failed; ``DeadlineExceededError`` when its time ran out.

        One ``EngineAnswer`` per query (else ``RankingContractError``); the base grounds each answer in the
        corpus, mapping the engine's hits to doc_ids and refusing sentences that quote nothing.
        """


def ground_answer(
    answer: EngineAnswer,
    documents: Sequence[Document],
    position_of: Mapping[str, int],
    top_k: int,
    backend: str,
    excluded_ids: frozenset[str] = frozenset(),
    hidden_ids: frozenset[str] = frozenset(),
    *,
    quoted: dict[int, str] | None = None,
    check_time: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Check every hit against the corpus (``position_of`` maps doc_id to position in ``documents``), keep each
    document once, rank and cut by the shared rule (ties by doc_id), and check the answer is quoted from the kept
    documents by the shared grounding rule. Hits on ``excluded_ids`` (filtered out) are dropped, never shown; a hit
    on ``hidden_ids`` (what the caller may not read) is dropped and withholds the answer, which may be drawn from it.

    Each document is put in quote form once (kept in ``quoted`` by position, so a batch shares them) and a hit
    repeating an earlier (document, text) pair is not searched again, so the work stays linear in the engine's answer;
    ``check_time`` (if given) runs before each hit and each answer sentence, so a deadline can stop it."""
    quoted = {} if quoted is None else quoted
    verified: set[tuple[int, str]] = set()
    withheld = False
    hits = []
    previous = math.inf
    for number, hit in enumerate(answer.hits, start=1):
        if check_time is not None:
            check_time()
        if hit.doc_id in hidden_ids:
            withheld = True
            continue
        if hit.doc_id in excluded_ids:
            continue
        position = position_of.get(hit.doc_id)
        if position is None:
            raise UnservedItemError(f"backend '{backend}'", "document")
        document = documents[position]
        if hit.text != document.text and (position, hit.text) not in verified:
            if position not in quoted:
                quoted[position] = quote_form(document.text)
            piece = quote_form(hit.text)
            if not piece or piece not in quoted[position]:
                raise GroundingError(
                    f"backend '{backend}' returned text {short_repr(hit.text)} for doc_id {short_repr(hit.doc_id)}, "
                    "which is not in that document: expected the corpus text of the document or a verbatim part of it"
                )
            verified.add((position, hit.text))
        score = float(hit.score)
        if not math.isfinite(score) or score > previous:
            raise RankingContractError(
                f"backend '{backend}' scored result {number} {score} after {previous}: "
                "expected finite scores that never increase down the engine's ranking"
            )
        previous = score
        hits.append((position, score))
    rows = rank_hits(hits, documents, top_k, positive_only=False)
    if withheld:
        return {"answer": "", "documents": rows}
    sources = [documents[position_of[row["doc_id"]]] for row in rows]
    check_quoted_answer(answer.answer, sources, f"backend '{backend}'", check_time)
    return {"answer": answer.answer, "documents": rows}
