"""A corpus that changes by a few documents embeds only those: rows are remembered by model and text."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EmbeddingMemo

TEXTS = [f"document number {position} about topic {position % 7}" for position in range(50)]


def test_only_new_texts_are_embedded_and_rows_equal_a_fresh_embedding() -> None:
    memo = EmbeddingMemo()
    embedder = get_embedder("hash")
    first = memo.embed(embedder, TEXTS)
    before = embedder.texts_embedded
    edited = [*TEXTS[1:], "a new document", TEXTS[0] + " edited"]
    again = memo.embed(embedder, edited)
    assert embedder.texts_embedded - before == 2
    np.testing.assert_array_equal(again, embedder.embed(edited))
    np.testing.assert_array_equal(again[: len(TEXTS) - 1], first[1:])


def test_a_repeated_text_is_embedded_once_and_models_do_not_share_rows() -> None:
    memo = EmbeddingMemo()
    small, large = get_embedder("hash-16"), get_embedder("hash-32")
    before = small.texts_embedded
    rows = memo.embed(small, ["same text", "same text", "other"])
    assert small.texts_embedded - before == 2 and rows.shape == (3, 16)
    assert memo.embed(large, ["same text"]).shape == (1, 32)
    assert memo.embed(small, []).shape == (0, 16)


def test_the_memo_stays_within_its_bytes() -> None:
    embedder = get_embedder("hash-64")
    memo = EmbeddingMemo(max_bytes=10 * 64 * 4)
    memo.embed(embedder, TEXTS)
    assert len(memo) == 10
    before = embedder.texts_embedded
    memo.embed(embedder, TEXTS[-10:])
    assert embedder.texts_embedded == before


def test_a_later_process_reads_the_embeddings_kept_in_the_folder(tmp_path: Path) -> None:
    embedder = get_embedder("hash-48")
    first = EmbeddingMemo().embed(embedder, TEXTS, tmp_path)
    before = embedder.texts_embedded
    later = EmbeddingMemo()  # a fresh process's memo
    again = later.embed(embedder, [*TEXTS, "one more"], tmp_path)
    assert embedder.texts_embedded - before == 1
    np.testing.assert_array_equal(again[: len(TEXTS)], first)


def test_a_damaged_or_linked_shard_is_skipped_not_trusted(tmp_path: Path) -> None:
    embedder = get_embedder("hash-40")
    EmbeddingMemo().embed(embedder, TEXTS[:5], tmp_path)
    (shard_keys,) = list(tmp_path.glob("embeddings/*/*.keys"))
    shard_keys.write_bytes(shard_keys.read_bytes()[:-3])  # no longer whole digests
    elsewhere = tmp_path / "elsewhere.keys"
    elsewhere.write_bytes(b"x" * 32)
    os.symlink(elsewhere, shard_keys.parent / ("f" * 32 + ".keys"))
    before = embedder.texts_embedded
    rows = EmbeddingMemo().embed(embedder, TEXTS[:5], tmp_path)
    assert embedder.texts_embedded - before == 5
    np.testing.assert_array_equal(rows, embedder.embed(TEXTS[:5]))
