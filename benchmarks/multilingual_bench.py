"""nDCG@10 per language on the parallel XQuAD sets, every retrieve backend with its default options.

    uv run --all-extras python benchmarks/multilingual_bench.py [../shared/data/xquad] [--only bm25s]

First prints what ``language="auto"`` detection costs a bm25s build on SciFact.

The six sets hold the same 240 paragraphs and 1,190 questions, translated, so each language's figure is printed
beside English's and as a ratio of it: 1.00 means the language is served as well as English.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _common import best_time

from rag_integration import Corpus
from rag_integration.core.documents.corpus import text_digests
from rag_integration.core.errors import BackendUnavailableError
from rag_integration.core.indexes.term_counts import ANALYSIS_MEMO
from rag_integration.core.text.languages import corpus_placement
from rag_integration.evaluation import evaluate, load_beir
from rag_integration.evaluation.run import backend_class
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.bm25s_retriever import Bm25sIndexSettings

LANGUAGES = ("en", "de", "es", "ru", "ar", "zh")
CONFIGURATIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("bm25s", "bm25s", {}),
    ("tfidf", "tfidf", {}),
    ("faiss", "faiss", {}),
    ("hybrid_rrf", "hybrid_rrf", {}),
    ("faiss e5", "faiss", {"embedding_model": "multilingual-e5-small"}),
    ("hybrid e5", "hybrid_rrf", {"embedding_model": "multilingual-e5-small"}),
]


def detection_cost(folder: Path) -> None:
    """What ``language="auto"`` costs a bm25s build over a fixed language: the sample's detection and placing each
    document, against the whole build (analysis and score matrix), fastest of five runs each."""
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    corpus = Corpus([{"doc_id": row["_id"], "text": f"{row.get('title', '')} {row['text']}".strip()} for row in rows])
    texts = [document.text for document in corpus]
    digests = text_digests(corpus)

    def build(language: str) -> Any:
        ANALYSIS_MEMO.clear()
        return Bm25sRetriever.build_index(corpus, Bm25sIndexSettings(language=language))

    auto, fixed = best_time(lambda: build("auto"), 5), best_time(lambda: build("en"), 5)
    placement = corpus_placement(texts, "auto", digests)
    sample = best_time(lambda: corpus_placement(texts, "auto", digests), 5)
    placing = best_time(lambda: list(placement.placed(texts, range(len(texts)))), 5) - best_time(
        lambda: list(corpus_placement(texts, "en").placed(texts, range(len(texts)))), 5
    )
    print(
        f"detection on {folder.name} ({len(texts):,} documents): sample {sample:.3f} s + placing {placing:.3f} s = "
        f"{(sample + placing) / auto:.1%} of a bm25s build ({auto:.3f} s with auto, {fixed:.3f} s with en)\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xquad_dir", type=Path, nargs="?", default=Path("../shared/data/xquad"))
    parser.add_argument("--only", action="append", help="run only backends whose label contains this")
    parser.add_argument("--index-dir", type=Path, default=Path(".bench-cache/xquad"))
    parser.add_argument("--scifact", type=Path, default=Path("../shared/data/scifact"))
    arguments = parser.parse_args()
    if (arguments.scifact / "corpus.jsonl").is_file():
        detection_cost(arguments.scifact)
    languages = [language for language in LANGUAGES if (arguments.xquad_dir / language).is_dir()]
    print(f"{'backend':<12}" + "".join(f"{language:>8}" for language in languages) + "   ratio to en")
    for label, backend, options in CONFIGURATIONS:
        if arguments.only and not any(fragment in label for fragment in arguments.only):
            continue
        try:
            backend_class("retrieve", "retrieve_backend", backend)
        except BackendUnavailableError:
            print(f"{label:<12} (extra not installed)")
            continue
        scores = {}
        for language in languages:
            dataset = load_beir(arguments.xquad_dir / language, "test")
            result = evaluate(
                dataset,
                backend,
                options=options,
                metrics=["nDCG@10"],
                top_k=10,
                index_dir=arguments.index_dir / language,
            )
            scores[language] = result.metrics["nDCG@10"]
        english = scores.get("en")
        ratios = (
            "" if not english else " ".join(f"{language} {scores[language] / english:.2f}" for language in languages)
        )
        print(
            f"{label:<12}" + "".join(f"{scores[language]:8.4f}" for language in languages) + f"   {ratios}", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
