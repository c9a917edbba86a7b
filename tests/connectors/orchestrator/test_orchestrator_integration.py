"""Orchestrator behaviour beyond the kit: upstream sources, selection, the registry and a missing extra."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mloda.provider import FeatureGroup, FeatureSet
from mloda.user import Feature, FeatureName, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration import available_backends
from rag_integration.core.errors import BackendUnavailableError, ConnectorError, InvalidOptionError
from rag_integration.core.indexes.cache import INDEX_CACHE
from rag_integration.feature_groups.connectors.orchestrator import HaystackOrchestrator, R2RFixtureOrchestrator
from rag_integration.testing.orchestrator import CORPUS
from rag_integration.testing.runner import run_feature


class KitQueriesAndDocs(FeatureGroup):
    """An upstream source: ``kit_queries`` rows are strings, ``kit_docs`` rows are document dicts."""

    @classmethod
    def match_feature_group_criteria(
        cls, feature_name: Any, options: Options, data_access_collection: Any = None
    ) -> bool:
        return str(feature_name) in {"kit_queries", "kit_docs"}

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        names = {str(feature.name) for feature in features.features}
        if "kit_queries" in names:
            return {"kit_queries": ["engine oil", "moon tide ocean", "zyxwvut qqqq"]}
        return {"kit_docs": CORPUS}


def run(options: dict[str, Any], *groups: type[FeatureGroup]) -> Any:
    feature = Feature("orchestrated_answer", options=Options(context=options))
    return mlodaAPI.run_all(
        [feature],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(set(groups)),
    )


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    INDEX_CACHE.clear()


@pytest.mark.parametrize("connector", [HaystackOrchestrator, R2RFixtureOrchestrator])
def test_queries_source_answers_one_row_per_upstream_row(connector: Any) -> None:
    options = {"orchestrator_backend": connector.BACKEND, "queries_source": "kit_queries", "corpus": CORPUS}
    rows = run(options, connector, KitQueriesAndDocs)[0]["orchestrated_answer"]
    assert [row["documents"][0]["doc_id"] if row["documents"] else None for row in rows] == ["engine", "tide", None]
    assert rows[2] == {"answer": "", "documents": []}


@pytest.mark.parametrize("connector", [HaystackOrchestrator, R2RFixtureOrchestrator])
def test_corpus_source_reads_documents_from_an_upstream_feature(connector: Any) -> None:
    options = {
        "orchestrator_backend": connector.BACKEND,
        "query_text": ["lava eruption", "oil"],
        "corpus_source": "kit_docs",
    }
    rows = run(options, connector, KitQueriesAndDocs)[0]["orchestrated_answer"]
    assert [row["documents"][0]["doc_id"] for row in rows] == ["volcano", "engine"]


def test_the_selector_picks_the_backend() -> None:
    options = {"query_text": "engine oil", "corpus": CORPUS}
    for backend in ("haystack", "r2r"):
        result = run({**options, "orchestrator_backend": backend}, HaystackOrchestrator, R2RFixtureOrchestrator)
        assert result[0]["orchestrated_answer"][0]["documents"][0]["doc_id"] == "engine"
    for bad in ({**options, "orchestrator_backend": "langchain"}, options):
        with pytest.raises(ConnectorError, match=r"orchestrator_backend.*'haystack', 'r2r'"):
            run(bad, HaystackOrchestrator, R2RFixtureOrchestrator)


def test_registry_lists_both_backends() -> None:
    listed = {
        (row["value"], row["class"], row["extra"]) for row in available_backends() if row["family"] == "orchestrator"
    }
    assert listed == {("haystack", "HaystackOrchestrator", "orchestrator"), ("r2r", "R2RFixtureOrchestrator", "")}


def test_missing_haystack_raises_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "haystack", None)
    with pytest.raises(BackendUnavailableError, match=r"uv sync --extra orchestrator"):
        run_feature(
            "orchestrated_answer",
            {"orchestrator_backend": "haystack", "query_text": "oil", "corpus": CORPUS},
            {HaystackOrchestrator},
        )


class NonStringQueries(KitQueriesAndDocs):
    """An upstream source whose ``kit_queries`` rows are not all strings."""

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        return {"kit_queries": ["oil", 5]}


def test_upstream_query_rows_must_be_strings() -> None:
    options = {"orchestrator_backend": "haystack", "queries_source": "kit_queries", "corpus": CORPUS}
    with pytest.raises(InvalidOptionError, match=r"kit_queries\[1\]"):
        run(options, HaystackOrchestrator, NonStringQueries)


def test_the_example_in_the_docs_runs() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "orchestrator.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    exec(compile(example, "docs/orchestrator.md", "exec"), {})
