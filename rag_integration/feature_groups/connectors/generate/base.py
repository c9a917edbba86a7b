"""The generate contract: an answer drawn from the supplied passages, with ``[n]`` markers into its citations.

Backends pick sentences; ``compose`` turns picks into an answer, and ``check_grounded`` vets every backend's output
before it leaves, so a backend that breaks grounding fails loudly with ``GroundingError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rag_integration.core.documents import Document, read_passages
from rag_integration.core.errors import GroundingError, short_repr
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.lexical import lexical_scores
from rag_integration.core.options import OptionReader
from rag_integration.core.queries import query_rows
from rag_integration.core.sentences import split_sentences

MARKER = re.compile(r"\[(\d+)\]")
_MARKER_LIKE = re.compile(r"\s*\[\d+\]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Answer:
    answer: str = ""
    citations: list[str] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        return {"answer": self.answer, "citations": list(self.citations)}


@dataclass(frozen=True)
class Sentence:
    """A sentence of one passage, cleaned of marker-like ``[n]`` so our markers stay unambiguous."""

    passage: int
    index: int
    text: str
    score: float


class BaseGenerateConnector(SelectorFeatureGroup):
    """``generated_answer``: ``{"answer": str, "citations": [doc_id]}`` grounded in ``passages`` (or the rows of
    ``passages_source``), which are read in the given order, best first."""

    FAMILY: ClassVar[str] = "generate"
    FEATURE_NAME: ClassVar[str] = "generated_answer"
    SELECTOR: ClassVar[str] = "generate_backend"
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"passages_source": "passages"}

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        rows = query_rows(reader, data, "passages", reader.raw("passages"), "passages_source")
        settings = cls.read_settings(reader)
        requests = [(row.query, read_passages(row.items, row.option)) for row in rows]
        return {cls.FEATURE_NAME: [cls.generate(query, passages, settings) for query, passages in requests]}

    @classmethod
    def generate(cls, query: str, passages: Sequence[Document], settings: Mapping[str, Any]) -> dict[str, Any]:
        if not passages:
            return Answer().as_row()
        answer = cls.respond(query, passages, settings)
        check_grounded(answer, passages, cls.__name__)
        return answer.as_row()

    @classmethod
    def read_settings(cls, reader: OptionReader) -> dict[str, Any]:
        return {}

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: Mapping[str, Any]) -> Answer:
        """The answer for one query over non-empty passages; usually ``compose(picked sentences, passages)``."""
        raise NotImplementedError


def scored_sentences(query: str, passages: Sequence[Document]) -> list[Sentence]:
    """Every sentence of every passage with its BM25 overlap with the query (idf over all these sentences),
    best first; ties go to the earlier passage, then the earlier sentence."""
    sentences = [
        (position, index, cleaned)
        for position, passage in enumerate(passages)
        for index, raw in enumerate(split_sentences(passage.text))
        if (cleaned := clean_text(raw))
    ]
    scores = lexical_scores(query, [text for _, _, text in sentences])
    scored = [Sentence(p, i, text, score) for (p, i, text), score in zip(sentences, scores)]
    return sorted(scored, key=lambda sentence: (-sentence.score, sentence.passage, sentence.index))


def compose(picks: Sequence[Sentence], passages: Sequence[Document]) -> Answer:
    """Join picked sentences, each followed by the marker of its passage; passages are cited in order of first use."""
    citations: list[str] = []
    parts = []
    for pick in picks:
        doc_id = passages[pick.passage].doc_id
        if doc_id not in citations:
            citations.append(doc_id)
        parts.append(f"{pick.text} [{citations.index(doc_id) + 1}]")
    return Answer(" ".join(parts), citations)


def clean_text(text: str) -> str:
    """Whitespace collapsed and marker-like ``[n]`` removed: the form in which answer text is compared."""
    return _SPACE.sub(" ", _MARKER_LIKE.sub("", text)).strip()


def check_grounded(answer: Answer, passages: Sequence[Document], backend: str) -> None:
    """Raise ``GroundingError`` unless every citation is a supplied passage cited once, a non-empty answer cites
    at least one, every ``[n]`` indexes into the citations, every citation is marked, and every piece of text
    before a marker occurs in the passage that marker cites."""
    text, citations = answer.answer, answer.citations
    if not isinstance(text, str) or not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
        raise GroundingError(f"{backend} returned {short_repr(answer)}: expected a str answer and a list of doc_ids")
    by_id = {passage.doc_id: passage for passage in passages}
    unknown = [doc_id for doc_id in citations if doc_id not in by_id]
    if unknown:
        raise GroundingError(f"{backend} cited {short_repr(unknown)}, which are not among the supplied passages")
    if len(set(citations)) != len(citations):
        raise GroundingError(f"{backend} cited a passage more than once: {short_repr(citations)}")
    if not text.strip():
        if citations:
            raise GroundingError(f"{backend} returned an empty answer with citations {short_repr(citations)}")
        return
    pieces = MARKER.split(text)
    if not citations or len(pieces) == 1:
        raise GroundingError(f"{backend} returned an answer without citation markers: {short_repr(text)}")
    if clean_text(pieces[-1]):
        raise GroundingError(f"{backend} returned text after the last marker: {short_repr(pieces[-1])}")
    marked: set[int] = set()
    claim = ""
    for piece, number in zip(pieces[0::2], pieces[1::2]):
        claim = clean_text(piece) or claim
        marker = int(number)
        if not 1 <= marker <= len(citations):
            raise GroundingError(f"{backend} used marker [{marker}] with {len(citations)} citation(s)")
        source = by_id[citations[marker - 1]]
        if not claim or claim not in clean_text(source.text):
            raise GroundingError(
                f"{backend} attributed {short_repr(claim)} to {source.doc_id!r}, whose text does not contain it"
            )
        marked.add(marker)
    unmarked = sorted(set(range(1, len(citations) + 1)) - marked)
    if unmarked:
        raise GroundingError(f"{backend} cited {short_repr([citations[n - 1] for n in unmarked])} without a marker")
