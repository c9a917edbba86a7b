"""Opt-in: let mloda load only the framework transformers a process needs, instead of every installed one.

mloda's first ``run_all`` imports the transformer module of every installed compute framework (pandas, polars,
pyarrow, pyspark, duckdb...), ~100 MB and ~2 s that a PythonDict-only run never uses. mloda 0.18 loads them once
per process unless ``ComputeFrameworkTransformer._auto_load_done`` is already set; this module sets it after
importing the transformers of the named frameworks alone (see docs/performance.md for what that costs).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any

from rag_integration.core.errors import InvalidOptionError

TRANSFORMER_MODULE_MARK = "transformer"


def load_transformers_only_for(frameworks: Iterable[type[Any]]) -> list[str]:
    """Import the transformers between ``frameworks`` and tell mloda not to load any other; the imported modules.

    Every transformer of mloda 0.18 converts one framework to and from PyArrow (mloda chains conversions through
    it), so one framework needs none, and two or more need each one's transformer. Call it before the first
    ``run_all``; a later request that converts to a framework left out fails in mloda with no transformation path.
    """
    from mloda.core.abstract_plugins.components.framework_transformer.cfw_transformer import (
        ComputeFrameworkTransformer,
    )

    chosen = list(frameworks)
    for framework in chosen:
        if not isinstance(framework, type) or not hasattr(framework, "get_class_name"):
            raise InvalidOptionError("frameworks", framework, "mloda compute framework classes")
    if not hasattr(ComputeFrameworkTransformer, "_auto_load_done"):
        return []  # another mloda: it loads its transformers its own way, as it always did
    loaded: list[str] = []
    if len(chosen) > 1:
        for package in sorted({framework.__module__.rpartition(".")[0] for framework in chosen}):
            loaded += _import_transformers(package)
    ComputeFrameworkTransformer._auto_load_done = True
    return loaded


def _import_transformers(package: str) -> list[str]:
    """The transformer modules in one framework's package (mloda keeps each framework's in its own folder)."""
    module = importlib.import_module(package)
    names = sorted(
        f"{package}.{info.name}"
        for info in pkgutil.iter_modules(getattr(module, "__path__", []))
        if TRANSFORMER_MODULE_MARK in info.name
    )
    for name in names:
        importlib.import_module(name)
    return names
