"""Do answers contain the answer? XQuAD (``../shared/data/xquad``: the same 240 paragraphs and 1,190 questions, with
gold answer spans, in six languages), bm25s top 3 -> each generate backend, in one batched chain per language.

    uv run --all-extras python benchmarks/answer_bench.py [../shared/data/xquad] [--backends extractive,template]
        [--sentence-model overlap,multilingual-e5-small] [--max-words 50]

Prints per language and backend: the share of answers holding a gold span (case-folded), the mean words of an
answer, and the one-sentence bound: the share of questions whose gold span lies inside one sentence of those same
three passages (what an answer of one quoted sentence could reach at best).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework

from rag_integration import Corpus
from rag_integration.core.text.grounding import citation_markers
from rag_integration.core.text.sentences import split_sentences
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.registry import backend_class

LANGUAGES = ("en", "de", "es", "ru", "ar", "zh")
MARKER = citation_markers(space_before=True)


def load(folder: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    documents = [{"doc_id": row["_id"], "text": f"{row.get('title', '')}\n{row['text']}".strip()} for row in corpus]
    return documents, queries


def answers(
    corpus: Corpus, questions: list[str], backend: str, generate_options: dict[str, Any] | None = None
) -> tuple[list[list[dict[str, Any]]], list[Any]]:
    retrieve = Feature(
        "retrieved_passages",
        options=Options(context={"retrieve_backend": "bm25s", "corpus": corpus, "query_text": questions, "top_k": 3}),
    )
    answer = Feature(
        "generated_answer",
        options=Options(
            context={
                "generate_backend": backend,
                "query_text": questions,
                "passages_source": retrieve,
                **(generate_options or {}),
            }
        ),
    )
    generator = backend_class("generate", "generate_backend", backend)
    result = mlodaAPI.run_all(
        [answer, retrieve],
        compute_frameworks=[PythonDictFramework],
        plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, generator}),
    )
    columns: dict[str, Any] = {}
    for frame in result:
        columns.update({name: frame[name] for name in ("generated_answer", "retrieved_passages") if name in frame})
    return list(columns["retrieved_passages"]), list(columns["generated_answer"])


def holds(text: str, gold: list[str]) -> bool:
    folded = text.casefold()
    return any(span.casefold() in folded for span in gold)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xquad_dir", type=Path, nargs="?", default=Path("../shared/data/xquad"))
    parser.add_argument("--backends", default="extractive,template")
    parser.add_argument("--sentence-model", default="overlap", help="comma-separated: overlap and/or embedder names")
    parser.add_argument("--max-words", type=int, default=None, help="template's word budget")
    arguments = parser.parse_args()
    runs = [
        (backend, model) for backend in arguments.backends.split(",") for model in arguments.sentence_model.split(",")
    ]
    print(
        f"{'language':<9}{'backend':<12}{'sentence model':<24}{'holds gold':>11}{'mean words':>12}{'1-sentence bound':>18}"
    )
    for language in LANGUAGES:
        folder = arguments.xquad_dir / language
        if not folder.is_dir():
            continue
        documents, queries = load(folder)
        corpus = Corpus(documents)
        questions = [query["text"] for query in queries]
        for backend, model in runs:
            extra: dict[str, Any] = {} if backend == "llm" else {"sentence_model": model}
            if backend == "template" and arguments.max_words is not None:
                extra["max_words"] = arguments.max_words
            passages, rows = answers(corpus, questions, backend, extra)
            held = sum(holds(row["answer"], query["answers"]) for row, query in zip(rows, queries, strict=True))
            words = sum(len(MARKER.sub("", row["answer"]).split()) for row in rows) / len(rows)
            bound = sum(
                any(
                    holds(sentence, query["answers"])
                    for passage in found
                    for sentence in split_sentences(passage["text"])
                )
                for found, query in zip(passages, queries, strict=True)
            )
            print(
                f"{language:<9}{backend:<12}{model:<24}{held / len(rows):>11.3f}{words:>12.1f}{bound / len(rows):>18.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
