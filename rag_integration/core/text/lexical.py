"""Query-term overlap with BM25 weighting, computed over the given texts alone (no index, no download), on the
core's language analysis: the query and the texts are analysed alike, in one language, so a German query finds
``Häuser`` from ``Haus`` and a Chinese one finds its characters.

Used by the lexical reranker, by graph_rag to seed nodes and by generate to score sentences.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_integration.core.text.analysis import AUTO, analyzer_for, function_words, split_words, stopwords_of
from rag_integration.core.text.languages import query_language
from rag_integration.core.text.questions import asking_words


@functools.cache
def _function_terms(language: str) -> frozenset[str]:
    """Terms of a question that say how it asks, not what about (``how``, ``did``, ``would``): the analysis's
    ``function_words``, fuller in English than the index's stopwords (Lucene's, kept so ``en`` ranks as raw bm25s)."""
    words = function_words(language) - stopwords_of(language)
    return frozenset(analyzer_for(language).terms(" ".join(sorted(words)))) if words else frozenset()


def lexical_scores(
    query: str, texts: Sequence[str], *, language: str = AUTO, k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """BM25 of each text for the query's distinct terms; idf counts how many of ``texts`` hold a term. The query is
    read as the retrievers read it (``Analyzer.query_terms``): a German compound the texts hold only as two words
    is looked for as those two.

    A text sharing no term with the query scores exactly 0.0. Every text is analysed once (linear in the texts'
    size), and only texts holding a query term keep a bag of terms, so scoring 150,000 sentences of a 10 MB
    passage holds a few bags, not 150,000.
    """
    matches = term_matches(query, texts, language=language, k1=k1, b=b)
    count = len(texts)
    idf = {}
    for term in matches.terms:
        holding = sum(1 for _, bag in matches.bags.values() if term in bag)
        idf[term] = math.log(1.0 + (count - holding + 0.5) / (holding + 0.5))
    scores = [0.0] * count
    for position, (norm, bag) in matches.bags.items():
        score = 0.0
        for term in matches.terms:
            frequency = bag.get(term, 0)
            if frequency:
                score += idf[term] * frequency * (k1 + 1.0) / (frequency + norm)
        scores[position] = score
    return scores


@dataclass(frozen=True)
class TermMatches:
    """The query's distinct terms (sorted) and, for each text holding one (by position), BM25's length norm
    ``k1 * (1 - b + b * length / average length)`` and its counts of the query's terms."""

    terms: tuple[str, ...]
    bags: dict[int, tuple[float, Counter[str]]]
    k1: float

    def strengths(self, count: int) -> np.ndarray[Any, np.dtype[np.float64]]:
        """BM25's term-frequency part ``tf * (k1 + 1) / (tf + norm)`` of each term (columns) for each of ``count``
        texts (rows): their scores before idf weighs the terms (zeros for a text holding none)."""
        rows = np.zeros((count, len(self.terms)), dtype=np.float64)
        for position, (norm, bag) in self.bags.items():
            rows[position] = [
                bag[term] * (self.k1 + 1.0) / (bag[term] + norm) if bag.get(term) else 0.0 for term in self.terms
            ]
        return rows


def term_matches(
    query: str, texts: Sequence[str], *, language: str = AUTO, k1: float = 1.2, b: float = 0.75
) -> TermMatches:
    """``TermMatches`` of ``texts`` for the query, analysed as ``lexical_scores`` reads them; linear in the texts'
    size."""
    if not texts:
        return TermMatches((), {}, k1)
    analyzer = analyzer_for(query_language(query, language, context=texts))
    function_terms = _function_terms(analyzer.language)
    candidates = analyzer.query_term_candidates(query) - function_terms
    if not candidates:
        return TermMatches((), {}, k1)
    counted: dict[int, tuple[int, Counter[str]]] = {}
    known: set[str] = set()
    total_length = 0
    for position, text in enumerate(texts):
        terms = analyzer.terms(text)
        total_length += len(terms)
        known.update(terms)
        if not candidates.isdisjoint(terms):
            counted[position] = (len(terms), Counter(term for term in terms if term in candidates))
    ordered = tuple(sorted(set(analyzer.query_terms(query, known)) - function_terms))
    average_length = total_length / len(texts) or 1.0
    bags = {
        position: (k1 * (1.0 - b + b * length / average_length), bag) for position, (length, bag) in counted.items()
    }
    return TermMatches(ordered, bags, k1)


def missing_query_words(query: str, texts: Sequence[str], *, language: str = AUTO) -> list[str]:
    """The query's words (lower-cased, first use order) that name something none of ``texts`` holds: each word read
    as the retrievers read a query, none of its content terms found. What an answer drawn from those texts cannot
    speak to ("Is the lasagne gluten free?" against a shop's shipping terms: ``lasagne``, ``gluten``). The words of a
    question phrase ("how often") are not counted: they ask, they name nothing."""
    analyzer = analyzer_for(query_language(query, language, context=texts))
    known: set[str] = set()
    for text in texts:
        known.update(analyzer.terms(text))
    function_terms = _function_terms(analyzer.language)
    asking = asking_words(query)
    missing: list[str] = []
    for word in dict.fromkeys(split_words(query.lower())[0]):
        if word in asking:
            continue
        terms = set(analyzer.query_terms(word, known)) - function_terms
        if terms and terms.isdisjoint(known):
            missing.append(word)
    return missing
