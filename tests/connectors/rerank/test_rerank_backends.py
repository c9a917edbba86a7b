"""The rerank backends through the rerank contract kit, and FlashRank's offline model handling."""

from __future__ import annotations

import logging
import math
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.feature_groups.connectors.rerank import BaseRerankConnector, FlashRankReranker, LexicalReranker
from rag_integration.testing.certify import adapter_for
from rag_integration.testing.rerank import CANDIDATES, KIT_TEXTS, RerankContractTests
from rag_integration.testing.runner import run_feature
from rag_integration.testing.tiny_flashrank import TINY_MODEL_NAME, build_tiny_flashrank_model

_MODELS = tempfile.TemporaryDirectory(prefix="tiny-flashrank-")


@cache
def tiny_model_cache() -> Path:
    """FlashRank's cache layout holding one tiny cross-encoder, built once per test session."""
    build_tiny_flashrank_model(Path(_MODELS.name), KIT_TEXTS)
    return Path(_MODELS.name)


class TestLexicalContract(RerankContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return LexicalReranker


class TestLexicalTunedContract(RerankContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return LexicalReranker

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"lexical_k1": 2.0, "lexical_b": 0.3}


class TestFlashRankContract(RerankContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return FlashRankReranker

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"flashrank_model_dir": str(tiny_model_cache())}


class TestFlashRankModelFolder(RerankContractTests):
    """Pointing at the model folder itself works as well as pointing at the folder that holds it."""

    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return FlashRankReranker

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"flashrank_model_dir": str(tiny_model_cache() / TINY_MODEL_NAME), "flashrank_max_length": 64}


def run_flashrank(**options: Any) -> list[Any]:
    request = {"rerank_backend": "flashrank", "query_text": "engine oil", "candidates": CANDIDATES, **options}
    return run_feature("reranked_passages", request, {FlashRankReranker})


def test_lexical_scores_follow_bm25_idf() -> None:
    candidates = [
        {"doc_id": "common", "text": "the oil is common oil"},
        {"doc_id": "rare", "text": "the zeppelin carries oil"},
        {"doc_id": "other", "text": "oil again and more oil"},
    ]
    rows = run_feature(
        "reranked_passages",
        {
            "rerank_backend": "lexical",
            "query_text": "zeppelin oil",
            "candidates": candidates,
            "lexical_order": "fusion",
            "lexical_input_weight": 0,
        },
        {LexicalReranker},
    )
    assert rows[0][0]["doc_id"] == "rare"  # the rare word outweighs repeating the word every candidate holds


def lexical_order(query: str, texts: list[str], **options: Any) -> list[str]:
    candidates = [{"doc_id": f"d{position}", "text": text} for position, text in enumerate(texts)]
    request = {"rerank_backend": "lexical", "query_text": query, "candidates": candidates, **options}
    return [row["doc_id"] for row in run_feature("reranked_passages", request, {LexicalReranker})[0]]


def test_dominance_passes_only_a_candidate_beaten_on_every_term() -> None:
    texts = [
        "zeppelin flights over sea",  # zeppelin once
        "oil oil oil for engines",  # oil thrice: neither of the first two beats the other on both terms
        "the zeppelin carries oil",  # zeppelin once, oil once: beats the first, not the second
        "bread and butter",  # no term: after every candidate holding one
        "a zeppelin burns oil oil oil",  # zeppelin once, oil thrice: beats every other
    ]
    # lexical_b=0: a term's part depends on its count alone, not on the candidates' lengths.
    assert lexical_order("zeppelin oil", texts, lexical_b=0.0) == ["d4", "d1", "d2", "d0", "d3"]


def test_dominance_keeps_the_input_order_where_the_terms_disagree() -> None:
    texts = ["the cat sat", "a dog ran", "cat and dog", "nothing here"]  # two terms each once analysed
    assert lexical_order("cat dog", texts) == ["d2", "d0", "d1", "d3"]
    assert lexical_order("cat dog", list(reversed(texts))) == ["d1", "d2", "d3", "d0"]


def test_dominance_is_quadratic_in_candidates_holding_a_term_only() -> None:
    texts = [f"filler text number {position}" for position in range(3000)] + ["one zeppelin"]
    assert lexical_order("zeppelin", texts, top_k=2) == ["d3000", "d0"]


def test_equal_candidates_share_a_place_and_score() -> None:
    candidates = [
        {"doc_id": "a", "text": "oil"},
        {"doc_id": "b", "text": "engine oil"},
        {"doc_id": "c", "text": "oil"},
    ]
    request = {"rerank_backend": "lexical", "query_text": "engine oil", "candidates": candidates}
    rows = run_feature("reranked_passages", request, {LexicalReranker})[0]
    # "engine oil" holds oil less strongly (a longer text) than "oil": neither passes the other.
    assert [row["doc_id"] for row in rows] == ["a", "c", "b"]
    assert rows[0]["score"] == rows[1]["score"]


@pytest.mark.parametrize("value", ["rrf", 1, None, ""])
def test_bad_lexical_order_is_a_typed_error(value: object) -> None:
    request = {"rerank_backend": "lexical", "query_text": "oil", "candidates": CANDIDATES, "lexical_order": value}
    with pytest.raises(InvalidOptionError, match="lexical_order"):
        run_feature("reranked_passages", request, {LexicalReranker})


def test_flashrank_reorders_with_the_model_it_loaded() -> None:
    passages = run_flashrank(flashrank_model_dir=str(tiny_model_cache()), query_text="volcano lava", top_k=2)[0]
    assert [passage["doc_id"] for passage in passages] == ["volcano", "cat"]
    # FlashRank's sigmoid over the tiny model's logits: two shared words, then none.
    assert passages[0]["score"] == pytest.approx(1.0 / (1.0 + math.exp(-2.0)), rel=1e-6)
    assert passages[1]["score"] == 0.5


def test_missing_model_folder_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="never downloads") as raised:
        run_flashrank(flashrank_model_dir=str(tmp_path))
    message = str(raised.value)
    assert "flashrank_model_dir" in message and TINY_MODEL_NAME in message
    assert "752eddf1c5ece3c5e6115e9ab52eb3b16436bbf9b3a091cbb62b5b8eadc47105" in message
    assert not any(tmp_path.iterdir())  # nothing was fetched or created


def test_incomplete_model_folder_names_the_missing_files(tmp_path: Path) -> None:
    folder = build_tiny_flashrank_model(tmp_path, KIT_TEXTS)
    (folder / "config.json").unlink()
    with pytest.raises(InvalidOptionError, match=r"missing in .*config\.json"):
        run_flashrank(flashrank_model_dir=str(tmp_path))


def test_default_cache_without_the_model_is_a_missing_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import flashrank.Config

    monkeypatch.setattr(flashrank.Config, "default_cache_dir", str(tmp_path))
    with pytest.raises(MissingOptionError, match="flashrank_model_dir"):
        run_flashrank()


@pytest.mark.parametrize(
    ("options", "option_name"),
    [
        ({"flashrank_model_dir": 5}, "flashrank_model_dir"),
        ({"flashrank_model_dir": ""}, "flashrank_model_dir"),
        ({"flashrank_model": "rank_zephyr_7b_v1_full"}, "flashrank_model"),
        ({"flashrank_model": "no-such-model"}, "flashrank_model"),
        ({"flashrank_max_length": 2}, "flashrank_max_length"),
    ],
)
def test_bad_flashrank_options_are_typed_errors(options: dict[str, Any], option_name: str) -> None:
    with pytest.raises(InvalidOptionError, match=option_name):
        run_flashrank(**{"flashrank_model_dir": str(tiny_model_cache()), **options})


def test_flashrank_leaves_root_logging_alone(tmp_path: Path) -> None:
    build_tiny_flashrank_model(tmp_path, KIT_TEXTS)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    run_flashrank(flashrank_model_dir=str(tmp_path))
    assert root.handlers == handlers and root.level == level


def test_the_tiny_model_writer_loads_without_the_test_kit() -> None:
    """Certification and user scripts build the model folder without importing pytest or the rerank kit."""
    script = (
        "import sys\n"
        "import rag_integration.testing.tiny_flashrank\n"
        "print(sorted(name for name in ('pytest', 'rag_integration.testing.rerank') if name in sys.modules))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert completed.stdout.strip().splitlines()[-1] == "[]"


def test_certify_builds_the_tiny_model_for_flashrank() -> None:
    options = adapter_for(FlashRankReranker, {})["backend_options"]
    folder = Path(options["flashrank_model_dir"])
    try:
        assert (folder / TINY_MODEL_NAME / "tokenizer.json").is_file()
        rows = run_flashrank(query_text="engine oil", candidates=CANDIDATES, top_k=1, flashrank_model_dir=str(folder))
        assert rows[0][0]["doc_id"] == "engine"
    finally:
        shutil.rmtree(folder)
