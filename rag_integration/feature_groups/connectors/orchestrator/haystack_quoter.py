"""The extractive answer step of the Haystack pipeline, as a Haystack component of our own.

Imported only once Haystack is known to be installed, since the ``@component`` decorator needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document, component

from rag_integration.core.text.grounding import quotable_sentences


@component
class BestSentenceQuoter:
    """Quotes the sentence of the retrieved documents that best matches the query."""

    @component.output_types(answer=str, documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return {
            "answer": best_sentence(query, [document.content or "" for document in documents]),
            "documents": documents,
        }


def best_sentence(query: str, texts: Sequence[str]) -> str:
    """The best-scoring sentence by the rule generate uses too (``core.text.grounding.quotable_sentences``: BM25 overlap,
    ties to the higher-ranked document, then the earlier sentence); ``""`` when no sentence shares a content word
    with the query, rather than an unrelated quote."""
    ranked = quotable_sentences(query, texts)
    return ranked[0].text if ranked and ranked[0].score > 0.0 else ""
