"""What a question asks for, read from its question words in the languages we analyse, and whether a sentence
holds that kind of answer: "how many" wants a number, "when" a date. A sentence that repeats the question's words
without the number it asks for is then not preferred to the one that states it."""

from __future__ import annotations

import functools
import re

from rag_integration.core.text.analysis import has_unspaced

NUMBER = "number"
DATE = "date"

QUESTION_WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    NUMBER: {
        "en": ("how many", "how much", "what percentage", "what percent", "how long", "how far", "how old",
               "how large", "how big", "how tall", "how high", "how often", "what number"),
        "de": ("wie viele", "wie viel", "wieviele", "wieviel", "wie lange", "wie lang", "wie alt", "wie hoch", "wie groß",
               "wie weit", "wie oft", "welcher prozentsatz", "welche anzahl"),
        "es": ("cuántos", "cuántas", "cuánto", "cuánta", "qué porcentaje", "qué edad", "qué cantidad"),
        "fr": ("combien", "quel pourcentage", "quel âge"),
        "it": ("quanti", "quante", "quanto", "quanta", "quale percentuale"),
        "pt": ("quantos", "quantas", "quanto", "quanta", "qual percentagem", "qual porcentagem"),
        "nl": ("hoeveel", "hoe lang", "hoe oud", "hoe groot"),
        "ru": ("сколько", "какой процент", "какова численность"),
        "ar": ("كم",),
        "zh": ("多少", "多大", "多长", "多久", "多高", "多远", "几个", "几年", "几次"),
        "ja": ("いくつ", "何人", "何個", "何年間", "どのくらい"),
    },
    DATE: {
        "en": ("when", "what year", "which year", "what century", "what date", "which century"),
        "de": ("wann", "welchem jahr", "welches jahr", "welchem jahrhundert", "welchem datum"),
        "es": ("cuándo", "qué año", "qué siglo", "qué fecha"),
        "fr": ("quand", "quelle année", "quel siècle", "quelle date"),
        "it": ("quando", "che anno", "quale anno", "quale secolo"),
        "pt": ("quando", "que ano", "qual ano", "que século"),
        "nl": ("wanneer", "welk jaar", "welke eeuw"),
        "ru": ("когда", "каком году", "какой год", "каком веке"),
        "ar": ("متى", "أي عام", "أي سنة", "أي قرن"),
        "zh": ("何时", "什么时候", "哪一年", "哪年", "何年", "哪个世纪"),
        "ja": ("いつ", "何年", "何世紀"),
    },
}  # fmt: skip
"""Question words by the kind of answer they ask for and by language (case-folded)."""

_HOLDS = {NUMBER: re.compile(r"\d"), DATE: re.compile(r"\d")}
"""What a sentence holding each kind of answer shows: digits (numbers, years, days) in every script's numerals."""


@functools.cache
def _asks() -> list[tuple[str, re.Pattern[str]]]:
    """One pattern per kind: a question word as a whole word (or, in a script written without spaces, anywhere)."""
    patterns = []
    for kind, by_language in QUESTION_WORDS.items():
        phrases = sorted({phrase for words in by_language.values() for phrase in words}, key=len, reverse=True)
        spaced = [re.escape(phrase) for phrase in phrases if not has_unspaced(phrase)]
        unspaced = [re.escape(phrase) for phrase in phrases if has_unspaced(phrase)]
        alternatives = [rf"(?<!\w)(?:{'|'.join(spaced)})(?!\w)"] if spaced else []
        alternatives += [f"(?:{'|'.join(unspaced)})"] if unspaced else []
        patterns.append((kind, re.compile("|".join(alternatives))))
    return patterns


def answer_kind(question: str) -> str | None:
    """The kind of answer the question asks for (``NUMBER``, ``DATE``), or None when its words do not say."""
    folded = question.casefold()
    for kind, pattern in _asks():
        if pattern.search(folded):
            return kind
    return None


def holds_answer_kind(sentence: str, kind: str | None) -> bool:
    """Whether ``sentence`` shows an answer of ``kind`` (False for no kind)."""
    return kind is not None and _HOLDS[kind].search(sentence) is not None


def asking_words(question: str) -> set[str]:
    """The words (case-folded) of the question phrases in ``question`` ("how often", "wie lange"): they say what
    kind of answer is wanted, not what it is about."""
    folded = question.casefold()
    return {word for _, pattern in _asks() for found in pattern.finditer(folded) for word in found.group().split()}
