"""Reciprocal-rank fusion over a corpus kept in shards: each ranking merged over the shards, then fused as one
index's rankings are, so the fused scores use the corpus's ranks, never a shard's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.documents.corpus import Document
from rag_integration.core.ranking.covered_fusion import CoveredFusion, Fusion
from rag_integration.core.ranking.fusion import RrfOptions
from rag_integration.core.ranking.passages import Hits, RankedQuery
from rag_integration.core.text.languages import CorpusLanguages


def merged_hits(lists: Iterable[list[tuple[str, float]]], depth: int) -> list[tuple[str, float]]:
    """The shards' ``(doc_id, score)`` hits of one ranking merged: the best ``depth`` by score, ties by doc_id, with
    every hit tied with the last one kept (each shard's list holds its ties at its own cut, so the union holds
    the corpus's)."""
    pooled = sorted((hit for hits in lists for hit in hits), key=lambda hit: (-hit[1], hit[0]))
    if len(pooled) <= depth:
        return pooled
    cut = pooled[depth - 1][1]
    return [hit for position, hit in enumerate(pooled) if position < depth or hit[1] == cut]


@dataclass(frozen=True)
class ShardCandidates:
    """One shard's part of every query's fusion: each ranking's ``(doc_id, score)`` hits read ``candidates`` deep
    (ties at the cut kept), the documents they name with the language each was analysed in, each query's language
    and the languages the embedder knows."""

    rankings: list[tuple[list[tuple[str, float]], list[tuple[str, float]]]]
    documents: dict[str, tuple[Document, str]]
    query_languages: list[str]
    covered: frozenset[str] | None

    @classmethod
    def of(
        cls,
        documents: Sequence[Document],
        languages: CorpusLanguages,
        lexical: list[Hits],
        dense: list[Hits],
        query_languages: list[str],
        covered: frozenset[str] | None,
    ) -> ShardCandidates:
        """The shard's hits by position (each query's lexical and dense ones) named by doc_id."""
        named = {position for hits in (*lexical, *dense) for position, _ in hits}
        rankings = [
            ([(documents[p].doc_id, s) for p, s in lexical_hits], [(documents[p].doc_id, s) for p, s in dense_hits])
            for lexical_hits, dense_hits in zip(lexical, dense, strict=True)
        ]
        named_documents = {documents[p].doc_id: (documents[p], languages.of_document(p)) for p in named}
        return cls(rankings, named_documents, query_languages, covered)


class ShardedFusion:
    """The fusion of rankings merged over shards, over the documents they name (``documents``, which grows as
    rankings are read deeper): each query fused exactly as one index's ``_fusions`` fuses it, the rankings read
    ``max(rrf_candidates, depth)`` deep over the whole corpus, a deeper read asked of the shards again. ``corpus``
    gives the corpus's languages and main language (its documents' are those the rankings name)."""

    def __init__(
        self,
        corpus: CorpusLanguages,
        options: RrfOptions,
        weights: tuple[float, ...],
        rankers: list[str],
        total: int,
        gather: Callable[[int], list[ShardCandidates]],
    ) -> None:
        self.corpus, self.options, self.weights, self.rankers = corpus, options, weights, rankers
        self.total, self.gather = total, gather
        self.read: dict[int, list[ShardCandidates]] = {}
        self.named: list[Document] = []
        self.position_of: dict[str, int] = {}
        self.language_of: list[str] = []

    def documents(self, queries: list[str], depth: int) -> list[Document]:
        self.shards(depth)
        self.positions = {text: position for position, text in enumerate(queries)}
        return self.named

    def shards(self, depth: int) -> list[ShardCandidates]:
        candidates = min(max(self.options.rrf_candidates, depth), self.total)
        if candidates not in self.read:
            self.read[candidates] = self.gather(candidates)
            for shard in self.read[candidates]:
                for doc_id, (document, language) in sorted(shard.documents.items()):
                    if doc_id not in self.position_of:
                        self.position_of[doc_id] = len(self.named)
                        self.named.append(document)
                        self.language_of.append(language)
        return self.read[candidates]

    def fusion(self, query: str, depth: int) -> Fusion:
        shards = self.shards(depth)
        candidates = min(max(self.options.rrf_candidates, depth), self.total)
        position = self.positions[query]
        lexical, dense = (
            [(self.position_of[doc_id], score) for doc_id, score in merged_hits(lists, candidates)]
            for lists in zip(*(shard.rankings[position] for shard in shards), strict=True)
        )
        codes = {code: index for index, code in enumerate(self.corpus.languages)}
        languages = CorpusLanguages(
            self.corpus.languages, self.corpus.main, bytes(codes[code] for code in self.language_of)
        )
        doc_ids = [document.doc_id for document in self.named]
        covered = shards[0].covered if shards else None
        fusion = CoveredFusion(doc_ids, self.position_of, languages, covered, self.options.rrf_k, self.weights)
        return fusion.fuse(lexical, dense, shards[0].query_languages[position] if shards else self.corpus.main)

    def search(self, queries: list[str], depth: int) -> list[Hits]:
        return [
            [(self.position_of[doc_id], score) for doc_id, score in self.fusion(query, depth).fused[:depth]]
            for query in queries
        ]

    def explain(self, ranked: list[RankedQuery]) -> list[list[dict[str, Any]]]:
        """Each ranked passage's fused ranks and shares, from the rankings fused again at the depth it was ranked."""
        doc_ids = [document.doc_id for document in self.named]
        return [
            self.fusion(query.query, query.depth).explanations(
                doc_ids, [doc_ids[position] for position, _ in query.hits], self.rankers
            )
            for query in ranked
        ]
