"""Zero-download reranking by query-term overlap, BM25-weighted over the candidates themselves and fused with the
order the candidates came in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.options import option
from rag_integration.core.text.analysis import LANGUAGE, check_language
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector

RRF_K = 60


@dataclass(frozen=True)
class LexicalSettings:
    """BM25's parameters over the candidate set."""

    k1: float = option("lexical_k1", "number", "BM25 term-frequency saturation", default=1.2, minimum=0.0)
    b: float = option("lexical_b", "number", "BM25 length normalisation", default=0.75, minimum=0.0, maximum=1.0)
    input_weight: float = option(
        "lexical_input_weight",
        "number",
        "weight of the candidates' incoming order against the BM25 order in their reciprocal-rank fusion; 0 ranks by "
        "BM25 over the candidates alone",
        default=3.0,
        minimum=0.0,
    )
    language: str = LANGUAGE.field()

    def __post_init__(self) -> None:
        check_language(self.language)


class LexicalReranker(BaseRerankConnector[LexicalSettings]):
    """``rerank_backend="lexical"``: BM25 of the question's terms over the candidate set (``lexical_k1``,
    ``lexical_b``, ``language``) fused with the candidates' incoming order (``lexical_input_weight``)."""

    BACKEND: ClassVar[str | None] = "lexical"
    SETTINGS: ClassVar[type[Any] | None] = LexicalSettings

    @classmethod
    def score(cls, query: str, texts: list[str], settings: LexicalSettings) -> Sequence[float]:
        """``w / (60 + incoming rank) + 1 / (60 + BM25 rank)``, the BM25 part only for a candidate sharing a term
        with the query: BM25 over a few candidates is a weaker signal than the ranker that chose them, so it
        reorders them where it is sure rather than replacing their order. Equal texts share the rank of the first
        (a retriever scored them alike), so they score alike."""
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
        """The fusion's two parts: the incoming order's and BM25's (its score over the candidates and rank)."""
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
