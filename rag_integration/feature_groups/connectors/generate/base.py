"""The generate contract: an answer drawn from the supplied passages, with ``[n]`` markers into its citations.

Backends pick sentences (``scored_sentences``); ``compose`` turns picks into an answer, and ``check_grounded`` vets
every backend's output before it leaves, so a backend that breaks grounding fails loudly with ``GroundingError``.
Scoring and checking are the shared rules of ``rag_integration.core.text.grounding``.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.per_query import ON_ERROR, ErrorPolicy
from rag_integration.core.contract.queries import passage_requests
from rag_integration.core.contract.request_options import FILTERS
from rag_integration.core.contract.schema import STRING, Shape
from rag_integration.core.contract.sources import PASSAGES, QUERIES, Source
from rag_integration.core.documents.corpus import Document
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO
from rag_integration.core.options import OptionReader, OptionSpec, SettingsT, option_keys
from rag_integration.core.text.grounding import LATER_TEXT, QuotableSentence, check_cited_answer, quotable_sentences
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.core.text.sentences import ends_lead_in

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame


OVERLAP = "overlap"
SENTENCE_MODEL: OptionSpec[str] = OptionSpec(
    "sentence_model",
    "string",
    "`overlap` chooses sentences by the words they share with the query; an embedder (`multilingual-e5-small` of "
    "the `multilingual` extra, `minilm` of the `faiss` extra, a local model folder) adds its similarity to the "
    "query, so a sentence that answers in other words can win",
    default=OVERLAP,
    shown_as="`overlap` or an embedder name",
)
MODEL_SCALE = 10.0
"""Overlap points (the best overlap is 1) per unit of a sentence's cosine similarity to the query: an embedder's
similarities to the sentences of a few passages spread over about a tenth, which then counts as much as the best
overlap. A fixed scale, not the candidates' own range, so two sentences a hair apart are not stretched to a whole
point (docs/generate.md)."""


@dataclass(frozen=True)
class Answer:
    """One generated answer; ``unsupported`` is None for a backend that only quotes, and the sentences it removed
    for one that verifies a model's claims (``LlmResponder``)."""

    answer: str = ""
    citations: list[str] = field(default_factory=list)
    unsupported: list[str] | None = None

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"answer": self.answer, "citations": list(self.citations)}
        if self.unsupported is not None:
            row["unsupported"] = list(self.unsupported)
        return row


class BaseGenerateConnector(SelectorFeatureGroup, Generic[SettingsT]):
    """``generated_answer``: ``{"answer": str, "citations": [doc_id]}`` grounded in ``passages`` (or the rows of
    ``passages_source``), which are read in the given order, best first."""

    FAMILY: ClassVar[str] = "generate"
    CONTRACT_VERSION: ClassVar[str] = "1.0"
    FEATURE_NAME: ClassVar[str] = "generated_answer"
    SELECTOR: ClassVar[str] = "generate_backend"
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(FILTERS, ON_ERROR)
    SOURCES: ClassVar[tuple[Source, ...]] = (QUERIES, PASSAGES)
    """Read as a ``Corpus`` once matched, so mloda's planning copies a fingerprint, not every passage's text."""

    @classmethod
    def read_settings(cls, reader: OptionReader) -> Any:
        """The declared options; a ``sentence_model`` among them is loaded once, so a bad name or a missing extra is
        the request's typed error before any passage is read."""
        settings = super().read_settings(reader)
        check_sentence_model(getattr(settings, "sentence_model", OVERLAP))
        return settings

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        requests = passage_requests(reader, data, "passages", "passages_source")
        settings = cls.read_settings(reader)
        answers = ErrorPolicy.read(reader).answer_each(
            requests,
            lambda request: cls.generate(request[0], request[1], settings),
            lambda: cls.empty_answer().as_row(),
            "query",
        )
        return {cls.FEATURE_NAME: answers}

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        return ErrorPolicy.read(reader).shape(cls.answer_shape())

    @classmethod
    def answer_shape(cls) -> dict[str, Shape]:
        """One answer's fields (``output_shape`` adds ``error`` under ``on_error="row"``)."""
        return {"answer": STRING, "citations": [STRING]}

    @classmethod
    def generate(cls, query: str, passages: Sequence[Document], settings: SettingsT) -> dict[str, Any]:
        if not passages:
            return cls.empty_answer().as_row()
        answer = cls.respond(query, passages, settings)
        cls.check(answer, passages, settings)
        return answer.as_row()

    @classmethod
    def empty_answer(cls) -> Answer:
        """The answer when there is nothing to answer from."""
        return Answer()

    @classmethod
    def check(cls, answer: Answer, passages: Sequence[Document], settings: SettingsT) -> None:
        """Vet ``answer`` before it leaves: quoted from the passages it cites (``check_grounded``)."""
        check_grounded(answer, passages, cls.__name__)

    @classmethod
    @abstractmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: SettingsT) -> Answer:
        """The answer for one query over non-empty passages; usually ``compose(picked sentences, passages)``.

        Args:
            query: one query of the request.
            passages: the passages to answer from, in their incoming order, numbered from 1 for citations.
            settings: what ``read_settings`` returned for the request.

        Raises:
            ConnectorError: a typed error of the backend's own (a remote model failing: ``RemoteServiceError``).

        The base then runs ``check``: every sentence must be quoted from a passage it cites, else
        ``GroundingError``; under ``on_error="row"`` that error becomes the query's row instead.
        """


def scored_sentences(query: str, passages: Sequence[Document], model: str = OVERLAP) -> list[QuotableSentence]:
    """Every sentence of every passage, best match first: by overlap with the query (the shared rule of
    ``core.text.grounding``), plus, with an embedder ``model``, the sentence's similarity to the query on a fixed
    scale (``MODEL_SCALE``) under the same passage prior. Only a sentence sharing a word with the query is weighed
    by the model; the others follow, unchanged: without any overlap there is nothing to answer from, whatever the
    model says."""
    ranked = quotable_sentences(query, [passage.text for passage in passages])
    if model == OVERLAP or not ranked or ranked[0].score <= 0.0:
        return ranked
    sharing = [sentence for sentence in ranked if sentence.score > 0.0]
    embedder = get_embedder(model, SENTENCE_MODEL.key)
    similarity = (
        EMBEDDING_MEMO.embed(embedder, [sentence.text for sentence in sharing]) @ embedder.embed_queries([query])[0]
    )
    closest, top = float(similarity.max()), ranked[0].score
    blended = [
        dataclasses.replace(
            sentence,
            score=sentence.score / top + MODEL_SCALE * (float(close) - closest) / (1.0 + LATER_TEXT * sentence.source),
            overlap=sentence.score,
        )
        for sentence, close in zip(sharing, similarity, strict=True)
    ]
    rest = ranked[len(sharing) :]
    return [*sorted(blended, key=lambda sentence: (-sentence.score, sentence.source, sentence.index)), *rest]


MAX_LEAD_IN_ITEMS = 12
"""Most sentences a lead-in brings along: the steps or items of one list, not the rest of a long passage."""


def best_answer(query: str, ranked: Sequence[QuotableSentence]) -> list[QuotableSentence]:
    """The best sentence, and the one after it in its passage when that one shares a word with the query by its own
    words (not only through its heading): an answer often runs on ("...a string over an alphabet. Usually, the
    alphabet is taken to be the binary alphabet"). A best sentence that is a lead-in ("To check the oil level:")
    says nothing alone, so it brings the sentences after it (its steps) instead, up to ``MAX_LEAD_IN_ITEMS`` and
    the next lead-in. Nothing when no sentence shares a word with the query."""
    if not ranked or ranked[0].score <= 0.0:
        return []
    best = ranked[0]
    by_place = {(s.source, s.index): s for s in ranked if s.source == best.source}
    if ends_lead_in(best.text):
        return [best, *lead_in_items(best, by_place)]
    following = by_place.get((best.source, best.index + 1))
    if following is None or lexical_scores(query, [following.text])[0] <= 0.0:
        return [best]
    return [best, following]


def lead_in_items(
    lead_in: QuotableSentence, by_place: Mapping[tuple[int, int], QuotableSentence]
) -> list[QuotableSentence]:
    """The sentences a lead-in ("Packing list:") brings along, found ``by_place`` (source, index): those right after
    it in its passage, up to ``MAX_LEAD_IN_ITEMS`` and the next lead-in; none when ``lead_in`` is not one."""
    items: list[QuotableSentence] = []
    if not ends_lead_in(lead_in.text):
        return items
    index = lead_in.index + 1
    while len(items) < MAX_LEAD_IN_ITEMS and (item := by_place.get((lead_in.source, index))) is not None:
        items.append(item)
        if ends_lead_in(item.text):
            break
        index += 1
    return items


def check_sentence_model(model: str) -> None:
    """Load the embedder a request names once, so a bad name or a missing extra is the request's typed error."""
    if model != OVERLAP:
        get_embedder(model, SENTENCE_MODEL.key)


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
    (``rag_integration.core.text.grounding.check_cited_answer``)."""
    check_cited_answer(answer.answer, answer.citations, passages, backend)
