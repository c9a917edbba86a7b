"""A real language model answers from numbered passages, and every sentence it writes is checked against what it cites.

The model sees the passages as ``[1] ...``, ``[2] ...`` and is asked to end each sentence with the numbers it draws
on. Its reply is split into sentences (``core.text.grounding.cited_sentences``) and each is held to the support score
(``core.text.grounding.support_score``); ``citation_check`` decides what an unsupported sentence does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rag_integration.core.contract.schema import STRING, Shape
from rag_integration.core.documents.corpus import Document
from rag_integration.core.indexes.embedders import get_embedder
from rag_integration.core.options import OptionReader, option, read_options
from rag_integration.core.remote.llm_client import SECRET_OPTIONS as LLM_SECRET_OPTIONS
from rag_integration.core.remote.llm_client import LlmSettings, chat
from rag_integration.core.text.grounding import (
    CITATION_CHECKS,
    SupportScorer,
    check_cited_answer,
    cited_sentences,
    quote_form,
    verify_cited_reply,
)
from rag_integration.feature_groups.connectors.generate.base import Answer, BaseGenerateConnector

NO_ANSWER = "NO_ANSWER"
DEFAULT_SUPPORT_THRESHOLD = 0.5
SYSTEM_PROMPT = (
    "You answer questions using only the numbered passages you are given. Write a short answer in plain sentences. "
    "End every sentence with the number of each passage it comes from in square brackets, like [1] or [2][3]. "
    "Do not state anything the cited passages do not say, and keep every negation and number exactly as written. "
    f"If the passages do not answer the question, reply with exactly {NO_ANSWER}."
)


@dataclass(frozen=True)
class LlmResponderSettings:
    """Which server to ask and how strictly its cited sentences are checked."""

    llm: LlmSettings
    citation_check: str = option(
        "citation_check",
        "choice",
        "what an unsupported sentence does (below)",
        default="strict",
        choices=CITATION_CHECKS,
        shown_as="`strict`, `drop`, `off`",
    )
    support_threshold: float = option(
        "support_threshold",
        "number",
        "the least support score a sentence needs",
        default=DEFAULT_SUPPORT_THRESHOLD,
        minimum=0.0,
        maximum=1.0,
    )
    support_model: str = option(
        "support_model",
        "string",
        "`minilm` (the `faiss` extra's offline all-MiniLM-L6-v2), `hash`, or a local model folder adds a dense "
        "similarity to the score",
        default="overlap",
        shown_as="`overlap` or an embedder name",
    )
    similarity: Callable[[], Callable[[str, str], float]] | None = None
    """A fresh dense cosine similarity for each answer (it keeps the vectors of the texts it has embedded), blended
    into the support score; None scores by content words alone."""

    def scorer(self) -> SupportScorer:
        """The support scorer for one answer."""
        return SupportScorer(None if self.similarity is None else self.similarity())


@dataclass(frozen=True)
class ScoredAnswer(Answer):
    """An answer with the scorer that verified it, so ``check`` does not score its sentences again."""

    scorer: SupportScorer | None = field(default=None, compare=False, repr=False)


class LlmResponder(BaseGenerateConnector[LlmResponderSettings]):
    """``generate_backend="llm"``: an OpenAI-compatible chat model writes the answer, cited sentence by sentence.

    Adds ``"unsupported"`` to each row: the sentences removed because they cited nothing, cited a passage that was
    not given, or (unless ``citation_check="off"``) scored below ``support_threshold``. ``citation_check="strict"``
    (the default) raises ``GroundingError`` naming such a sentence instead.
    """

    BACKEND: ClassVar[str | None] = "llm"
    EXTRA: ClassVar[str | None] = "llm"
    SECRET_OPTIONS: ClassVar[Mapping[str, str]] = LLM_SECRET_OPTIONS
    SETTINGS: ClassVar[type[Any] | None] = LlmResponderSettings

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """A model words its answers itself, and its rows carry ``unsupported``."""
        return {"paraphrases": True, "empty_answer": {"answer": "", "citations": [], "unsupported": []}}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> LlmResponderSettings:
        """The declared options; the server's through ``LlmSettings.read``, the support model as its similarity."""
        llm = LlmSettings.read(reader)
        declared = read_options(LlmResponderSettings, reader)
        model = declared.support_model
        return dataclasses.replace(declared, llm=llm, similarity=None if model == "overlap" else _cosine(model))

    @classmethod
    def answer_shape(cls) -> dict[str, Shape]:
        return {"answer": STRING, "citations": [STRING], "unsupported": [STRING]}

    @classmethod
    def empty_answer(cls) -> Answer:
        return Answer(unsupported=[])

    @classmethod
    def respond(cls, query: str, passages: Sequence[Document], settings: LlmResponderSettings) -> Answer:
        numbered = "\n\n".join(f"[{number}] {quote_form(p.text)}" for number, p in enumerate(passages, start=1))
        reply = chat(
            settings.llm,
            [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Passages:\n\n{numbered}\n\nQuestion: {query}"},
            ],
        )
        if quote_form(reply).strip(" .").upper() in ("", NO_ANSWER):
            return cls.empty_answer()
        scorer = settings.scorer()
        verified = verify_cited_reply(
            cited_sentences(reply),
            passages,
            citation_check=settings.citation_check,
            threshold=settings.support_threshold,
            who=f"{cls.__name__} ({settings.llm.model})",
            scorer=scorer,
        )
        return ScoredAnswer(verified.answer, verified.citations, verified.unsupported, scorer)

    @classmethod
    def check(cls, answer: Answer, passages: Sequence[Document], settings: LlmResponderSettings) -> None:
        """The generate contract with the support score in place of the quote rule (none with ``off``); a sentence
        ``respond`` already scored is looked up in its scorer rather than scored again."""
        scorer = answer.scorer if isinstance(answer, ScoredAnswer) and answer.scorer else settings.scorer()

        def supported(sentence: str, sources: Sequence[Document]) -> bool:
            if settings.citation_check == "off":
                return bool(quote_form(sentence))
            threshold: float = settings.support_threshold
            return scorer.score(sentence, [source.text for source in sources]) >= threshold

        check_cited_answer(answer.answer, answer.citations, passages, cls.__name__, supported)


def _cosine(model: str) -> Callable[[], Callable[[str, str], float]]:
    """Cosine similarity of two texts under the embedder ``model`` names (``minilm``, ``hash``, a folder), made
    fresh for each answer: it embeds each text once and keeps its vector for that answer only."""
    embedder = get_embedder(model, "support_model")

    def for_one_answer() -> Callable[[str, str], float]:
        vectors: dict[str, Any] = {}

        def vector(text: str) -> Any:
            if text not in vectors:
                vectors[text] = embedder.embed([text])[0]
            return vectors[text]

        def similarity(first: str, second: str) -> float:
            return float(vector(first) @ vector(second))

        return similarity

    return for_one_answer
