"""How text becomes index terms in any language, written once for every lexical component.

Words are runs of letters and digits with their combining marks kept inside them; scripts written without spaces
(Han, kana, Thai, Lao, Khmer, Myanmar) become overlapping character bigrams; each language then gets its Snowball
stemmer (PyStemmer) and a well-known stopword list where one exists. Under ``language="auto"`` each text is
analysed in the language ``core.text.languages`` finds for it.
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.options import OptionSpec

ANALYSIS_VERSION = "6"
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
FULLER_FUNCTION_WORDS = {"en": ("STOPWORDS_EN_PLUS", ("could", "would"))}
"""Languages whose index keeps a shorter stopword list than the one content words are read with: English indexes
drop Lucene's 33 words (so ``en`` ranks as raw bm25s), while a question's or a claim's content is read without
NLTK's full list (bm25s's ``STOPWORDS_EN_PLUS``) and the two modals that list lacks."""

COMPOUND_LINKS = {
    "da": ("", "s", "e"),
    "de": ("", "s", "es", "n", "en", "e"),
    "fi": ("",),
    "nl": ("", "s", "en", "e"),
    "no": ("", "s", "e"),
    "sv": ("", "s"),
}
"""Languages that write compounds as one word, with the linking letters that may join their parts."""
COMPOUND_PART = 4
"""The shortest part a compound is split into."""
PROCLITICS = {"ar": ("وال", "بال", "كال", "فال", "لل", "ال", "و", "ف", "ب", "ل", "ك", "س")}
"""Languages that write particles onto the next word (Arabic's "and", "with", "the"...), longest first."""
PROCLITIC_REST = 3

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

COMMON_PUNCTUATION = (
    "!-/:-@\\[-`{-~\u00a0-\u00bf\u00d7\u00f7\u2000-\u206f\u20a0-\u20cf\u2100-\u214f\u2190-\u23ff"
    "\u2500-\u27bf\u3000-\u303f\ufeff\uff00-\uff0f\uff1a-\uff20"
)
"""ASCII and general punctuation, symbols, arrows, box drawing, CJK punctuation and the byte-order mark: none is
a combining mark, so a text holding only these besides words and spaces is split the fast way."""
MARKS_END = 0x1F000
VARIATION_SELECTORS = (0xE0100, 0xE01F0)
"""Where Unicode puts combining marks: below U+1F000, and the variation selectors supplement."""


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


@dataclass(frozen=True)
class _Patterns:
    plain_word: re.Pattern[str]
    """Letters, digits and ``_``: a word of a text without combining marks (one with them: ``_word_with``)."""
    unspaced: re.Pattern[str]
    unit: re.Pattern[str]
    """One character of an unspaced script with its marks (a Thai consonant with its vowel and tone signs), or a
    run of other characters."""
    unusual: re.Pattern[str]
    """A character that is no word character, space or common punctuation: a combining mark is one."""
    mark_starts: tuple[int, ...]
    mark_ends: tuple[int, ...]


@functools.cache
def _patterns() -> _Patterns:
    ranges = _mark_ranges()
    marks = _range_class(ranges)
    unspaced = _range_class(UNSPACED_RANGES)
    return _Patterns(
        plain_word=re.compile(r"\w+"),
        unspaced=re.compile(f"[{unspaced}]"),
        unit=re.compile(f"[{unspaced}][{marks}]*|[^{unspaced}]+"),
        unusual=re.compile(f"[^\\w\\s{COMMON_PUNCTUATION}]"),
        mark_starts=tuple(low for low, _ in ranges),
        mark_ends=tuple(high for _, high in ranges),
    )


class _CharacterKinds:
    """Which characters seen so far are combining marks or of an unspaced script. A text's distinct characters
    are compared with them as sets; only a character never seen before is classified, once per process."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.marks: set[str] = set()
        self.unspaced: set[str] = set()

    def of(self, lowered: str) -> tuple[frozenset[str], bool]:
        """(the combining marks the text holds, whether it holds an unspaced script)."""
        if lowered.isascii():
            return frozenset(), False
        patterns = _patterns()
        if patterns.unusual.search(lowered) is None:  # neither a mark nor an unknown symbol: words are plain
            return frozenset(), patterns.unspaced.search(lowered) is not None
        characters = set(lowered)
        new = characters - self.seen
        if new:
            self._learn(new)
        return frozenset(self.marks.intersection(characters)), not self.unspaced.isdisjoint(characters)

    def _learn(self, characters: set[str]) -> None:
        patterns = _patterns()
        for character in characters:
            code = ord(character)
            at = bisect.bisect_right(patterns.mark_starts, code) - 1
            if at >= 0 and code <= patterns.mark_ends[at]:
                self.marks.add(character)
            if any(low <= code <= high for low, high in UNSPACED_RANGES):
                self.unspaced.add(character)
        self.seen |= characters


_KINDS = _CharacterKinds()


_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
"""Soft hyphens and zero-width characters: inside a word they hide it ("pass\u200bword", "Main\u00adte\u00adnance")."""


def split_words(lowered: str) -> tuple[list[str], bool]:
    """The words of a lower-cased text in any script, and whether it holds a script written without spaces. A text
    that is not ASCII is read in its compatibility form first (NFKC, invisible characters dropped): a ligature of a
    typeset PDF ("\ufb01" -> "fi"), full-width letters and a decomposed "u\u0308" are the letters they show."""
    if not lowered.isascii():
        lowered = lowered.translate(_INVISIBLE)
        if not unicodedata.is_normalized("NFKC", lowered):
            lowered = unicodedata.normalize("NFKC", lowered).lower()
    marks, unspaced = _KINDS.of(lowered)
    return (_word_with(marks) if marks else _patterns().plain_word).findall(lowered), unspaced


@functools.lru_cache(maxsize=256)
def _word_with(marks: frozenset[str]) -> re.Pattern[str]:
    """The word pattern for a text holding these marks: a class of the few marks present is far faster to test
    after every word than one of all of Unicode's."""
    return re.compile(rf"\w+(?:[{re.escape(''.join(sorted(marks)))}]+\w*)*")


def has_unspaced(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces."""
    return _patterns().unspaced.search(text) is not None


def count_words(text: str) -> int:
    """How many words ``text`` has, in any script: a character of a script written without spaces counts as one
    (a Chinese answer of 40 characters is about as long to read as an English one of 40 words)."""
    found, unspaced = split_words(text.lower())
    if not unspaced:
        return len(found)
    pattern = _patterns().unspaced
    return sum(len(pattern.findall(word)) + len(pattern.sub(" ", word).split()) for word in found)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` in any script, combining marks kept inside the word they belong to."""
    return split_words(text.lower())[0]


class Analyzer:
    """One language's analysis: words of two or more characters, stopwords dropped, stems, and bigrams for
    unspaced scripts. A word's term is computed once and remembered."""

    def __init__(self, language: str, *, stem: bool = True, stopwords: frozenset[str] | None = None) -> None:
        self.language = language
        self.stem = stem
        self.stopwords = stopwords_of(language) if stopwords is None else stopwords
        algorithm = SNOWBALL.get(language) if stem else None
        self._stemmer = _new_stemmer(algorithm) if algorithm else None
        self._terms: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``, in order (a term repeats as often as its word does)."""
        return self.terms_of(*split_words(text.lower()))

    def terms_of(self, found: Sequence[str], unspaced: bool) -> list[str]:
        """``terms`` of a text already split (``split_words``)."""
        if unspaced:
            return self._mixed_terms(found)
        terms = []
        for item in found:
            term = self._term(item)
            if term is not None:
                terms.append(term)
        return terms

    def query_terms(self, text: str, known: Collection[str]) -> list[str]:
        """``terms`` of a query, where a word whose term the corpus does not hold is looked up again the way its
        language joins words: a compound as two words the corpus holds (``Bundesregierung`` -> ``bund`` +
        ``regier``), a word with particles written onto it without them (Arabic ``وبالكتاب`` -> ``كتاب``). Corpora
        and questions join the same words differently; doing it for the query only keeps the index's terms its own."""
        if not self._rejoins():
            return self.terms(text)
        found, unspaced = split_words(text.lower())
        if unspaced:
            return self._mixed_terms(found)
        terms: list[str] = []
        for item in found:
            term = self._term(item)
            if term is None:
                continue
            again = None
            if term not in known:
                again = next((parts for parts in self._readings(item) if all(p in known for p in parts)), None)
            terms.extend(again or (term,))
        return terms

    def query_term_candidates(self, text: str) -> set[str]:
        """Every term ``query_terms`` could give for ``text`` whatever the corpus holds, so a scorer reading the
        corpus once can count just these and choose among them when it has seen the corpus."""
        found, unspaced = split_words(text.lower())
        terms = set(self.terms_of(found, unspaced))
        if unspaced or not self._rejoins():
            return terms
        for item in found:
            if self._term(item) is not None:
                terms.update(part for parts in self._readings(item) for part in parts)
        return terms

    def _rejoins(self) -> bool:
        """Whether this language's words are looked up again when the corpus lacks them (``_readings``)."""
        return self._stemmer is not None and (self.language in COMPOUND_LINKS or self.language in PROCLITICS)

    def _readings(self, word: str) -> Iterator[tuple[str, ...]]:
        """Other readings of ``word``, in the order they are tried: its splits into two parts of at least
        ``COMPOUND_PART`` letters (shortest head first), or else the word less each leading particle."""
        links = COMPOUND_LINKS.get(self.language)
        if links is not None:
            for cut in range(COMPOUND_PART, len(word) - COMPOUND_PART + 1):
                for link in links:
                    tail = word[cut + len(link) :]
                    if len(tail) < COMPOUND_PART or not word.startswith(link, cut):
                        continue
                    head_term, tail_term = self._learn(word[:cut]), self._learn(tail)
                    if head_term is not None and tail_term is not None:
                        yield head_term, tail_term
            return
        for proclitic in PROCLITICS.get(self.language, ()):
            if word.startswith(proclitic) and len(word) - len(proclitic) >= PROCLITIC_REST:
                term = self._learn(word[len(proclitic) :])
                if term is not None:
                    yield (term,)

    def word_ids(
        self, found: Sequence[str], unspaced: bool, vocabulary: dict[str, int], known: dict[str, int]
    ) -> list[int]:
        """The term ids of a text whose words are ``found`` (``split_words``): ``known`` remembers each word's id
        (-1 for none) for this analyzer, and new terms join ``vocabulary``. The same terms as ``terms``, without
        building them word by word."""
        if unspaced:
            return [vocabulary.setdefault(term, len(vocabulary)) for term in self._mixed_terms(found)]
        ids = [known.get(item, -2) for item in found]
        if -2 in ids:
            for item in found:
                if item not in known:
                    term = self._term(item)
                    known[item] = -1 if term is None else vocabulary.setdefault(term, len(vocabulary))
            ids = [known[item] for item in found]
        return [term_id for term_id in ids if term_id >= 0]

    def _term(self, word: str) -> str | None:
        """The word's term (None for a stopword or a word too short), computed once."""
        term = self._terms.get(word, _UNSEEN)
        return self._learn(word) if term is _UNSEEN else term

    def _learn(self, word: str) -> str | None:
        if len(word) < 2 or word in self.stopwords:
            term = None
        elif self._stemmer is None:
            term = word
        else:
            with self._lock:
                term = self._stemmer.stemWord(word) or None  # empty: the word held no letter (Arabic tatweel "ـــ")
        self._terms[word] = term
        return term

    def _mixed_terms(self, found: Sequence[str]) -> list[str]:
        """Words holding unspaced scripts: their unspaced runs as bigrams of units (a lone unit stays a unigram
        unless it is a stopword), the rest as ordinary words."""
        patterns = _patterns()
        unspaced_char, pieces = patterns.unspaced, patterns.unit
        terms: list[str] = []
        for item in found:
            if unspaced_char.search(item) is None:
                term = self._term(item)
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
                    term = self._term(piece)
                    if term is not None:
                        terms.append(term)
        return terms


_UNSEEN = "\0unseen"
"""No word holds a NUL: what ``_terms`` gives for a word not seen yet."""


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


def content_analyzer(language: str) -> Analyzer:
    """The process-wide analyzer of what a text is about in ``language``: its words unstemmed (bigrams for unspaced
    scripts), the language's ``function_words`` dropped. Grounding's claims and the hash embedder read text with it,
    so a claim and its source, or a query and its document, keep the same words."""
    return _content_analyzer_of(language)


@functools.cache
def _content_analyzer_of(language: str) -> Analyzer:
    return Analyzer(language, stem=False, stopwords=function_words(language))


@functools.cache
def function_words(language: str) -> frozenset[str]:
    """Words that say how a text speaks, not what about (``the``, ``did``, ``would``): the language's stopwords, or
    the fuller list of ``FULLER_FUNCTION_WORDS`` where its index keeps a shorter one."""
    fuller = FULLER_FUNCTION_WORDS.get(language)
    if fuller is None:
        return stopwords_of(language)
    import bm25s.stopwords

    name, more = fuller
    return frozenset(getattr(bm25s.stopwords, name)).union(more, stopwords_of(language))


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
