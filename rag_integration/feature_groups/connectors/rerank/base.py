"""The rerank contract: candidates in, the same candidates reordered out. Backends fill one scoring hook."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.queries import Incoming, incoming_places, passage_requests
from rag_integration.core.contract.request_options import EXPLAIN, FILTERS, RETURN_METADATA, TOP_K
from rag_integration.core.contract.sources import CANDIDATES, QUERIES, Source
from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import RankingContractError
from rag_integration.core.options import OptionReader, SettingsT, option_keys
from rag_integration.core.ranking.explain import checked_explanations
from rag_integration.core.ranking.passages import passage_row

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame


class BaseRerankConnector(SelectorFeatureGroup, Generic[SettingsT]):
    """``reranked_passages``: every candidate kept (up to ``top_k``) with a fresh score and rank 1..n.

    Candidates are passages from retrieve or plain documents (``candidates``), or the rows of an upstream feature
    (``candidates_source``). Equal scores keep the candidates' input order, which for retrieved passages is their
    retrieval rank (itself tie-broken by doc_id): the one family whose ties are not ordered by doc_id directly,
    because its input is already a ranking that a score without an opinion should not undo.
    """

    FAMILY: ClassVar[str] = "rerank"
    CONTRACT_VERSION: ClassVar[str] = "1.0"
    FEATURE_NAME: ClassVar[str] = "reranked_passages"
    SELECTOR: ClassVar[str] = "rerank_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(TOP_K, FILTERS, RETURN_METADATA, EXPLAIN)
    SOURCES: ClassVar[tuple[Source, ...]] = (QUERIES, CANDIDATES)

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        requests = passage_requests(reader, data, "candidates", "candidates_source")
        top_k = TOP_K.read(reader)
        return_metadata = RETURN_METADATA.read(reader)
        places: list[dict[str, Incoming] | None] = [None] * len(requests)
        if EXPLAIN.read(reader):
            places = list(incoming_places(reader, data, "candidates", "candidates_source"))
        settings = cls.read_settings(reader)
        rows = []
        for position, (query, candidates) in enumerate(requests):
            check_deadline(f"before query {position + 1} of {len(requests)} was reranked")
            rows.append(cls.rerank(query, candidates, top_k, settings, return_metadata, places[position]))
        return {cls.FEATURE_NAME: rows}

    @classmethod
    def rerank(
        cls,
        query: str,
        candidates: Sequence[Document],
        top_k: int,
        settings: SettingsT,
        return_metadata: bool = False,
        incoming: Mapping[str, Incoming] | None = None,
    ) -> list[dict[str, Any]]:
        """The candidates by their new scores; with ``incoming`` (their places in the list they came in), each
        row also gets ``explanation``: its rank and score before and after, and the backend's own ``explain``."""
        if not candidates:
            return []
        scores = [float(score) for score in cls.score(query, [candidate.text for candidate in candidates], settings)]
        if len(scores) != len(candidates):
            raise RankingContractError(f"{cls.__name__} returned {len(scores)} scores for {len(candidates)} candidates")
        if not all(math.isfinite(score) for score in scores):
            raise RankingContractError(f"{cls.__name__} returned a non-finite score: {scores}")
        order = sorted(range(len(candidates)), key=lambda position: (-scores[position], position))[:top_k]
        rows = [
            passage_row(candidates[position], scores[position], rank, return_metadata)
            for rank, position in enumerate(order, start=1)
        ]
        if incoming is not None:
            details = cls.explain(query, [candidate.text for candidate in candidates], order, settings)
            (checked,) = checked_explanations(cls.__name__, [details], [len(rows)])
            for row, position, (kind, detail) in zip(rows, order, checked, strict=True):
                place = incoming[candidates[position].doc_id]
                row["explanation"] = {
                    "backend": cls.BACKEND,
                    "kind": kind,
                    "score": row["score"],
                    "rank": row["rank"],
                    "input_rank": place.rank,
                    "input_score": place.score,
                    **detail,
                }
        return rows

    @classmethod
    def explain(cls, query: str, texts: list[str], positions: list[int], settings: SettingsT) -> list[dict[str, Any]]:
        """How the candidates at ``positions`` (the kept ones, best first) got their scores: one JSON-ready dict
        each with a ``kind`` naming its shape (where the score is a sum, its parts under ``contributions``, each
        with a ``contribution``). The base adds the ranks and scores before and after. By default nothing more
        (kind ``rerank``)."""
        return [{"kind": "rerank"} for _ in positions]

    @classmethod
    @abstractmethod
    def score(cls, query: str, texts: list[str], settings: SettingsT) -> Sequence[float]:
        """One relevance score per text (higher is better), in the order given.

        Args:
            query: one query of the request.
            texts: the candidates' texts, in their incoming order (never empty).
            settings: what ``read_settings`` returned for the request.

        Raises:
            BackendUnavailableError: the library or its model is missing (name the extra or the folder).

        The base checks one finite score per text (else ``RankingContractError``), sorts best first and keeps the
        incoming order among equal scores, then cuts at ``top_k``.
        """
