"""Shared test settings: everything runs offline; the modules that start Spark or other interpreters are marked
``slow``, so ``pytest -m "not slow"`` is the quick subset the README names."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

SLOW_MODULES = frozenset(
    {
        "test_spark.py",
        "test_spark_shards.py",
        "test_frameworks.py",
        "test_lean_transformers.py",
        "test_discovery.py",
        "test_broken_example_plugin.py",
        "test_certify.py",
    }
)
"""Test modules whose tests start a Spark session, install plugins or certify in subprocesses; a test of any module
whose id names Spark (a compute framework parameter) is slow too."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES or "spark" in item.nodeid.lower():  # a Spark case of a framework test
            item.add_marker(pytest.mark.slow)
