"""The one place that runs features through ``mlodaAPI.run_all``: the command line, the kits, the evaluation and the
demos all ask here, so how a request is handed to mloda and how its columns come back is written once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mloda.provider import ComputeFramework, FeatureGroup
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.contract.frames import frame_column


def run_features(
    features: Sequence[Feature],
    feature_groups: Iterable[type[FeatureGroup]],
    *,
    framework: type[ComputeFramework] = PythonDictFramework,
) -> dict[str, list[Any]]:
    """Each requested feature's column as Python values, from one run (a feature another one needs is computed once);
    a feature no frame holds is left out, so a caller asking for one sees the run's own outcome."""
    result = mlodaAPI.run_all(
        list(features),
        compute_frameworks=[framework],
        plugin_collector=PluginCollector.enabled_feature_groups(set(feature_groups)),
    )
    columns: dict[str, list[Any]] = {}
    for frame in result:
        present = frame_columns(frame)
        for name in (str(feature.name) for feature in features):
            if name in present and name not in columns:
                columns[name] = frame_column(frame, name)
    return columns


def run_feature(
    feature_name: str,
    options: Mapping[str, Any],
    feature_groups: Iterable[type[FeatureGroup]],
    *,
    in_group: bool = False,
    framework: type[ComputeFramework] = PythonDictFramework,
) -> list[Any]:
    """One feature's column for one request's ``options`` (as context options, or group options with ``in_group``);
    a ``LookupError`` when the run returned no such column."""
    wrapped = Options(group=dict(options)) if in_group else Options(context=dict(options))
    columns = run_features([Feature(feature_name, options=wrapped)], feature_groups, framework=framework)
    if feature_name not in columns:
        raise LookupError(f"run_all returned no column '{feature_name}'")
    return columns[feature_name]


def frame_columns(frame: Any) -> list[str]:
    """A result frame's column names, whatever framework returned it."""
    if isinstance(frame, Mapping):
        return list(frame)
    return list(getattr(frame, "column_names", None) or frame.columns)
