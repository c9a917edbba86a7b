"""What the kits check of ``readers`` and ``principals``: random labels over a few groups, and the items a set of
principals may read, so a family's answer with principals can be compared with its answer over those items alone."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from rag_integration.core.documents.visibility import EVERYONE, READERS

GROUPS = ("hr", "eng", "sales", "legal", "board")
SEEDS = (0, 1, 2, 3, 4)
WORDS = [
    "engine",
    "oil",
    "filter",
    "brake",
    "tyre",
    "pressure",
    "invoice",
    "salary",
    "budget",
    "contract",
    "audit",
    "merger",
    "board",
    "vote",
    "quarter",
    "revenue",
    "hiring",
    "review",
    "policy",
    "leave",
    "travel",
    "laptop",
    "server",
    "outage",
    "backup",
    "release",
    "customer",
    "ticket",
    "refund",
    "warranty",
    "report",
]


def labelled(items: Sequence[Mapping[str, Any]], seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """``items`` each given random ``readers`` (none to two groups, sometimes everyone, sometimes no key at all)
    and a random set of principals."""
    rng = random.Random(seed)
    out = []
    for item in items:
        roll = rng.random()
        if roll < 0.1:
            out.append(dict(item))  # unlabelled: visible to nobody by default
            continue
        readers = rng.sample(GROUPS, rng.randint(0, 2)) + ([EVERYONE] if roll > 0.9 else [])
        out.append({**item, READERS: readers})
    return out, rng.sample(GROUPS, rng.randint(0, 3))


def readable(items: Sequence[Mapping[str, Any]], principals: Sequence[str]) -> list[dict[str, Any]]:
    """The items ``principals`` may read, without their ``readers``: what a request over them alone gets."""
    names = set(principals) | {EVERYONE}
    return [
        {key: value for key, value in item.items() if key != READERS}
        for item in items
        if READERS in item and names & set(item[READERS])
    ]


def word_corpus(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` documents of 4 to 14 words drawn from a small vocabulary, so terms are shared and a hidden
    document's words change the statistics of the visible ones."""
    rng = random.Random(seed)
    return [
        {"doc_id": f"d{position:03d}", "text": " ".join(rng.choices(WORDS, k=rng.randint(4, 14)))}
        for position in range(count)
    ]


def assert_same_passages(
    got: Sequence[Sequence[Mapping[str, Any]]], want: Sequence[Sequence[Mapping[str, Any]]]
) -> None:
    """Same ids in the same order per query, scores equal within 1e-6 relative."""
    assert len(got) == len(want)
    for got_row, want_row in zip(got, want, strict=True):
        assert [row["doc_id"] for row in got_row] == [row["doc_id"] for row in want_row]
        for got_passage, want_passage in zip(got_row, want_row, strict=True):
            assert math.isclose(got_passage["score"], want_passage["score"], rel_tol=1e-6, abs_tol=1e-12)
