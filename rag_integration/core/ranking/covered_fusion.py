"""Reciprocal-rank fusion of a lexical and a dense ranking that follows the embedder's languages.

A dense ranking is only fused where its model knows the language: a query in a language the embedder was not
trained on is ranked by the lexical ranking alone, and a document in such a language takes its lexical rank in
place of a dense one. A model is neither trusted nor held against a text in a language it never learnt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.ranking.explain import rrf_contributions
from rag_integration.core.ranking.fusion import fuse_ranks
from rag_integration.core.ranking.passages import Hits
from rag_integration.core.text.languages import CorpusLanguages

OUTSIDE_QUERY = "the embedder does not know the query's language: bm25s ranks alone"
OUTSIDE_DOCUMENT = "the embedder does not know the document's language: its bm25s rank stands in"


@dataclass(frozen=True)
class Fusion:
    """One query's fusion: each ranking's hits and ranks (doc_id -> rank), why a ranking differs from its ranker's
    own (None where it does not), and the fused ``(doc_id, score)`` list, best first."""

    hits: list[Hits]
    ranks: list[dict[str, int]]
    fused: list[tuple[str, float]]
    rrf_k: float
    weights: Sequence[float]
    dense_dropped: bool = False
    stand_ins: frozenset[str] = frozenset()
    """doc_ids whose dense rank is their lexical rank."""

    def notes(self, doc_id: str) -> list[str | None]:
        if self.dense_dropped:
            return [None, OUTSIDE_QUERY]
        return [None, OUTSIDE_DOCUMENT if doc_id in self.stand_ins else None]

    def scores(self, doc_ids: Sequence[str]) -> list[dict[str, float]]:
        """Each ranking's scores by doc_id of the documents it ranks (those scoring above 0); a stand-in's dense
        score is the lexical score its rank comes with."""
        lexical, dense = ({doc_ids[position]: score for position, score in hits if score > 0.0} for hits in self.hits)
        dense.update((doc_id, lexical[doc_id]) for doc_id in self.stand_ins if doc_id in lexical)
        return [lexical, {} if self.dense_dropped else dense]

    def explanations(
        self, doc_ids: Sequence[str], explained: Sequence[str], rankers: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Why each of the ``explained`` doc_ids scored as it did: each ranking's rank and score of it and its
        share ``weight / (rrf_k + rank)`` of the fused score."""
        scores = self.scores(doc_ids)
        return [
            {
                "kind": "rrf",
                "rrf_k": self.rrf_k,
                "contributions": rrf_contributions(
                    rankers, self.ranks, scores, self.weights, self.rrf_k, doc_id, self.notes(doc_id)
                ),
            }
            for doc_id in explained
        ]


@dataclass(frozen=True)
class CoveredFusion:
    """What fuses a corpus's rankings: its doc_ids, the languages the lexical ranker analysed its documents in, the
    languages the embedder knows (None: every language) and the fusion's ``rrf_k`` and weights."""

    doc_ids: Sequence[str]
    position_of: Mapping[str, int]
    languages: CorpusLanguages
    covered: frozenset[str] | None
    rrf_k: float
    weights: Sequence[float]

    def fuse(self, lexical_hits: Hits, dense_hits: Hits, query_language: str) -> Fusion:
        """The two rankings of one query (in ``query_language``) fused, the dense one only where it is known."""
        lexical, dense = _ranks(lexical_hits, self.doc_ids), _ranks(dense_hits, self.doc_ids)
        dropped, stand_ins = False, frozenset[str]()
        if self.covered is not None:
            if query_language not in self.covered:
                dense, dropped = {}, True
            else:
                dense, stand_ins = self._covered_ranks(lexical, dense, self.covered)
        fused = fuse_ranks([lexical, dense], self.rrf_k, self.weights)
        return Fusion([lexical_hits, dense_hits], [lexical, dense], fused, self.rrf_k, self.weights, dropped, stand_ins)

    def _covered_ranks(
        self, lexical: Mapping[str, int], dense: Mapping[str, int], covered: frozenset[str]
    ) -> tuple[dict[str, int], frozenset[str]]:
        """The dense ranks of documents in the embedder's languages, and for the others their lexical rank; with
        the doc_ids given their lexical rank."""
        languages = self.languages
        if all(language in covered for language in languages.languages):
            return dict(dense), frozenset()
        outside = {
            doc_id for doc_id in {*lexical, *dense} if languages.of_document(self.position_of[doc_id]) not in covered
        }
        ranks = {doc_id: rank for doc_id, rank in dense.items() if doc_id not in outside}
        ranks.update((doc_id, lexical[doc_id]) for doc_id in outside if doc_id in lexical)
        return ranks, frozenset(doc_id for doc_id in outside if doc_id in lexical)


def _ranks(hits: Hits, doc_ids: Sequence[str]) -> dict[str, int]:
    """doc_id -> rank from 1 of the positive hits, ties by doc_id."""
    positive = sorted((hit for hit in hits if hit[1] > 0.0), key=lambda hit: (-hit[1], doc_ids[hit[0]]))
    return {doc_ids[position]: rank for rank, (position, _) in enumerate(positive, start=1)}
