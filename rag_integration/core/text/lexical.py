"""Query-term overlap with BM25 weighting, computed over the given texts alone (no index, no download).

Used by the lexical reranker, by graph_rag to seed nodes and by generate to score sentences.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rag_integration.core.text.words import ENGLISH_STOPWORDS, WORD_PATTERN, content_words


def lexical_scores(query: str, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 of each text for the query's distinct content words; idf counts how many of ``texts`` hold a word.

    A text sharing no content word with the query scores exactly 0.0. Only texts holding a query term are put into
    word bags; the rest count only towards the average length, counted in bulk, so scoring 150,000 sentences of a
    10 MB passage costs a few regex passes rather than a bag per sentence.
    """
    terms = sorted(set(content_words(query)))
    if not terms or not texts:
        return [0.0] * len(texts)
    lowered = [text.lower() for text in texts]
    bags = {
        position: Counter(content_words(texts[position]))
        for position, text in enumerate(lowered)
        if any(term in text for term in terms)  # a word of the text is a substring of its lower-case form
    }
    average_length = _content_word_count(lowered) / len(texts) or 1.0
    count = len(texts)
    idf = {}
    for term in terms:
        holding = sum(1 for bag in bags.values() if term in bag)
        idf[term] = math.log(1.0 + (count - holding + 0.5) / (holding + 0.5))
    scores = [0.0] * count
    for position, bag in bags.items():
        score = 0.0
        norm = k1 * (1.0 - b + b * sum(bag.values()) / average_length)
        for term in terms:
            frequency = bag.get(term, 0)
            if frequency:
                score += idf[term] * frequency * (k1 + 1.0) / (frequency + norm)
        scores[position] = score
    return scores


def _content_word_count(lowered: Sequence[str], batch: int = 4096) -> int:
    """How many content words ``lowered`` (lower-cased texts) hold in all, as ``content_words`` counts them: texts
    are joined in batches by a newline, which no word spans, so one regex pass counts a whole batch."""
    total = 0
    for start in range(0, len(lowered), batch):
        words = WORD_PATTERN.findall("\n".join(lowered[start : start + batch]))
        total += len(words) - sum(map(ENGLISH_STOPWORDS.__contains__, words))
    return total
