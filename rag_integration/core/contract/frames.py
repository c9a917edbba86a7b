"""Compute frameworks at the connector boundary: upstream frames are read natively, output columns are typed.

Connectors compute on Python values. On the way in, a frame is made readable once (a lazy Polars plan collected,
a Spark frame fetched as Arrow) and its columns read with the framework's own converter; on the way out, values are
built into the framework's own column with the declared ``core.contract.schema`` shape, appended to the rows they answer
(never joined back by position), so every framework returns the same types.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from rag_integration.core.contract.schema import Shape, arrow_type, encode, holds_json
from rag_integration.core.errors import InvalidOptionError, MissingOptionError


class FrameAdapter:
    """PythonDict: columns are lists of Python values and stay so."""

    FRAMEWORK: ClassVar[str] = "PythonDictFramework"

    def readable(self, data: Any) -> Any:
        """``data`` in a form ``column_values`` reads (None for a root request)."""
        return data

    def write(self, name: str, values: list[Any], shape: Shape, data: Any) -> Any:
        """The output: ``values`` as column ``name`` beside the readable upstream rows (None for a root)."""
        return {name: values}


class ArrowBackedAdapter(FrameAdapter):
    """Frameworks whose columns are typed: values become an Arrow array of the declared shape, then the
    framework's own column."""

    def write(self, name: str, values: list[Any], shape: Shape, data: Any) -> Any:
        import pyarrow as pa

        if holds_json(shape):
            values = [encode(value, shape, f"{name}[{position}]") for position, value in enumerate(values)]
        return self.attach(name, pa.array(values, type=arrow_type(shape)), data)

    def attach(self, name: str, column: Any, data: Any) -> Any:
        """A frame of ``data``'s rows with the Arrow ``column`` added (a new frame when the row counts differ)."""
        raise NotImplementedError


class PyArrowAdapter(ArrowBackedAdapter):
    FRAMEWORK = "PyArrowTable"

    def attach(self, name: str, column: Any, data: Any) -> Any:
        import pyarrow as pa

        if data is None or data.num_rows != len(column):
            return pa.table({name: column})
        return data.append_column(name, column)


class PandasAdapter(ArrowBackedAdapter):
    """Pandas columns hold the Arrow type (``pd.ArrowDtype``), so a cell reads back as the same Python values."""

    FRAMEWORK = "PandasDataFrame"

    def attach(self, name: str, column: Any, data: Any) -> Any:
        import pandas as pd

        series = pd.Series(pd.arrays.ArrowExtensionArray(column), name=name)
        if data is None or len(data) != len(column):
            return pd.DataFrame({name: series})
        return data.assign(**{name: series.set_axis(data.index)})


class PolarsAdapter(ArrowBackedAdapter):
    FRAMEWORK = "PolarsDataFrame"

    def attach(self, name: str, column: Any, data: Any) -> Any:
        import polars as pl

        series = pl.Series(name, column)
        if data is None or data.height != len(column):
            return pl.DataFrame([series])
        return data.with_columns(series)


class PolarsLazyAdapter(PolarsAdapter):
    """The plan is collected once; the answer is appended to exactly the rows it was computed from."""

    FRAMEWORK = "PolarsLazyDataFrame"

    def readable(self, data: Any) -> Any:
        return None if data is None else data.collect()

    def attach(self, name: str, column: Any, data: Any) -> Any:
        return super().attach(name, column, data).lazy()


class SparkAdapter(ArrowBackedAdapter):
    """Spark frames are fetched to the driver as Arrow for the families that need every row at once; retrieval over
    a frame of queries does not come here but answers each partition on the executors (``core.contract.spark``)."""

    FRAMEWORK = "SparkFramework"

    def readable(self, data: Any) -> Any:
        return None if data is None else data.toArrow()

    def attach(self, name: str, column: Any, data: Any) -> Any:
        return spark_session().createDataFrame(PyArrowAdapter().attach(name, column, data))


def spark_session() -> Any:
    """The session mloda runs on: the active one (mloda's, or the one given in its ``DataAccessCollection``), else
    one made as mloda makes its default."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return SparkSession.builder.appName("MLoda-Spark-Framework").master("local[*]").getOrCreate()


ADAPTERS: Mapping[str, FrameAdapter] = {
    adapter.FRAMEWORK: adapter
    for adapter in (
        FrameAdapter(),
        PyArrowAdapter(),
        PandasAdapter(),
        PolarsAdapter(),
        PolarsLazyAdapter(),
        SparkAdapter(),
    )
}
SUPPORTED_FRAMEWORKS: tuple[str, ...] = tuple(ADAPTERS)


def framework_classes() -> set[Any]:
    """The loaded mloda framework classes that an adapter serves (what ``compute_framework_rule`` says).

    Only loaded ones: a framework a user names is loaded by then, and importing Spark or Pandas up front would cost
    every process seconds.
    """
    from mloda.provider import ComputeFramework

    quiet_pyspark_pandas_warning()
    found: set[Any] = set()
    pending = list(ComputeFramework.__subclasses__())
    while pending:
        framework = pending.pop()
        pending.extend(framework.__subclasses__())
        if framework.__name__ in ADAPTERS and framework.__module__.startswith("mloda"):
            found.add(framework)
    return found


PYSPARK_PANDAS_WARNING = "PySpark does not yet fully support pandas >= 3"


def quiet_pyspark_pandas_warning() -> None:
    """pyspark 4 warns once per process, while it starts a session, that its pandas API does not fully support
    pandas 3. The connectors hand Spark only Arrow batches (``mapInArrow``) and typed frames, never that API, so the
    module that warns is imported here, before mloda starts the session, with that one warning silenced. Only when
    pyspark is already loaded: a run without Spark imports nothing."""
    if "pyspark" not in sys.modules or "pyspark.testing.utils" in sys.modules:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        importlib.import_module("pyspark.testing.utils")


def adapter_for(framework: str) -> FrameAdapter:
    """The adapter for a compute framework's class name; a framework no connector serves is a typed error."""
    adapter = ADAPTERS.get(framework)
    if adapter is None:
        raise InvalidOptionError("compute_frameworks", framework, "one of " + ", ".join(SUPPORTED_FRAMEWORKS))
    return adapter


def column_values(data: Any, column: str, option: str) -> list[Any]:
    """The values of ``column`` as Python values, from a columnar dict, a PyArrow table, or a Pandas or Polars frame
    (the readable forms every adapter hands over)."""
    if data is None:
        raise MissingOptionError(option, f"upstream feature '{column}' to be computed first")
    if isinstance(data, Mapping):
        if column not in data:
            raise MissingOptionError(option, f"upstream feature '{column}' in the input data")
        return list(data[column])
    names = data.column_names if _is_arrow_table(data) else list(data.columns)
    if column not in names:
        raise MissingOptionError(option, f"upstream feature '{column}' in the input data")
    if _is_arrow_table(data):
        return list(data.column(column).to_pylist())
    values = data[column]
    return list(values.to_list() if type(values).__module__.startswith("polars") else values.tolist())


def _is_arrow_table(data: Any) -> bool:
    return type(data).__module__.startswith("pyarrow") and hasattr(data, "column_names")


def frame_column(frame: Any, column: str) -> list[Any]:
    """A result frame's column as Python values, whatever framework returned it (Spark is fetched as Arrow)."""
    if type(frame).__module__.startswith("pyspark"):
        frame = frame.select(column).toArrow()
    return column_values(frame, column, column)
