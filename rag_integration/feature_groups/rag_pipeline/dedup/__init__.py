"""The deduplication stage: ``<source>__deduped`` selected by ``dedup``."""

from rag_integration.feature_groups.rag_pipeline.dedup.base import BaseDeduplicator
from rag_integration.feature_groups.rag_pipeline.dedup.exact_dedup import ExactDeduplicator
from rag_integration.feature_groups.rag_pipeline.dedup.normalized_dedup import NormalizedDeduplicator

__all__ = ["BaseDeduplicator", "ExactDeduplicator", "NormalizedDeduplicator"]
