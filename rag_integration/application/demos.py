"""The demos, imported when one is run (they enable every installed backend)."""

from __future__ import annotations

from collections.abc import Sequence


def run_demo(backends: Sequence[str] | None, top_k: int) -> int:
    """Every installed retrieve backend over the demo corpus, printed as a table."""
    from rag_integration.demo.run import run_demo as demo

    return demo(backends, top_k)


def run_swap_demo(embedding_model: str = "minilm") -> int:
    """The same inputs through several backends and families: only options change."""
    from rag_integration.demo.swap import run_swap_demo as demo

    return demo(embedding_model)
