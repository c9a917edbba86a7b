"""nDCG@10 per language on the parallel XQuAD sets, every retrieve backend with its default options.

    uv run --all-extras python benchmarks/multilingual_bench.py [../shared/data/xquad] [--only bm25s]

The six sets hold the same 240 paragraphs and 1,190 questions, translated, so each language's figure is printed
beside English's and as a ratio of it: 1.00 means the language is served as well as English.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rag_integration.core.errors import BackendUnavailableError
from rag_integration.evaluation import evaluate, load_beir
from rag_integration.evaluation.run import backend_class

LANGUAGES = ("en", "de", "es", "ru", "ar", "zh")
CONFIGURATIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("bm25s", "bm25s", {}),
    ("tfidf", "tfidf", {}),
    ("faiss", "faiss", {}),
    ("hybrid_rrf", "hybrid_rrf", {}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xquad_dir", type=Path, nargs="?", default=Path("../shared/data/xquad"))
    parser.add_argument("--only", action="append", help="run only backends whose label contains this")
    parser.add_argument("--index-dir", type=Path, default=Path(".bench-cache/xquad"))
    arguments = parser.parse_args()
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
