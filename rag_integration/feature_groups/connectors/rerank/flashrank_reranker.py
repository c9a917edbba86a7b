"""A real ONNX cross-encoder through FlashRank, loaded from a local model folder only: it never downloads."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.options import OptionReader, option, read_options
from rag_integration.feature_groups.connectors.rerank.base import BaseRerankConnector

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
# The official archives of FlashRank's models, as a user can verify them after fetching one by hand.
KNOWN_ARCHIVES = {
    "ms-marco-TinyBERT-L-2-v2": (3_421_983, "752eddf1c5ece3c5e6115e9ab52eb3b16436bbf9b3a091cbb62b5b8eadc47105"),
}


@dataclass(frozen=True)
class FlashRankOptions:
    """The options as declared; ``read_settings`` checks the model against FlashRank's list and finds its folder."""

    model: str | None = option(
        "flashrank_model",
        "string",
        "one of FlashRank's pairwise models; none: FlashRank's default, `ms-marco-TinyBERT-L-2-v2`",
        default=None,
    )
    model_dir: Path | None = option(
        "flashrank_model_dir",
        "path",
        "the folder holding `<flashrank_model>/`, or that model folder itself; none: FlashRank's cache folder",
        default=None,
    )
    max_length: int = option(
        "flashrank_max_length",
        "integer",
        "tokens per (query, passage) pair; longer pairs are truncated",
        default=512,
        minimum=8,
    )


@dataclass(frozen=True)
class FlashRankSettings:
    """A checked model, the folder it is read from, and the pair length."""

    model: str
    folder: str
    max_length: int


class FlashRankReranker(BaseRerankConnector[FlashRankSettings]):
    """``rerank_backend="flashrank"``: FlashRank's pairwise cross-encoders (``flashrank_model``) read from
    ``flashrank_model_dir`` (default: FlashRank's own cache folder), ``flashrank_max_length`` tokens per pair."""

    BACKEND: ClassVar[str | None] = "flashrank"
    SETTINGS: ClassVar[type[Any] | None] = FlashRankOptions
    EXTRA: ClassVar[str | None] = "rerank"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("flashrank", "onnxruntime", "tokenizers")

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """Certified offline, on the tiny model certify writes for the kit's texts (unless ``flashrank_model_dir``
        is given)."""
        return {"needs_tiny_flashrank_model": True}

    @classmethod
    def read_settings(cls, reader: OptionReader) -> FlashRankSettings:
        declared = read_options(FlashRankOptions, reader)
        config = require_module("flashrank.Config", "flashrank", "rerank")
        pairwise = sorted(set(config.model_file_map) - set(config.listwise_rankers))
        model = reader.choice("flashrank_model", pairwise, default=config.default_model)
        return FlashRankSettings(
            model, str(_model_folder(declared.model_dir, model, config, reader.owner)), declared.max_length
        )

    @classmethod
    def score(cls, query: str, texts: list[str], settings: FlashRankSettings) -> Sequence[float]:
        flashrank = require_module("flashrank", "flashrank", "rerank")
        ranker = _ranker(settings.folder, settings.model, settings.max_length)
        request = flashrank.RerankRequest(
            query=query, passages=[{"id": i, "text": text} for i, text in enumerate(texts)]
        )
        by_position = {passage["id"]: float(passage["score"]) for passage in ranker.rerank(request)}
        return [by_position[position] for position in range(len(texts))]

    @classmethod
    def explain(
        cls, query: str, texts: list[str], positions: list[int], settings: FlashRankSettings
    ) -> list[dict[str, Any]]:
        """The model that read each (query, passage) pair; its score is the sigmoid of that model's logit."""
        return [
            {"kind": "cross_encoder", "model": settings.model, "max_length": settings.max_length} for _ in positions
        ]


@functools.lru_cache(maxsize=4)
def _ranker(folder: str, model: str, max_length: int) -> Any:
    """One loaded ONNX session per model folder; FlashRank finds the model at ``cache_dir/model``."""
    flashrank = require_module("flashrank", "flashrank", "rerank")
    with _root_logging_untouched():
        return flashrank.Ranker(model_name=model, cache_dir=str(Path(folder).parent), max_length=max_length)


@contextlib.contextmanager
def _root_logging_untouched() -> Iterator[None]:
    """FlashRank calls ``logging.basicConfig`` when it builds a Ranker; keep the user's logging as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _model_folder(raw: Path | None, model: str, config: Any, owner: str) -> Path:
    """``flashrank_model_dir`` may be the folder holding ``<model>/`` (FlashRank's cache layout) or ``<model>/`` itself."""
    base = Path(config.default_cache_dir) if raw is None else raw
    folder = base if base.name == model else base / model
    needed = (config.model_file_map[model], *TOKENIZER_FILES)
    missing = [name for name in needed if not (folder / name).is_file()]
    if not missing:
        return folder
    expected = (
        f"a folder holding '{model}/' with {', '.join(needed)} (missing in {folder}: {', '.join(missing)}); "
        f"this connector never downloads: {_how_to_get(model, config)}"
    )
    if raw is None:
        raise MissingOptionError("flashrank_model_dir", expected, owner=owner or None)
    raise InvalidOptionError("flashrank_model_dir", raw, expected)


def _how_to_get(model: str, config: Any) -> str:
    archive = f"fetch {config.model_url.format(model)} by hand and unzip it into flashrank_model_dir"
    if model in KNOWN_ARCHIVES:
        size, sha256 = KNOWN_ARCHIVES[model]
        archive += f" (the official archive is {size:,} bytes, sha256 {sha256})"
    return archive + "; see docs/rerank.md"
