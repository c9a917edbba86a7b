"""Reciprocal-rank fusion: the one routine every family uses to merge rankings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionReader, option

MAX_RRF_WEIGHT = 1e6
MIN_RRF_K = 1e-6
"""Bounds that keep every fused score finite: at most 1e6 / 1e-6 per ranking."""


def fuse_ranks(ranks: Sequence[Mapping[str, int]], k: float, weights: Sequence[float]) -> list[tuple[str, float]]:
    """``score(d) = sum_i w_i / (k + rank_i(d))`` over the rankings holding ``d`` (each a doc_id -> rank from 1
    mapping), best first, ties by doc_id: for callers that set a document's rank themselves."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(ranks, weights, strict=True):
        for doc_id, rank in ranking.items():
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def rrf_fuse(
    rankings: Sequence[Sequence[Mapping[str, Any]]],
    top_k: int,
    k: float = 60,
    weights: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """Fuse ranked passage lists: ``score(d) = sum_i w_i / (k + rank_i(d))``, ranks counted from 1.

    A document keeps the text (and metadata) of the first ranking it appears in; ties break by doc_id.
    """
    reader = OptionReader({"top_k": top_k, "rrf_k": k, "rrf_weights": weights}, owner="rrf_fuse")
    top_k = reader.integer("top_k", minimum=1)
    k = reader.number("rrf_k", minimum=MIN_RRF_K)
    if isinstance(rankings, (str, bytes, Mapping)) or not isinstance(rankings, Sequence):
        raise InvalidOptionError("rankings", rankings, "a list of ranked passage lists")
    fusion_weights = read_rrf_weights(weights, len(rankings))
    fused: dict[str, float] = {}
    first_seen: dict[str, Mapping[str, Any]] = {}
    for ranking, weight in zip(rankings, fusion_weights):
        if isinstance(ranking, (str, bytes, Mapping)) or not isinstance(ranking, Sequence):
            raise InvalidOptionError("rankings", ranking, "a ranked list of passage dicts")
        seen_here: set[str] = set()
        for position, row in enumerate(ranking, start=1):
            if (
                not isinstance(row, Mapping)
                or not isinstance(row.get("doc_id"), str)
                or not isinstance(row.get("text", ""), str)
                or not isinstance(row.get("metadata", {}), Mapping)
            ):
                raise InvalidOptionError("rankings", row, "passage dicts: str 'doc_id', str 'text', dict 'metadata'")
            doc_id = row["doc_id"]
            if doc_id in seen_here:
                continue
            seen_here.add(doc_id)
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + position)
            first_seen.setdefault(doc_id, row)
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    fused_rows: list[dict[str, Any]] = []
    for rank, (doc_id, score) in enumerate(ordered, start=1):
        source = first_seen[doc_id]
        fused_row: dict[str, Any] = {"doc_id": doc_id, "text": source.get("text", ""), "score": score, "rank": rank}
        if "metadata" in source:
            fused_row["metadata"] = source["metadata"]
        fused_rows.append(fused_row)
    return fused_rows


def read_rrf_weights(weights: object, count: int) -> list[float]:
    """One non-negative finite weight per ranking, at least one of them positive; None means equal weights."""
    if weights is None:
        return [1.0] * count
    expected = f"a list of {count} non-negative numbers, one per ranking, at least one positive"
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or len(weights) != count:
        raise InvalidOptionError("rrf_weights", weights, expected)
    reader = OptionReader({f"rrf_weights[{i}]": weight for i, weight in enumerate(weights)})
    values = [reader.number(f"rrf_weights[{i}]", minimum=0.0, maximum=MAX_RRF_WEIGHT) for i in range(count)]
    if not any(values):
        raise InvalidOptionError("rrf_weights", weights, expected)
    return values


@dataclass(frozen=True)
class RrfOptions:
    """The options of a backend that fuses rankings, as declared; ``weights`` checks ``rrf_weights`` against how
    many rankings it fuses."""

    rrf_k: float = option(
        "rrf_k",
        "number",
        "RRF constant: `score = Σ wᵢ / (rrf_k + rankᵢ)`",
        default=60.0,
        minimum=MIN_RRF_K,
        shown_as="number > 0",
    )
    rrf_weights: list[Any] | None = option(
        "rrf_weights", "sequence", "one weight per fused ranking", default=None, shown_as="list of numbers"
    )
    rrf_candidates: int = option(
        "rrf_candidates",
        "integer",
        "how deep each ranking is read before fusion",
        default=100,
        minimum=1,
        shown_as="int",
    )

    def weights(self, rankings: int) -> tuple[float, ...]:
        return tuple(read_rrf_weights(self.rrf_weights, rankings))
