"""Digests found by key and compared whole: the row of every digest held, -1 for one not held, and a key shared by
two digests costs a miss, never another digest's row."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rag_integration.core.indexes.digest_index import DigestIndex, as_rows
from rag_integration.core.indexes.term_counts import AnalysedCorpus


def digests(values: list[int], width: int = 16) -> np.ndarray:
    joined = b"".join(hashlib.sha256(str(value).encode()).digest()[:width] for value in values)
    return as_rows(joined, width)


@given(st.lists(st.integers(0, 300), unique=True), st.lists(st.integers(0, 400)), st.sampled_from([16, 32]))
def test_each_asked_digest_gets_its_row_or_minus_one(held: list[int], asked: list[int], width: int) -> None:
    rows = DigestIndex.of(digests(held, width)).rows_of(digests(asked, width))
    assert rows.tolist() == [held.index(value) if value in held else -1 for value in asked]


def test_digests_given_in_key_order_are_not_sorted_again() -> None:
    held = digests(list(range(50)))
    index = DigestIndex.of(held)
    in_order = held[index.rows]
    by_key = DigestIndex.of(in_order, by_key=True)
    assert by_key.rows.tolist() == list(range(50))
    rows = by_key.rows_of(held[::-1])
    assert (rows >= 0).all() and (in_order[rows] == held[::-1]).all()


def test_a_key_shared_by_two_digests_is_a_miss_not_a_wrong_row() -> None:
    held = digests([1, 2, 3]).copy()
    held[1, :8] = held[0, :8]  # the first eight bytes alike, the rest not
    rows = DigestIndex.of(held).rows_of(held)
    assert rows[2] == 2
    assert all(row in (position, -1) for position, row in enumerate(rows.tolist()))
    assert rows[0] == 0 or rows[1] == 1


def test_nothing_held_or_nothing_asked() -> None:
    assert DigestIndex.of(digests([])).rows_of(digests([1, 2])).tolist() == [-1, -1]
    assert DigestIndex.of(digests([1])).rows_of(digests([])).tolist() == []


def test_an_analysed_corpus_finds_its_texts_rows_by_digest() -> None:
    held = digests(list(range(20)))
    analysed = AnalysedCorpus(None, {}, held.tobytes(), None, (), {})  # type: ignore[arg-type]
    asked = np.concatenate([held[[5, 0]], digests([99])])
    assert analysed.rows_of(asked.tobytes()).tolist() == [5, 0, -1]
    assert analysed.shared([bytes(row) for row in held[:10]]) == 1.0
    assert analysed.shared([bytes(row) for row in digests([100, 101, 3])]) == 1 / 3
