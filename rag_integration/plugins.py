"""What this package plugs into mloda: every concrete feature group, for the ``mloda.feature_groups`` entry point.

mloda's ``PluginLoader.all()`` imports these, so ``mlodaAPI.run_all`` finds the backends without explicit imports.
"""

from __future__ import annotations

from mloda.provider import FeatureGroup

from rag_integration.evaluation.feature import RetrievalMetrics
from rag_integration.registry import package_backend_classes

FEATURE_GROUPS: tuple[type[FeatureGroup], ...] = (
    *sorted(package_backend_classes(), key=lambda cls: (cls.FAMILY, str(cls.BACKEND), cls.__name__)),
    RetrievalMetrics,
)
