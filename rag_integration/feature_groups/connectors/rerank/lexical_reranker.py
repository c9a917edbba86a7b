"""Zero-download reranking by query-term overlap, BM25-weighted over the candidates themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.options import option
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector


@dataclass(frozen=True)
class LexicalSettings:
    """BM25's parameters over the candidate set."""

    k1: float = option("lexical_k1", "number", "BM25 term-frequency saturation", default=1.2, minimum=0.0)
    b: float = option("lexical_b", "number", "BM25 length normalisation", default=0.75, minimum=0.0, maximum=1.0)


class LexicalReranker(BaseRerankConnector[LexicalSettings]):
    """``rerank_backend="lexical"``: BM25 of the query's content words over the candidate set (``lexical_k1``,
    ``lexical_b``); a candidate sharing no word with the query scores 0 and keeps its input order."""

    BACKEND: ClassVar[str | None] = "lexical"
    SETTINGS: ClassVar[type[Any] | None] = LexicalSettings

    @classmethod
    def score(cls, query: str, texts: list[str], settings: LexicalSettings) -> Sequence[float]:
        return lexical_scores(query, texts, k1=settings.k1, b=settings.b)
