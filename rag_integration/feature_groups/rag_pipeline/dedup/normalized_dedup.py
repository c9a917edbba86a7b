"""Near-exact duplicates: equal after Unicode NFKC, case folding, and collapsing punctuation and whitespace."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import ClassVar

from rag_integration.feature_groups.rag_pipeline.dedup.base import BaseDeduplicator

NON_WORD = re.compile(r"[\W_]+")


class NormalizedDeduplicator(BaseDeduplicator):
    """``dedup="normalized"``: "Hello,  World!" and "hello world" are the same text."""

    BACKEND: ClassVar[str | None] = "normalized"

    @classmethod
    def text_key(cls, text: str) -> str:
        normalized = NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
        return hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()
