"""Query-term overlap with BM25 weighting, computed over the given texts alone (no index, no download).

Used by the lexical reranker, by graph_rag to seed nodes and by generate to score sentences.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rag_integration.core.text import content_words


def lexical_scores(query: str, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 of each text for the query's distinct content words; idf counts how many of ``texts`` hold a word.

    A text sharing no content word with the query scores exactly 0.0.
    """
    terms = sorted(set(content_words(query)))
    if not terms or not texts:
        return [0.0] * len(texts)
    bags = [Counter(content_words(text)) for text in texts]
    lengths = [sum(bag.values()) for bag in bags]
    average_length = sum(lengths) / len(lengths) or 1.0
    count = len(texts)
    idf = {}
    for term in terms:
        holding = sum(1 for bag in bags if term in bag)
        idf[term] = math.log(1.0 + (count - holding + 0.5) / (holding + 0.5))
    scores = []
    for bag, length in zip(bags, lengths):
        score = 0.0
        norm = k1 * (1.0 - b + b * length / average_length)
        for term in terms:
            frequency = bag.get(term, 0)
            if frequency:
                score += idf[term] * frequency * (k1 + 1.0) / (frequency + norm)
        scores.append(score)
    return scores
