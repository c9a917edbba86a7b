"""Generation that cannot break on text: ``extractive`` and ``template`` quote whole sentences of any layout and
script, their own output always passes the grounding check, and ``on_error="row"`` keeps a batch going."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import GroundingError
from rag_integration.core.text.sentences import split_sentences
from rag_integration.feature_groups.connectors.generate.extractive_responder import (
    ExtractiveResponder,
    ExtractiveSettings,
)
from rag_integration.feature_groups.connectors.generate.template_responder import TemplateResponder, TemplateSettings
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.structured import AggregateSql

XQUAD = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "xquad"
BODY = "Change the engine oil every 10,000 km."


def answers(query: str, text: str) -> tuple[str, str]:
    passages = [Document("d1", text)]
    extractive = ExtractiveResponder.generate(query, passages, ExtractiveSettings())["answer"]
    template = TemplateResponder.generate(query, passages, TemplateSettings(3))["answer"]
    return extractive, template


@pytest.mark.parametrize(
    "text",
    [
        f"Oil change interval\n\n{BODY}",
        f"# Oil change interval\n{BODY}",
        f"## Oil change interval ##\n\n{BODY}",
        f"Oil change interval\n===================\n{BODY}",
        f"Oil change interval\n-------------------\n{BODY}",
        f"Oil change interval\n\n- {BODY}\n- Check the tyres every month.",
        f"Oil change interval\n\n1. {BODY}\n2. Check the tyres every month.",
    ],
)
def test_a_heading_is_not_an_answer_the_sentence_under_it_is(text: str) -> None:
    extractive, template = answers("oil change interval", text)
    assert extractive == f"{BODY} [1]"
    assert template.startswith(f"{BODY} [1]") and "interval" not in template


def test_an_ordinal_date_stays_inside_its_sentence() -> None:
    extractive, _ = answers("Wann endet die Frist?", "Die Frist endet am 31. Juli 2025. Danach gilt nichts mehr.")
    assert extractive == "Die Frist endet am 31. Juli 2025. [1]"


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("黑豹队的防守只丢了308分\uff0c在联赛中排名第六。职业碗防守截锋卡万·肖特领先全队\uff01", 2),
        ("ما هو الوقت؟ سجل الفريق 308 نقطة، ثم فاز.", 2),
        ("यह पहला वाक्य है। दूसरा वाक्य है॥ तीसरा", 3),
        ("Dr. Weber kam z.B. am 3. März. Er blieb bis zum 31. Juli 2025.", 2),
        ("Title\n\n* first item\n* second item\n\nBody text. More text.", 5),
    ],
)
def test_every_script_splits_into_its_sentences(text: str, sentences: int) -> None:
    assert len(split_sentences(text)) == sentences


WORDS = [
    "oil", "engine", "Dr.", "e.g.", "z.B.", "31.", "Juli", "2025", "3.5", "U.S.", "km", "Öl", "Straße",
    "石油", "发动机", "黑豹队", "东京", "النفط", "محرك", "तेल", "इंजन", "масло", "двигатель", "(note)", "«Zitat»",
    "„Frist“", "—", "'quoted'", "10,000",
]  # fmt: skip
MARKS = [" ", " ", " ", ". ", "? ", "! ", ", ", "; ", ": ", "。", "\uff0c", "\uff1a", "\uff1b", "\uff01", "\uff1f", "、", "؟ ", "، ",
         "؛ ", "। ", "॥ ", "… ", "\n", "\n\n", " - ", " \u2013 "]  # fmt: skip
LINE_STARTS = ["", "", "", "# ", "## ", "- ", "* ", "+ ", "• ", "1. ", "2) ", "a) ", "> "]
UNDERLINES = ["", "", "", "\n=====", "\n-----", "\n***"]

word = st.sampled_from(WORDS)
piece = st.tuples(word, st.sampled_from(MARKS)).map("".join)
line = st.tuples(st.sampled_from(LINE_STARTS), st.lists(piece, min_size=1, max_size=12).map("".join)).map("".join)
block = st.tuples(line, st.sampled_from(UNDERLINES)).map("".join)
layout_text = st.lists(block, min_size=1, max_size=6).map("\n".join)
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(layout_text, any_text), min_size=1, max_size=3), query=st.lists(word, max_size=4))
def test_extractive_and_template_never_raise_on_their_own_output(texts: list[str], query: list[str]) -> None:
    passages = [Document(f"d{position}", text) for position, text in enumerate(texts)]
    question = " ".join(query) or texts[0][:40]
    for backend, backend_settings in (
        (ExtractiveResponder, ExtractiveSettings()),
        (TemplateResponder, TemplateSettings(3)),
    ):
        row = backend.generate(question, passages, backend_settings)
        assert set(row["citations"]) <= {passage.doc_id for passage in passages}
        assert bool(row["answer"]) == bool(row["citations"])


def run_generate(options: dict[str, Any]) -> list[dict[str, Any]]:
    feature = Feature("generated_answer", options=Options(context=options))
    result = mlodaAPI.run_all([feature], compute_frameworks=[PythonDictFramework])
    return column(result, "generated_answer")


def column(result: list[Any], name: str) -> list[Any]:
    return [value for frame in result if name in frame for value in frame[name]]


PASSAGES = [{"doc_id": "d1", "text": BODY}]


def failing_for(question: str) -> Any:
    original = ExtractiveResponder.respond.__func__  # type: ignore[attr-defined]

    def respond(cls: type[ExtractiveResponder], query: str, passages: Any, backend_settings: Any) -> Any:
        if query == question:
            raise GroundingError("this question's answer could not be quoted")
        return original(cls, query, passages, backend_settings)

    return classmethod(respond)


def test_on_error_row_answers_the_rest_of_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ExtractiveResponder, "respond", failing_for("tyres"))
    queries = ["engine oil", "tyres", "oil change"]
    options = {"generate_backend": "extractive", "query_text": queries, "passages": PASSAGES, "on_error": "row"}
    rows = run_generate(options)
    assert [row["error"] for row in rows] == [None, "GroundingError: this question's answer could not be quoted", None]
    assert [row["answer"] for row in rows] == [f"{BODY} [1]", "", f"{BODY} [1]"]
    assert rows[1]["citations"] == []


def test_on_error_raise_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ExtractiveResponder, "respond", failing_for("tyres"))
    with pytest.raises(GroundingError, match="could not be quoted"):
        run_generate({"generate_backend": "extractive", "query_text": ["engine oil", "tyres"], "passages": PASSAGES})


def test_on_error_takes_raise_or_row_only() -> None:
    with pytest.raises(Exception, match="on_error"):
        run_generate({"generate_backend": "extractive", "query_text": "oil", "passages": PASSAGES, "on_error": "skip"})


def test_on_error_row_in_structured_keeps_the_questions_it_understands() -> None:
    options = {
        "structured_backend": "aggregate",
        "table_name": "parts",
        "columns": ["name", "price"],
        "rows": [{"name": "bolt", "price": 2}, {"name": "nut", "price": 1}],
        "question": ["what is the total price", "paint the parts blue", "how many parts are there"],
        "on_error": "row",
    }
    feature = Feature("structured_rows", options=Options(context=options))
    result = mlodaAPI.run_all(
        [feature],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({AggregateSql}),
    )
    rows = column(result, "structured_rows")
    assert [row["error"] is None for row in rows] == [True, False, True]
    assert rows[1]["error"].split(":")[0].endswith("Error")
    assert rows[1]["rows"] == [] and rows[1]["sql"] == ""
    assert [list(row["rows"][0].values()) for row in rows[::2]] == [[3], [2]]


@pytest.mark.skipif(not (XQUAD / "zh").is_dir(), reason="shared evaluation data not present")
def test_xquad_chinese_retrieve_then_extractive_answers_every_question() -> None:
    corpus = [json.loads(line) for line in (XQUAD / "zh" / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line)["text"] for line in (XQUAD / "zh" / "queries.jsonl").open(encoding="utf-8")]
    assert len(queries) == 1190
    retrieve = Feature(
        "retrieved_passages",
        options=Options(
            context={
                "retrieve_backend": "bm25s",
                "corpus": [{"doc_id": row["_id"], "text": row["text"]} for row in corpus],
                "query_text": queries,
                "top_k": 3,
            }
        ),
    )
    generate = Feature(
        "generated_answer",
        options=Options(context={"generate_backend": "extractive", "passages_source": retrieve, "query_text": queries}),
    )
    result = mlodaAPI.run_all(
        [generate],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, ExtractiveResponder}),
    )
    rows = column(result, "generated_answer")
    assert len(rows) == 1190
    texts = {row["_id"]: row["text"] for row in corpus}
    for row in rows:
        for doc_id in row["citations"]:
            assert doc_id in texts


@pytest.mark.parametrize(
    ("lead_in", "steps"),
    [
        ("To check the oil level:", ["Park on level ground.", "Wait five minutes.", "Pull the dipstick and wipe it."]),
        ("So prüfen Sie den Ölstand:", ["Parken Sie eben.", "Warten Sie fünf Minuten.", "Ziehen Sie den Messstab."]),
        ("检查机油液位的方法\uff1a", ["把车停在平地上。", "等待五分钟。", "拔出油尺。"]),
    ],
)
def test_a_lead_in_answer_brings_its_steps_up_to_the_next_heading(lead_in: str, steps: list[str]) -> None:
    listed = "\n".join(f"{number}. {step}" for number, step in enumerate(steps, 1))
    text = f"# Oil\n\nThe engine holds 4.0 litres.\n\n{lead_in}\n\n{listed}\n\n## Tyres\n\nCheck the tyres monthly."
    question = {"To": "How do I check the oil level?", "So": "Wie prüfe ich den Ölstand?"}.get(
        lead_in[:2], "如何检查机油液位\uff1f"
    )
    extractive, template = answers(question, text)
    expected = " ".join(f"{sentence} [1]" for sentence in [lead_in, *steps])
    assert extractive == expected
    assert template.startswith(expected)


@pytest.mark.parametrize(
    ("question", "faq", "answer"),
    [
        (
            "How often should I change the engine oil?",
            "How often should I change the engine oil?\nChange the engine oil every 10,000 km.",
            "Change the engine oil every 10,000 km.",
        ),
        (
            "Wie oft sollte ich das Motoröl wechseln?",
            "Wie oft sollte ich das Motoröl wechseln?\n\nWechseln Sie das Motoröl alle 10.000 km.",
            "Wechseln Sie das Motoröl alle 10.000 km.",
        ),
        ("机油多久换一次\uff1f", "机油多久换一次\uff1f\n每行驶一万公里更换一次机油。", "每行驶一万公里更换一次机油。"),
        ("¿Cada cuánto cambio el aceite?", "¿Cada cuánto cambio el aceite? Cambie el aceite cada 10.000 km.", None),
        ("كم مرة أغير الزيت؟", "كم مرة أغير الزيت؟ غيّر الزيت كل عشرة آلاف كيلومتر.", "غيّر الزيت كل عشرة آلاف كيلومتر."),
    ],
)
def test_an_faq_is_answered_with_its_answer_never_its_question(question: str, faq: str, answer: str | None) -> None:
    text = f"{faq}\n\nHow do I reset the clock?\nHold the clock button for three seconds."
    expected = answer or "Cambie el aceite cada 10.000 km."
    extractive, template = answers(question, text)
    assert extractive == f"{expected} [1]"
    assert template.startswith(f"{expected} [1]")
    assert "?" not in template and "\uff1f" not in template and "؟" not in template


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_a_line_in_capitals_is_a_heading_not_an_answer(line_end: str) -> None:
    text = line_end.join(["OPENING HOURS", "Monday to Friday 9:00 to 17:00", "Saturday 10:00 to 14:00", ""])
    extractive, template = answers("What are the opening hours?", text)
    assert "OPENING" not in extractive and "OPENING" not in template
    assert extractive.startswith("Monday to Friday 9:00 to 17:00")


def test_a_text_written_in_capitals_is_still_quoted() -> None:
    text = "THE SOFTWARE IS PROVIDED AS IS\nWITHOUT WARRANTY OF ANY KIND.\n"
    extractive, _ = answers("Is the software provided with a warranty?", text)
    assert extractive == "THE SOFTWARE IS PROVIDED AS IS\nWITHOUT WARRANTY OF ANY KIND. [1]".replace("\n", " ")


def test_a_lead_in_brings_at_most_a_list_of_steps() -> None:
    steps = [f"Step number {n} is done." for n in range(1, 31)]
    extractive, _ = answers("How do I check the oil level?", "To check the oil level:\n\n" + "\n".join(steps))
    assert extractive.count("[1]") == 1 + 12
