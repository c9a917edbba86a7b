"""Exact duplicates: byte-identical texts (SHA-256)."""

from __future__ import annotations

import hashlib
from typing import ClassVar

from rag_integration.feature_groups.rag_pipeline.dedup.base import BaseDeduplicator


class ExactDeduplicator(BaseDeduplicator):
    """``dedup="exact"``."""

    BACKEND: ClassVar[str | None] = "exact"

    @classmethod
    def text_key(cls, text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
