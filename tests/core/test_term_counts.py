"""The analysed corpus an update starts from: a changed corpus analyses only its new texts, and what it keeps is
exactly what analysing it from scratch gives (the same terms for every document, the same languages, a vocabulary
of exactly the terms some document holds), in memory and read back from a folder by a fresh memo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_integration import Corpus
from rag_integration.core.indexes.term_counts import AnalysedCorpus, AnalysisMemo, AnalysisSettings

WORDS = ["the", "cat", "cats", "engine", "oil", "Haus", "Häuser", "und", "der", "月亮", "潮汐", "مرحبا", "ـــ", "नमस्ते"]
text = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
SETTINGS = [AnalysisSettings("auto", True), AnalysisSettings("de", False)]


def corpus_of(texts: list[str]) -> Corpus:
    return Corpus([{"doc_id": f"d{position}", "text": words} for position, words in enumerate(texts)])


def terms_by_document(analysed: AnalysedCorpus) -> list[list[tuple[str, int]]]:
    term_of = {term_id: term for term, term_id in analysed.vocabulary.items()}
    counts = analysed.counts
    return [
        sorted(
            (term_of[int(counts.terms[entry])], int(counts.counts[entry]))
            for entry in range(int(counts.indptr[row]), int(counts.indptr[row + 1]))
        )
        for row in range(counts.document_count)
    ]


def same(updated: AnalysedCorpus, fresh: AnalysedCorpus) -> None:
    assert terms_by_document(updated) == terms_by_document(fresh)
    assert set(updated.vocabulary) == set(fresh.vocabulary)
    assert sorted(updated.vocabulary.values()) == list(range(len(updated.vocabulary)))
    assert updated.languages == fresh.languages
    assert updated.digests == fresh.digests


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(versions=st.lists(st.lists(text, max_size=10), min_size=2, max_size=4), which=st.sampled_from(SETTINGS))
def test_each_version_is_analysed_as_from_scratch_and_only_new_texts_are_read(
    tmp_path_factory: Any, versions: list[list[str]], which: AnalysisSettings
) -> None:
    folder: Path = tmp_path_factory.mktemp("index")
    memo = AnalysisMemo()
    previous: AnalysedCorpus | None = None
    for number, texts in enumerate(versions):
        before = memo.stats.analysed
        updated = memo.analyse(corpus_of(texts), which, folder)
        same(updated, AnalysisMemo().analyse(corpus_of(texts), which))
        read = memo.stats.analysed - before
        if texts in versions[:number]:  # an earlier version's own store holds exactly this corpus
            assert read == 0
        elif previous is not None and updated.placement == previous.placement:  # at most what the last one lacked
            assert read <= sum(1 for words in texts if words not in versions[number - 1])
        previous = updated
    reread = AnalysisMemo()  # a later process: only the folder remembers
    last = reread.analyse(corpus_of(versions[-1]), which, folder)
    same(last, AnalysisMemo().analyse(corpus_of(versions[-1]), which))
    assert reread.stats.analysed == 0


def test_a_large_corpus_changed_by_one_percent_reads_one_percent() -> None:
    texts = [f"document {number} tells of the cat and engine oil number {number % 97}" for number in range(2_000)]
    memo = AnalysisMemo()
    memo.analyse(corpus_of(texts), SETTINGS[0])
    changed = [*texts[10:], *[f"a new page {number} about the moon" for number in range(10)]]
    changed[:10] = [f"{text} revised" for text in changed[:10]]
    before = memo.stats.analysed
    updated = memo.analyse(corpus_of(changed), SETTINGS[0])
    assert memo.stats.analysed - before == 20
    same(updated, AnalysisMemo().analyse(corpus_of(changed), SETTINGS[0]))


def test_stored_rows_must_hold_known_terms_each_once_and_in_order() -> None:
    from rag_integration.core.indexes.term_counts import _consistent_rows

    def consistent(rows: list[list[int]], vocabulary: int = 9) -> bool:
        lengths = [len(row) for row in rows]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        terms = np.array([term for row in rows for term in row], dtype=np.int32)
        return _consistent_rows(indptr, terms, np.ones(len(terms), dtype=np.int32), vocabulary)

    assert consistent([[1, 4, 8], [], [2], [1, 3]])
    assert consistent([[8], [1], [], [1]])  # a row may start below where the one before ended
    assert consistent([])
    assert not consistent([[1, 4, 4]])  # a term twice in a row
    assert not consistent([[1], [5, 3]])  # out of order
    assert not consistent([[2, 9]])  # not in the vocabulary
    assert not consistent([[0, 2]])  # the empty term is never counted
    indptr, terms = np.array([0, 2, 1, 3]), np.array([1, 2, 3], dtype=np.int32)
    assert not _consistent_rows(indptr, terms, np.ones(3, dtype=np.int32), 9)  # rows going backwards
