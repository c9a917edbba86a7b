"""The generate contract: an answer drawn from the supplied passages, with ``[n]`` markers into its citations.

Backends pick sentences (``scored_sentences``); ``compose`` turns picks into an answer, and ``check_grounded`` vets
every backend's output before it leaves, so a backend that breaks grounding fails loudly with ``GroundingError``.
Scoring and checking are the shared rules of ``rag_integration.core.grounding``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rag_integration.core.documents import Document
from rag_integration.core.feature_group import SelectorFeatureGroup
from rag_integration.core.grounding import QuotableSentence, check_cited_answer, quotable_sentences
from rag_integration.core.options import OptionReader
from rag_integration.core.queries import passage_requests
from rag_integration.core.schema import STRING, Shape


@dataclass(frozen=True)
class Answer:
    answer: str = ""
    citations: list[str] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        return {"answer": self.answer, "citations": list(self.citations)}


class BaseGenerateConnector(SelectorFeatureGroup):
    """``generated_answer``: ``{"answer": str, "citations": [doc_id]}`` grounded in ``passages`` (or the rows of
    ``passages_source``), which are read in the given order, best first."""

    FAMILY: ClassVar[str] = "generate"
    FEATURE_NAME: ClassVar[str] = "generated_answer"
    SELECTOR: ClassVar[str] = "generate_backend"
    SOURCE_OPTIONS: ClassVar[Mapping[str, str]] = {"passages_source": "passages"}
    CORPUS_OPTIONS: ClassVar[tuple[str, ...]] = ("passages",)
    """Read as a ``Corpus`` once matched, so mloda's planning copies a fingerprint, not every passage's text."""

    @classmethod
    def answer(cls, data: Any, reader: OptionReader) -> Mapping[str, Any]:
        requests = passage_requests(reader, data, "passages", "passages_source")
        settings = cls.read_settings(reader)
        return {cls.FEATURE_NAME: [cls.generate(query, passages, settings) for query, passages in requests]}

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        return {"answer": STRING, "citations": [STRING]}

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


def scored_sentences(query: str, passages: Sequence[Document]) -> list[QuotableSentence]:
    """Every sentence of every passage, best match first (the shared rule of ``core.grounding``)."""
    return quotable_sentences(query, [passage.text for passage in passages])


def compose(picks: Sequence[QuotableSentence], passages: Sequence[Document]) -> Answer:
    """Join picked sentences, each followed by the marker of its passage; passages are cited in order of first use."""
    citations: list[str] = []
    parts = []
    for pick in picks:
        doc_id = passages[pick.source].doc_id
        if doc_id not in citations:
            citations.append(doc_id)
        parts.append(f"{pick.text} [{citations.index(doc_id) + 1}]")
    return Answer(" ".join(parts), citations)


def check_grounded(answer: Answer, passages: Sequence[Document], backend: str) -> None:
    """Raise ``GroundingError`` unless ``answer`` is grounded in ``passages`` by the rule every family shares
    (``rag_integration.core.grounding.check_cited_answer``)."""
    check_cited_answer(answer.answer, answer.citations, passages, backend)
