# ruff: noqa: RUF001 (the texts are in the scripts under test)
"""The one analysis every lexical component uses: words in every script (combining marks inside the word), bigrams
for scripts without spaces, each language's stemmer and stopwords, and auto-detection per text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.text.analysis import (
    AUTO,
    analyzer_for,
    check_language,
    count_words,
    supported_languages,
    words,
)
from rag_integration.core.text.languages import CorpusLanguages, document_languages, query_language
from rag_integration.core.text.lexical import lexical_scores, missing_query_words


def test_combining_marks_stay_inside_their_word() -> None:
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # Devanagari vowel signs and virama are marks
    assert words("cafe\u0301 naïve") == ["café", "naïve"]  # a decomposed accent does not cut the word: composed
    assert words("\u0915\u093c\u093e\u0930") == ["\u0915\u093c\u093e\u0930"]  # nukta, kept whole and as written
    assert words("ภาษาไทย") == ["ภาษาไทย"]


def test_english_analysis_is_bm25s_analysis() -> None:
    """Lower-cased words of two or more characters, Lucene's English stopwords dropped, Snowball stems."""
    assert analyzer_for("en").terms("The cats are running to a Café, x 42") == ["cat", "run", "café", "42"]
    assert analyzer_for("en", stem=False).terms("The cats are running") == ["cats", "running"]


@pytest.mark.parametrize(
    ("language", "text", "terms"),
    [
        ("de", "Die Häuser der Bundesregierung", ["haus", "bundesregier"]),
        ("es", "Los gatos están corriendo", ["gat", "corr"]),
        ("ru", "Кошки бегают по дому", ["кошк", "бега", "дом"]),
        ("ar", "الكتاب في المكتبة", ["كتاب", "مكتب"]),
        ("zh", "黑豹队的防守", ["黑豹", "豹队", "队的", "的防", "防守"]),
        ("ja", "東京タワー", ["東京", "京タ", "タワ", "ワー"]),
        ("hi", "हिन्दी भाषा में किताबें", ["हिन्द", "भाष", "किताब"]),
    ],
)
def test_each_language_is_analysed_with_its_own_rules(language: str, text: str, terms: list[str]) -> None:
    assert analyzer_for(language).terms(text) == terms


def test_words_are_counted_in_every_script() -> None:
    assert count_words("Change the engine oil, then check the tyres.") == 8
    assert count_words("Häuser und Gärten") == 3 and count_words("हिन्दी भाषा") == 2
    assert count_words("黑豹队的防守") == 6  # a character of a script without spaces counts as a word
    assert count_words("NFL的308分") == 4 and count_words("") == 0  # NFL, 的, 308, 分


def test_a_word_whose_stem_is_empty_is_no_term() -> None:
    """Arabic's stemmer strips tatweel, so a run of it ("ـــ", a typographic filler) stems to nothing: no term,
    never the empty term that stands for an empty document."""
    for language in supported_languages():
        assert "" not in analyzer_for(language).terms("ـــ الكتاب ــــ word слово")
    assert analyzer_for("ar").terms("ـــ الكتاب ــــ") == ["كتاب"]


def test_unspaced_runs_are_bigrams_beside_spaced_words() -> None:
    terms = analyzer_for("zh").terms("NFL的308分，在联赛中")
    assert terms == ["nfl", "308", "分", "在联", "联赛", "赛中"]  # a lone "的" is a stopword


def test_thai_units_keep_their_vowel_and_tone_marks() -> None:
    terms = analyzer_for("th").terms("ภาษาไทย")
    assert terms and all(not term[0].isspace() for term in terms)
    assert "".join(term[0] for term in terms) + terms[-1][1:] == "ภาษาไทย"


def test_an_unknown_language_is_a_typed_error_listing_the_supported_ones() -> None:
    with pytest.raises(InvalidOptionError, match="language") as raised:
        check_language("xx")
    assert "'auto' or one of: " in str(raised.value) and "de" in str(raised.value)
    assert check_language(AUTO) == AUTO and {"en", "de", "zh", "ar", "ru", "es", "th", "hi"} <= set(
        supported_languages()
    )


def test_auto_places_each_document_and_routes_each_query_to_a_corpus_language() -> None:
    texts = [
        "The committee approved the new budget for the public library after a long debate.",
        "Der Ausschuss hat den neuen Haushalt für die öffentliche Bibliothek nach langer Debatte genehmigt.",
        "El comité aprobó el nuevo presupuesto de la biblioteca pública tras un largo debate.",
        "委员会经过长时间的辩论批准了公共图书馆的新预算。",
    ]
    languages = document_languages(texts, AUTO)
    assert languages == ["en", "de", "es", "zh"]
    corpus = CorpusLanguages.of(languages)
    assert query_language("Wer hat den Haushalt genehmigt?", AUTO, corpus) == "de"
    assert query_language("谁批准了预算？", AUTO, corpus) == "zh"
    assert query_language("anything at all", "fr", corpus) == "fr"
    assert query_language("¿Quién aprobó el presupuesto?", AUTO, CorpusLanguages.of(["en", "en"])) == "en"


def test_a_document_the_detector_cannot_place_gets_the_corpus_main_language() -> None:
    texts = ["The library opened a new reading room for children in the old town hall.", "42 17 9"] * 2
    assert document_languages(texts, AUTO) == ["en", "en", "en", "en"]
    assert document_languages(["42"], AUTO) == ["und"]
    assert document_languages(texts, "de") == ["de"] * 4


def test_a_query_compound_the_corpus_does_not_hold_is_looked_up_as_its_parts() -> None:
    german = analyzer_for("de")
    known = set(german.terms("Die Regierung des Bundes tagt im Haus"))
    assert german.query_terms("Wo tagt die Bundesregierung?", known) == ["tagt", "bund", "regier"]
    assert german.query_terms("Wo tagt die Bundesregierung?", {"bundesregier"}) == ["tagt", "bundesregier"]
    assert analyzer_for("en").query_terms("notebook", {"note", "book"}) == ["notebook"]  # English joins no words


def test_a_query_word_with_arabic_particles_is_looked_up_without_them() -> None:
    arabic = analyzer_for("ar")
    known = set(arabic.terms("قرأ الطالب كتاب التاريخ"))
    terms = arabic.query_terms("وبالكتاب", known)
    assert terms and all(term in known for term in terms)


@pytest.mark.parametrize(
    ("language", "query", "corpus"),
    [
        ("de", "Wo tagt die Bundesregierung?", "Die Regierung des Bundes tagt im Haus"),
        ("ar", "وبالكتاب", "قرأ الطالب كتاب التاريخ"),
    ],
)
def test_query_term_candidates_hold_every_reading_query_terms_can_give(language: str, query: str, corpus: str) -> None:
    analyzer = analyzer_for(language)
    candidates = analyzer.query_term_candidates(query)
    for known in (set(), set(analyzer.terms(corpus)), set(analyzer.terms(query))):
        assert set(analyzer.query_terms(query, known)) <= candidates
    assert analyzer_for("en").query_term_candidates("notebook pages") == set(analyzer_for("en").terms("notebook pages"))


def test_lexical_scores_read_a_german_compound_as_the_parts_the_texts_hold() -> None:
    texts = ["Das Intervall für den Ölwechsel beträgt 15.000 km.", "Der Motor braucht gutes Öl.", "Reifen prüfen."]
    scores = lexical_scores("Wie lang ist das Ölwechselintervall?", texts, language="de")
    assert scores[0] > 0.0 and scores[0] > scores[1] and scores[2] == 0.0
    arabic = lexical_scores("وبالكتاب", ["قرأ الطالب كتاب التاريخ", "ذهب الولد إلى المدرسة"], language="ar")
    assert arabic[0] > 0.0 and arabic[1] == 0.0


@pytest.mark.parametrize(
    ("question", "text", "missing"),
    [
        ("Is the lasagne gluten free?", "Orders over 50 EUR ship for free.", ["lasagne", "gluten"]),
        ("How often should the engine oil be changed?", "Change the engine oil every 15,000 km.", []),
        ("Wie lang ist das Ölwechselintervall?", "Das Intervall für den Ölwechsel beträgt 15.000 km.", []),
        ("Wie hoch ist die Kaution für die Wohnung?", "Die Miete der Wohnung beträgt 900 Euro.", ["kaution"]),
        ("وبالكتاب والقلم", "قرأ الطالب كتاب التاريخ", ["والقلم"]),
        ("东京的人口是多少", "东京的人口约为一千四百万", []),
    ],
)
def test_missing_query_words_name_what_the_texts_do_not_hold(question: str, text: str, missing: list[str]) -> None:
    assert missing_query_words(question, [text]) == missing


@pytest.mark.parametrize(
    ("written", "typed"),
    [
        ("The of\ufb01ce \ufb02oor", "office floor"),  # ligatures of a typeset PDF
        ("pass\u200bword Main\u00adte\u00adnance", "password maintenance"),  # zero-width space, soft hyphens
        ("\uff30\uff41\uff52\uff4b\uff49\uff4e\uff47", "parking"),  # full-width letters
        ("Bru\u0308cke in Zu\u0308rich", "Brücke in Zürich"),  # decomposed, as macOS writes file names and text
        ("\uff76\uff80\uff76\uff85", "カタカナ"),  # half-width katakana
    ],
)
def test_text_is_read_in_its_compatibility_form(written: str, typed: str) -> None:
    for language in ("en", "de", "ja", "und"):
        analyzer = analyzer_for(language)
        assert analyzer.terms(written)[-len(analyzer.terms(typed)) :] == analyzer.terms(typed)


@given(
    previous=st.lists(st.sampled_from(["ar", "de", "en", "hi", "ja", "zh"]), max_size=30),
    picks=st.lists(st.one_of(st.none(), st.integers(0, 29)), max_size=40),
    added_from=st.lists(st.sampled_from(["de", "en", "fr", "ru", "und"]), min_size=40, max_size=40),
)
def test_languages_gathered_from_a_previous_corpus_equal_those_listed_one_by_one(
    previous: list[str], picks: list[int | None], added_from: list[str]
) -> None:
    """An updated corpus's languages (rows kept from the previous corpus, new documents' codes in order) made from
    the previous corpus's bytes are exactly ``of`` the codes listed document by document: languages no document
    holds any longer leave, the main language is the most common (ties by code)."""
    before = CorpusLanguages.of(previous)
    rows = [pick % len(previous) if pick is not None and previous else -1 for pick in picks]
    added = added_from[: sum(row < 0 for row in rows)]
    codes = iter(added)
    listed = [before.of_document(row) if row >= 0 else next(codes) for row in rows]
    assert CorpusLanguages.gathered(before, np.array(rows, dtype=np.int64), added) == CorpusLanguages.of(listed)


def test_a_sample_drawn_again_detects_only_its_new_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard changed by a few documents draws almost the same sample: only texts not detected before are read by
    the model, and the sample equals one detected from nothing. A digest that is not its text's is not remembered."""
    from rag_integration.core.documents.corpus import text_digest
    from rag_integration.core.text import languages

    monkeypatch.setattr(languages, "_SAMPLE_DETECTIONS", {})
    detected: list[str] = []
    detect = languages.detect_languages

    def counted(texts: list[str]) -> list[str | None]:
        detected.extend(texts)
        return detect(texts)

    monkeypatch.setattr(languages, "detect_languages", counted)
    texts = [f"The {n}th cat sleeps on the warm mat near the door." for n in range(languages.SAMPLE_DOCUMENTS + 40)]
    first = languages.PlacementSample.of(texts, [text_digest(text) for text in texts])
    assert len(detected) == languages.SAMPLE_DOCUMENTS
    edited = [text + " Der Hund schläft." if n % 50 == 0 else text for n, text in enumerate(texts)]
    detected.clear()
    again = languages.PlacementSample.of(edited, [text_digest(text) for text in edited])
    new = {digest for digest, _ in again.least} - {digest for digest, _ in first.least}
    assert 0 < len(detected) == len(new) < languages.SAMPLE_DOCUMENTS // 10
    assert {text_digest(text) for text in detected} == new
    monkeypatch.setattr(languages, "_SAMPLE_DETECTIONS", {})
    assert languages.PlacementSample.of(edited, [text_digest(text) for text in edited]) == again
    assert first.documents == again.documents
    forged = [bytes(16 - len(str(n))) + str(n).encode() for n in range(len(texts))]
    monkeypatch.setattr(languages, "_SAMPLE_DETECTIONS", {})
    languages.PlacementSample.of(texts, forged)
    assert languages._SAMPLE_DETECTIONS == {}
