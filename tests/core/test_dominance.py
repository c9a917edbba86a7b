"""The dominance order: an item passes another only when at least as strong on every criterion and stronger on one."""

from __future__ import annotations

import numpy as np
import pytest

from rag_integration.core.ranking.dominance import DOMINANCE_BLOCK, dominance_counts, dominance_places


def naive_places(strengths: np.ndarray) -> list[int]:  # type: ignore[type-arg]
    """The definition, step by step: the earliest remaining item that no remaining item dominates."""
    remaining, order = list(range(len(strengths))), []
    while remaining:
        rows = strengths[remaining]
        for index, item in enumerate(remaining):
            row = strengths[item]
            if not ((rows >= row).all(axis=1) & (rows > row).any(axis=1)).any():
                order.append(item)
                del remaining[index]
                break
    return [order.index(item) for item in range(len(strengths))]


@pytest.mark.parametrize("seed", range(4))
def test_places_follow_the_definition_across_blocks(seed: int) -> None:
    generator = np.random.default_rng(seed)
    count = DOMINANCE_BLOCK + 90
    strengths = generator.integers(0, 3, size=(count, 3)).astype(np.float64)  # many ties and many zero rows
    assert dominance_places(strengths) == naive_places(strengths)


def test_unranked_items_keep_their_order_after_the_others() -> None:
    strengths = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 2.0], [1.0, 2.0]])
    assert dominance_places(strengths) == [3, 1, 4, 2, 0]
    assert dominance_counts(strengths, 4) == (4, 0) and dominance_counts(strengths, 1) == (2, 1)
