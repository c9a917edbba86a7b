"""What the benchmarks share: one synthetic corpus generator, the raw bm25s baseline they are compared with and the
best-of-n timer."""

from __future__ import annotations

import itertools
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import bm25s
import Stemmer

SEED = 20261130


def synthetic_corpus(
    documents: int,
    queries: int,
    vocabulary: int,
    seed: int = SEED,
    exponent: float = 1.0,
    document_words: tuple[int, int] = (30, 80),
    query_words: tuple[int, int] = (2, 6),
) -> tuple[list[dict[str, str]], list[str]]:
    """Documents of 30-80 words and queries of 2-6 words (by default) drawn with Zipf word frequencies
    (1/rank**exponent).

    Zipf frequencies give BM25 realistic postings (a few huge, most short) and realistic score ties; a fixed seed
    makes every run, and every benchmark subprocess, see the same data.
    """
    generator = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(generator.choices(letters, k=generator.randint(4, 9))) for _ in range(vocabulary * 2)})
    words = words[:vocabulary]
    generator.shuffle(words)
    # Cumulative weights once instead of per call: the same draws as ``weights=``, without O(vocabulary) per document.
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** exponent for rank in range(vocabulary)))
    corpus = [
        {
            "doc_id": f"doc-{number:05d}",
            "text": " ".join(generator.choices(words, cum_weights=cumulative, k=generator.randint(*document_words))),
        }
        for number in range(documents)
    ]
    texts = [
        " ".join(generator.choices(words, cum_weights=cumulative, k=generator.randint(*query_words)))
        for _ in range(queries)
    ]
    return corpus, texts


def raw_bm25s(corpus: list[dict[str, str]], queries: list[str], n_threads: int = 0) -> Any:
    """Tokenize, index and retrieve the top 10 with bm25s alone, with the tokenizer settings the connector uses."""
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    corpus_tokens = tokenizer.tokenize([doc["text"] for doc in corpus], return_as="tuple", show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    del corpus_tokens
    query_ids = tokenizer.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False)
    return retriever.retrieve(query_ids, k=min(10, len(corpus)), show_progress=False, n_threads=n_threads)


def best_time(run: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def median_seconds(action: Callable[[], Any], before: Callable[[], None] = lambda: None, repeats: int = 5) -> float:
    """The median of ``repeats`` timed runs of ``action``, in seconds, ``before`` run untimed ahead of each."""
    timings = []
    for _ in range(repeats):
        before()
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)
