"""Hybrid retrieval: reciprocal-rank fusion of the bm25s and faiss rankings (each index cached on its own)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.documents import Document
from rag_integration.core.fusion import MIN_RRF_K, read_rrf_weights, rrf_fuse
from rag_integration.core.options import OptionReader
from rag_integration.core.passages import AllowedMask, Hits
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.faiss_retriever import FaissDenseRetriever

RANKERS: tuple[type[BaseRetrieveConnector], ...] = (Bm25sRetriever, FaissDenseRetriever)


@dataclass(frozen=True)
class HybridIndex:
    rankers: tuple[tuple[type[BaseRetrieveConnector], Any], ...]
    doc_ids: tuple[str, ...]
    position_of: Mapping[str, int]


class HybridRrfRetriever(BaseRetrieveConnector):
    """``retrieve_backend="hybrid_rrf"``: fuses bm25s and faiss (``rrf_k``, ``rrf_weights``, ``rrf_candidates``)."""

    BACKEND: ClassVar[str | None] = "hybrid_rrf"
    EXTRA: ClassVar[str | None] = "all"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = Bm25sRetriever.REQUIRED_MODULES + FaissDenseRetriever.REQUIRED_MODULES

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {
            "rankers": {ranker.BACKEND: ranker.read_settings(reader) for ranker in RANKERS},
            "rrf_k": reader.number("rrf_k", default=60.0, minimum=MIN_RRF_K),
            "rrf_weights": read_rrf_weights(reader.raw("rrf_weights"), len(RANKERS)),
            "rrf_candidates": reader.integer("rrf_candidates", default=100, minimum=1),
        }

    @classmethod
    def cached_index(cls, documents: Sequence[Document], settings: Mapping[str, Any], index_dir: Path | None) -> Any:
        rankers = tuple(
            (ranker, ranker.cached_index(documents, settings["rankers"][ranker.BACKEND], index_dir))
            for ranker in RANKERS
        )
        doc_ids = tuple(document.doc_id for document in documents)
        return HybridIndex(rankers, doc_ids, {doc_id: position for position, doc_id in enumerate(doc_ids)})

    @classmethod
    def search(
        cls, index: HybridIndex, queries: list[str], depth: int, allowed: AllowedMask, settings: Mapping[str, Any]
    ) -> list[Hits]:
        candidates = min(max(settings["rrf_candidates"], depth), len(index.doc_ids))
        per_ranker = [
            ranker.search_exact(
                ranker_index, queries, candidates, allowed, len(index.doc_ids), settings["rankers"][ranker.BACKEND]
            )
            for ranker, ranker_index in index.rankers
        ]
        results = []
        for query_position in range(len(queries)):
            rankings = [_ranked_rows(hits[query_position], index.doc_ids) for hits in per_ranker]
            fused = rrf_fuse(rankings, top_k=depth, k=settings["rrf_k"], weights=settings["rrf_weights"])
            results.append([(index.position_of[row["doc_id"]], row["score"]) for row in fused])
        return results


def _ranked_rows(hits: Hits, doc_ids: Sequence[str]) -> list[dict[str, Any]]:
    positive = sorted((hit for hit in hits if hit[1] > 0.0), key=lambda hit: (-hit[1], doc_ids[hit[0]]))
    return [{"doc_id": doc_ids[position], "text": ""} for position, _ in positive]
