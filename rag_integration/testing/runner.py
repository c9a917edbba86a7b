"""Run one feature through ``mlodaAPI.run_all`` with only the given feature groups enabled."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mloda.provider import FeatureGroup
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework


def run_feature(
    feature_name: str,
    options: Mapping[str, Any],
    feature_groups: Iterable[type[FeatureGroup]],
    *,
    in_group: bool = False,
) -> list[Any]:
    """The feature's column as a list (one entry per output row)."""
    wrapped = Options(group=dict(options)) if in_group else Options(context=dict(options))
    result = mlodaAPI.run_all(
        [Feature(feature_name, options=wrapped)],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups(set(feature_groups)),
    )
    for frame in result:
        if feature_name in frame:
            return list(frame[feature_name])
    raise AssertionError(f"run_all returned no column '{feature_name}': {result!r}")
