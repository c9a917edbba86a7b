"""What a run says beside its answer (a store older than its files, the files it did not read), and the user cache
that ``search``/``ask`` over files keep their indexes in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rag_integration.core.documents.files import READ_FILES, SKIPPED_FILES, FileRules, ReadFile, SkippedFile
from rag_integration.core.documents.source_record import changes_since
from rag_integration.core.errors import ConnectorError
from rag_integration.core.indexes.store import current_version
from rag_integration.evaluation.run import default_index_dir
from rag_integration.feature_groups.rag_pipeline.documents.file_source import SUFFIXES

NO_DOCUMENTS = "no documents: none of the files given could be read"


@dataclass
class RunNotes:
    """Filled while a run goes, so a caller can show it even when the run fails."""

    files_given: bool = False
    warnings: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """What a run did that a user may ask about (``--verbose``): which sentence ranker answered, and its cost."""
    skipped: list[SkippedFile] = field(default_factory=list)
    read: list[ReadFile] = field(default_factory=list)

    @property
    def no_documents(self) -> bool:
        """Files were given and none of them could be read (each one read was then found to hold no text)."""
        unread = {os.path.realpath(file.path) for file in self.skipped}
        return self.files_given and all(file.path in unread for file in self.read)

    @contextmanager
    def reading_files(self) -> Iterator[None]:
        """Collect the files the run in this block reads and skips: this run's own, not another thread's."""
        with READ_FILES.collecting() as read, SKIPPED_FILES.collecting() as skipped:
            try:
                yield
            finally:
                self.skipped += skipped
                self.read += read

    def warn_if_stale(self, index_dir: Path, *, name_files: bool = True) -> None:
        """A warning when the files a store was indexed from changed since (``index`` keeps their record); without
        ``name_files`` (a caller who may not read every file) it says so without naming or counting them."""
        try:
            live = current_version(index_dir, "index_dir")
        except ConnectorError:
            return  # the search itself reports a broken store
        changes = None if live is None else changes_since(index_dir, live.name, FileRules(suffixes=SUFFIXES))
        if changes:
            what = changes.describe() if name_files else "its files changed"
            self.warnings.append(
                f"{index_dir} is out of date: {what} since it was indexed; run `rag-integration index` again to update it"
            )


FILES_CACHE_STORES = 8
"""Indexes of searched folders kept in the user cache; the embeddings and analysed text they share stay."""


def files_cache_dir() -> Path:
    """Where ``search``/``ask`` over files keep what they built: ``files/`` beside the evaluation's indexes."""
    return default_index_dir().parent / "files"
