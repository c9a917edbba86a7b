"""Compute frameworks at the connector boundary: upstream frames are read natively, output columns are typed.

Connectors compute on Python values. On the way in, a frame is made readable once (a lazy Polars plan collected,
a Spark frame fetched as Arrow) and its columns read with the framework's own converter; on the way out, values are
built into the framework's own column with the declared ``core.contract.schema`` shape, appended to the rows they answer
(never joined back by position), so every framework returns the same types.
"""

from __future__ import annotations

import importlib
import sys
import typing
import warnings
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeGuard, TypeVar

from rag_integration.core.contract.schema import Shape, arrow_type, encode, holds_json
from rag_integration.core.errors import InvalidOptionError, MissingOptionError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    from mloda.provider import ComputeFramework
    from pyspark.sql import DataFrame as SparkFrame
    from pyspark.sql import SparkSession

    Columns: TypeAlias = Mapping[str, list[Any]]
    ReadableFrame: TypeAlias = Columns | pa.Table | pd.DataFrame | pl.DataFrame
    """The forms ``column_values`` reads: what every adapter's ``readable`` hands over."""

FrameT = TypeVar("FrameT")
ReadableT = TypeVar("ReadableT")


class FrameAdapter(Generic[FrameT, ReadableT]):
    """One compute framework's frames (``FrameT``) at the connector boundary, read as ``ReadableT``."""

    FRAMEWORK: ClassVar[str]

    def readable(self, data: FrameT | None) -> ReadableT | None:
        """``data`` in a form ``column_values`` reads (None for a root request)."""
        raise NotImplementedError

    def write(self, name: str, values: list[Any], shape: Shape, data: ReadableT | None) -> FrameT:
        """The output: ``values`` as column ``name`` beside the readable upstream rows (None for a root)."""
        raise NotImplementedError


FrameworkAdapter = FrameAdapter[Any, Any]
"""An adapter of whichever framework a request runs on (``adapter_for``)."""


class PythonDictAdapter(FrameAdapter["Columns", "Columns"]):
    """PythonDict: columns are lists of Python values and stay so."""

    FRAMEWORK = "PythonDictFramework"

    def readable(self, data: Columns | None) -> Columns | None:
        return data

    def write(self, name: str, values: list[Any], shape: Shape, data: Columns | None) -> Columns:
        return {name: values}


class ArrowBackedAdapter(FrameAdapter[FrameT, ReadableT]):
    """Frameworks whose columns are typed: values become an Arrow array of the declared shape, then the
    framework's own column."""

    def write(self, name: str, values: list[Any], shape: Shape, data: ReadableT | None) -> FrameT:
        import pyarrow as pa

        if holds_json(shape):
            values = [encode(value, shape, f"{name}[{position}]") for position, value in enumerate(values)]
        return self.attach(name, pa.array(values, type=arrow_type(shape)), data)

    def attach(self, name: str, column: pa.Array, data: ReadableT | None) -> FrameT:
        """A frame of ``data``'s rows with the Arrow ``column`` added (a new frame when the row counts differ)."""
        raise NotImplementedError


class SameFrameAdapter(ArrowBackedAdapter[FrameT, FrameT]):
    """Frameworks whose frames are readable as they come."""

    def readable(self, data: FrameT | None) -> FrameT | None:
        return data


class PyArrowAdapter(SameFrameAdapter["pa.Table"]):
    FRAMEWORK = "PyArrowTable"

    def attach(self, name: str, column: pa.Array, data: pa.Table | None) -> pa.Table:
        import pyarrow as pa

        if data is None or data.num_rows != len(column):
            return pa.table({name: column})
        return data.append_column(name, column)


class PandasAdapter(SameFrameAdapter["pd.DataFrame"]):
    """Pandas columns hold the Arrow type (``pd.ArrowDtype``), so a cell reads back as the same Python values."""

    FRAMEWORK = "PandasDataFrame"

    def attach(self, name: str, column: pa.Array, data: pd.DataFrame | None) -> pd.DataFrame:
        import pandas as pd

        series = pd.Series(pd.arrays.ArrowExtensionArray(column), name=name)
        if data is None or len(data) != len(column):
            return pd.DataFrame({name: series})
        return data.assign(**{name: series.set_axis(data.index)})


class PolarsAdapter(SameFrameAdapter["pl.DataFrame"]):
    FRAMEWORK = "PolarsDataFrame"

    def attach(self, name: str, column: pa.Array, data: pl.DataFrame | None) -> pl.DataFrame:
        import polars as pl

        series = pl.Series(name, column)
        if data is None or data.height != len(column):
            return pl.DataFrame([series])
        return data.with_columns(series)


class PolarsLazyAdapter(ArrowBackedAdapter["pl.LazyFrame", "pl.DataFrame"]):
    """The plan is collected once; the answer is appended to exactly the rows it was computed from."""

    FRAMEWORK = "PolarsLazyDataFrame"

    def readable(self, data: pl.LazyFrame | None) -> pl.DataFrame | None:
        return None if data is None else data.collect()

    def attach(self, name: str, column: pa.Array, data: pl.DataFrame | None) -> pl.LazyFrame:
        return PolarsAdapter().attach(name, column, data).lazy()


class SparkAdapter(ArrowBackedAdapter["SparkFrame", "pa.Table"]):
    """Spark frames are fetched to the driver as Arrow for the families that need every row at once; retrieval over
    a frame of queries does not come here but answers each partition on the executors (``core.contract.spark``)."""

    FRAMEWORK = "SparkFramework"

    def readable(self, data: SparkFrame | None) -> pa.Table | None:
        return None if data is None else data.toArrow()

    def attach(self, name: str, column: pa.Array, data: pa.Table | None) -> SparkFrame:
        return spark_session().createDataFrame(PyArrowAdapter().attach(name, column, data))


def spark_session() -> SparkSession:
    """The session mloda runs on: the active one (mloda's, or the one given in its ``DataAccessCollection``), else
    one made as mloda makes its default."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return SparkSession.builder.appName("MLoda-Spark-Framework").master("local[*]").getOrCreate()


ADAPTERS: Mapping[str, FrameworkAdapter] = {
    adapter.FRAMEWORK: adapter
    for adapter in (
        PythonDictAdapter(),
        PyArrowAdapter(),
        PandasAdapter(),
        PolarsAdapter(),
        PolarsLazyAdapter(),
        SparkAdapter(),
    )
}
SUPPORTED_FRAMEWORKS: tuple[str, ...] = tuple(ADAPTERS)


def framework_classes() -> set[type[ComputeFramework]]:
    """The loaded mloda framework classes that an adapter serves (what ``compute_framework_rule`` says).

    Only loaded ones: a framework a user names is loaded by then, and importing Spark or Pandas up front would cost
    every process seconds.
    """
    from mloda.provider import ComputeFramework

    quiet_pyspark_pandas_warning()
    found: set[type[ComputeFramework]] = set()
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


def adapter_for(framework: str) -> FrameworkAdapter:
    """The adapter for a compute framework's class name; a framework no connector serves is a typed error."""
    adapter = ADAPTERS.get(framework)
    if adapter is None:
        raise InvalidOptionError("compute_frameworks", framework, "one of " + ", ".join(SUPPORTED_FRAMEWORKS))
    return adapter


def column_values(data: ReadableFrame | None, column: str, option: str) -> list[Any]:
    """The values of ``column`` as Python values, from a columnar dict, a PyArrow table, or a Pandas or Polars frame
    (the readable forms every adapter hands over)."""
    if data is None:
        raise MissingOptionError(option, f"upstream feature '{column}' to be computed first")
    if isinstance(data, Mapping):
        _require_column(data, column, option)
        return list(data[column])
    if _is_arrow_table(data):
        _require_column(data.column_names, column, option)
        return list(data.column(column).to_pylist())
    if _is_from(data, "polars"):
        _require_column(data.columns, column, option)
        return list(data[column].to_list())
    frame = typing.cast("pd.DataFrame", data)
    _require_column(list(frame.columns), column, option)
    return list(frame[column].tolist())


def _require_column(names: Collection[str], column: str, option: str) -> None:
    if column not in names:
        raise MissingOptionError(option, f"upstream feature '{column}' in the input data")


def _is_arrow_table(data: object) -> TypeGuard[pa.Table]:
    return _is_from(data, "pyarrow") and hasattr(data, "column_names")


def _is_from(data: object, library: str) -> bool:
    return type(data).__module__.startswith(library)


def frame_column(frame: ReadableFrame | SparkFrame, column: str) -> list[Any]:
    """A result frame's column as Python values, whatever framework returned it (Spark is fetched as Arrow)."""
    if _is_spark_frame(frame):
        frame = frame.select(column).toArrow()
    return column_values(frame, column, column)


def _is_spark_frame(frame: object) -> TypeGuard[SparkFrame]:
    return _is_from(frame, "pyspark")
