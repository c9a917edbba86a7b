"""Reading an upstream feature's column out of whatever frame the compute framework hands us."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_integration.core.errors import MissingOptionError


def column_values(data: Any, column: str, option: str) -> list[Any]:
    """The values of ``column`` as a Python list, for dict-of-lists, PyArrow, Pandas and Polars frames."""
    if data is None:
        raise MissingOptionError(option, f"upstream feature '{column}' to be computed first")
    if isinstance(data, Mapping):
        if column not in data:
            raise MissingOptionError(option, f"upstream feature '{column}' in the input data")
        return list(data[column])
    column_names = getattr(data, "column_names", None) or list(getattr(data, "columns", []))
    if column not in column_names:
        raise MissingOptionError(option, f"upstream feature '{column}' in the input data")
    values = data[column]
    for converter in ("to_pylist", "to_list", "tolist"):
        if hasattr(values, converter):
            return list(getattr(values, converter)())
    return list(values)
