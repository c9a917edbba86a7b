"""Zero-download reranking by the query's terms: by default a candidate only passes one it beats under every BM25
weighting of those terms; on request, BM25 over the candidates fused with the order they came in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.options import option
from rag_integration.core.ranking.dominance import dominance_counts, dominance_places
from rag_integration.core.text.analysis import LANGUAGE, check_language
from rag_integration.core.text.lexical import lexical_scores, term_matches
from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector

RRF_K = 60
DOMINANCE, FUSION = "dominance", "fusion"


@dataclass(frozen=True)
class LexicalSettings:
    """How the query's terms reorder the candidates, and BM25's parameters over them."""

    order: str = option(
        "lexical_order",
        "choice",
        "`dominance`: a candidate passes one above it only when it holds every query term at least as strongly "
        "(BM25's term-frequency part) and one more strongly; `fusion`: BM25 over the candidates fused with their "
        "incoming order",
        default=DOMINANCE,
        choices=(DOMINANCE, FUSION),
    )
    k1: float = option("lexical_k1", "number", "BM25 term-frequency saturation", default=1.2, minimum=0.0)
    b: float = option("lexical_b", "number", "BM25 length normalisation", default=0.75, minimum=0.0, maximum=1.0)
    input_weight: float = option(
        "lexical_input_weight",
        "number",
        "with `lexical_order=fusion`: weight of the candidates' incoming order against the BM25 order in their "
        "reciprocal-rank fusion; 0 ranks by BM25 over the candidates alone",
        default=3.0,
        minimum=0.0,
    )
    language: str = LANGUAGE.field()

    def __post_init__(self) -> None:
        check_language(self.language)


class LexicalReranker(BaseRerankConnector[LexicalSettings]):
    """``rerank_backend="lexical"``: the query's terms over the candidate set (``language``, ``lexical_k1``,
    ``lexical_b``), ordered by dominance or, with ``lexical_order="fusion"``, fused with the incoming order."""

    BACKEND: ClassVar[str | None] = "lexical"
    SETTINGS: ClassVar[type[Any] | None] = LexicalSettings

    @classmethod
    def score(cls, query: str, texts: list[str], settings: LexicalSettings) -> Sequence[float]:
        """Dominance: ``1 - place / n`` of each candidate's new place. BM25 over a hundred candidates re-estimates
        what a retriever already weighed, with idf from a biased handful, so it only moves a candidate above another
        where every idf would: holding each query term at least as strongly. Fusion: ``w / (60 + incoming rank) +
        1 / (60 + BM25 rank)``, the BM25 part only for a candidate sharing a term with the query. Equal texts
        share the place of the first, so they score alike."""
        if settings.order == DOMINANCE:
            matches = term_matches(query, texts, language=settings.language, k1=settings.k1, b=settings.b)
            places = dominance_places(matches.strengths(len(texts)))
            return [1.0 - places[text_first] / len(texts) for text_first in _first_positions(texts)]
        first_rank, lexical, lexical_rank = _ranks(query, texts, settings)
        return [
            settings.input_weight / (RRF_K + first_rank[text])
            + (1.0 / (RRF_K + lexical_rank[lexical[position]]) if lexical[position] > 0 else 0.0)
            for position, text in enumerate(texts)
        ]

    @classmethod
    def explain(
        cls, query: str, texts: list[str], positions: list[int], settings: LexicalSettings
    ) -> list[dict[str, Any]]:
        """Dominance: the query terms' BM25 parts of the candidate and how many candidates it passed or was held
        below by. Fusion: the two parts, the incoming order's and BM25's (its score over the candidates and rank)."""
        if settings.order == DOMINANCE:
            matches = term_matches(query, texts, language=settings.language, k1=settings.k1, b=settings.b)
            strengths = matches.strengths(len(texts))
            explained = []
            for position in positions:
                dominates, dominated_by = dominance_counts(strengths, position)
                parts = zip(matches.terms, strengths[position].tolist(), strict=True)
                explained.append(
                    {
                        "kind": "lexical_dominance",
                        "terms": {term: part for term, part in parts if part},
                        "dominates": dominates,
                        "dominated_by": dominated_by,
                    }
                )
            return explained
        first_rank, lexical, lexical_rank = _ranks(query, texts, settings)
        explained = []
        for position in positions:
            text, bm25 = texts[position], lexical[position]
            rank = lexical_rank[bm25] if bm25 > 0 else None
            incoming = {"part": "input order", "rank": first_rank[text], "weight": settings.input_weight}
            matched = {"part": "bm25", "rank": rank, "bm25": float(bm25), "weight": 1.0}
            incoming["contribution"] = settings.input_weight / (RRF_K + first_rank[text])
            matched["contribution"] = 1.0 / (RRF_K + rank) if rank is not None else 0.0
            explained.append({"kind": "lexical_rrf", "rrf_k": RRF_K, "contributions": [incoming, matched]})
        return explained


def _first_positions(texts: list[str]) -> list[int]:
    """For each text, the position of its first copy: equal texts take the place of the first."""
    first: dict[str, int] = {}
    return [first.setdefault(text, position) for position, text in enumerate(texts)]


def _ranks(
    query: str, texts: list[str], settings: LexicalSettings
) -> tuple[dict[str, int], list[float], dict[float, int]]:
    """Each text's first place from 1, the BM25 scores and the rank of each positive BM25 score."""
    lexical = lexical_scores(query, texts, language=settings.language, k1=settings.k1, b=settings.b)
    first_rank: dict[str, int] = {}
    for position, text in enumerate(texts):
        first_rank.setdefault(text, position + 1)
    distinct_scores = sorted({score for score in lexical if score > 0}, reverse=True)
    return first_rank, list(lexical), {score: rank for rank, score in enumerate(distinct_scores, start=1)}
