"""Inputs a family takes inline in one option or as the rows of an upstream feature named by another, declared once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """``inline`` holds the input itself; ``upstream`` names the feature whose rows hold it instead (never both)."""

    inline: str
    upstream: str
    documents: bool = False
    """True when the inline form is a list of documents, turned into a ``Corpus`` as soon as a backend is matched
    (mloda then copies and hashes it in constant time)."""


QUERIES = Source("query_text", "queries_source")
CORPUS = Source("corpus", "corpus_source", documents=True)
CANDIDATES = Source("candidates", "candidates_source")
PASSAGES = Source("passages", "passages_source", documents=True)
GRAPH = Source("nodes", "graph_source")
