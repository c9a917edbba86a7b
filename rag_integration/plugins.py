"""What this package plugs into mloda: every concrete feature group, for the ``mloda.feature_groups`` entry point.

mloda's ``PluginLoader.all()`` imports these, so ``mlodaAPI.run_all`` finds the backends without explicit imports.
"""

from __future__ import annotations

from mloda.provider import FeatureGroup

from rag_integration.evaluation.feature import RetrievalMetrics
from rag_integration.registry import package_backend_classes

_BACKENDS = sorted(package_backend_classes(), key=lambda cls: (cls.FAMILY, str(cls.BACKEND), cls.__name__))

FEATURE_GROUPS: tuple[type[FeatureGroup], ...] = (*_BACKENDS, RetrievalMetrics)

OPTIONAL_ROOTS: tuple[str, ...] = tuple(
    sorted({module.split(".")[0] for cls in _BACKENDS for module in cls.REQUIRED_MODULES})
)
"""mloda's optional-dependency marker for the entry point above: the libraries our extras bring. Importing this
module imports none of them (a test blocks them all), so a missing extra never stops plugin discovery."""
