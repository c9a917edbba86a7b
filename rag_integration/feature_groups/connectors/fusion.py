"""``rrf_fuse``: the one fusion routine every family reuses (defined once in ``rag_integration.core``)."""

from rag_integration.core.ranking.fusion import rrf_fuse

__all__ = ["rrf_fuse"]
