"""Passage rows and the one ranking routine that turns scored hits into them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents import Document, MetadataFilter
from rag_integration.core.errors import RankingContractError

Hits = list[tuple[int, float]]
AllowedMask = npt.NDArray[np.bool_] | None
Search = Callable[[list[str], int, AllowedMask], list[Hits]]


def rank_corpus(
    documents: Sequence[Document],
    queries: list[str],
    top_k: int,
    search: Search,
    metadata_filter: MetadataFilter | None = None,
    return_metadata: bool = False,
) -> list[list[dict[str, Any]]]:
    """Passage rows for every query: filter to a mask, search with exact ties, rank; ``search`` is called only
    when some document can be returned, so a backend never builds an index for nothing."""
    allowed = None
    if metadata_filter is not None:
        allowed = np.zeros(len(documents), dtype=bool)
        allowed[metadata_filter.positions(documents)] = True
    if not documents or (allowed is not None and not allowed.any()):
        return [[] for _ in queries]
    hits = search_with_exact_ties(lambda batch, depth: search(batch, depth, allowed), queries, top_k, len(documents))
    return [rank_hits(query_hits, documents, top_k, return_metadata=return_metadata) for query_hits in hits]


def rank_hits(
    hits: Iterable[tuple[int, float]],
    documents: Sequence[Document],
    top_k: int,
    *,
    positive_only: bool = True,
    return_metadata: bool = False,
) -> list[dict[str, Any]]:
    """Sort ``(position, score)`` hits best first, ties by ascending doc_id, and build rank 1..n rows."""
    best: dict[int, float] = {}
    for position, score in hits:
        if not 0 <= position < len(documents):
            raise RankingContractError(f"backend returned document position {position} outside 0..{len(documents) - 1}")
        value = float(score)
        if not math.isfinite(value):
            raise RankingContractError(f"backend returned a non-finite score {value} for position {position}")
        if positive_only and value <= 0.0:
            continue
        if position not in best or value > best[position]:
            best[position] = value
    ordered = sorted(best.items(), key=lambda hit: (-hit[1], documents[hit[0]].doc_id))[:top_k]
    return [
        passage_row(documents[position], score, rank, return_metadata)
        for rank, (position, score) in enumerate(ordered, start=1)
    ]


def passage_row(document: Document, score: float, rank: int, return_metadata: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"doc_id": document.doc_id, "text": document.text, "score": float(score), "rank": rank}
    if return_metadata:
        row["metadata"] = dict(document.metadata)
    return row


def search_with_exact_ties(
    search: Callable[[list[str], int], list[Hits]], queries: list[str], top_k: int, candidate_count: int
) -> list[Hits]:
    """Ask ``search`` for one hit more than needed; where a tie crosses the cut, widen until it does not.

    Libraries break ties by internal order; the contract breaks them by doc_id, which needs every tied hit.
    """
    depth = min(top_k + 1, candidate_count)
    results = search(queries, depth)
    for position, hits in enumerate(results):
        width = depth
        while width < candidate_count and _tie_may_continue(hits, top_k, width):
            width = min(width * 2, candidate_count)
            hits = search([queries[position]], width)[0]
        results[position] = hits
    return results


def _tie_may_continue(hits: Hits, top_k: int, width: int) -> bool:
    """True when all ``width`` hits came back and the last one still ties the score at the cut."""
    if len(hits) < width or len(hits) <= top_k:
        return False
    scores = sorted((score for _, score in hits), reverse=True)
    return scores[top_k - 1] > 0.0 and scores[-1] == scores[top_k - 1]
