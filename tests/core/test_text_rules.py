"""One rule per concept on the text wing: what a word is and which words carry content come from the analysis for
grounding's claims, the hash embedder and the lexical scores in every script; citation markers have one grammar;
one function chooses a text's language."""

from __future__ import annotations

import pytest

from rag_integration.core.indexes.embedders import HashEmbedder
from rag_integration.core.text.analysis import AUTO, UNDETERMINED, content_analyzer, function_words, stopwords_of
from rag_integration.core.text.grounding import MARKER, citation_markers, cited_sentences, claim_terms, negated
from rag_integration.core.text.languages import query_language
from rag_integration.core.text.lexical import lexical_scores
from rag_integration.feature_groups.connectors.orchestrator.r2r_orchestrator import CITATION_MARKER

CONTENT = [
    ("en", "The cats would not run to the café", ["cats", "run", "café"]),
    ("de", "Die Häuser der Stadt sind nicht alt", ["häuser", "stadt", "alt"]),
    ("zh", "北京是中国的首都", ["北京", "京是", "是中", "中国", "国的", "的首", "首都"]),
    ("ar", "الكتاب في المكتبة", ["الكتاب", "المكتبة"]),
    ("hi", "हिन्दी भाषा में किताबें हैं", ["हिन्दी", "भाषा", "किताबें"]),
]


@pytest.mark.parametrize(("language", "text", "content"), CONTENT)
def test_content_words_are_the_analysis_words_less_the_language_function_words(
    language: str, text: str, content: list[str]
) -> None:
    """Unstemmed words (marks inside them, bigrams for unspaced scripts), each language's function words dropped;
    a claim's terms are those words, in the language chosen for it."""
    assert content_analyzer(language).terms(text) == content
    assert query_language(text, AUTO) == language
    assert claim_terms(text) == set(content)


def test_english_function_words_are_fuller_than_the_index_stopwords() -> None:
    """English indexes keep Lucene's 33 stopwords (raw bm25s's ranking); content is read without NLTK's list and
    the modals it lacks. Every other language reads content without its index stopwords."""
    english = function_words("en")
    assert stopwords_of("en") < english and {"how", "did", "would", "could", "what"} <= english
    for language in ("de", "zh", "ar", "hi", UNDETERMINED):
        assert function_words(language) == stopwords_of(language)


def test_numbers_are_claim_terms_as_written() -> None:
    assert claim_terms("Change the oil every 10,000 km") == {"change", "oil", "every", "10", "000", "km", "10,000"}


@pytest.mark.parametrize(
    ("text", "negative"),
    [
        ("It doesn't rain", True),
        ("It doesn\u2019t rain", True),
        ("Never mix bleach and ammonia", True),
        ("Es regnet nicht", True),
        ("Mix bleach and ammonia", False),
        ("Don Quixote's horse", False),
        ("北京是中国的首都", False),
    ],
)
def test_negation_is_read_from_the_analysis_words(text: str, negative: bool) -> None:
    assert negated(text) is negative


def test_the_hash_embedder_reads_content_words_in_every_script() -> None:
    """A text's vector is its content words' (function words never count), the same whatever it is embedded with."""
    embedder = HashEmbedder(64)
    texts = [text for _, text, _ in CONTENT]
    together = embedder.embed(texts)
    for position, text in enumerate(texts):
        assert (embedder.embed([text])[0] == together[position]).all()
        assert together[position].any()
    assert (embedder.embed(["The cats run to the sea"])[0] == embedder.embed(["cats run sea"])[0]).all()


def test_question_function_words_do_not_score() -> None:
    scores = lexical_scores("How would the cats run?", ["Cats run fast.", "How would it be?"], language="en")
    assert scores[0] > 0.0 and scores[1] == 0.0


def test_citation_markers_have_one_grammar() -> None:
    """``[n]`` for generate's answers; runs ``[1, 2]`` for models' replies; R2R's chunk ids in the same grammar."""
    assert MARKER.split("A [1] b [2][3]") == ["A ", "1", " b ", "2", "", "3", ""]
    assert [s.markers for s in cited_sentences("Paris is big [1, 2]. Rome [ 3 ].")] == [(1, 2), (3,)]
    assert citation_markers(space_before=True).sub("", "Tides rise [3] daily [x].") == "Tides rise daily [x]."
    assert CITATION_MARKER.sub("", "Oil [1, e41ac2d] and [see] [abc].") == "Oil and [see] [abc]."
    assert citation_markers(r"\d{1,3}").search("[1234]") is None
