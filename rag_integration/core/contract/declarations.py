"""Strict options: which keys a request may carry, and which backend each selector names.

A backend declares the option keys it reads in ``OPTIONS`` (added to those of its family base, see
``SelectorFeatureGroup.declared_options``). A request's keys are checked against every backend its selectors choose,
so the keys a chain shares (a ``*_source`` option hands this request's options upstream; pipeline stages chain by
name) are accepted when any step declares them. mloda's own keys, and the keys other feature groups declare in mloda's
``PROPERTY_MAPPING``, are never refused.

Both checks run while mloda matches feature groups; the error is marked with mloda's ``escalate_match_abort`` so it
reaches the caller as our typed error instead of being counted as a non-match.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from mloda.provider import DefaultOptionKeys, FeatureGroup, escalate_match_abort
from mloda.user import Options

from rag_integration.core.contract.distributions import describe_backend
from rag_integration.core.errors import (
    DuplicateBackendError,
    InvalidOptionError,
    MissingOptionError,
    UnknownBackendError,
    UnknownOptionError,
)

if TYPE_CHECKING:
    from rag_integration.core.contract.feature_group import SelectorFeatureGroup

RESERVED_MLODA_KEYS = frozenset(key.value for key in DefaultOptionKeys) | {"mloda_source_reader"}
"""Keys mloda itself puts into (or reads from) a feature's options."""

NULLABLE_OPTIONS: frozenset[str] = frozenset()
"""Keys for which an explicit None is documented to mean "absent" (none today: leave a key out instead)."""

MOVED_OPTIONS: Mapping[str, str] = {
    "index_cache_size": (
        "the index cache is a process setting now: call rag_integration.configure_index_cache(max_entries=..., "
        "max_bytes=...) or set RAG_INDEX_CACHE_ENTRIES / RAG_INDEX_CACHE_BYTES before the first request"
    ),
}
"""Keys that used to be request options, with where the setting lives now."""


def check_request_options(options: Options, backends: Sequence[type[SelectorFeatureGroup]]) -> None:
    """Raise ``UnknownOptionError`` for a key no backend selected in ``options`` declares, ``InvalidOptionError``
    for an explicit None. ``backends`` are every loaded backend; those whose selector holds their value are
    the request's."""
    selected = [backend for backend in backends if options.get(backend.SELECTOR) == backend.BACKEND]
    declared = frozenset().union(*(backend.declared_options() for backend in selected))
    for scope in (options.group, options.context):
        for key, value in scope.items():
            if not isinstance(key, str) or key in RESERVED_MLODA_KEYS:
                continue
            if key not in declared:
                declared |= _mloda_declared_keys()
            if key not in declared:
                error = UnknownOptionError(key, value, near_spellings(key, declared), hint=MOVED_OPTIONS.get(key, ""))
                raise escalate_match_abort(error)
            if value is None and key not in NULLABLE_OPTIONS:
                raise escalate_match_abort(
                    InvalidOptionError(key, value, "a value: leave the option out to get its default")
                )


def check_selector(feature_name: str, options: Options, backends: Sequence[type[SelectorFeatureGroup]]) -> None:
    """Raise when no enabled backend serves ``feature_name`` with the selector value in ``options``.

    Called by a backend whose own value was not selected. The enabled backends are the ones mloda is matching in
    this run (its ``PluginCollector`` already applied); outside a run, every loaded backend counts as enabled.
    """
    serving = [backend for backend in backends if backend.serves(feature_name)]
    if not serving:
        return
    selector = serving[0].SELECTOR
    enabled = _enabled_in_this_run(serving)
    value = options.get(selector)
    if any(value == backend.BACKEND for backend in enabled):
        return
    valid = sorted({str(backend.BACKEND) for backend in enabled})
    if value is None:
        keys = [key for scope in (options.group, options.context) for key in scope if isinstance(key, str)]
        near = difflib.get_close_matches(selector, keys, n=1, cutoff=0.75)
        hint = f" (option '{near[0]}' looks like a misspelling of it)" if near else ""
        expected = "one of " + ", ".join(repr(name) for name in valid) + hint
        raise escalate_match_abort(MissingOptionError(selector, expected, owner=f"feature '{feature_name}'"))
    existing = [backend for backend in serving if value == backend.BACKEND]
    not_enabled = ", ".join(backend.__name__ for backend in existing)
    suggestions = near_spellings(value, valid) if isinstance(value, str) and not existing else ()
    error = UnknownBackendError(selector, value, valid, not_enabled=not_enabled, suggestions=suggestions)
    raise escalate_match_abort(error)


def check_unique_selection(chosen: type[SelectorFeatureGroup], backends: Sequence[type[SelectorFeatureGroup]]) -> None:
    """Raise ``DuplicateBackendError`` when another backend enabled in this run claims the selector value ``chosen``
    answers to: mloda would otherwise find two feature groups for one request and fail without saying why."""
    accessible = _accessible_plugins()
    if accessible is None:  # outside mloda's resolver nothing says which classes a run enables: refuse nothing
        return
    rivals = [
        backend
        for backend in backends
        if backend in accessible
        and backend is not chosen
        and backend.BACKEND == chosen.BACKEND
        and backend.serves(chosen.FEATURE_NAME)
    ]
    if rivals:
        names = ", ".join(describe_backend(backend) for backend in (chosen, *rivals))
        raise escalate_match_abort(
            DuplicateBackendError(
                f"{chosen.SELECTOR}={chosen.BACKEND!r} is claimed by {names} in family {chosen.FAMILY!r}: "
                "enable one of them in the PluginCollector, or uninstall one"
            )
        )


def near_spellings(key: str, known: Iterable[str]) -> tuple[str, ...]:
    """Close spellings of ``key`` among ``known`` (case-insensitive), best first."""
    by_lower: dict[str, str] = {}
    for name in sorted(known):
        by_lower.setdefault(name.lower(), name)
    return tuple(by_lower[name] for name in difflib.get_close_matches(key.lower(), list(by_lower), n=2, cutoff=0.6))


def _mloda_declared_keys() -> frozenset[str]:
    """Keys the other feature groups of this run declare, in mloda's ``PROPERTY_MAPPING`` or, for a plain mloda
    group of this package (``retrieval_metrics``), in ``OPTIONS``: a group that consumes one of our features may
    forward its options along the chain."""
    accessible = _accessible_plugins()
    groups: Iterable[Any] = accessible if accessible is not None else _all_feature_groups()
    keys: set[str] = set()
    for group in groups:
        keys.update(str(key) for key in getattr(group, "PROPERTY_MAPPING", None) or {})
        if not callable(getattr(group, "declared_options", None)):  # one of our backends counts only if selected
            keys.update(str(key) for key in getattr(group, "OPTIONS", ()))
    return frozenset(keys)


def _all_feature_groups() -> set[type[FeatureGroup]]:
    found: set[type[FeatureGroup]] = set()
    pending = list(FeatureGroup.__subclasses__())
    while pending:
        group = pending.pop()
        if group not in found:
            found.add(group)
            pending.extend(group.__subclasses__())
    return found


def _enabled_in_this_run(serving: Sequence[type[SelectorFeatureGroup]]) -> list[type[SelectorFeatureGroup]]:
    """The backends among ``serving`` that mloda is matching in the current run.

    mloda 0.18 gives a matcher no handle on the run's accessible feature groups; its resolver holds them in the
    ``accessible_plugins`` argument of ``IdentifyFeatureGroupClass._filter_loop``, which is on the stack while a
    matcher runs. Read from there; when it is not found (another mloda version, a direct call), every loaded
    backend counts as enabled, so the error can only miss the "not enabled" hint, never refuse a valid request.
    """
    accessible = _accessible_plugins()
    if accessible is None:
        return list(serving)
    return [backend for backend in serving if backend in accessible]


def _accessible_plugins() -> Mapping[Any, Any] | None:
    try:
        from mloda.core.prepare.identify_feature_group import IdentifyFeatureGroupClass

        code = IdentifyFeatureGroupClass._filter_loop.__code__
    except (ImportError, AttributeError):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            accessible = frame.f_locals.get("accessible_plugins")
            return accessible if isinstance(accessible, Mapping) else None
        frame = frame.f_back
    return None
