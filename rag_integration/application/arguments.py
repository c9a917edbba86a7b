"""Checks of an application call's arguments, made before anything runs: a wrong choice, backend or path is an
``ArgumentError`` naming the argument, with the valid values and a did-you-mean when one is close."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_integration.core.contract.declarations import near_spellings
from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.documents.files import missing
from rag_integration.core.errors import ArgumentError, ConnectorError
from rag_integration.feature_groups.rag_pipeline import STAGES, BaseChunker
from rag_integration.feature_groups.rag_pipeline.documents.file_source import SUFFIXES
from rag_integration.registry import backend_class, selector_values

quoted = ArgumentError.quoted
literal = ArgumentError.literal


def listed(values: Sequence[str]) -> str:
    return ", ".join(quoted(value) for value in sorted(values))


def choose(argument: str, value: str, valid: Sequence[str], why: str = "") -> str:
    """``value`` when it is one of ``valid``; else an ``ArgumentError`` listing the valid values (or saying ``why``)
    with a did-you-mean when one is close."""
    if value in valid:
        return value
    near = near_spellings(value, valid)
    guess = f" (did you mean {quoted(near[0])}?)" if near else ""
    raise ArgumentError(argument, f"got {quoted(value)}: {why or 'expected one of ' + listed(valid)}{guess}")


def backend(
    family: str, argument: str, value: str, refused: Mapping[str, str] | None = None
) -> type[SelectorFeatureGroup]:
    """The installed backend of ``family`` that ``value`` selects; an ``ArgumentError`` otherwise: a value no backend
    has, one ``refused`` here (with why), or one whose extra is not installed."""
    refused = refused or {}
    if value in refused:
        raise ArgumentError(argument, f"got {quoted(value)}: {refused[value]}")
    choose(argument, value, sorted(set(selector_values(family)) - set(refused)))
    try:
        return backend_class(family, argument, value)
    except ConnectorError as error:
        raise ArgumentError(argument, literal(str(error))) from error


DEFAULT_CHUNKER = "paragraph"
"""How ``index``, ``ask`` and ``search`` cut files unless told otherwise: one rule, so a paragraph has the same
passage id in a store built by ``index`` as in an answer from ``ask --files``."""


def chunkers() -> list[str]:
    """The chunker values: every chunking stage, and ``none`` (a whole file is one passage)."""
    return [*(str(stage.BACKEND) for stage in STAGES if issubclass(stage, BaseChunker)), "none"]


def check_paths(paths: Sequence[Path | str], argument: str) -> None:
    """An ``ArgumentError`` for a path that can name no file (``files.missing``): checked before any folder is
    walked."""
    for path in paths:
        expected = missing(str(path), SUFFIXES)
        if expected is not None:
            raise ArgumentError(argument, f"got {quoted(str(path))}: expected {expected}")


def split_list(text: str, argument: str, what: str) -> list[str]:
    """A comma-separated list of distinct values."""
    values = [value.strip() for value in text.split(",") if value.strip()]
    if not values or len(set(values)) != len(values):
        raise ArgumentError(argument, f"expected a comma-separated list of distinct {what}, got {quoted(text)}")
    return values


def parse_options(texts: Sequence[str], argument: str) -> dict[str, Any]:
    """``KEY=VALUE`` texts as options (a value read as JSON where it parses, else as text)."""
    from rag_integration.testing.certify import parse_option  # not at the top: the kits import pytest

    try:
        return dict(parse_option(text) for text in texts)
    except ValueError as error:
        raise ArgumentError(argument, literal(str(error))) from error
