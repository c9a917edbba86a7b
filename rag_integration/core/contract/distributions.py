"""Which installed distribution a backend class comes from: what ``backends`` lists and every plugin error names."""

from __future__ import annotations

import functools
import importlib.metadata

ENTRY_POINT_GROUP = "mloda.feature_groups"


def distribution_of(cls: type) -> str:
    """The installed distribution a class comes from, or its top-level module when none is known."""
    return _distribution_of_package(cls.__module__.split(".")[0])


def describe_backend(cls: type) -> str:
    """A class as errors name it: ``module.Class (distribution name)``."""
    return f"{cls.__module__}.{cls.__qualname__} (distribution {distribution_of(cls)})"


@functools.cache
def _distribution_of_package(package: str) -> str:
    """Once per package: ``packages_distributions`` reads every installed distribution's file list. An editable
    install lists no package files, so the distribution whose entry point loads from the package names it then."""
    names = importlib.metadata.packages_distributions().get(package)
    if names:
        return ", ".join(sorted(set(names)))
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.module.split(".")[0] == package and entry_point.dist is not None:
            return str(entry_point.dist.name)
    try:
        return str(importlib.metadata.distribution(package).metadata["Name"])
    except importlib.metadata.PackageNotFoundError:
        return package
