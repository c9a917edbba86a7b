"""The shared floor: option reading, documents, filters, fusion, the index cache and the error messages."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.documents.corpus import Corpus, Document, MetadataFilter, corpus_fingerprint, read_documents
from rag_integration.core.errors import (
    BackendUnavailableError,
    ConnectorError,
    DuplicateDocIdError,
    InvalidOptionError,
    MissingOptionError,
)
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.cache import IndexCache, IndexKey
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors import errors
from rag_integration.feature_groups.connectors.fusion import rrf_fuse


def test_every_spec_error_is_a_connector_error_and_a_value_error() -> None:
    for name in errors.__all__:
        error_class = getattr(errors, name)
        assert issubclass(error_class, ConnectorError) and issubclass(error_class, ValueError)


@pytest.mark.parametrize(
    ("method", "value", "kwargs"),
    [
        ("integer", True, {}),
        ("integer", 3.0, {}),
        ("integer", "3", {}),
        ("integer", 0, {"minimum": 1}),
        ("number", False, {}),
        ("number", float("nan"), {}),
        ("number", 2.0, {"maximum": 1.0}),
        ("boolean", 1, {}),
        ("boolean", "true", {}),
        ("string", 5, {}),
        ("string", "  ", {}),
        ("string_or_strings", ["a", None], {}),
        ("string_or_strings", ("a", 1), {}),
        ("choice", "LUCENE", {"choices": ("lucene",)}),
        ("path", 5, {}),
        ("path", "  ", {}),
        ("number", float("inf"), {}),
        ("sequence", "abc", {}),
    ],
)
def test_option_reader_refuses_wrong_types_without_coercion(method: str, value: Any, kwargs: dict[str, Any]) -> None:
    reader = OptionReader({"opt": value})
    with pytest.raises(InvalidOptionError, match="'opt'"):
        getattr(reader, method)("opt", **kwargs)


def test_option_reader_defaults_and_missing() -> None:
    reader = OptionReader({}, owner="Thing")
    assert reader.integer("top_k", default=10) == 10
    with pytest.raises(MissingOptionError, match="'query_text' is required for Thing"):
        reader.string("query_text")


def test_error_message_names_option_value_and_expectation_and_cuts_long_values() -> None:
    with pytest.raises(InvalidOptionError) as caught:
        OptionReader({"top_k": "x" * 5000}).integer("top_k", minimum=1)
    message = str(caught.value)
    assert "top_k" in message and "an int >= 1" in message and len(message) < 300


def test_documents_normalise_ids_and_keep_metadata() -> None:
    documents = read_documents([{"doc_id": 3, "text": "a", "lang": "en"}, {"text": "b"}], "corpus")
    assert [(doc.doc_id, doc.text, dict(doc.metadata)) for doc in documents] == [
        ("3", "a", {"lang": "en"}),
        ("1", "b", {}),
    ]


def test_position_ids_collide_with_explicit_ids() -> None:
    with pytest.raises(DuplicateDocIdError, match="'1'"):
        read_documents([{"text": "a"}, {"text": "b"}, {"doc_id": "1", "text": "c"}], "corpus")


@pytest.mark.parametrize("bad", [{"text": "x"}, "text", None, 5, [{"text": 5}], [{"doc_id": True, "text": "x"}]])
def test_bad_corpora_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="corpus"):
        read_documents(bad, "corpus")


def test_fingerprint_changes_with_any_id_or_text_and_is_unambiguous() -> None:
    base = read_documents([{"doc_id": "a", "text": "bc"}], "corpus")
    assert corpus_fingerprint(base) == corpus_fingerprint(read_documents([{"doc_id": "a", "text": "bc"}], "c"))
    assert corpus_fingerprint(base) != corpus_fingerprint(read_documents([{"doc_id": "ab", "text": "c"}], "c"))
    assert corpus_fingerprint(base) != corpus_fingerprint(read_documents([{"doc_id": "a", "text": "bd"}], "c"))


FINGERPRINT_OF_THREE = "a1099a7ad0177522eebf1b7d24896ae4ab6427de1e2e3798bd7940764f2dab33"
"""Format 2 (ids and text digests), since 2026-12-04; format 1 hashed whole texts."""


def test_fingerprint_bytes_are_stable() -> None:
    """Index folders on disk are keyed by the fingerprint, so its byte format must not drift unannounced."""
    # Built directly: read_documents refuses the lone surrogate (core.unicode_text), but an index fingerprinted
    # before that check may hold one, and its key must not change.
    documents = [Document("a", "bc"), Document("ü", "x\udcff"), Document("2", "")]
    assert corpus_fingerprint(documents) == FINGERPRINT_OF_THREE
    many = read_documents([{"doc_id": str(number), "text": "t" * (number % 70)} for number in range(5000)], "c")
    reference = hashlib.sha256(len(many).to_bytes(8, "little"))  # the format, spelt out one part at a time
    for document in many:
        reference.update(len(document.doc_id.encode()).to_bytes(8, "little"))
    for document in many:
        reference.update(document.doc_id.encode())
    for document in many:
        reference.update(hashlib.blake2b(document.text.encode(), digest_size=16).digest())
    assert corpus_fingerprint(many) == reference.hexdigest() == Corpus(many).fingerprint


def test_plain_and_unusual_document_dicts_read_alike() -> None:
    class Text(str):
        pass

    documents = read_documents(
        [{"doc_id": "a", "text": "x"}, {"doc_id": "b", "text": Text("y")}, {"text": "z", "lang": "en"}], "corpus"
    )
    assert [(doc.doc_id, doc.text, dict(doc.metadata)) for doc in documents] == [
        ("a", "x", {}),
        ("b", "y", {}),
        ("2", "z", {"lang": "en"}),
    ]
    with pytest.raises(InvalidOptionError, match=r"corpus\[1\]\.text"):
        read_documents([{"doc_id": "a", "text": "x"}, {"doc_id": "b", "body": "y"}], "corpus")
    with pytest.raises(DuplicateDocIdError, match="'a' at positions 0 and 2"):
        read_documents([{"doc_id": "a", "text": "x"}, {"doc_id": "b", "text": "y"}, {"doc_id": "a", "text": "z"}], "c")


def test_metadata_filter_matches_values_lists_and_never_true_for_one() -> None:
    documents = read_documents(
        [{"text": "a", "lang": "en", "flag": True}, {"text": "b", "lang": "de", "flag": 1}, {"text": "c"}], "c"
    )
    assert MetadataFilter.from_option({"lang": ["de", "fr"]}).positions(documents) == [1]  # type: ignore[union-attr]
    assert MetadataFilter.from_option({"flag": 1}).positions(documents) == [1]  # type: ignore[union-attr]
    with pytest.raises(InvalidOptionError, match=r"filters\.lang"):
        MetadataFilter.from_option({"lang": []})


def test_rrf_fuse_scores_and_breaks_ties_by_doc_id() -> None:
    first = [{"doc_id": "b", "text": "B"}, {"doc_id": "a", "text": "A"}]
    second = [{"doc_id": "a", "text": "A"}, {"doc_id": "b", "text": "B"}, {"doc_id": "c", "text": "C"}]
    fused = rrf_fuse([first, second], top_k=3, k=60)
    assert [row["doc_id"] for row in fused] == ["a", "b", "c"]
    assert fused[0]["score"] == pytest.approx(1 / 61 + 1 / 62)
    assert [row["rank"] for row in fused] == [1, 2, 3]
    weighted = rrf_fuse([first, second], top_k=1, weights=[2.0, 1.0])
    assert weighted[0]["doc_id"] == "b"


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"top_k": 0}, "top_k"),
        ({"top_k": 1, "k": 0}, "rrf_k"),
        ({"top_k": 1, "weights": [1.0]}, "rrf_weights"),
        ({"top_k": 1, "weights": [1.0, -1.0]}, "rrf_weights"),
    ],
)
def test_rrf_fuse_validates(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        rrf_fuse([[{"doc_id": "a"}], [{"doc_id": "b"}]], **kwargs)


def test_index_cache_is_a_bounded_lru() -> None:
    cache = IndexCache(capacity=2)
    keys = [IndexKey.of("b", {"n": n}, "f") for n in range(3)]
    for key in keys:
        cache.get_or_build(key, lambda: object())
    assert len(cache) == 2 and keys[0] not in cache and cache.stats.builds == 3
    cache.get_or_build(keys[2], lambda: object())
    assert cache.stats.hits == 1
    cache.resize(0)
    assert len(cache) == 0


def test_missing_extra_names_the_pip_line() -> None:
    with pytest.raises(
        BackendUnavailableError, match=r'uv sync --extra faiss in the clone \(or uv pip install "\.\[faiss\]" from it\)'
    ):
        require_module("a_module_that_is_not_installed", "faiss", "faiss")


def test_corpus_is_validated_once_and_cheap_to_copy() -> None:
    import copy
    import pickle

    from rag_integration.core.documents.corpus import Corpus

    raw = [{"doc_id": "x", "text": "a", "lang": "en"}, {"text": "b"}]
    corpus = Corpus(raw)
    assert [(doc.doc_id, dict(doc.metadata)) for doc in corpus] == [("x", {"lang": "en"}), ("1", {})]
    assert copy.deepcopy(corpus) is corpus and copy.copy(corpus) is corpus
    assert pickle.loads(pickle.dumps(corpus)) == corpus
    assert corpus.fingerprint == corpus_fingerprint(read_documents(raw, "corpus"))
    assert corpus.fingerprint in repr(corpus) and len(repr(corpus)) < 120
    assert hash(Corpus(raw)) == hash(corpus) and Corpus(raw) == corpus and Corpus(raw[:1]) != corpus
    with pytest.raises(InvalidOptionError, match="corpus"):
        Corpus(["not a dict"])


def test_passages_keep_their_metadata_and_refuse_conflicts() -> None:
    from rag_integration.core.documents.corpus import read_passages

    passage = {"doc_id": "a", "text": "t", "score": 1.0, "rank": 1, "metadata": {"lang": "en"}}
    assert dict(read_passages([passage], "candidates")[0].metadata) == {"lang": "en"}
    assert dict(read_passages([dict(passage, lang="en")], "candidates")[0].metadata) == {"lang": "en"}
    with pytest.raises(InvalidOptionError, match=r"candidates\[0\]\.metadata\.lang"):
        read_passages([dict(passage, lang="de")], "candidates")
    with pytest.raises(InvalidOptionError, match=r"candidates\[0\]\.metadata"):
        read_passages([dict(passage, metadata="en")], "candidates")


@pytest.mark.parametrize("name", ["hash-99999999999999", "hash-4", "hash-", "hash-10000000000000000000000000"])
def test_hash_dimensions_are_bounded(name: str) -> None:
    from rag_integration.core.indexes.embedders import get_embedder

    with pytest.raises(InvalidOptionError, match="embedding_model"):
        get_embedder(name)


def test_a_broken_local_model_folder_is_a_typed_error(tmp_path: Path) -> None:
    from rag_integration.core.indexes.embedders import get_embedder

    (tmp_path / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="embedding_model"):
        get_embedder(str(tmp_path))


def test_nested_marker_like_brackets_leave_no_marker_behind() -> None:
    from rag_integration.core.text.grounding import is_quoted, quote_form

    assert quote_form("The cat sat on x[3[4]].") == "The cat sat on x."
    assert is_quoted("The cat sat on x.", "The cat sat on x[1[2]].")


@pytest.mark.parametrize(("kwargs", "option"), [({"weights": [1e308, 1.0]}, "rrf_weights"), ({"k": 1e-9}, "rrf_k")])
def test_rrf_bounds_keep_scores_finite(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        rrf_fuse([[{"doc_id": "a"}], [{"doc_id": "b"}]], top_k=2, **kwargs)


@pytest.mark.parametrize("row", [{"doc_id": "a", "text": 5}, {"doc_id": "a", "text": "t", "metadata": 1}])
def test_rrf_fuse_keeps_the_passage_row_shape(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidOptionError, match="rankings"):
        rrf_fuse([[row]], top_k=1)
