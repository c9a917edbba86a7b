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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_integration.core.documents import Document
from rag_integration.core.errors import GroundingError, short_repr
from rag_integration.core.lexical import lexical_scores
from rag_integration.core.sentences import split_sentences

MARKER = re.compile(r"\[(\d+)\]")
_MARKER_LIKE = re.compile(r"(?<!\s)\s*+\[\d++\]")
"""A marker-like ``[n]`` with the whitespace before it; a match starts only where a whitespace run starts, so a long
run not followed by a marker is scanned once, not once per position (the same matches as without that condition)."""
_BRACKET = re.compile(r"([\[\]])")
_ASCII_SPACE_RUNS = ("  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
"""In ASCII text, whitespace other than single spaces: without any of these, collapsing whitespace changes nothing."""


@dataclass(frozen=True)
class QuotableSentence:
    """A sentence of ``texts[source]`` (its ``index``-th), in quote form, with its overlap with the query."""

    source: int
    index: int
    text: str
    score: float


def quote_form(text: str) -> str:
    """``text`` with marker-like ``[n]`` removed and whitespace collapsed: the form in which quotes are compared.

    Removal repeats until nothing marker-like is left, so ``x[3[4]]`` cannot leave a fresh ``[3]`` behind; nested
    markers are removed in one pass over the text (``_without_nested_markers``), so the time stays linear.
    """
    if "[" in text:
        text = _MARKER_LIKE.sub("", text)
        if _MARKER_LIKE.search(text):
            text = _without_nested_markers(text)
    if len(text) > 4096 and text.isascii() and not any(space in text for space in _ASCII_SPACE_RUNS):
        return text.strip()  # already one space between words: skip splitting a long passage into words
    return " ".join(text.split())


def _without_nested_markers(text: str) -> str:
    """What removing marker-like ``[n]`` again and again leaves, computed with a stack of pieces (brackets and the
    text between them): a ``]`` closing ``[`` plus digits drops them and the whitespace before them, which may
    complete an outer marker. Each piece is pushed and popped at most once."""
    kept: list[str] = []
    for piece in _BRACKET.split(text):
        if not piece:
            continue
        if piece == "]":
            start = len(kept) - 1
            while start >= 0 and kept[start] not in ("[", "]") and kept[start].isdecimal():
                start -= 1
            if 0 <= start < len(kept) - 1 and kept[start] == "[":
                del kept[start:]
                while kept and kept[-1] not in ("[", "]"):
                    stripped = kept[-1].rstrip()
                    if stripped:
                        kept[-1] = stripped
                        break
                    kept.pop()
                continue
        kept.append(piece)
    return "".join(kept)


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


def check_quoted_answer(
    answer: str, sources: Sequence[Document], who: str, check_time: Callable[[], None] | None = None
) -> None:
    """An answer without markers: every sentence must be quoted from one of ``sources``; an empty answer always is.

    Raises ``GroundingError`` naming ``who`` and the first sentence found in none of the sources. Each source is put
    in quote form once; ``check_time`` (if given) is called before each sentence, so a caller's deadline can stop a
    long check.
    """
    if not answer.strip():
        return
    if not sources:
        raise GroundingError(
            f"{who} answered {short_repr(answer)} but returned no document: "
            "expected an empty answer when no document is returned"
        )
    quoted_sources = [quote_form(source.text) for source in sources]
    for sentence in split_sentences(answer):
        if check_time is not None:
            check_time()
        quoted = quote_form(sentence)
        if not quoted or not any(quoted in source for source in quoted_sources):
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
    quoted_sources: dict[str, str] = {}
    checked: set[tuple[int, str]] = set()
    claim_at = 0
    for at, (piece, number) in enumerate(zip(pieces[0::2], pieces[1::2])):
        claim_at = at if quote_form(piece) else claim_at
        marker = int(number) if len(number) <= len(str(len(citations))) else 0  # no int() of a 5,000-digit marker
        if not 1 <= marker <= len(citations):
            shown = number if len(number) <= 12 else number[:12] + "..."
            raise GroundingError(f"{who} used marker [{shown}] with {len(citations)} citation(s)")
        source = by_id[citations[marker - 1]]
        if (claim_at, source.doc_id) in checked:  # markers in a row citing one passage twice: checked once
            marked.add(marker)
            continue
        if source.doc_id not in quoted_sources:
            quoted_sources[source.doc_id] = quote_form(source.text)
        claim = pieces[2 * claim_at]
        for sentence in split_sentences(claim) or [claim]:
            quoted = quote_form(sentence)
            if not quoted or quoted not in quoted_sources[source.doc_id]:
                raise GroundingError(
                    f"{who} attributed {short_repr(quoted)} to {source.doc_id!r}, whose text does not contain it"
                )
        checked.add((claim_at, source.doc_id))
        marked.add(marker)
    return marked
