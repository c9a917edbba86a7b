"""The options the families' requests share, each declared once: families list them by ``option_keys`` and read
them through their declaration, and docs/options.md's table of shared options is their ``options_table``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_integration.core.contract.per_query import ON_ERROR
from rag_integration.core.contract.profiles import PROFILE
from rag_integration.core.deadline import DEADLINE_MS
from rag_integration.core.documents.corpus import MetadataFilter
from rag_integration.core.documents.visibility import PRINCIPALS, UNLABELLED
from rag_integration.core.indexes.retention import KEEP_VERSIONS
from rag_integration.core.indexes.shards import INDEX_OVERLAY_SHARE, INDEX_SHARDS
from rag_integration.core.options import OptionReader, OptionSpec
from rag_integration.core.progress import SHOW_PROGRESS

TOP_K: OptionSpec[int] = OptionSpec(
    "top_k", "integer", "results per query; more than there are returns all of them", default=10, minimum=1
)
RETURN_METADATA: OptionSpec[bool] = OptionSpec(
    "return_metadata", "boolean", "add `metadata` (a document's other keys) to each passage", default=False
)
FILTERS: OptionSpec[dict[str, object] | None] = OptionSpec(
    "filters",
    "mapping",
    "`{metadata_key: value or list of allowed values}`; a document failing any key is never ranked, drawn from or cited",
    default=None,
    shown_as="dict",
)
EXPLAIN: OptionSpec[bool] = OptionSpec(
    "explain",
    "boolean",
    "add `explanation` to each passage: a dict saying how its score was made (terms, similarity, fused ranks, ranks "
    "before and after reranking)",
    default=False,
)
INDEX_DIR: OptionSpec[Path | None] = OptionSpec(
    "index_dir", "path", "persist indexes here and load them back instead of rebuilding", default=None
)

SHARED_OPTIONS: tuple[OptionSpec[Any], ...] = (
    TOP_K,
    RETURN_METADATA,
    FILTERS,
    EXPLAIN,
    INDEX_DIR,
    KEEP_VERSIONS,
    INDEX_SHARDS,
    INDEX_OVERLAY_SHARE,
    DEADLINE_MS,
    ON_ERROR,
    SHOW_PROGRESS,
    PROFILE,
    PRINCIPALS,
    UNLABELLED,
)
"""Every option a family's request reads beside its backend's own (which families read which: their pages)."""


def read_metadata_filter(reader: OptionReader) -> MetadataFilter | None:
    """The request's ``filters``, parsed; None when there are none."""
    return MetadataFilter.from_option(FILTERS.read(reader), FILTERS.key)
