"""Which backends exist, what selects them, and whether their extra is installed."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import logging
import pkgutil
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.contract.distributions import ENTRY_POINT_GROUP, describe_backend, distribution_of
from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.errors import (
    BackendUnavailableError,
    ConnectorError,
    DuplicateBackendError,
    InvalidOptionError,
    MalformedPluginError,
    PluginImportError,
    install_hint,
)

logger = logging.getLogger(__name__)

CONNECTORS_PACKAGE = "rag_integration.feature_groups.connectors"
PIPELINE_PACKAGE = "rag_integration.feature_groups.rag_pipeline"
OPTIONAL_DEPENDENCY_GROUP = "mloda.optional_dependencies"
"""mloda's companion group: an entry named like a plugin's entry point lists the import roots it may lack."""
OWN_PACKAGE = "rag_integration."


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
    profiles: dict[str, dict[str, object]]
    """Each profile's presets, budget and description (``core.contract.profiles``)."""

    def as_dict(self) -> dict[str, object]:
        """The fields, ``class_name`` written ``class`` as the listing shows it."""
        return {("class" if key == "class_name" else key): value for key, value in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class SkippedPlugin:
    """An entry point not loaded because a dependency it declares optional is missing."""

    entry_point: str
    distribution: str
    missing: str


SKIPPED_PLUGINS: dict[str, SkippedPlugin] = {}
"""The entry points the last ``discover_backends`` skipped, by entry point."""


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin discovery refused, with its error and the selector values it claims, by family (none known when it
    could not even be imported)."""

    entry_point: str
    error: ConnectorError
    claims: tuple[tuple[str, str], ...] = ()


BROKEN_PLUGINS: list[BrokenPlugin] = []
"""What the last tolerant discovery (``backend_classes``) refused: it stops only a request that selects it."""

_LOOKALIKES = (("rn", "m"), ("vv", "w"), ("cl", "d"), ("1", "l"), ("0", "o"))
"""Letter groups a selector value may not differ in from a loaded one (Unicode's confusables among the characters a
value may hold: lower-case ASCII letters, digits and ``_``)."""


def lookalike_skeleton(value: str) -> str:
    """What ``value`` looks like: two values with one skeleton read alike ("rn" as "m", "1" as "l")."""
    for group, shown in _LOOKALIKES:
        value = value.replace(group, shown)
    return value


def discover_backends(strict: bool = True) -> list[type[SelectorFeatureGroup]]:
    """This package's backends and every backend an installed distribution declares under the
    ``mloda.feature_groups`` entry point group, sorted by family, selector value and class name.

    Entry points are read in a fixed order (distribution, name, value), so discovery does the same on every
    machine. Loading imports each manifest module and nothing else: no backend is built, and a library a backend
    wraps is imported only when a request selects it. Refused, each naming both sides: an entry point that fails to
    import (a missing dependency with the extra or package that brings it), a manifest or backend class that breaks
    its family's declarations (``MalformedPluginError``, also for a selector value that reads like a loaded one), and
    two classes claiming one selector value in one family (``DuplicateBackendError``, mloda's
    ``PluginRegistryCollisionError``). An entry point whose missing import is one its distribution marks optional
    (``mloda.optional_dependencies``) is skipped and recorded in ``SKIPPED_PLUGINS``. Not ``strict``, a refused
    plugin is recorded in ``BROKEN_PLUGINS`` instead and the others load.
    """
    found: dict[tuple[str, str], type[SelectorFeatureGroup]] = {}
    for cls in package_backend_classes():
        found[(cls.FAMILY, str(cls.BACKEND))] = cls
    SKIPPED_PLUGINS.clear()
    broken: list[BrokenPlugin] = []
    optional = _optional_roots()
    for entry_point in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=_entry_point_order):
        if entry_point.value.startswith(OWN_PACKAGE):
            continue
        try:
            classes = _manifest_backends(entry_point, _load_manifest(entry_point, optional))
        except ConnectorError as error:
            if strict:
                raise
            broken.append(BrokenPlugin(entry_point.name, error))
            continue
        for cls in classes:
            try:
                _claim(found, cls)
            except ConnectorError as error:
                if strict:
                    raise
                broken.append(BrokenPlugin(entry_point.name, error, ((cls.FAMILY, str(cls.BACKEND)),)))
    BROKEN_PLUGINS[:] = broken
    return sorted(found.values(), key=lambda cls: (cls.FAMILY, str(cls.BACKEND), cls.__name__))


def _claim(found: dict[tuple[str, str], type[SelectorFeatureGroup]], cls: type[SelectorFeatureGroup]) -> None:
    """Add a plugin's backend to ``found``, unless another claims its selector value or one that reads alike."""
    key = (cls.FAMILY, str(cls.BACKEND))
    other = found.get(key)
    if other is not None and other is not cls:
        raise DuplicateBackendError(
            f"{describe_backend(cls)} claims {cls.SELECTOR}={cls.BACKEND!r} in family {cls.FAMILY!r}, which "
            f"{describe_backend(other)} already claims: uninstall one, or give one another BACKEND value"
        )
    skeleton = lookalike_skeleton(str(cls.BACKEND))
    for (family, value), loaded in found.items():
        if family == cls.FAMILY and value != cls.BACKEND and lookalike_skeleton(value) == skeleton:
            raise MalformedPluginError(
                f"{describe_backend(cls)} claims {cls.SELECTOR}={cls.BACKEND!r}, which reads like {value!r} of "
                f"{describe_backend(loaded)}: give it a value that cannot be mistaken for another"
            )
    found[key] = cls


def backend_classes() -> list[type[SelectorFeatureGroup]]:
    """Every backend a user can select: ``discover_backends`` without stopping at a broken plugin, which is recorded
    in ``BROKEN_PLUGINS`` and stops only a request that selects what it claims (``backend_class``)."""
    return discover_backends(strict=False)


def selector_values(family: str) -> list[str]:
    """The selector values of ``family``'s backends, installed or not, sorted."""
    return sorted({str(cls.BACKEND) for cls in backend_classes() if family == cls.FAMILY})


def backend_class(family: str, selector: str, value: str) -> type[SelectorFeatureGroup]:
    """The installed backend class of ``family`` that ``value`` selects; an ``InvalidOptionError`` naming ``selector``
    and listing the valid values, or a ``BackendUnavailableError`` naming the extra to install."""
    candidates = {str(cls.BACKEND): cls for cls in backend_classes() if family == cls.FAMILY}
    for plugin in BROKEN_PLUGINS:
        if (family, value) in plugin.claims:
            raise plugin.error
    cls = candidates.get(value)
    if cls is None:
        unloaded = "".join(f"; not loaded: {plugin.error}" for plugin in BROKEN_PLUGINS if not plugin.claims)
        raise InvalidOptionError(selector, value, "one of " + ", ".join(sorted(candidates)) + unloaded)
    if not cls.is_installed():
        raise BackendUnavailableError(
            value, cls.EXTRA or "all", ", ".join(cls.REQUIRED_MODULES), distribution=distribution_of(cls)
        )
    return cls


def installed_backends(names: Sequence[str] = ()) -> list[type[SelectorFeatureGroup]]:
    """The installed backends, or only those ``names`` name by selector value or class name."""
    return [
        cls
        for cls in backend_classes()
        if cls.is_installed() and (not names or cls.__name__ in names or cls.BACKEND in names)
    ]


def _entry_point_order(entry_point: importlib.metadata.EntryPoint) -> tuple[str, str, str]:
    return (_distribution_name(entry_point), entry_point.name, entry_point.value)


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = entry_point.dist
    return str(dist.name) if dist is not None else "an unidentified distribution"


def _optional_roots() -> dict[tuple[str, str], frozenset[str]]:
    """``(distribution, entry point name) -> import roots`` from the distributions' optional-dependency markers."""
    declared: dict[tuple[str, str], frozenset[str]] = {}
    for marker in importlib.metadata.entry_points(group=OPTIONAL_DEPENDENCY_GROUP):
        try:
            roots = marker.load()
        except Exception as error:  # a broken marker only loses its skip; mloda warns about it too
            logger.warning("optional-dependency marker %s cannot be read: %s", marker.name, error)
            continue
        if isinstance(roots, Iterable) and not isinstance(roots, (str, bytes)):
            declared[(_distribution_name(marker), marker.name)] = frozenset(str(root) for root in roots)
    return declared


def _load_manifest(
    entry_point: importlib.metadata.EntryPoint, optional: Mapping[tuple[str, str], frozenset[str]]
) -> Any:
    distribution = _distribution_name(entry_point)
    where = f"entry point {entry_point.name!r} ({entry_point.value}) of distribution {distribution}"
    try:
        return entry_point.load()
    except ImportError as error:
        missing = (error.name or "").split(".")[0]
        own = entry_point.module.split(".")[0]
        if missing and missing != own and missing in optional.get((distribution, entry_point.name), frozenset()):
            SKIPPED_PLUGINS[entry_point.name] = SkippedPlugin(entry_point.name, distribution, missing)
            logger.warning("skipping %s: its optional dependency %s is not installed", where, missing)
            return ()
        if missing == own:
            raise PluginImportError(
                f"{where} cannot import its own module {error.name!r}: reinstall {distribution}"
            ) from error
        raise PluginImportError(
            f"{where} cannot import {error.name or error}: {_install_hint(entry_point, missing)}"
        ) from error
    except Exception as error:
        raise PluginImportError(
            f"{where} failed while its manifest was built: {type(error).__name__}: {error}"
        ) from error


def _install_hint(entry_point: importlib.metadata.EntryPoint, module: str) -> str:
    """Which extra of the plugin's distribution (or which requirement) brings ``module``."""
    dist = entry_point.dist
    wanted = _normalise(module)
    for requirement in (dist.requires or []) if dist is not None else []:
        name = _normalise(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
        if name != wanted and name.replace("python_", "") != wanted:
            continue
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", requirement)
        if extra:
            return install_hint(_distribution_name(entry_point), extra.group(1))
        return f"pip install {requirement.split(';')[0].strip()} (a dependency of {_distribution_name(entry_point)})"
    return f"install the package that provides the module {module!r}"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _manifest_backends(entry_point: importlib.metadata.EntryPoint, manifest: Any) -> list[type[SelectorFeatureGroup]]:
    """The backend classes in a manifest (other mloda feature groups are not ours to check), each declared well."""
    where = f"entry point {entry_point.name!r} ({entry_point.value}) of distribution {_distribution_name(entry_point)}"
    if isinstance(manifest, (str, bytes)) or not isinstance(manifest, Sequence):
        raise MalformedPluginError(
            f"{where} must name a list or tuple of feature group classes, got {type(manifest).__name__}"
        )
    backends = []
    for item in manifest:
        if not isinstance(item, type):
            raise MalformedPluginError(f"{where} lists {item!r}, which is not a class")
        if not issubclass(item, SelectorFeatureGroup) or item.BACKEND is None:
            continue
        problems = item.declaration_problems()
        if problems:
            raise MalformedPluginError(
                f"{where}: backend class {item.__module__}.{item.__qualname__}: " + "; ".join(problems)
            )
        backends.append(item)
    return backends


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
            profiles={name: profile.as_dict() for name, profile in sorted(cls.profiles().items())},
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
