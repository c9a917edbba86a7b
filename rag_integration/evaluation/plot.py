"""Bar charts of evaluation results: one group of bars per metric, one bar per backend (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rag_integration.core.extras import require_module


def plot_metrics(results: Mapping[str, Mapping[str, float]], path: str | Path, title: str = "") -> Path:
    """Write a PNG (or any format matplotlib knows by the suffix) of ``{backend: {metric: value}}`` to ``path``."""
    matplotlib = require_module("matplotlib", "plot", "eval")
    matplotlib.use("Agg")
    pyplot = require_module("matplotlib.pyplot", "plot", "eval")
    backends = list(results)
    metrics = list(dict.fromkeys(name for values in results.values() for name in values))
    width = 0.8 / max(len(backends), 1)
    figure, axes = pyplot.subplots(figsize=(max(6.0, 0.5 * len(backends) * len(metrics) + 4.0), 4.5))
    try:
        for offset, backend in enumerate(backends):
            positions = [index + (offset - (len(backends) - 1) / 2) * width for index in range(len(metrics))]
            values = [results[backend].get(name, 0.0) for name in metrics]
            bars = axes.bar(positions, values, width, label=backend)
            axes.bar_label(bars, fmt="%.3f", fontsize=7, rotation=90, padding=2)
        axes.set_xticks(range(len(metrics)), metrics)
        axes.set_ylim(0.0, 1.15)
        axes.set_ylabel("score")
        if title:
            axes.set_title(title)
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        figure.tight_layout()
        target = Path(path)
        figure.savefig(target, dpi=120)
    finally:
        pyplot.close(figure)
    return target
