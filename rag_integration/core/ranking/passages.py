"""Passage rows and the one ranking routine that turns scored hits into them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.corpus import Document, MetadataFilter
from rag_integration.core.errors import RankingContractError

Hits = list[tuple[int, float]]
AllowedMask = npt.NDArray[np.bool_] | None
Search = Callable[[list[str], int, AllowedMask], list[Hits]]

TIE_MARGIN = 10
"""Hits asked for beyond ``top_k`` in the first search. Ties at a cut are mostly a handful of equally long
documents, and a library's top-k selection costs about the same for k=20 as for k=11, so this margin settles
nearly every tie in the first call instead of a second search of the query."""

HITS_PER_CALL = 65_536
"""Upper bound on the hits one search call is asked for (queries x depth): the hits of a batch are Python objects,
so a 100,000-query batch is searched in slices instead of holding millions of them at once."""

SELECTION_BLOCK = 256
"""Scores per block whose maximum bounds a top-k selection from below (``best_positive_hits_of_rows``): on 50,000
dense scores, blocks of 256 selected 2x faster than 32 and 4x faster than partitioning every positive score."""

_score = itemgetter(1)


@dataclass(frozen=True)
class RankedQuery:
    """One query's returned passages as ``(document position, score)``, best first, and the depth of the search
    that found them: what a backend explains (``Explain``), for these passages alone."""

    query: str
    hits: Hits
    depth: int


Explain = Callable[[list[RankedQuery], AllowedMask], list[list[dict[str, Any]]]]
"""Explanations of ranked queries, one list per query and one dict per returned passage, in order."""


def rank_corpus(
    documents: Sequence[Document],
    queries: list[str],
    top_k: int,
    search: Search,
    metadata_filter: MetadataFilter | None = None,
    return_metadata: bool = False,
    explain: Explain | None = None,
    candidate_count: int | None = None,
    live: AllowedMask = None,
) -> list[list[dict[str, Any]]]:
    """Passage rows for every query: filter to a mask, search with exact ties, rank; ``search`` is called only
    when some document can be returned, so a backend never builds an index for nothing. ``candidate_count`` is
    how many documents the search ranks when ``documents`` holds only those it may return (a sharded corpus's).
    ``live`` marks the documents that are still the corpus's (a shard's base under an overlay): no other is returned.

    Each slice of queries is ranked as soon as it is searched, so only one slice's raw hits are alive at a time.
    With ``explain``, each row also gets ``explanation``, asked for once for every query's returned passages
    after all are ranked; without it nothing of the kind is kept.
    """
    allowed = allowed_mask(documents, metadata_filter, live)
    rows: list[list[dict[str, Any]]] = [[] for _ in queries]
    if not documents or (allowed is not None and not allowed.any()):
        return rows
    count = len(documents) if candidate_count is None else candidate_count
    exact = iter_exact_ties(lambda batch, depth: search(batch, depth, allowed), queries, top_k, count)
    if explain is None:
        for position, hits, _ in exact:
            rows[position] = rank_hits(hits, documents, top_k, return_metadata=return_metadata)
        return rows
    ranked: list[tuple[int, RankedQuery]] = []
    for position, hits, depth in exact:
        best = best_hits(hits, documents, top_k)
        rows[position] = passage_rows(best, documents, return_metadata)
        ranked.append((position, RankedQuery(queries[position], best, depth)))
    explained = explain([query for _, query in ranked], allowed)
    for (position, query), explanations in zip(ranked, explained, strict=True):
        if len(explanations) != len(query.hits):
            raise RankingContractError(f"{len(explanations)} explanations for {len(query.hits)} passages")
        for row, explanation in zip(rows[position], explanations, strict=True):
            row["explanation"] = explanation
    return rows


def allowed_mask(
    documents: Sequence[Document], metadata_filter: MetadataFilter | None, live: AllowedMask = None
) -> AllowedMask:
    """The documents ``metadata_filter`` lets through, among those ``live`` marks (a shard's base under an overlay),
    as a mask over positions; None without either."""
    if metadata_filter is None:
        return live
    allowed = np.zeros(len(documents), dtype=bool)
    allowed[metadata_filter.positions(documents)] = True
    return allowed if live is None else allowed & live


def rank_hits(
    hits: Iterable[tuple[int, float]],
    documents: Sequence[Document],
    top_k: int,
    *,
    positive_only: bool = True,
    return_metadata: bool = False,
) -> list[dict[str, Any]]:
    """Sort ``(position, score)`` hits best first, ties by ascending doc_id, and build rank 1..n rows."""
    return passage_rows(best_hits(hits, documents, top_k, positive_only=positive_only), documents, return_metadata)


def best_hits(
    hits: Iterable[tuple[int, float]], documents: Sequence[Document], top_k: int, *, positive_only: bool = True
) -> Hits:
    """The ``top_k`` best ``(position, score)`` hits, best first, ties by ascending doc_id, scores as floats."""
    count = len(documents)
    best: dict[int, float] = {}
    for position, score in hits:
        if not 0 <= position < count:
            raise RankingContractError(f"backend returned document position {position} outside 0..{count - 1}")
        value = float(score)
        if not math.isfinite(value):
            raise RankingContractError(f"backend returned a non-finite score {value} for position {position}")
        if positive_only and value <= 0.0:
            continue
        if position not in best or value > best[position]:
            best[position] = value
    candidates = list(best.items())
    if len(candidates) > top_k:
        # Only hits scoring at least the top_k-th best score can be returned; doc_ids are looked up for those alone.
        cut = sorted(best.values(), reverse=True)[top_k - 1]
        candidates = [hit for hit in candidates if hit[1] >= cut]
    if len(set(map(_score, candidates))) == len(candidates):
        ordered = sorted(candidates, key=_score, reverse=True)
    else:
        ordered = sorted(candidates, key=lambda hit: (-hit[1], documents[hit[0]].doc_id))
    return ordered[:top_k]


def passage_rows(hits: Hits, documents: Sequence[Document], return_metadata: bool = False) -> list[dict[str, Any]]:
    """Rows of rank 1..n for hits already in order (``best_hits``)."""
    rows: list[dict[str, Any]] = []
    for rank, (position, score) in enumerate(hits, start=1):
        document = documents[position]
        row: dict[str, Any] = {"doc_id": document.doc_id, "text": document.text, "score": score, "rank": rank}
        if return_metadata:
            row["metadata"] = dict(document.metadata)
        rows.append(row)
    return rows


def best_positive_hits_of_rows(scores: npt.NDArray[np.floating[Any]], depth: int) -> list[Hits]:
    """For each row of a 2-D array, up to ``depth`` of its highest positive scores as ``(position, score)`` hits.

    The selection runs over the few scores that can make the cut, never the whole row: the ``depth``-th largest
    of a row's block maxima (``_lower_bounds``) bounds its ``depth``-th score from below, and numpy's
    ``argpartition`` over a long array (worse, one of mostly equal values: the zeros of documents sharing no term
    with the query) costs far more than over those few. Bounds and filter are computed for all rows at once: a few
    numpy calls per block of queries, not several per query, each of which hands the GIL over on several threads.
    """
    rows, width = scores.shape
    found = np.flatnonzero(scores >= _floors(scores, depth)[:, np.newaxis])  # by row (a 2-D nonzero: 7x slower)
    found_columns, values = found % width, scores.ravel()[found]
    ends = np.searchsorted(found, np.arange(1, rows + 1) * width).tolist()
    hits: list[Hits] = []
    start = 0
    for end in ends:
        columns, row_values = found_columns[start:end], values[start:end]
        if len(columns) > depth:
            chosen = np.argpartition(-row_values, depth - 1)[:depth]
            columns, row_values = columns[chosen], row_values[chosen]
        hits.append(list(zip(columns.tolist(), row_values.tolist(), strict=True)))
        start = end
    return hits


def _floors(scores: npt.NDArray[np.floating[Any]], depth: int) -> npt.NDArray[np.floating[Any]]:
    """For each row, the least score worth selecting: its lower bound (``_lower_bounds``) where positive, else the
    least positive number (the contract drops scores <= 0)."""
    least = np.nextafter(np.zeros(1, dtype=scores.dtype), 1)
    bounds = _lower_bounds(scores, depth)
    return least.repeat(len(scores)) if bounds is None else np.maximum(bounds, least)


def _lower_bounds(scores: npt.NDArray[np.floating[Any]], depth: int) -> npt.NDArray[np.floating[Any]] | None:
    """For each row, a score its ``depth``-th best reaches (None when none is worth computing): the ``depth``-th
    largest maximum of equal blocks, as those maxima are ``depth`` distinct scores at least that high."""
    rows, width = scores.shape
    block = min(SELECTION_BLOCK, width // (8 * max(1, depth)))
    if block < 16:
        return None
    whole = width - width % block
    maxima = scores[:, :whole].reshape(rows, -1, block).max(axis=2)
    if whole < width:
        maxima = np.concatenate([maxima, scores[:, whole:].max(axis=1, keepdims=True)], axis=1)
    cut = maxima.shape[1] - depth
    bounds: npt.NDArray[np.floating[Any]] = np.partition(maxima, cut, axis=1)[:, cut]
    return bounds


def passage_row(document: Document, score: float, rank: int, return_metadata: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"doc_id": document.doc_id, "text": document.text, "score": float(score), "rank": rank}
    if return_metadata:
        row["metadata"] = dict(document.metadata)
    return row


def search_with_exact_ties(
    search: Callable[[list[str], int], list[Hits]], queries: list[str], top_k: int, candidate_count: int
) -> list[Hits]:
    """Every query's hits with each tie at the ``top_k`` cut complete, in query order (see ``iter_exact_ties``).

    Libraries break ties by internal order; the contract breaks them by doc_id, which needs every tied hit.
    """
    results: list[Hits] = [[] for _ in queries]
    for position, hits, _ in iter_exact_ties(search, queries, top_k, candidate_count):
        results[position] = hits
    return results


def iter_exact_ties(
    search: Callable[[list[str], int], list[Hits]], queries: list[str], top_k: int, candidate_count: int
) -> Iterator[tuple[int, Hits, int]]:
    """``(query position, hits, depth searched)`` for every query once its tie at the ``top_k`` cut is complete, in
    any order.

    The first search asks for ``TIE_MARGIN`` hits beyond ``top_k``; the queries whose last hit still ties the cut
    are searched again together, at twice the depth per round, so a batch costs O(log candidates) search calls
    (each at most ``HITS_PER_CALL`` hits wide) however many of its queries tie, never one call per query.
    """
    depth = min(top_k + TIE_MARGIN, candidate_count)
    pending = list(range(len(queries)))
    while pending:
        widen: list[int] = []
        step = max(1, HITS_PER_CALL // depth)
        for start in range(0, len(pending), step):
            block = pending[start : start + step]
            found = search([queries[position] for position in block], depth)
            for position, hits in zip(block, found, strict=True):
                if depth < candidate_count and _tie_may_continue(hits, top_k, depth):
                    widen.append(position)
                else:
                    yield position, hits, depth
        pending = widen
        depth = min(depth * 2, candidate_count)


def _tie_may_continue(hits: Hits, top_k: int, width: int) -> bool:
    """True when all ``width`` hits came back and the last one still ties the score at the cut."""
    if len(hits) < width or len(hits) <= top_k:
        return False
    scores: list[float] = sorted(map(_score, hits), reverse=True)
    return scores[top_k - 1] > 0.0 and scores[-1] == scores[top_k - 1]
