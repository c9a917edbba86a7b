"""Retrieve behaviour beyond the kit: the README example, upstream sources, real embeddings, persistence."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Any

import pytest
from mloda.provider import FeatureGroup, FeatureSet
from mloda.user import Feature, FeatureName, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration import available_backends
from rag_integration.cli import main as cli_main
from rag_integration.core.errors import BackendUnavailableError, ConnectorError, InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.registry import package_backend_classes
from rag_integration.testing.retrieve import CORPUS
from rag_integration.testing.runner import run_feature


class QueriesAndDocs(FeatureGroup):
    """An upstream source: ``test_queries`` rows are strings, ``test_docs`` rows are document dicts."""

    @classmethod
    def match_feature_group_criteria(
        cls, feature_name: Any, options: Options, data_access_collection: Any = None
    ) -> bool:
        return str(feature_name) in {"test_queries", "test_docs"}

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        names = {str(feature.name) for feature in features.features}
        if "test_queries" in names:
            return {"test_queries": ["engine oil", "moon tide", "zyxw"]}
        return {"test_docs": CORPUS}


def run(features: list[Feature], *groups: type[FeatureGroup]) -> Any:
    return mlodaAPI.run_all(
        features,
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(set(groups)),
    )


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()


def test_readme_quick_start() -> None:
    feature = Feature(
        "retrieved_passages",
        options=Options(
            context={
                "retrieve_backend": "bm25s",
                "query_text": "cat pet",
                "corpus": [
                    {"doc_id": "d1", "text": "A cat is an independent and curious pet."},
                    {"doc_id": "d2", "text": "Cars need regular engine oil and maintenance."},
                ],
                "top_k": 3,
            }
        ),
    )
    result = run([feature], Bm25sRetriever)
    rows = result[0]["retrieved_passages"]
    assert len(rows) == 1 and [passage["doc_id"] for passage in rows[0]] == ["d1"]
    assert set(rows[0][0]) == {"doc_id", "text", "score", "rank"}


def test_queries_source_answers_one_row_per_upstream_row() -> None:
    feature = Feature(
        "retrieved_passages",
        options=Options(context={"retrieve_backend": "bm25s", "queries_source": "test_queries", "corpus": CORPUS}),
    )
    frame = run([feature], Bm25sRetriever, QueriesAndDocs)[0]
    rankings = frame["retrieved_passages"]
    assert len(rankings) == 3
    assert rankings[0][0]["doc_id"] == "engine" and rankings[1][0]["doc_id"] == "tide" and rankings[2] == []


def test_corpus_source_reads_documents_from_an_upstream_feature() -> None:
    feature = Feature(
        "retrieved_passages",
        options=Options(
            context={"retrieve_backend": "tfidf", "query_text": ["lava", "bread"], "corpus_source": "test_docs"}
        ),
    )
    rankings = run([feature], TfidfRetriever, QueriesAndDocs)[0]["retrieved_passages"]
    assert [ranking[0]["doc_id"] for ranking in rankings] == ["volcano", "bread"]


def test_two_requests_that_mloda_would_merge_are_refused() -> None:
    features = [
        Feature(
            "retrieved_passages",
            options=Options(context={"retrieve_backend": "bm25s", "query_text": q, "corpus": CORPUS}),
        )
        for q in ("cat", "dog")
    ]
    with pytest.raises(InvalidOptionError, match="query_text"):
        run(features, Bm25sRetriever)


def test_unknown_or_missing_selector_is_a_typed_error_listing_the_backends() -> None:
    for options in ({"retrieve_backend": "nope", "query_text": "x", "corpus": CORPUS}, {"query_text": "x"}):
        with pytest.raises(ConnectorError, match=r"retrieve_backend.*'bm25s', 'tfidf'"):
            run([Feature("retrieved_passages", options=Options(context=options))], Bm25sRetriever, TfidfRetriever)


def test_missing_library_raises_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(BackendUnavailableError, match=r"uv sync --extra connectors"):
        run_feature(
            "retrieved_passages", {"retrieve_backend": "bm25s", "query_text": "x", "corpus": CORPUS}, {Bm25sRetriever}
        )


def test_real_minilm_model_finds_meaning_without_shared_words() -> None:
    corpus = [
        {"doc_id": "feline", "text": "Kittens purr and chase mice around the barn."},
        {"doc_id": "finance", "text": "The central bank raised interest rates again this quarter."},
        {"doc_id": "weather", "text": "Heavy snowfall closed the mountain pass overnight."},
    ]
    rows = run_feature(
        "retrieved_passages",
        {"retrieve_backend": "faiss", "query_text": ["a young cat", "monetary policy"], "corpus": corpus},
        {FaissDenseRetriever},
    )
    assert [ranking[0]["doc_id"] for ranking in rows] == ["feline", "finance"]
    assert rows[0][0]["score"] > rows[0][1]["score"] + 0.1


def test_persisted_dense_index_is_loaded_without_re_embedding(tmp_path: Path) -> None:
    options = {
        "retrieve_backend": "faiss",
        "embedding_model": "hash",
        "query_text": "engine oil",
        "corpus": CORPUS,
        "index_dir": str(tmp_path),
    }
    first = run_feature("retrieved_passages", options, {FaissDenseRetriever})
    INDEX_CACHE.clear()
    embedder = get_embedder("hash")
    embedded_before = embedder.texts_embedded
    second = run_feature("retrieved_passages", options, {FaissDenseRetriever})
    assert second == first
    assert embedder.texts_embedded - embedded_before == 1  # the query only, no document
    assert INDEX_CACHE.stats.loads == 1 and INDEX_CACHE.stats.builds == 0


def test_ivf_index_ranks_like_flat_on_a_small_corpus() -> None:
    base = {"retrieve_backend": "faiss", "embedding_model": "hash", "query_text": "engine oil filter", "corpus": CORPUS}
    flat = run_feature("retrieved_passages", base, {FaissDenseRetriever})
    ivf = run_feature("retrieved_passages", dict(base, faiss_index="ivf", ivf_nprobe=64), {FaissDenseRetriever})
    assert ivf == flat


def test_hybrid_weights_can_follow_one_ranking() -> None:
    query = {"query_text": "the oil of the car engine and a dog", "corpus": CORPUS, "embedding_model": "hash"}
    bm25 = run_feature("retrieved_passages", {"retrieve_backend": "bm25s", **query}, {Bm25sRetriever})[0]
    hybrid = run_feature(
        "retrieved_passages",
        {"retrieve_backend": "hybrid_rrf", "rrf_weights": [1.0, 0.0], **query},
        {HybridRrfRetriever},
    )[0]
    assert [row["doc_id"] for row in hybrid[: len(bm25)]] == [row["doc_id"] for row in bm25]


def test_hybrid_rrf_options_are_validated() -> None:
    with pytest.raises(InvalidOptionError, match="rrf_weights"):
        run_feature(
            "retrieved_passages",
            {
                "retrieve_backend": "hybrid_rrf",
                "query_text": "x",
                "corpus": CORPUS,
                "embedding_model": "hash",
                "rrf_weights": [1.0],
            },
            {HybridRrfRetriever},
        )


def test_bad_embedding_model_is_a_typed_error() -> None:
    with pytest.raises(InvalidOptionError, match="embedding_model"):
        run_feature(
            "retrieved_passages",
            {"retrieve_backend": "faiss", "query_text": "x", "corpus": CORPUS, "embedding_model": "no-such-model"},
            {FaissDenseRetriever},
        )


def test_available_backends_lists_every_retrieve_backend() -> None:
    ours = {cls.__name__ for cls in package_backend_classes()}  # other test modules load backends of their own
    rows = [row for row in available_backends() if row["family"] == "retrieve" and row["class"] in ours]
    assert {row["value"] for row in rows} == {"bm25s", "tfidf", "faiss", "hybrid_rrf", "vector_store"}
    keys = {"family", "feature", "selector", "value", "class", "extra", "installed", "distribution", "version"}
    assert all(set(row) == keys | {"contract", "profiles"} for row in rows)
    assert {(row["distribution"], row["contract"]) for row in rows} == {("rag-integration", "1.0")}
    assert all(row["version"] == importlib.metadata.version("rag-integration") for row in rows)


def test_cli_backends_and_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["backends"]) == 0
    assert "Bm25sRetriever" in capsys.readouterr().out
    assert cli_main(["demo", "--backend", "bm25s"]) == 0
    output = capsys.readouterr().out
    assert "engine-oil" in output and "retrieve_backend = 'bm25s'" in output


def test_a_corpus_object_answers_like_a_list_and_shares_its_index() -> None:
    from rag_integration import Corpus

    query = {"retrieve_backend": "bm25s", "query_text": ["engine oil", "lava"], "top_k": 3}
    from_list = run_feature("retrieved_passages", {**query, "corpus": CORPUS}, {Bm25sRetriever})
    builds = INDEX_CACHE.stats.builds
    from_corpus = run_feature("retrieved_passages", {**query, "corpus": Corpus(CORPUS)}, {Bm25sRetriever})
    assert from_corpus == from_list and INDEX_CACHE.stats.builds == builds


@pytest.mark.parametrize(
    ("connector", "options", "option_name"),
    [
        (Bm25sRetriever, {"bm25_k1": True}, "bm25_k1"),
        (Bm25sRetriever, {"bm25_k1": float("inf")}, "bm25_k1"),
        (Bm25sRetriever, {"bm25_b": 1.5}, "bm25_b"),
        (Bm25sRetriever, {"bm25_method": "okapi"}, "bm25_method"),
        (Bm25sRetriever, {"bm25_method": "bm25+", "bm25_k1": 0.0}, "bm25_k1"),
        (Bm25sRetriever, {"stemmer": "no"}, "stemmer"),
        (TfidfRetriever, {"tfidf_ngram_max": 4}, "tfidf_ngram_max"),
        (TfidfRetriever, {"tfidf_sublinear_tf": 1}, "tfidf_sublinear_tf"),
        (FaissDenseRetriever, {"faiss_index": "annoy"}, "faiss_index"),
        (FaissDenseRetriever, {"embedding_model": []}, "embedding_model"),
        (FaissDenseRetriever, {"embedding_model": False}, "embedding_model"),
        (FaissDenseRetriever, {"embedding_model": ""}, "embedding_model"),
        (FaissDenseRetriever, {"hnsw_m": 2}, "hnsw_m"),
        (FaissDenseRetriever, {"ivf_nprobe": 0}, "ivf_nprobe"),
        (HybridRrfRetriever, {"rrf_k": 0}, "rrf_k"),
        (HybridRrfRetriever, {"rrf_weights": ["x", 1]}, "rrf_weights"),
        (HybridRrfRetriever, {"rrf_weights": [0, 0]}, "rrf_weights"),
        (HybridRrfRetriever, {"rrf_candidates": 0}, "rrf_candidates"),
    ],
)
def test_bad_backend_options_are_typed_errors(
    connector: type[Bm25sRetriever], options: dict[str, Any], option_name: str
) -> None:
    for corpus in (CORPUS, []):  # checked even when there is nothing to search
        request = {"retrieve_backend": connector.BACKEND, "query_text": "x", "corpus": corpus, **options}
        if connector is HybridRrfRetriever:
            request.setdefault("embedding_model", "hash")
        with pytest.raises(InvalidOptionError, match=option_name):
            run_feature("retrieved_passages", request, {connector})


def test_index_dir_is_written_even_when_the_index_was_already_in_memory(tmp_path: Path) -> None:
    request = {"retrieve_backend": "bm25s", "query_text": "cat", "corpus": CORPUS}
    run_feature("retrieved_passages", request, {Bm25sRetriever})
    run_feature("retrieved_passages", dict(request, index_dir=str(tmp_path)), {Bm25sRetriever})
    assert any(tmp_path.iterdir())


def test_index_dir_that_is_a_file_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InvalidOptionError, match="index_dir"):
        run_feature(
            "retrieved_passages",
            {"retrieve_backend": "bm25s", "query_text": "cat", "corpus": CORPUS, "index_dir": str(blocker)},
            {Bm25sRetriever},
        )


def test_search_settings_do_not_rebuild_the_dense_index() -> None:
    base = {
        "retrieve_backend": "faiss",
        "embedding_model": "hash",
        "faiss_index": "hnsw",
        "query_text": "oil",
        "corpus": CORPUS,
    }
    run_feature("retrieved_passages", base, {FaissDenseRetriever})
    builds = INDEX_CACHE.stats.builds
    run_feature("retrieved_passages", dict(base, hnsw_ef_search=16), {FaissDenseRetriever})
    assert INDEX_CACHE.stats.builds == builds


def test_blank_source_name_is_a_typed_error() -> None:
    with pytest.raises(InvalidOptionError, match="corpus_source"):
        run_feature(
            "retrieved_passages",
            {"retrieve_backend": "bm25s", "query_text": "x", "corpus_source": "  "},
            {Bm25sRetriever},
        )


def test_a_plain_corpus_list_is_compacted_for_mloda_without_touching_the_callers_options() -> None:
    from rag_integration import Corpus

    context = {"retrieve_backend": "bm25s", "query_text": "engine oil", "corpus": list(CORPUS)}
    options = Options(context=context)
    rows = run([Feature("retrieved_passages", options=options)], Bm25sRetriever)[0]["retrieved_passages"]
    assert rows[0][0]["doc_id"] == "engine"
    assert type(options.context["corpus"]) is list and not isinstance(options.context["corpus"], Corpus)
    assert context["corpus"] == CORPUS


def test_mloda_discovers_the_backends_through_the_entry_point() -> None:
    import subprocess
    import sys

    script = (
        "from mloda.user import Feature, Options, PluginLoader, mlodaAPI\n"
        "from mloda.user.python_dict import PythonDictFramework\n"
        "PluginLoader.all()\n"
        "options = Options(context={'retrieve_backend': 'tfidf', 'query_text': 'cat', 'corpus': [{'text': 'a cat'}]})\n"
        "result = mlodaAPI.run_all([Feature('retrieved_passages', options=options)],\n"
        "                          compute_frameworks=[PythonDictFramework])\n"
        "print(result[0]['retrieved_passages'][0][0]['doc_id'])\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert completed.stdout.strip().splitlines()[-1] == "0"


def test_a_request_naming_itself_as_its_source_is_a_typed_error() -> None:
    with pytest.raises(ConnectorError, match="corpus_source"):
        run_feature(
            "retrieved_passages",
            {"retrieve_backend": "bm25s", "query_text": "cat", "corpus_source": "retrieved_passages"},
            {Bm25sRetriever},
        )


def test_nested_brackets_in_a_passage_still_give_a_grounded_answer() -> None:
    from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder

    for responder in (ExtractiveResponder, TemplateResponder):
        answer = run_feature(
            "generated_answer",
            {
                "generate_backend": responder.BACKEND,
                "query_text": "cat",
                "passages": [{"doc_id": "p", "text": "The cat sat on x[3[4]]."}],
            },
            {responder},
        )[0]
        assert answer == {"answer": "The cat sat on x. [1]", "citations": ["p"]}
