"""Shared by the contract kits: run a feature (``core.contract.run``, here or in a fresh process) and the
bad inputs every request with queries and a corpus must refuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from mloda.provider import ComputeFramework, FeatureGroup
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.run import run_feature as run_one_feature
from rag_integration.core.contract.schema import decode
from rag_integration.core.errors import ConnectorError, InvalidOptionError, MissingOptionError, UnknownOptionError
from rag_integration.core.options import OptionReader


def run_feature(
    feature_name: str,
    options: Mapping[str, Any],
    feature_groups: Iterable[type[FeatureGroup]],
    *,
    in_group: bool = False,
    framework: type[ComputeFramework] = PythonDictFramework,
) -> list[Any]:
    """The feature's column as Python values (one entry per output row), on any compute framework.

    Values come back as PythonDict gives them: a columnar framework's JSON-encoded parts (``core.contract.schema``) are
    decoded by the shape the answering connector declares, so rows compare equal across frameworks.
    """
    groups = set(feature_groups)
    try:
        values = run_one_feature(feature_name, options, groups, in_group=in_group, framework=framework)
    except LookupError as error:
        raise AssertionError(str(error)) from error
    if framework is PythonDictFramework:
        return values
    shape = _output_shape(feature_name, options, groups)
    return [decode(value, shape) for value in values]


def _output_shape(feature_name: str, options: Mapping[str, Any], groups: set[type[FeatureGroup]]) -> Any:
    for group in groups:
        if not issubclass(group, SelectorFeatureGroup) or feature_name != group.FEATURE_NAME:
            continue
        if options.get(group.SELECTOR) == group.BACKEND:
            return group.output_shape(OptionReader(group.with_profile(options)))
    raise AssertionError(f"no enabled connector answers '{feature_name}' with these options")


FRESH_PROCESS_SECONDS = 600
"""How long a fresh interpreter may take to answer one request: a hanging backend fails instead of hanging a run."""


def run_in_fresh_process(feature_name: str, options: Mapping[str, Any], connector: type[FeatureGroup]) -> Any:
    """The same request answered by a new interpreter (with another hash seed), for determinism checks."""
    script = (
        "import json, sys\n"
        "from rag_integration.testing.runner import run_feature\n"
        f"from {connector.__module__} import {connector.__name__} as Connector\n"
        "print(json.dumps(run_feature(sys.argv[1], json.loads(sys.argv[2]), {Connector})))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, feature_name, json.dumps(dict(options))],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="12345"),
        check=True,
        timeout=FRESH_PROCESS_SECONDS,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def query_and_corpus_errors(
    corpus: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], type[ConnectorError], str]]:
    """(options, error, option named in the message) for every malformed query/corpus request."""
    return [
        ({"corpus": corpus}, MissingOptionError, "query_text"),
        ({"query_text": "cat"}, MissingOptionError, "corpus"),
        ({"query_text": 5, "corpus": corpus}, InvalidOptionError, "query_text"),
        ({"query_text": ["cat", 3], "corpus": corpus}, InvalidOptionError, "query_text"),
        ({"query_text": [], "corpus": corpus}, InvalidOptionError, "query_text"),
        ({"query_text": "cat", "corpus": "a cat"}, InvalidOptionError, "corpus"),
        ({"query_text": "cat", "corpus": ["a cat"]}, InvalidOptionError, "corpus"),
        ({"query_text": "cat", "corpus": [{"doc_id": "x"}]}, InvalidOptionError, "corpus"),
        ({"query_text": "cat", "corpus": [{"doc_id": 1.5, "text": "t"}]}, InvalidOptionError, "doc_id"),
        ({"query_text": "cat", "corpus": corpus, "top_k": 0}, InvalidOptionError, "top_k"),
        ({"query_text": "cat", "corpus": corpus, "top_k": True}, InvalidOptionError, "top_k"),
        ({"query_text": "cat", "corpus": corpus, "top_K": 3}, UnknownOptionError, "top_K"),
        ({"query_text": "cat", "corpus": corpus, "top_k": None}, InvalidOptionError, "top_k"),
        ({"queries_source": ["cat"], "corpus": corpus}, InvalidOptionError, "queries_source"),
        ({"query_text": "cat", "corpus_source": 5}, InvalidOptionError, "corpus_source"),
        ({"query_text": "cat", "queries_source": "q", "corpus": corpus}, InvalidOptionError, "queries_source"),
        ({"query_text": "cat", "corpus": corpus, "corpus_source": "d"}, InvalidOptionError, "corpus_source"),
    ]
