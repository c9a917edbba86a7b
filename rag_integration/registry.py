"""Which backends exist, what selects them, and whether their extra is installed."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from dataclasses import dataclass

from rag_integration.core.contract.feature_group import SelectorFeatureGroup, distribution_of

CONNECTORS_PACKAGE = "rag_integration.feature_groups.connectors"
PIPELINE_PACKAGE = "rag_integration.feature_groups.rag_pipeline"
ENTRY_POINT_GROUP = "mloda.feature_groups"


@dataclass(frozen=True)
class BackendInfo:
    family: str
    feature: str
    selector: str
    value: str
    class_name: str
    extra: str
    installed: bool
    distribution: str
    version: str
    contract: str
    """The family's contract version, and the versions a third-party backend lists: ``1.0 (supports 1.0, 1.1)``."""

    def as_dict(self) -> dict[str, object]:
        return {
            "family": self.family,
            "feature": self.feature,
            "selector": self.selector,
            "value": self.value,
            "class": self.class_name,
            "extra": self.extra,
            "installed": self.installed,
            "distribution": self.distribution,
            "version": self.version,
            "contract": self.contract,
        }


def backend_classes() -> list[type[SelectorFeatureGroup]]:
    """Every concrete backend class: this package's families and whatever plugs in through the
    ``mloda.feature_groups`` entry point group (the group mloda's own ``PluginLoader`` reads)."""
    import_package_backends()
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if not entry_point.value.startswith("rag_integration."):
            entry_point.load()  # a third-party backend subclasses a family base; loading registers it
    return SelectorFeatureGroup.loaded_backends()


def package_backend_classes() -> list[type[SelectorFeatureGroup]]:
    """This package's own backend classes only."""
    import_package_backends()
    return [cls for cls in SelectorFeatureGroup.loaded_backends() if cls.__module__.startswith("rag_integration.")]


def import_package_backends() -> None:
    connectors = importlib.import_module(CONNECTORS_PACKAGE)
    for family in pkgutil.iter_modules(connectors.__path__):
        if family.ispkg:
            importlib.import_module(f"{CONNECTORS_PACKAGE}.{family.name}")
    importlib.import_module(PIPELINE_PACKAGE)


def available_backends() -> list[dict[str, object]]:
    """One dict per backend: family, feature, selector, value, class, extra, installed, distribution, version and
    contract; sorted by feature, value and class name."""
    infos = [
        BackendInfo(
            family=cls.FAMILY,
            feature=cls.FEATURE_NAME,
            selector=cls.SELECTOR,
            value=str(cls.BACKEND),
            class_name=cls.__name__,
            extra=cls.EXTRA or "",
            installed=cls.is_installed(),
            distribution=distribution,
            version=_version(distribution),
            contract=_contract(cls),
        )
        for cls in backend_classes()
        for distribution in (distribution_of(cls),)
    ]
    return [info.as_dict() for info in sorted(infos, key=lambda info: (info.feature, info.value, info.class_name))]


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution.split(",")[0].strip())
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return ""


def _contract(cls: type[SelectorFeatureGroup]) -> str:
    if not cls.SUPPORTED_CONTRACTS:
        return cls.CONTRACT_VERSION
    return f"{cls.CONTRACT_VERSION} (supports {', '.join(map(str, cls.SUPPORTED_CONTRACTS))})"
