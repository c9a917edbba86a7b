"""The one rule for "this answer is quoted from these passages", shared by every family that answers questions.

A sentence of an answer is grounded when its quote form (``[n]``-like markers removed, whitespace collapsed)
occurs in the quote form of a passage it is attributed to *as whole clauses*: it starts where a clause of the
source starts (the text's start, after ``. , ; : ! ?``, a dash or an opening bracket) and ends where one ends, so
"mix bleach and ammonia" is not grounded in "Never mix bleach and ammonia" (a dropped negation or qualifier is a
different claim). ``generate`` attributes the text before each ``[n]`` marker to citation ``n``
(``check_cited_answer``); ``orchestrator`` answers carry no markers, so each sentence may come from any document
returned with the answer (``check_quoted_answer``). Both raise ``GroundingError``.

``quotable_sentences`` is the other half: the sentences an answer may quote, scored against the query with the
shared BM25 overlap, so every family picks the sentence to quote by the same rule.

A model that paraphrases cannot quote, so its sentences are held to ``support_score`` instead (see
``verify_cited_reply``): the share of the sentence's content words and numbers found in the cited passages'
sentences of the same polarity (negated or not), zero when one of its numbers is missing; optionally averaged with
a dense model's cosine similarity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import GroundingError, UnservedItemError, short_repr
from rag_integration.core.text.analysis import AUTO, content_analyzer, words
from rag_integration.core.text.languages import query_language
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.core.text.questions import answer_kind, holds_answer_kind
from rag_integration.core.text.sentences import ends_clause, sentence_spans, sentences, split_sentences, starts_clause

NUMBERED = r"\d++"
"""The ids of the markers this package writes: passage numbers from 1."""


def citation_markers(ids: str = NUMBERED, *, listed: bool = False, space_before: bool = False) -> re.Pattern[str]:
    """The one grammar of a citation marker, for markers whose ids match ``ids``: ``[id]``, or with ``listed`` a
    run of ids in one pair of brackets, commas and spaces between and around them (``[1, 2]``, ``[ e41ac2d ]``:
    what models and engines write). Group 1 is the id, or the run. With ``space_before`` a match also takes the
    whitespace before the marker, so removing it leaves no gap; such a match starts only where a whitespace run
    starts, so a long run not followed by a marker is scanned once, not once per position."""
    one = f"(?:{ids})"
    inner = rf"\s*+({one}(?:\s*,\s*{one})*)\s*" if listed else f"({one})"
    return re.compile((r"(?<!\s)\s*+" if space_before else "") + rf"\[{inner}\]")


MARKER = citation_markers()
"""``[n]``, as generate's answers write it: ``split`` gives the text and the numbers in turn."""
ANSWER_KIND_WEIGHT = 1.5
"""A sentence showing the kind of answer its question asks for (a number for "how many") counts this much more."""
_MARKER_LIKE = citation_markers(space_before=True)
"""A marker-like ``[n]`` with the whitespace before it."""
_BRACKET = re.compile(r"([\[\]])")
_ASCII_SPACE_RUNS = ("  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
"""In ASCII text, whitespace other than single spaces: without any of these, collapsing whitespace changes nothing."""
Supported = Callable[[str, Sequence[Document]], bool]
"""Whether a sentence (quote form) is supported by the passages its marker run cites."""


@dataclass(frozen=True)
class QuotableSentence:
    """A sentence of ``texts[source]`` (its ``index``-th), in quote form, with its score for the query: its overlap
    with it, or (``overlap`` set) that overlap blended with a model's similarity."""

    source: int
    index: int
    text: str
    score: float
    overlap: float | None = None
    """The overlap alone, when ``score`` is blended."""

    @property
    def shares_a_word(self) -> bool:
        """Whether the sentence shares a content word with the query: only such a sentence may be quoted unasked."""
        return (self.score if self.overlap is None else self.overlap) > 0.0


def quote_form(text: str) -> str:
    """``text`` with marker-like ``[n]`` removed and whitespace collapsed: the form in which quotes are compared."""
    return collapse_whitespace(strip_markers(text))


def strip_markers(text: str) -> str:
    """``text`` without marker-like ``[n]`` (and the whitespace before each).

    Removal repeats until nothing marker-like is left, so ``x[3[4]]`` cannot leave a fresh ``[3]`` behind; nested
    markers are removed in one pass over the text (``_without_nested_markers``), so the time stays linear.
    """
    if "[" in text:
        text = _MARKER_LIKE.sub("", text)
        if _MARKER_LIKE.search(text):
            text = _without_nested_markers(text)
    return text


def collapse_whitespace(text: str) -> str:
    """``text`` stripped, each run of whitespace inside it made one space."""
    if len(text) > 4096 and text.isascii() and not any(space in text for space in _ASCII_SPACE_RUNS):
        return text.strip()  # already one space between words: skip splitting a long passage into words
    return " ".join(text.split())


_SHRINKING_SPACE = re.compile(r"\s{2,}|[^\S ]")
"""A whitespace run that collapsing changes: two or more characters, or one that is not a plain space."""


@dataclass(frozen=True)
class QuoteSource:
    """A passage in quote form with the positions where its sentences (as ``core.text.sentences`` cuts them: blocks,
    headings, list items, sentence marks) start and end, so a quote of a heading or of a sentence after one is a
    whole clause even where no punctuation says so."""

    text: str
    starts: frozenset[int]
    ends: frozenset[int]

    @classmethod
    def of(cls, text: str) -> QuoteSource:
        stripped = strip_markers(text)
        spans = sentence_spans(stripped)
        quoted = collapse_whitespace(stripped)
        if not spans:
            return cls(quoted, frozenset(), frozenset())
        positions = sorted({start for start, _ in spans} | {end - 1 for _, end in spans})
        moved = _collapsed_positions(stripped, positions)
        return cls(
            quoted,
            frozenset(moved[start] for start, _ in spans),
            frozenset(moved[end - 1] + 1 for _, end in spans),
        )

    def holds_clauses(self, quoted: str) -> bool:
        """Whether ``quoted`` (in quote form) occurs here as whole clauses: starting where a clause or sentence
        starts and ending where one ends."""
        if not quoted:
            return False
        source = self.text
        start = source.find(quoted)
        while start >= 0:
            end = start + len(quoted)
            if (start in self.starts or starts_clause(source, start)) and (
                end in self.ends or ends_clause(source, end, quoted[-1])
            ):
                return True
            start = source.find(quoted, start + 1)
        return False


def _collapsed_positions(text: str, positions: Sequence[int]) -> dict[int, int]:
    """Where each of the ascending ``positions`` (each on a non-space character of ``text``) lands in
    ``collapse_whitespace(text)``: one walk over the whitespace runs that collapsing shortens, none for a text
    already written with single spaces."""
    lead = len(text) - len(text.lstrip())
    runs = _SHRINKING_SPACE.finditer(text, lead)
    shift = lead
    run = next(runs, None)
    moved: dict[int, int] = {}
    for position in positions:
        while run is not None and run.end() <= position:
            shift += run.end() - run.start() - 1
            run = next(runs, None)
        moved[position] = position - shift
    return moved


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
    """Whether ``piece`` is non-empty in quote form and occurs anywhere in ``text`` (in quote form): a verbatim part,
    as an engine's chunk of a document is; an answer's claim must be ``is_clause_quote`` instead."""
    quoted = quote_form(piece)
    return bool(quoted) and quoted in quote_form(text)


def is_clause_quote(piece: str, text: str) -> bool:
    """Whether ``piece`` (in quote form) occurs in ``text`` (in quote form) as whole clauses: starting where a clause
    of ``text`` starts and ending where one ends, so a quote cannot drop a leading "Never" or a trailing qualifier."""
    quoted = quote_form(piece)
    return QuoteSource.of(text).holds_clauses(quoted)


LATER_TEXT = 0.3
"""How much less a sentence of each later passage counts: a retriever's first passage holds the answer more often
(XQuAD, bm25s top 3: answers holding a gold span en 0.761 -> 0.775, de 0.689 -> 0.707, es 0.728 -> 0.750)."""


def quotable_sentences(query: str, texts: Sequence[str]) -> list[QuotableSentence]:
    """Every sentence of ``texts`` in quote form (split with its markers already removed, as ``QuoteSource`` splits
    it), scored by BM25 overlap with the query (idf over these sentences), best first; the texts come best first, so
    a sentence of the n-th (from 0) counts ``1 / (1 + LATER_TEXT * n)`` of its match, and ties go to the earlier
    text, then the earlier sentence. A sentence under a heading is scored together with the heading's words, and a
    heading is not quotable itself (``core.sentences.sentences``). A sentence sharing no content word with the
    query (nor its heading) scores exactly 0."""
    found: list[tuple[int, int, str, str]] = []
    for source, text in enumerate(texts):
        stripped = strip_markers(text)
        for index, sentence in enumerate(sentences(stripped)):
            if sentence.is_heading or not (quoted := collapse_whitespace(stripped[sentence.start : sentence.end])):
                continue
            context = "" if sentence.heading is None else stripped[sentence.heading[0] : sentence.heading[1]] + "\n"
            found.append((source, index, quoted, context + quoted))
    scores = lexical_scores(query, [scored for _, _, _, scored in found])
    kind = answer_kind(query)
    ranked = [
        QuotableSentence(
            source,
            index,
            quoted,
            (score * ANSWER_KIND_WEIGHT if holds_answer_kind(quoted, kind) else score) / (1.0 + LATER_TEXT * source),
        )
        for (source, index, quoted, _), score in zip(found, scores)
    ]
    return sorted(ranked, key=lambda sentence: (-sentence.score, sentence.source, sentence.index))


def check_quoted_answer(
    answer: str, sources: Sequence[Document], who: str, check_time: Callable[[], None] | None = None
) -> None:
    """An answer without markers: the whole answer, or else every sentence of it, must be quoted from one of
    ``sources``; an empty answer always is.

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
    quoted_sources = [QuoteSource.of(source.text) for source in sources]
    if any(source.holds_clauses(quote_form(answer)) for source in quoted_sources):
        return
    for sentence in split_sentences(answer):
        if check_time is not None:
            check_time()
        quoted = quote_form(sentence)
        if not any(source.holds_clauses(quoted) for source in quoted_sources):
            raise GroundingError(
                f"{who} answered with {short_repr(sentence)}, which is in none of the {len(sources)} returned "
                "documents: expected an answer quoted from the returned documents"
            )


def check_cited_answer(
    answer: object, citations: object, passages: Sequence[Document], who: str, supported: Supported | None = None
) -> None:
    """An answer with ``[n]`` markers into ``citations`` (doc_ids of ``passages``, 1-based).

    Raises ``GroundingError`` unless every citation is a supplied passage cited once, a non-empty answer cites at
    least one, every marker indexes into the citations, every citation is marked, no text follows the last marker,
    and every sentence before a run of markers is ``supported`` by the passages of that run: by default, quoted
    as whole clauses from each of them (``is_clause_quote``).
    """
    if not isinstance(answer, str) or not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
        raise GroundingError(
            f"{who} returned answer {short_repr(answer)} with citations {short_repr(citations)}: "
            "expected a str answer and a list of doc_ids"
        )
    by_id = {passage.doc_id: passage for passage in passages}
    unknown = [doc_id for doc_id in citations if doc_id not in by_id]
    if unknown:
        raise UnservedItemError(who, "citation", len(unknown))
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
    marked = _check_marked_claims(pieces, citations, by_id, who, supported or _quoted_from_each(), supported is None)
    unmarked = sorted(set(range(1, len(citations) + 1)) - marked)
    if unmarked:
        raise GroundingError(f"{who} cited {short_repr([citations[n - 1] for n in unmarked])} without a marker")


def _quoted_from_each() -> Supported:
    """The default support test: quoted as whole clauses from each cited passage; each passage is put in quote form
    once per answer, so a long passage cited by many sentences is not walked again for each."""
    quoted_sources: dict[str, QuoteSource] = {}

    def supported(sentence: str, sources: Sequence[Document]) -> bool:
        quoted = quote_form(sentence)
        for source in sources:
            if source.doc_id not in quoted_sources:
                quoted_sources[source.doc_id] = QuoteSource.of(source.text)
        return bool(quoted) and all(quoted_sources[s.doc_id].holds_clauses(quoted) for s in sources)

    return supported


def _check_marked_claims(
    pieces: list[str],
    citations: list[str],
    by_id: Mapping[str, Document],
    who: str,
    supported: Supported,
    whole_first: bool = False,
) -> set[int]:
    """Check each sentence before a run of markers against the passages the run cites; markers in a row
    (``[1][2]``) all cite the text before the first of them. With ``whole_first`` (the quote rule) a claim quoted
    whole needs no further check, so a quoted heading or list item is not cut again by the sentence rules.
    Returns the markers used."""
    runs: list[tuple[str, list[int]]] = []
    for piece, number in zip(pieces[0::2], pieces[1::2]):
        marker = int(number) if len(number) <= len(str(len(citations))) else 0  # no int() of a 5,000-digit marker
        if not 1 <= marker <= len(citations):
            shown = number if len(number) <= 12 else number[:12] + "..."
            raise GroundingError(f"{who} used marker [{shown}] with {len(citations)} citation(s)")
        if quote_form(piece) or not runs:
            runs.append((piece, [marker]))
        else:
            runs[-1][1].append(marker)
    for claim, markers in runs:
        sources = [by_id[citations[marker - 1]] for marker in markers]
        if whole_first and supported(claim, sources):
            continue
        for sentence in split_sentences(claim) or [claim]:
            if not supported(sentence, sources):
                raise GroundingError(
                    f"{who} attributed {short_repr(quote_form(sentence))} to "
                    f"{', '.join(repr(source.doc_id) for source in sources)}, whose text does not contain it "
                    "as whole clauses (nor support it)"
                )
    return {marker for _, markers in runs for marker in markers}


NEGATIONS = frozenset(
    {
        "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "nowhere", "cannot", "without",
        "nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "ohne",
    }
)  # fmt: skip
"""Words that turn a claim into its opposite; ``n't`` endings count too. The function words drop them from content
words, so polarity is compared on its own."""
_NOT_ENDINGS = ("n't", "n\u2019t")
"""English's negation written onto a word: read as the word ``not``, since the analysis's words end at apostrophes."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (``NEGATIONS``, or a word ending in ``n't``)."""
    folded = text.casefold()
    for ending in _NOT_ENDINGS:
        folded = folded.replace(ending, "n not")
    return not NEGATIONS.isdisjoint(words(folded))


def claim_terms(text: str, language: str = AUTO) -> set[str]:
    """What a sentence states: its content words in ``language`` (``core.text.analysis.content_analyzer``: unstemmed,
    the language's function words dropped, a script written without spaces as character pairs) and its numbers as
    written. Under ``auto`` the language is the sentence's own (``query_language``)."""
    language = query_language(text, language)
    return set(content_analyzer(language).terms(text)) | set(_NUMBER.findall(text))


def support_score(claim: str, sources: Sequence[str], similarity: Callable[[str, str], float] | None = None) -> float:
    """How well ``sources`` support ``claim``, in [0, 1], deterministically.

    The share of the claim's terms (``claim_terms``, in the language of the claim read with its sources, the same for
    both) found in the sources' sentences *of the claim's polarity*
    (``negated``): a term taken from "Never mix bleach and ammonia" supports only a negated claim, so "Mix bleach
    and ammonia" scores 0. A number of the claim missing from those sentences makes the score 0. With ``similarity``
    (a dense model's cosine of two texts) the score is the mean of that share and the similarity to the sentence of
    that polarity sharing most terms (the earlier on ties; floored at 0). A claim without terms scores 0.0: it
    states nothing a source could support.
    """
    return SupportScorer(similarity).score(claim, sources)


@dataclass(frozen=True, slots=True)
class _SourceSentence:
    quoted: str
    negated: bool
    terms: set[str]


class SupportScorer:
    """``support_score`` for the sentences of one answer: each passage is split, put in quote form and read for its
    terms once, and each (claim, cited passages) pair is scored once, however often the answer's checks ask."""

    def __init__(self, similarity: Callable[[str, str], float] | None = None) -> None:
        self.similarity = similarity
        self._sentences: dict[tuple[str, str], list[_SourceSentence]] = {}
        self._scores: dict[tuple[str, tuple[str, ...]], float] = {}

    def score(self, claim: str, sources: Sequence[str]) -> float:
        key = (claim, tuple(sources))
        if key not in self._scores:
            self._scores[key] = self._score(claim, key[1])
        return self._scores[key]

    def _source_sentences(self, source: str, language: str) -> list[_SourceSentence]:
        key = (source, language)
        if key not in self._sentences:
            self._sentences[key] = [
                _SourceSentence(quoted, negated(quoted), claim_terms(quoted, language))
                for sentence in split_sentences(source)
                if (quoted := quote_form(sentence))
            ]
        return self._sentences[key]

    def _score(self, claim: str, sources: tuple[str, ...]) -> float:
        language = query_language(claim, AUTO, context=sources)
        terms = claim_terms(claim, language)
        polarity = negated(claim)
        sentences = [
            sentence
            for source in sources
            for sentence in self._source_sentences(source, language)
            if sentence.negated == polarity
        ]
        if not terms or not sentences:
            return 0.0
        known = set().union(*(sentence.terms for sentence in sentences))
        if any(number not in known for number in _NUMBER.findall(claim)):
            return 0.0
        share = len(terms & known) / len(terms)
        if self.similarity is None:
            return share
        best = max(range(len(sentences)), key=lambda position: (len(terms & sentences[position].terms), -position))
        return (share + max(0.0, min(1.0, self.similarity(claim, sentences[best].quoted)))) / 2.0


CITATION_CHECKS = ("strict", "drop", "off")
_CITED_RUN = citation_markers(r"\d{1,6}", listed=True)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*\u2022]|\d{1,3}[.)])[ \t]+", re.MULTILINE)
_LINE_BREAKS = re.compile(r"\s*\n\s*")


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of a model's reply (quote form, markers removed) and the passage numbers it cites, in order."""

    text: str
    markers: tuple[int, ...]


@dataclass(frozen=True)
class VerifiedAnswer:
    answer: str
    citations: list[str]
    unsupported: list[str]


def cited_sentences(reply: str) -> list[CitedSentence]:
    """The reply's sentences, each with the markers (``[n]``, ``[n][m]`` or ``[n, m]``) written inside it or right
    after it; a marker before any text belongs to the first sentence. Every line is a sentence of its own at least,
    and a list item's bullet or number (``- ``, ``* ``, ``1. ``) is not part of it."""
    reply = _LINE_BREAKS.sub("\n\n", _LIST_ITEM.sub("", reply)).strip()
    clean: list[str] = []
    length = 0
    placed: list[tuple[int, list[int]]] = []
    last = 0
    for match in _CITED_RUN.finditer(reply):
        piece = reply[last : match.start()].rstrip()
        clean.append(piece)
        length += len(piece)
        placed.append((length, [int(number) for number in match.group(1).split(",")]))  # int() ignores the spaces
        last = match.end()
    clean.append(reply[last:])
    text = "".join(clean)
    spans = sentence_spans(text)
    markers: list[dict[int, None]] = [{} for _ in spans]
    owner = 0
    for position, numbers in placed:  # positions and spans both ascend: one walk, linear in the reply
        while owner + 1 < len(spans) and spans[owner + 1][0] < position:
            owner += 1
        if spans:
            markers[owner].update(dict.fromkeys(numbers))
    return [
        CitedSentence(quoted, tuple(numbers))
        for (start, end), numbers in zip(spans, markers)
        if (quoted := quote_form(text[start:end]))
    ]


def verify_cited_reply(
    sentences: Sequence[CitedSentence],
    passages: Sequence[Document],
    *,
    citation_check: str,
    threshold: float,
    who: str,
    scorer: SupportScorer | None = None,
) -> VerifiedAnswer:
    """Keep the sentences that cite passages in range and are supported by them; renumber citations by first use.

    A sentence without terms (read in its language with the passages) states nothing and is left out. A sentence
    citing no passage, citing a number outside ``1..len(passages)``, or (unless ``citation_check`` is ``off``) scoring below ``threshold`` is unsupported:
    ``strict`` raises ``GroundingError`` naming it, ``drop`` and ``off`` remove it and list it in ``unsupported``.
    ``scorer`` scores the sentences (word overlap alone by default); pass the answer's own to reuse its work.
    """
    scorer = scorer or SupportScorer()
    texts = [passage.text for passage in passages]
    citations: list[str] = []
    parts: list[str] = []
    unsupported: list[str] = []
    for sentence in sentences:
        if not claim_terms(sentence.text, query_language(sentence.text, AUTO, context=texts)):
            continue
        problem = _unsupported_because(sentence, passages, citation_check, threshold, scorer)
        if problem is None:
            numbers = []
            for marker in sentence.markers:
                doc_id = passages[marker - 1].doc_id
                if doc_id not in citations:
                    citations.append(doc_id)
                numbers.append(citations.index(doc_id) + 1)
            parts.append(sentence.text + " " + "".join(f"[{number}]" for number in dict.fromkeys(numbers)))
        elif citation_check == "strict":
            raise GroundingError(
                f"{who} answered {short_repr(sentence.text)}, which {problem}: expected every sentence to cite the "
                "passages that support it (citation_check='strict'; 'drop' removes such sentences instead)"
            )
        else:
            unsupported.append(sentence.text)
    return VerifiedAnswer(" ".join(parts), citations, unsupported)


def _unsupported_because(
    sentence: CitedSentence,
    passages: Sequence[Document],
    citation_check: str,
    threshold: float,
    scorer: SupportScorer,
) -> str | None:
    if not sentence.markers:
        return "cites no passage"
    outside = [marker for marker in sentence.markers if not 1 <= marker <= len(passages)]
    if outside:
        return f"cites [{outside[0]}] while only {len(passages)} passage(s) were given"
    if citation_check == "off":
        return None
    score = scorer.score(sentence.text, [passages[marker - 1].text for marker in sentence.markers])
    if score < threshold:
        return f"has support score {score:.2f} from the passages it cites, below support_threshold {threshold}"
    return None
