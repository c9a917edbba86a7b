"""Retrieval distributed on Spark ``local[2]``: a frame of queries is answered per partition on the executors, each
answer lands on the row of its query, and the index is built once, on the driver."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mloda.provider import FeatureGroup, FeatureSet, PropertySpec, property_spec
from mloda.user import DataAccessCollection, Feature, FeatureName, Index, Options, PluginCollector, mlodaAPI
from mloda.user.spark import SparkFramework

from rag_integration.core.contract.frames import SparkAdapter
from rag_integration.core.documents.corpus import Document, corpus_fingerprint
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.core.indexes.memory import forget_built
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, HybridRrfRetriever
from rag_integration.testing.kit import spark_test_session
from rag_integration.testing.runner import run_feature

QUERY_COLUMN = "spark_queries"


def build_marker(documents: Sequence[Document]) -> Path:
    return Path(tempfile.gettempdir()) / f"rag-integration-spark-builds-{corpus_fingerprint(documents)[:16]}"


class CountingBm25s(Bm25sRetriever):
    """bm25s that writes the id of every process that builds its index, so a test can see where builds happen."""

    BACKEND: ClassVar[str | None] = "bm25s_counting_builds"

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Any) -> Any:
        with build_marker(documents).open("a", encoding="utf-8") as marker:
            marker.write(f"{os.getpid()}\n")
        return super().build_index(documents, settings)


class SparkQueries(FeatureGroup):
    """An upstream that holds its queries as a Spark frame of several partitions, as a cluster's data would. It
    declares the option it reads in mloda's ``PROPERTY_MAPPING``, so a request that forwards it is not refused."""

    PROPERTY_MAPPING: ClassVar[dict[str, PropertySpec] | None] = {
        "spark_query_list": property_spec("the queries this upstream serves")
    }

    @classmethod
    def match_feature_group_criteria(
        cls,
        feature_name: FeatureName | str,
        options: Options,
        data_access_collection: DataAccessCollection | None = None,
    ) -> bool:
        return str(feature_name) == QUERY_COLUMN

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        queries = list(next(iter(features.features)).options.get("spark_query_list"))
        return query_frame(queries)


def query_frame(queries: list[str]) -> Any:
    spark = spark_test_session()
    return spark.createDataFrame([(query,) for query in queries], f"{QUERY_COLUMN} string").repartition(4)


def corpus_of(size: int) -> list[dict[str, Any]]:
    """Every document holds one word of its own (``w<i>``) and words shared with its neighbours."""
    tag = uuid.uuid4().hex[:8]
    return [{"doc_id": f"d{i:05d}", "text": f"w{i} shared{i % 7} common {tag}", "group": i % 3} for i in range(size)]


@pytest.fixture(scope="module", autouse=True)
def _spark() -> None:
    """Executors unpickle this module's backend by reference, so they need the module itself."""
    spark_test_session().sparkContext.addPyFile(__file__)


def test_each_answer_lands_on_the_row_of_its_query() -> None:
    corpus = corpus_of(300)
    queries = [f"w{i} common" for i in range(0, 300, 3)]
    options = {"retrieve_backend": "bm25s", "queries_source": QUERY_COLUMN, "corpus": corpus, "top_k": 3}
    frame = query_frame(queries)
    answered = Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader(options))
    assert answered.rdd.getNumPartitions() == frame.rdd.getNumPartitions() > 1
    rows = answered.collect()
    assert len(rows) == len(queries)
    for row in rows:
        top = row["retrieved_passages"][0]
        assert top["doc_id"] == f"d{int(row[QUERY_COLUMN].split()[0][1:]):05d}"
        assert top["rank"] == 1 and isinstance(top["score"], float)


def test_the_index_is_built_once_on_the_driver_and_answers_match_python_dict() -> None:
    corpus = corpus_of(500)
    queries = [f"w{i} shared{i % 7}" for i in range(0, 500, 2)]
    options = {"retrieve_backend": CountingBm25s.BACKEND, "queries_source": QUERY_COLUMN, "corpus": corpus}
    options.update(spark_query_list=queries, top_k=4, filters={"group": [0, 2]}, return_metadata=True)
    INDEX_CACHE.clear()
    marker = build_marker([Document(doc["doc_id"], doc["text"]) for doc in corpus])
    marker.unlink(missing_ok=True)
    on_spark = run_feature("retrieved_passages", options, {CountingBm25s, SparkQueries}, framework=SparkFramework)
    assert marker.read_text(encoding="utf-8").split() == [str(os.getpid())]
    inline = {key: value for key, value in options.items() if key not in ("queries_source", "spark_query_list")}
    expected = run_feature("retrieved_passages", {**inline, "query_text": queries}, {CountingBm25s})
    assert sorted(map(str, on_spark)) == sorted(map(str, expected))
    assert all(passage["metadata"]["group"] in (0, 2) for ranking in on_spark for passage in ranking)


def test_index_dir_is_read_on_the_driver_and_shipped(tmp_path: Path) -> None:
    corpus = corpus_of(200)
    queries = [f"w{i}" for i in range(200)]
    options = {"retrieve_backend": "bm25s", "corpus": corpus, "index_dir": str(tmp_path), "top_k": 1}
    run_feature("retrieved_passages", {**options, "query_text": "w1"}, {Bm25sRetriever})
    forget_built()
    distributed = {**options, "queries_source": QUERY_COLUMN, "spark_query_list": queries}
    rows = run_feature("retrieved_passages", distributed, {Bm25sRetriever, SparkQueries}, framework=SparkFramework)
    # bm25s keeps its analysed corpus in index_dir: the driver derives the index from it, analysing no text
    assert INDEX_CACHE.stats.builds == 1 and ANALYSIS_MEMO.stats.analysed == 0
    assert ANALYSIS_MEMO.stats.reused == len(corpus)
    assert sorted(ranking[0]["doc_id"] for ranking in rows) == sorted(doc["doc_id"] for doc in corpus)


def test_a_hybrid_ships_both_of_its_indexes() -> None:
    corpus = corpus_of(120)
    queries = [f"w{i} common" for i in range(0, 120, 4)]
    options = {"retrieve_backend": "hybrid_rrf", "embedding_model": "hash", "corpus": corpus, "top_k": 2}
    expected = run_feature("retrieved_passages", {**options, "query_text": queries}, {HybridRrfRetriever})
    INDEX_CACHE.clear()
    distributed = {**options, "queries_source": QUERY_COLUMN, "spark_query_list": queries}
    rows = run_feature("retrieved_passages", distributed, {HybridRrfRetriever, SparkQueries}, framework=SparkFramework)
    assert INDEX_CACHE.stats.builds == 3  # bm25s, faiss and the hybrid pairing them, each once, on the driver
    assert sorted(map(str, rows)) == sorted(map(str, expected))


def test_bad_options_fail_on_the_driver_with_a_typed_error() -> None:
    from rag_integration.core.errors import InvalidOptionError

    options = {"retrieve_backend": "bm25s", "queries_source": QUERY_COLUMN, "corpus": corpus_of(5), "top_k": 0}
    with pytest.raises(InvalidOptionError, match="top_k"):
        mlodaAPI.run_all(
            [Feature("retrieved_passages", options=Options(context={**options, "spark_query_list": ["w1"]}))],
            compute_frameworks=[SparkFramework],
            plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, SparkQueries}),
        )


def test_the_session_given_in_data_access_collection_is_used() -> None:
    spark = spark_test_session()
    options = {"retrieve_backend": "bm25s", "query_text": ["w1", "w2"], "corpus": corpus_of(10), "top_k": 1}
    result = mlodaAPI.run_all(
        [Feature("retrieved_passages", options=Options(context=options))],
        compute_frameworks=[SparkFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever}),
        data_access_collection=DataAccessCollection(connections=[spark]),
    )
    frame = result[0]
    assert frame.sparkSession is spark
    assert [row["retrieved_passages"][0]["doc_id"] for row in frame.collect()] == ["d00001", "d00002"]


def test_keep_index_returns_each_query_next_to_its_answer() -> None:
    """mloda returns the requested features only; ``keep_index`` keeps the query column in the answer's frame."""
    queries = [f"w{i} common" for i in range(0, 60, 3)]
    options = {"retrieve_backend": "bm25s", "queries_source": QUERY_COLUMN, "corpus": corpus_of(60), "top_k": 1}
    answer = Feature(
        "retrieved_passages",
        options=Options(context={**options, "spark_query_list": queries}),
        index=Index((QUERY_COLUMN,)),
        keep_index=True,
    )
    result = mlodaAPI.run_all(
        [answer],
        compute_frameworks=[SparkFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, SparkQueries}),
    )
    assert len(result) == 1 and set(result[0].columns) == {QUERY_COLUMN, "retrieved_passages"}
    rows = result[0].collect()
    assert sorted(row[QUERY_COLUMN] for row in rows) == sorted(queries)
    for row in rows:
        assert row["retrieved_passages"][0]["doc_id"] == f"d{int(row[QUERY_COLUMN].split()[0][1:]):05d}"


def test_without_keep_index_the_result_holds_the_requested_feature_only() -> None:
    queries = ["w1 common", "w2 common"]
    options = {"retrieve_backend": "bm25s", "queries_source": QUERY_COLUMN, "corpus": corpus_of(10), "top_k": 1}
    answer = Feature("retrieved_passages", options=Options(context={**options, "spark_query_list": queries}))
    result = mlodaAPI.run_all(
        [answer],
        compute_frameworks=[SparkFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, SparkQueries}),
    )
    assert [frame.columns for frame in result] == [["retrieved_passages"]]


CLEAN_RUN = """
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.spark import SparkFramework
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

corpus = [{"doc_id": f"d{i}", "text": f"word{i} engine oil"} for i in range(20)]
options = {"retrieve_backend": "bm25s", "query_text": ["word3 oil", "word5"], "corpus": corpus, "top_k": 2}
result = mlodaAPI.run_all(
    [Feature("retrieved_passages", options=Options(context=options))],
    compute_frameworks=[SparkFramework],
    plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever}),
)
print([row["retrieved_passages"][0]["doc_id"] for row in result[0].collect()])
"""


def test_a_newcomers_spark_run_prints_no_warning_and_no_traceback_at_exit(tmp_path: Path) -> None:
    """A fresh interpreter, as a user's script runs: the answer, then a clean exit (Java's own log lines aside)."""
    script = tmp_path / "spark_run.py"
    script.write_text(CLEAN_RUN, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['d3', 'd5']"
    python_noise = [
        line
        for line in done.stderr.splitlines()
        if "Traceback" in line or "Error" in line or re.search(r"\w+Warning: ", line)
    ]
    assert python_noise == []
