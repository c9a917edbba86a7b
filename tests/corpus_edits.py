"""Random edit sequences of a corpus for property tests: texts drawn from a few words, and edits that add, remove
or rewrite documents, applied step by step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

Edit = tuple[str, int, str]


def edit_strategies(words: Sequence[str]) -> tuple[st.SearchStrategy[str], st.SearchStrategy[Edit]]:
    """A text of one to eight of ``words``, and one edit: its kind, a position (taken modulo the corpus's size)
    and the text it adds or writes."""
    text = st.lists(st.sampled_from(list(words)), min_size=1, max_size=8).map(" ".join)
    edit = st.tuples(st.sampled_from(["add", "remove", "edit"]), st.integers(0, 10_000), text)
    return text, edit


def apply_edits(
    corpus: list[dict[str, Any]], edits: Sequence[Edit], step: int, fewest: int = 1
) -> list[dict[str, Any]]:
    """The corpus after ``edits``; a corpus of fewer than ``fewest`` documents is added to instead of shrunk."""
    changed = list(corpus)
    for number, (kind, at, words) in enumerate(edits):
        if kind == "add" or len(changed) < fewest:
            changed.append({"doc_id": f"s{step}-{number}", "text": words})
        elif kind == "remove":
            del changed[at % len(changed)]
        else:
            position = at % len(changed)
            changed[position] = {**changed[position], "text": words}
    return changed
