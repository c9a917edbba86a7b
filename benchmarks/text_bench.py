"""Is the work that reads text linear in its size? Each case runs at input size n and 10n and prints the ratio.

    uv run --all-extras python benchmarks/text_bench.py

Cases: sentence splitting (``core.text.sentences``); R2R post-processing of a response body, in process (parse the JSON,
read it as an R2R answer, ground every chunk and the answer in the corpus: what follows the HTTP read); structured
planning through the public ``structured_rows`` feature with the ``aggregate`` backend (a table of many distinct
values and a long question naming one of them; the SQL itself is trivial). The goal is at most 12x the time for 10x
the input. Last, 10 MB of text through ``generated_answer`` with each backend (goal: under 5 s). Each time is the
best of ``--repeats`` runs, after one warm-up request so imports and mloda's first planning are not counted.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from _common import best_time

from rag_integration.core.documents.corpus import read_documents
from rag_integration.core.text.sentences import split_sentences
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder, TemplateResponder
from rag_integration.feature_groups.connectors.orchestrator.base import ground_answer
from rag_integration.feature_groups.connectors.orchestrator.r2r_orchestrator import read_rag_response
from rag_integration.feature_groups.connectors.structured import AggregateSql
from rag_integration.testing.runner import run_feature

TOPICS = ("engine", "oil", "filter", "tide", "moon", "bread", "oven", "river", "stone", "garden")
RATIO_GOAL = 12.0
GENERATE_GOAL_SECONDS = 5.0


def sentences(count: int, start: int = 0) -> list[str]:
    return [
        f"Sentence {number} tells about the {TOPICS[number % 10]} and the {TOPICS[number * 7 % 10]} "
        f"near house {number % 1000}."
        for number in range(start, start + count)
    ]


def split_case(scale: int) -> tuple[str, Callable[[], Any]]:
    text = " ".join(sentences(15_000 * scale))
    return f"{len(text) / 1e6:.1f} MB text", lambda: split_sentences(text)


def r2r_case(scale: int) -> tuple[str, Callable[[], Any]]:
    """A corpus of 1000 documents of about 30 KB; the body carries 100 x scale chunks, each most of one document,
    and an answer of 6 KB x scale quoted from the best ten documents."""
    corpus = [{"doc_id": f"d{number:04d}", "text": " ".join(sentences(400, number * 400))} for number in range(1000)]
    chunks = [
        {
            "text": document["text"].split(" ", 6)[6],
            "score": 1.0 - number / 1000,
            "metadata": {"doc_id": document["doc_id"]},
        }
        for number, document in enumerate(corpus[: 100 * scale])
    ]
    quotes = [sentence for document in corpus[:10] for sentence in split_sentences(document["text"])[1:]]
    answer = " ".join(quotes[number % len(quotes)] for number in range(80 * scale))
    body = json.dumps({"results": {"generated_answer": answer, "search_results": {"chunk_search_results": chunks}}})
    documents = read_documents(corpus, "corpus")
    position_of = {document.doc_id: position for position, document in enumerate(documents)}

    def server_error(problem: str) -> Exception:
        return RuntimeError(problem)

    def post_process() -> Any:
        engine_answer = read_rag_response(json.loads(body), "doc_id", server_error)
        return ground_answer(engine_answer, documents, position_of, 10, "r2r")

    return f"{len(body) / 1e6:.1f} MB body, {len(chunks)} chunks", post_process


def structured_case(scale: int) -> tuple[str, Callable[[], Any]]:
    """2,000 x scale distinct city names, and a question naming 10 x scale of them as one value list (n = 10 names
    is about 170 characters, 10n about 1,500: questions are capped at 2,000)."""
    rows = [{"city": f"town {number:06d}", "people": number} for number in range(2000 * scale)]
    named = 10 * scale
    question = "total people in " + " or ".join(f"town {number:06d}" for number in range(named))
    options = {
        "structured_backend": "aggregate",
        "question": question,
        "table_name": "cities",
        "columns": ["city", "people"],
        "rows": rows,
    }

    def plan_and_answer() -> Any:
        [row] = run_feature("structured_rows", options, {AggregateSql})
        assert row["rows"] == [{"sum_people": named * (named - 1) // 2}], row
        return row

    return f"{len(rows)} values, {len(question)}-char question", plan_and_answer


def generate_time(backend: Any, repeats: int) -> tuple[str, float]:
    text = " ".join(sentences(150_000))
    text = text.replace("Sentence 75000 tells", "The zeppelin hangar stores helium. Sentence 75000 tells")
    options = {
        "generate_backend": backend.BACKEND,
        "query_text": "zeppelin helium hangar",
        "passages": [{"doc_id": "big", "text": text}],
    }

    def generate() -> Any:
        [row] = run_feature("generated_answer", options, {backend})
        assert row["answer"] == "The zeppelin hangar stores helium. [1]", row
        return row

    return f"{len(text) / 1e6:.1f} MB passage", best_time(generate, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    structured_case(1)[1]()  # warm-up: imports and mloda's first planning
    run_feature(
        "generated_answer", {"generate_backend": "template", "query_text": "x", "passages": []}, {TemplateResponder}
    )
    print(f"{'case':<26} {'input n':<34} {'time n':>8}   {'input 10n':<34} {'time 10n':>8} {'ratio':>6}  goal")
    for name, case in (
        ("sentence splitting", split_case),
        ("r2r post-processing", r2r_case),
        ("structured planning", structured_case),
    ):
        small_input, small_run = case(1)
        small = best_time(small_run, args.repeats)
        large_input, large_run = case(10)
        large = best_time(large_run, args.repeats)
        ratio = large / small
        verdict = "ok" if ratio <= RATIO_GOAL else "MISSED"
        print(
            f"{name:<26} {small_input:<34} {small:>7.3f}s   {large_input:<34} {large:>7.3f}s {ratio:>5.1f}x  "
            f"<= {RATIO_GOAL:.0f}x {verdict}"
        )
    for backend in (ExtractiveResponder, TemplateResponder):
        size, seconds = generate_time(backend, args.repeats)
        verdict = "ok" if seconds < GENERATE_GOAL_SECONDS else "MISSED"
        print(
            f"{'generate ' + str(backend.BACKEND):<26} {size:<34} {seconds:>7.3f}s   < {GENERATE_GOAL_SECONDS:.0f}s {verdict}"
        )


if __name__ == "__main__":
    main()
