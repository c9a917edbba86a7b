"""Reordering a ranking only where the evidence is unanimous: an item passes another only when it is at least as
strong on every criterion and stronger on one (a dominance order), the incoming order deciding everything else."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

Strengths = np.ndarray[Any, np.dtype[np.float64]]
"""One row per item (in incoming order), one column per criterion; higher is stronger."""

DOMINANCE_BLOCK = 256
"""Items compared with all the others at once: bounds the comparison's memory to this many rows."""


def dominance_places(strengths: Strengths) -> list[int]:
    """Each item's new place from 0: repeatedly the earliest item (incoming order) that no item still unplaced
    dominates. Item ``j`` dominates ``i`` when its every strength is at least ``i``'s and one is larger, so that any
    non-negative weighting of the criteria ranks ``j`` above ``i``. Quadratic in the items with a strength above 0
    (compared in blocks of rows); the others keep their order after them."""
    count = len(strengths)
    holding = np.flatnonzero(strengths.any(axis=1))
    dominators = np.zeros(count, dtype=np.int64)
    passes: dict[int, list[int]] = {}
    held = strengths[holding]
    for start in range(0, len(holding), DOMINANCE_BLOCK):
        block = held[start : start + DOMINANCE_BLOCK, None, :]
        dominated: np.ndarray[Any, np.dtype[np.bool_]] = np.logical_and(
            (block >= held[None, :, :]).all(axis=2), (block > held[None, :, :]).any(axis=2)
        )
        for offset, row in enumerate(dominated):
            below = holding[row]
            passes[int(holding[start + offset])] = below.tolist()
            dominators[below] += 1
    places = [0] * count
    ready = [int(position) for position in holding if dominators[position] == 0]
    heapq.heapify(ready)
    place = 0
    while ready:
        position = heapq.heappop(ready)
        places[position] = place
        place += 1
        for below in passes[position]:
            dominators[below] -= 1
            if dominators[below] == 0:
                heapq.heappush(ready, below)
    for position in np.flatnonzero(~strengths.any(axis=1)).tolist():
        places[position] = place
        place += 1
    return places


def dominance_counts(strengths: Strengths, position: int) -> tuple[int, int]:
    """How many items the one at ``position`` dominates, and how many dominate it."""
    row = strengths[position]
    dominates = (row >= strengths).all(axis=1) & (row > strengths).any(axis=1)
    dominated_by = (strengths >= row).all(axis=1) & (strengths > row).any(axis=1)
    return int(dominates.sum()), int(dominated_by.sum())
