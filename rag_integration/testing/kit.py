"""What every family's contract kit shares: the adapter a backend's test fills in, one way to send a request, and
the checks that hold for every family alike (the same answer on every compute framework)."""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import pytest
from mloda.provider import ComputeFramework, FeatureGroup, FeatureSet
from mloda.user import DataAccessCollection, Feature, FeatureName, Options
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.frames import ArrowBackedAdapter, adapter_for
from rag_integration.testing.runner import run_feature

ROWS_FEATURE = "kit_item_rows"

FRAMEWORK_MODULES: dict[str, str] = {
    "PyArrowTable": "mloda.user.pyarrow",
    "PandasDataFrame": "mloda.user.pandas",
    "PolarsDataFrame": "mloda.user.polars",
    "PolarsLazyDataFrame": "mloda.user.polars",
    "SparkFramework": "mloda.user.spark",
}
"""The compute frameworks besides PythonDict that every backend must answer identically on (SPEC section 4)."""


class KitItemRows(FeatureGroup):
    """A root feature whose rows are the ``kit_rows`` option: an upstream for ``*_source`` tests."""

    @classmethod
    def match_feature_group_criteria(
        cls,
        feature_name: FeatureName | str,
        options: Options,
        data_access_collection: DataAccessCollection | None = None,
    ) -> bool:
        return str(feature_name) == ROWS_FEATURE

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: Any, features: FeatureSet) -> Any:
        """The rows as a typed column of the run's framework (mloda's Spark would store a list of dicts as its
        repr), as a real upstream of typed data gives them."""
        feature = next(iter(features.features))
        rows = list(feature.options.get("kit_rows"))
        adapter = adapter_for(feature.get_compute_framework().get_class_name())
        if not isinstance(adapter, ArrowBackedAdapter):
            return {ROWS_FEATURE: rows}
        import pyarrow as pa

        return adapter.attach(ROWS_FEATURE, pa.array(rows), None)


def kit_rows_feature(rows: list[Any]) -> Feature:
    """An upstream feature (with its own options) whose rows are ``rows``."""
    return Feature(ROWS_FEATURE, options=Options(context={"kit_rows": rows}))


def framework_class(name: str) -> type[ComputeFramework]:
    """A compute framework by class name; Spark gets a small ``local[2]`` session that every kit test reuses."""
    if name == "SparkFramework":
        spark_test_session()
    framework: type[ComputeFramework] = getattr(importlib.import_module(FRAMEWORK_MODULES[name]), name)
    return framework


def spark_test_session() -> Any:
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2]")
        .appName("rag-integration-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )


class ContractKit:
    """A backend's test subclasses its family's kit and returns the class under test from ``connector_class``;
    ``backend_options`` adds what the backend needs in tests (a small embedder, a local model folder)."""

    feature_name: ClassVar[str] = ""

    @classmethod
    def connector_class(cls) -> type[Any]:
        raise NotImplementedError("return the backend class under test")

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        """Extra options every request of this backend needs in tests."""
        return {}

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        """Requests (upstream sources and free-form metadata among them) that must answer the same everywhere."""
        return []

    def request(self, **options: Any) -> dict[str, Any]:
        """The backend's selector, then ``backend_options``, then the test's own options."""
        connector = self.connector_class()
        return {connector.SELECTOR: connector.BACKEND, **self.backend_options(), **options}

    def run(self, **options: Any) -> list[Any]:
        """The feature's rows for one request, through ``mlodaAPI.run_all``."""
        return self.run_on(PythonDictFramework, **options)

    def run_on(self, framework: type[ComputeFramework], **options: Any) -> list[Any]:
        """The feature's rows for one request on ``framework``, decoded to the values PythonDict gives."""
        groups: set[type[FeatureGroup]] = {self.connector_class(), KitItemRows}
        return run_feature(self.feature_name, self.request(**options), groups, framework=framework)

    @pytest.mark.parametrize("framework_name", sorted(FRAMEWORK_MODULES))
    def test_same_answers_on_every_framework(self, framework_name: str) -> None:
        requests = self.parity_requests()
        assert requests, f"{type(self).__name__} names no parity request"
        framework = framework_class(framework_name)
        for options in requests:
            assert self.run_on(framework, **options) == self.run(**options), options
