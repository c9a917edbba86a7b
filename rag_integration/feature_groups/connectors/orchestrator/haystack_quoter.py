"""The extractive answer step of the Haystack pipeline, as a Haystack component of our own.

Imported only once Haystack is known to be installed, since the ``@component`` decorator needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document, component

from rag_integration.core.sentences import split_sentences
from rag_integration.core.text import content_words


@component
class BestSentenceQuoter:
    """Quotes verbatim the sentence of the retrieved documents that shares most content words with the query."""

    @component.output_types(answer=str, documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return {
            "answer": best_sentence(query, [document.content or "" for document in documents]),
            "documents": documents,
        }


def best_sentence(query: str, texts: Sequence[str]) -> str:
    """The sentence with most query words; higher-ranked documents and earlier sentences win ties.

    When no sentence shares a content word (a query of stopwords only), the top document's first sentence is quoted.
    """
    wanted = set(content_words(query))
    sentences = [sentence for text in texts for sentence in split_sentences(text)]
    best, best_overlap = (sentences[0], 0) if sentences else ("", 0)
    for sentence in sentences:
        overlap = len(wanted.intersection(content_words(sentence)))
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best
