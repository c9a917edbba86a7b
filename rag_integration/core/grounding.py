"""The one rule for "this answer is quoted from these passages", shared by every family that answers questions.

A sentence of an answer is grounded when its quote form (``[n]``-like markers removed, whitespace collapsed)
occurs in the quote form of a passage it is attributed to. ``generate`` attributes the text before each ``[n]``
marker to citation ``n`` (``check_cited_answer``); ``orchestrator`` answers carry no markers, so each sentence
may come from any document returned with the answer (``check_quoted_answer``). Both raise ``GroundingError``.

``quotable_sentences`` is the other half: the sentences an answer may quote, scored against the query with the
shared BM25 overlap, so every family picks the sentence to quote by the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.documents import Document
from rag_integration.core.errors import GroundingError, short_repr
from rag_integration.core.lexical import lexical_scores
from rag_integration.core.sentences import split_sentences

MARKER = re.compile(r"\[(\d+)\]")
_MARKER_LIKE = re.compile(r"\s*\[\d+\]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class QuotableSentence:
    """A sentence of ``texts[source]`` (its ``index``-th), in quote form, with its overlap with the query."""

    source: int
    index: int
    text: str
    score: float


def quote_form(text: str) -> str:
    """``text`` with marker-like ``[n]`` removed and whitespace collapsed: the form in which quotes are compared.

    Removal repeats until nothing marker-like is left, so ``x[3[4]]`` cannot leave a fresh ``[3]`` behind.
    """
    removed = 1
    while removed:
        text, removed = _MARKER_LIKE.subn("", text)
    return _SPACE.sub(" ", text).strip()


def is_quoted(piece: str, text: str) -> bool:
    """Whether ``piece`` is non-empty in quote form and occurs in ``text`` (in quote form)."""
    quoted = quote_form(piece)
    return bool(quoted) and quoted in quote_form(text)


def quotable_sentences(query: str, texts: Sequence[str]) -> list[QuotableSentence]:
    """Every sentence of ``texts`` in quote form, scored by BM25 overlap with the query (idf over these sentences),
    best first; ties go to the earlier text, then the earlier sentence. A sentence sharing no content word with
    the query scores exactly 0."""
    sentences = [
        (source, index, quoted)
        for source, text in enumerate(texts)
        for index, sentence in enumerate(split_sentences(text))
        if (quoted := quote_form(sentence))
    ]
    scores = lexical_scores(query, [quoted for _, _, quoted in sentences])
    scored = [
        QuotableSentence(source, index, quoted, score) for (source, index, quoted), score in zip(sentences, scores)
    ]
    return sorted(scored, key=lambda sentence: (-sentence.score, sentence.source, sentence.index))


def check_quoted_answer(answer: str, sources: Sequence[Document], who: str) -> None:
    """An answer without markers: every sentence must be quoted from one of ``sources``; an empty answer always is.

    Raises ``GroundingError`` naming ``who`` and the first sentence found in none of the sources.
    """
    if not answer.strip():
        return
    if not sources:
        raise GroundingError(
            f"{who} answered {short_repr(answer)} but returned no document: "
            "expected an empty answer when no document is returned"
        )
    for sentence in split_sentences(answer):
        if not any(is_quoted(sentence, source.text) for source in sources):
            raise GroundingError(
                f"{who} answered with {short_repr(sentence)}, which is in none of the {len(sources)} returned "
                "documents: expected an answer quoted from the returned documents"
            )


def check_cited_answer(answer: Any, citations: Any, passages: Sequence[Document], who: str) -> None:
    """An answer with ``[n]`` markers into ``citations`` (doc_ids of ``passages``, 1-based).

    Raises ``GroundingError`` unless every citation is a supplied passage cited once, a non-empty answer cites at
    least one, every marker indexes into the citations, every citation is marked, no text follows the last marker,
    and every sentence before a marker is quoted from the passage that marker cites.
    """
    if not isinstance(answer, str) or not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
        raise GroundingError(
            f"{who} returned answer {short_repr(answer)} with citations {short_repr(citations)}: "
            "expected a str answer and a list of doc_ids"
        )
    by_id = {passage.doc_id: passage for passage in passages}
    unknown = [doc_id for doc_id in citations if doc_id not in by_id]
    if unknown:
        raise GroundingError(f"{who} cited {short_repr(unknown)}, which are not among the supplied passages")
    if len(set(citations)) != len(citations):
        raise GroundingError(f"{who} cited a passage more than once: {short_repr(citations)}")
    if not answer.strip():
        if citations:
            raise GroundingError(f"{who} returned an empty answer with citations {short_repr(citations)}")
        return
    pieces = MARKER.split(answer)
    if not citations or len(pieces) == 1:
        raise GroundingError(f"{who} returned an answer without citation markers: {short_repr(answer)}")
    if quote_form(pieces[-1]):
        raise GroundingError(f"{who} returned text after the last marker: {short_repr(pieces[-1])}")
    marked = _check_marked_claims(pieces, citations, by_id, who)
    unmarked = sorted(set(range(1, len(citations) + 1)) - marked)
    if unmarked:
        raise GroundingError(f"{who} cited {short_repr([citations[n - 1] for n in unmarked])} without a marker")


def _check_marked_claims(pieces: list[str], citations: list[str], by_id: Mapping[str, Document], who: str) -> set[int]:
    """Check each sentence before a marker against the passage it cites; markers in a row (``[1][2]``) all cite
    the text before the first of them. Returns the markers used."""
    marked: set[int] = set()
    claim = ""
    for piece, number in zip(pieces[0::2], pieces[1::2]):
        claim = piece if quote_form(piece) else claim
        marker = int(number)
        if not 1 <= marker <= len(citations):
            raise GroundingError(f"{who} used marker [{marker}] with {len(citations)} citation(s)")
        source = by_id[citations[marker - 1]]
        sentences = split_sentences(claim) or [claim]
        for sentence in sentences:
            if not is_quoted(sentence, source.text):
                raise GroundingError(
                    f"{who} attributed {short_repr(quote_form(sentence))} to {source.doc_id!r}, "
                    "whose text does not contain it"
                )
        marked.add(marker)
    return marked
