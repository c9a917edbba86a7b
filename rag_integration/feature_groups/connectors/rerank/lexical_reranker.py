"""Zero-download reranking by query-term overlap, BM25-weighted over the candidates themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rag_integration.core.options import OptionReader
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector


class LexicalReranker(BaseRerankConnector):
    """``rerank_backend="lexical"``: BM25 of the query's content words over the candidate set (``lexical_k1``,
    ``lexical_b``); a candidate sharing no word with the query scores 0 and keeps its input order."""

    BACKEND: ClassVar[str | None] = "lexical"
    OPTIONS: ClassVar[tuple[str, ...]] = ("lexical_k1", "lexical_b")

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {
            "k1": reader.number("lexical_k1", default=1.2, minimum=0.0),
            "b": reader.number("lexical_b", default=0.75, minimum=0.0, maximum=1.0),
        }

    @classmethod
    def score(cls, query: str, texts: list[str], settings: Mapping[str, Any]) -> Sequence[float]:
        return lexical_scores(query, texts, k1=settings["k1"], b=settings["b"])
