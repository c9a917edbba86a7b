"""A corpus's analysed terms, kept so a changed corpus analyses only what changed: each document's term counts
(one row of a documents-by-terms matrix) keyed by a hash of its text. In memory the latest corpus per analysis
settings is kept; with a folder (a request's ``index_dir``) it is also stored under ``<folder>/analysis/`` as an
atomic store version that a later process reads back, checked like any file someone else may have written. A
settings folder keeps the latest few corpora (the request's ``keep_versions``, ``retention.versions_kept``), so a
folder shared by several corpora (the command line's cache) still finds each one's own analysis."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.corpus import TEXT_DIGEST_BYTES, Document, text_digests, texts_of
from rag_integration.core.errors import ConnectorError, IndexMismatchError
from rag_integration.core.extras import require_module
from rag_integration.core.indexes.cache import in_view
from rag_integration.core.indexes.corpus_languages import load_corpus_languages, save_corpus_languages
from rag_integration.core.indexes.digest_index import DigestIndex, as_rows
from rag_integration.core.indexes.retention import (
    BoundedLru,
    Limit,
    StoreMarks,
    prune_stores,
    versions_kept,
)
from rag_integration.core.indexes.store import (
    StoreClaim,
    load_npy,
    pointer_state,
    read_store,
    remove_store,
    save_npy,
    verified_version,
    write_store,
    written_stores,
)
from rag_integration.core.ranking.bm25_scores import TermCountArrays
from rag_integration.core.text.analysis import ANALYSIS_VERSION, UNDETERMINED, supported_languages
from rag_integration.core.text.languages import CorpusLanguages, Placement, analyse_corpus, corpus_placement

LOGGER = logging.getLogger("rag_integration")
ANALYSIS_FOLDER = "analysis"
"""The folder of an ``index_dir`` that keeps analysed corpora (beside the stored indexes and embeddings)."""
EMPTY_TERM = ""
"""Term 0 of every vocabulary, as in bm25s's: what a document without terms is counted as holding."""
MEMO_ENTRIES = 4
SHARED_SAMPLE = 64
NEARLY_ALL = 0.9
"""The share of a sample of its texts the analysed corpus in memory must hold to be started from without looking
at the latest stored one (which holds more of them when another corpus was analysed in between)."""
MEMO_BYTES_VARIABLE = "RAG_ANALYSIS_MEMO_BYTES"
DEFAULT_MEMO_BYTES = 1024 * 1024 * 1024
MEMO_BYTES = Limit(MEMO_BYTES_VARIABLE, DEFAULT_MEMO_BYTES)
PLACEMENT_KINDS = ("fixed", "each", "sample")


@dataclass(frozen=True)
class AnalysisSettings:
    """What decides a document's terms: its language setting, stemming and the analysis's version."""

    language: str
    stem: bool
    version: str = ANALYSIS_VERSION

    def folder_name(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class AnalysedCorpus:
    """Each document's term counts (rows sorted by term id; ``EMPTY_TERM`` never counted), the vocabulary (only
    terms some document holds, and ``EMPTY_TERM`` at 0), each document's text digest and language, and the key of
    the placement that gave the languages with what the language model said of the texts it read."""

    counts: TermCountArrays
    vocabulary: dict[str, int]
    digests: bytes
    languages: CorpusLanguages
    placement: tuple[str, ...]
    detections: Mapping[bytes, str | None]

    @property
    def nbytes(self) -> int:
        counts = self.counts
        return counts.indptr.nbytes + counts.terms.nbytes + counts.counts.nbytes + len(self.digests) * 2

    @functools.cached_property
    def digest_index(self) -> DigestIndex:
        """Where each text digest's row is."""
        return DigestIndex.of(as_rows(self.digests, TEXT_DIGEST_BYTES))

    def rows_of(self, joined: bytes) -> npt.NDArray[np.int64]:
        """For each text digest in ``joined``, its row here, or -1 for a text not analysed here."""
        return self.digest_index.rows_of(as_rows(joined, TEXT_DIGEST_BYTES))

    def shared(self, digests: Sequence[bytes]) -> float:
        """The share of an evenly spaced sample of these texts that is analysed here."""
        sample = digests[:: max(1, len(digests) // SHARED_SAMPLE)]
        return float(np.mean(self.rows_of(b"".join(sample)) >= 0)) if sample else 1.0

    def digest_list(self) -> list[bytes]:
        return [
            self.digests[start : start + TEXT_DIGEST_BYTES] for start in range(0, len(self.digests), TEXT_DIGEST_BYTES)
        ]


@dataclass
class AnalysisStats:
    analysed: int = 0
    reused: int = 0


class AnalysisMemo:
    """The latest analysed corpus per analysis settings (a few settings, byte-bounded): a corpus that differs from
    it by some documents analyses only those, and the same corpus under other BM25 parameters analyses none."""

    def __init__(self, entries: int = MEMO_ENTRIES, max_bytes: int = DEFAULT_MEMO_BYTES) -> None:
        self.stats = AnalysisStats()
        self._latest: BoundedLru[AnalysisSettings, AnalysedCorpus] = BoundedLru(entries, max_bytes)
        self._stored = StoreMarks()
        self._lock = threading.Lock()

    def clear(self) -> None:
        self._latest.clear()
        self._stored.clear()
        with self._lock:
            self.stats = AnalysisStats()

    def analyse(
        self,
        documents: Sequence[Document],
        settings: AnalysisSettings,
        folder: Path | None = None,
        *,
        required: bool = False,
        placement: Placement | None = None,
    ) -> AnalysedCorpus:
        """The analysed corpus of the documents' texts, reusing the rows of every text the latest corpus under these
        settings (in memory, else stored in ``folder``) analysed under the same placement. A store that cannot be
        written is an error when ``required`` (the store is what the caller keeps in ``folder``), else logged. A
        shard of a larger corpus passes that corpus's ``placement`` (``CorpusPlacement``) instead of its own."""
        texts = texts_of(documents)
        digests = text_digests(documents)
        joined = b"".join(digests)
        store = None if folder is None else _store_of(Path(folder), settings, joined)
        previous = self._previous(settings, digests, joined, store)
        same_placement = placement is None or (previous is not None and previous.placement == placement.key)
        if previous is not None and previous.digests == joined and same_placement:
            analysed, fresh = previous, 0
        else:
            known = None if previous is None else previous.detections
            if placement is None:
                placement = corpus_placement(texts, settings.language, digests, known)
            usable = previous if previous is not None and previous.placement == placement.key else None
            analysed, fresh = _analysed(texts, digests, joined, placement, settings, usable)
        with self._lock:
            self.stats.analysed += fresh
            self.stats.reused += len(texts) - fresh
        if in_view():  # a view's texts are all in the corpus it was cut from: that stays what the next build reuses
            return analysed
        self._latest.put(settings, analysed, analysed.nbytes)
        if store is not None and not self._stored.holds(store, analysed.digests):
            try:
                self._store(store, settings, analysed)
            except ConnectorError as error:  # a cache: the terms are made, only their reuse by a later process is lost
                if required:
                    raise
                LOGGER.warning("index_dir: could not keep the analysed corpus in %s: %s", store, error)
        return analysed

    def keep_stored(self, documents: Sequence[Document], settings: AnalysisSettings, folder: Path) -> None:
        """Best effort, for an index answered from memory: store its analysed corpus in ``folder`` again when the
        store no longer holds it (deleted, or replaced by another process); a failure is logged, not raised."""
        joined = b"".join(text_digests(documents))
        store = _store_of(Path(folder), settings, joined)
        if self._stored.holds(store, joined):
            return
        state = pointer_state(store)
        try:
            version = verified_version(store)
            if version is not None and version.claim == StoreClaim(
                ANALYSIS_FOLDER, dataclasses.asdict(settings), _fingerprint(joined)
            ):
                self._stored.note(store, joined, version.name, state)
                return
            kept = self._latest.peek(settings)
            if kept is not None and kept.digests == joined:
                self._store(store, settings, kept)
            else:
                self.analyse(documents, settings, folder, required=True)
        except (ConnectorError, OSError) as error:
            LOGGER.warning(
                "index_dir: could not store the analysed corpus again in %s (answering from memory, will retry): %s",
                store,
                error,
            )

    def forget(self, folder: Path | None, doomed: Callable[[bytes], bool]) -> int:
        """Drop every analysed corpus holding a text whose digest (``text_digests``) is ``doomed``: from memory, and
        each such store under ``folder`` (its terms name the text's words), so none is read back. How many stores
        went; one a reader holds stays until the reader is done (``remove_store``)."""
        self._latest.discard_where(lambda _, analysed: any(map(doomed, analysed.digest_list())))
        self._stored.clear()
        if folder is None:
            return 0
        removed = 0
        for settings_folder in sorted((Path(folder) / ANALYSIS_FOLDER).glob("*")):
            for store in written_stores(settings_folder):
                try:
                    version = verified_version(store)
                    raw = b"" if version is None else np.load(version.folder / "digests.npy", allow_pickle=False)
                    digests = bytes(np.asarray(raw, dtype=np.uint8))
                    holds = any(
                        doomed(digests[start : start + TEXT_DIGEST_BYTES])
                        for start in range(0, len(digests), TEXT_DIGEST_BYTES)
                    )
                except (ConnectorError, OSError, ValueError):
                    holds = True  # a store that cannot be checked cannot be kept
                if holds:
                    removed += remove_store(store)
        return removed

    def _store(self, store: Path, settings: AnalysisSettings, analysed: AnalysedCorpus) -> None:
        """Write the analysed corpus as its store's new version, mark it, and keep only the latest corpora of these
        settings (the request's ``keep_versions``, ``versions_kept``), the one just written among them."""
        version = _save(store, settings, analysed)
        self._stored.note(store, analysed.digests, version, pointer_state(store))
        prune_stores(store.parent, versions_kept(), spare=store.name, name=_CORPUS_STORE)

    def _previous(
        self, settings: AnalysisSettings, digests: Sequence[bytes], joined: bytes, store: Path | None
    ) -> AnalysedCorpus | None:
        """What to start from: the same corpus in memory or stored, else the one in memory when it holds nearly all
        of these texts, else whichever of it and the latest one stored under ``settings`` holds more of them."""
        kept = self._latest.peek(settings)
        if store is None or (kept is not None and kept.digests == joined):
            return kept
        found = self._read(settings, store)
        if found is not None:
            return found
        if kept is not None and kept.shared(digests) >= NEARLY_ALL:
            return kept
        latest = _latest_store(store.parent)
        if latest is None or (kept is not None and self._stored.holds(latest, kept.digests)):
            return kept
        stored = self._read(settings, latest)
        if stored is None or kept is None:
            return stored or kept
        return stored if stored.shared(digests) > kept.shared(digests) else kept

    def _read(self, settings: AnalysisSettings, store: Path) -> AnalysedCorpus | None:
        state = pointer_state(store)
        if state is None:
            return None
        try:
            found = read_store(store, lambda claim: _check_claim(claim, settings, store), lambda v: _load(v.folder))
        except (IndexMismatchError, OSError) as error:
            LOGGER.warning("index_dir: ignoring the stored analysed corpus in %s: %s", store, error)
            return None
        if found is None:
            return None
        self._stored.note(store, found[1].digests, found[0].name, state)
        return found[1]


def _analysed(
    texts: Sequence[str],
    digests: list[bytes],
    joined: bytes,
    placement: Placement,
    settings: AnalysisSettings,
    previous: AnalysedCorpus | None,
) -> tuple[AnalysedCorpus, int]:
    """The corpus analysed, texts ``previous`` holds taken from it (their rows, languages) and the rest analysed;
    with how many texts were analysed. ``joined`` is the digests as one bytes string."""
    vocabulary = {EMPTY_TERM: 0} if previous is None else dict(previous.vocabulary)
    source = np.full(len(digests), -1, dtype=np.int64) if previous is None else previous.rows_of(joined)
    missing = np.flatnonzero(source < 0)
    ids, codes = analyse_corpus(
        texts, settings.language, vocabulary, stem=settings.stem, placement=placement, positions=missing.tolist()
    )
    fresh = _count_rows(ids, len(vocabulary))
    if previous is None:
        counts = fresh
        languages = CorpusLanguages.of(codes)
    else:
        languages = CorpusLanguages.gathered(previous.languages, source, codes)
        source[missing] = previous.counts.document_count + np.arange(len(missing))
        counts = _rows_of((previous.counts, fresh), source, len(vocabulary))
    counts, vocabulary = _without_unused_terms(counts, vocabulary)
    analysed = AnalysedCorpus(counts, vocabulary, joined, languages, placement.key, placement.detections)
    return analysed, len(missing)


def _count_rows(ids: list[list[int]], vocabulary_size: int) -> TermCountArrays:
    """Term-id lists as count rows sorted by term id (repeats summed)."""
    sparse = require_module("scipy.sparse", "bm25s", "connectors")
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    total = int(lengths.sum())
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int32, count=total)
    rows = np.repeat(np.arange(len(ids), dtype=np.int32), lengths)
    matrix = sparse.csr_matrix(
        (np.ones(total, dtype=np.int32), (rows, flat)), shape=(len(ids), vocabulary_size), dtype=np.int32
    )
    matrix.sum_duplicates()
    return TermCountArrays(
        matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32), matrix.data.astype(np.int32), vocabulary_size
    )


def _rows_of(
    parts: tuple[TermCountArrays, TermCountArrays], rows: npt.NDArray[np.int64], vocabulary_size: int
) -> TermCountArrays:
    """The given rows, in that order, of the two parts' rows taken as one list: copied a run of consecutive rows at
    a time, so a corpus that changed in a few places is a few slices of its previous arrays."""
    first, second = parts
    boundary = first.document_count
    if not len(rows):
        return TermCountArrays(np.zeros(1, dtype=np.int64), second.terms[:0], second.counts[:0], vocabulary_size)
    breaks = np.flatnonzero((np.diff(rows) != 1) | (rows[1:] == boundary)) + 1
    run_starts = np.concatenate([[0], breaks]).tolist()
    run_ends = np.concatenate([breaks, [len(rows)]]).tolist()
    terms, counts = [], []
    row_list = rows.tolist()
    for start, end in zip(run_starts, run_ends, strict=True):
        low, high = row_list[start], row_list[end - 1] + 1
        part = first if low < boundary else second
        offset = 0 if low < boundary else boundary
        begin, finish = int(part.indptr[low - offset]), int(part.indptr[high - offset])
        terms.append(part.terms[begin:finish])
        counts.append(part.counts[begin:finish])
    lengths = np.concatenate([np.diff(first.indptr), np.diff(second.indptr)])[rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    empty = np.zeros(0, dtype=np.int32)
    return TermCountArrays(indptr, np.concatenate([empty, *terms]), np.concatenate([empty, *counts]), vocabulary_size)


def _without_unused_terms(
    counts: TermCountArrays, vocabulary: dict[str, int]
) -> tuple[TermCountArrays, dict[str, int]]:
    """Terms no document holds any longer leave the vocabulary (ids renumbered in order), so it holds exactly the
    terms a build from scratch would: a query's terms, and so its scores, are then the same."""
    used = np.zeros(len(vocabulary), dtype=bool)
    used[counts.terms] = True
    used[vocabulary[EMPTY_TERM]] = True
    if used.all():
        return counts, vocabulary
    renumbered = (np.cumsum(used) - 1).astype(np.int32)
    keep, new_ids = used.tolist(), renumbered.tolist()
    remaining = {term: new_ids[term_id] for term, term_id in vocabulary.items() if keep[term_id]}
    terms = renumbered[counts.terms]
    return TermCountArrays(counts.indptr, terms, counts.counts, len(remaining)), remaining


def _store_of(folder: Path, settings: AnalysisSettings, digests: bytes) -> Path:
    """The store of the corpus with these text digests under ``settings`` in an ``index_dir``."""
    return folder / ANALYSIS_FOLDER / settings.folder_name() / _fingerprint(digests)[:STORE_NAME_CHARS]


STORE_NAME_CHARS = 20
_CORPUS_STORE = re.compile(f"[0-9a-f]{{{STORE_NAME_CHARS}}}")
"""A corpus's store in a settings folder: the first characters of its fingerprint (``_store_of``)."""


def _latest_store(settings_folder: Path) -> Path | None:
    """The corpus stored last under these settings, to start from when this corpus has no store yet."""
    stores = [store for store in written_stores(settings_folder) if _CORPUS_STORE.fullmatch(store.name)]
    return stores[0] if stores else None


def _check_claim(claim: StoreClaim, settings: AnalysisSettings, store: Path) -> None:
    if claim.kind != ANALYSIS_FOLDER or dict(claim.settings) != dataclasses.asdict(settings):
        raise IndexMismatchError("index_dir", str(store), "an analysed corpus under this request's analysis settings")


def _save(store: Path, settings: AnalysisSettings, analysed: AnalysedCorpus) -> str:
    def save(folder: Path) -> None:
        save_npy(folder / "indptr.npy", analysed.counts.indptr)
        save_npy(folder / "terms.npy", analysed.counts.terms)
        save_npy(folder / "counts.npy", analysed.counts.counts)
        save_npy(folder / "digests.npy", np.frombuffer(analysed.digests, dtype=np.uint8))
        terms = [""] * len(analysed.vocabulary)
        for term, term_id in analysed.vocabulary.items():
            terms[term_id] = term
        detections = [[digest.hex(), code] for digest, code in analysed.detections.items()]
        listed = {"terms": terms, "placement": list(analysed.placement), "detections": detections}
        (folder / "terms.json").write_text(json.dumps(listed, ensure_ascii=False), encoding="utf-8")
        save_corpus_languages(folder, analysed.languages)

    claim = StoreClaim(ANALYSIS_FOLDER, dataclasses.asdict(settings), _fingerprint(analysed.digests))
    return write_store(store, claim, save)


def _fingerprint(digests: bytes) -> str:
    return hashlib.sha256(digests).hexdigest()


def _load(folder: Path) -> AnalysedCorpus:
    """A stored analysed corpus, every part checked against the others: a vocabulary numbering its terms 0..n-1
    with the empty term at 0, rows of known terms, each at most once and in order, with positive counts, and one
    digest and language per document; anything else is an ``IndexMismatchError``."""
    try:
        listed = json.loads((folder / "terms.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise IndexMismatchError("index_dir", str(folder), "the analysed corpus's terms as JSON") from error
    terms_by_id = listed.get("terms") if isinstance(listed, dict) else None
    if not isinstance(terms_by_id, list) or not terms_by_id or terms_by_id[0] != EMPTY_TERM:
        raise IndexMismatchError("index_dir", str(folder), "a list of terms, the empty term first")
    vocabulary = {term: term_id for term_id, term in enumerate(terms_by_id) if isinstance(term, str)}
    if len(vocabulary) != len(terms_by_id):
        raise IndexMismatchError("index_dir", str(folder), "a list of distinct terms")
    placement = listed.get("placement")
    known = {*supported_languages(), UNDETERMINED}
    if (
        not isinstance(placement, list)
        or not placement
        or placement[0] not in PLACEMENT_KINDS
        or not all(isinstance(part, str) and part in known for part in placement[1:])
    ):
        raise IndexMismatchError("index_dir", str(folder), "the placement the languages were given by")
    detections = _detections(listed.get("detections"), known)
    if detections is None:
        raise IndexMismatchError("index_dir", str(folder), "the language model's detections by text digest")
    digests = load_npy(folder / "digests.npy", dtype="uint8")
    if digests.ndim != 1 or len(digests) % TEXT_DIGEST_BYTES:
        raise IndexMismatchError("index_dir", str(folder), f"{TEXT_DIGEST_BYTES}-byte digests")
    documents = len(digests) // TEXT_DIGEST_BYTES
    indptr = load_npy(folder / "indptr.npy", (documents + 1,), "int64")
    terms = load_npy(folder / "terms.npy", dtype="int32")
    counts = load_npy(folder / "counts.npy", terms.shape, "int32")
    if not _consistent_rows(indptr, terms, counts, len(vocabulary)):
        raise IndexMismatchError("index_dir", str(folder), "rows of known terms, each once and in order")
    languages = load_corpus_languages(folder, documents)
    return AnalysedCorpus(
        TermCountArrays(indptr, terms, counts, len(vocabulary)),
        vocabulary,
        digests.tobytes(),
        languages,
        tuple(placement),
        detections,
    )


def _detections(raw: object, known: set[str]) -> dict[bytes, str | None] | None:
    if not isinstance(raw, list):
        return None
    detections: dict[bytes, str | None] = {}
    for item in raw:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or item[1] not in known | {None}
        ):
            return None
        try:
            digest = bytes.fromhex(item[0])
        except ValueError:
            return None
        if len(digest) != TEXT_DIGEST_BYTES:
            return None
        detections[digest] = item[1]
    return detections


def _consistent_rows(indptr: np.ndarray, terms: np.ndarray, counts: np.ndarray, vocabulary_size: int) -> bool:
    if terms.ndim != 1 or indptr[0] != 0 or indptr[-1] != len(terms) or (np.diff(indptr) < 0).any():
        return False
    if len(terms) == 0:
        return True
    if int(terms.min()) < 1 or int(terms.max()) >= vocabulary_size or int(counts.min()) < 1:
        return False
    steps = np.diff(terms)
    boundaries = indptr[1:-1]
    steps[boundaries[(boundaries > 0) & (boundaries < len(terms))] - 1] = 1  # a row's first term follows any other
    return bool((steps > 0).all())


ANALYSIS_MEMO = AnalysisMemo(MEMO_ENTRIES, MEMO_BYTES.read())
