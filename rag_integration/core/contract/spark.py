"""A Spark frame of queries answered where it lives: each partition in batches on the executors, with mapInArrow.

The driver builds (or loads from ``index_dir``) every index the request needs, once, and broadcasts it with the
request's options; each executor installs the shipped indexes in its own cache, so no executor builds one. The
answer column is added to the rows it answers, batch by batch: queries are never collected to the driver and never
joined back by position.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_integration.core.contract.frames import PYSPARK_PANDAS_WARNING, PyArrowAdapter
from rag_integration.core.contract.schema import Shape, arrow_type
from rag_integration.core.indexes.cache import INDEX_CACHE, IndexKey
from rag_integration.core.options import OptionReader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkFrame

    from rag_integration.core.contract.feature_group import SelectorFeatureGroup


@dataclass(frozen=True)
class Shipment:
    """What every executor needs: the connector (pickled by reference), the request's options, the built indexes."""

    connector: type[SelectorFeatureGroup]
    reader: OptionReader
    indexes: Sequence[tuple[IndexKey, object]]
    shape: Shape

    def install(self) -> None:
        for key, index in self.indexes:
            if key not in INDEX_CACHE:
                INDEX_CACHE.install(key, index)

    def answer(self, batch: pa.RecordBatch) -> pa.Table:
        """One Arrow record batch of rows, with the answer column appended."""
        import pyarrow as pa

        table = pa.Table.from_batches([batch])
        name = self.connector.FEATURE_NAME
        values = list(self.connector.answer(table, self.reader)[name]) if table.num_rows else []
        return PyArrowAdapter().write(name, values, self.shape, table)


def answer_partitions(data: SparkFrame, shipment: Shipment) -> SparkFrame:
    """``data`` with the connector's answer column, computed per partition on the executors."""
    broadcast = data.sparkSession.sparkContext.broadcast(shipment)

    def answer(batch: pa.RecordBatch) -> pa.Table:
        received: Shipment = broadcast.value
        received.install()
        return received.answer(batch)

    return with_answer_column(data, shipment.connector.FEATURE_NAME, shipment.shape, answer)


def with_answer_column(
    data: SparkFrame, name: str, shape: Shape, answer: Callable[[pa.RecordBatch], pa.Table]
) -> SparkFrame:
    """``data`` with a column ``name`` of ``shape`` appended on the executors, batch by batch, by ``answer`` (which
    returns the batch's table with the column): rows are never collected or joined back by position."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = StructType([*data.schema.fields, StructField(name, from_arrow_type(arrow_type(shape)), True)])

    def answered(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from answer(batch).to_batches()

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PYSPARK_PANDAS_WARNING, category=FutureWarning)
        return data.mapInArrow(answered, schema)
