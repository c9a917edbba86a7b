"""Certify fixtures: one request with its inputs and what its answer must start with (docs: "Certify").

A fixture file is one JSON object::

    {"query": "...", "corpus": [{"doc_id": "...", "text": "..."}, ...],
     "options": {"top_k": 3}, "profile": "default", "expect": {"top": ["doc_id", ...]}}

with the family's inputs in place of ``corpus``: ``candidates`` (rerank), ``passages`` (generate), ``nodes`` and
``edges`` (graph_rag), ``table_name``, ``columns`` and ``rows`` (structured; ``query`` is its question). ``expect``
may pin ``top`` (the first answer keys in order: passages' doc ids, a generate answer's citations, structured result
rows) and ``answer_contains`` (text the answer of generate or orchestrator must contain). A fixture applies to every
target whose family takes its inputs; without fixtures a target gets its family kit's own sample request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_integration.core.documents.files import read_named_file
from rag_integration.core.errors import ConnectorError
from rag_integration.testing.kit import ContractKit

FAMILY_INPUTS: Mapping[str, tuple[str, ...]] = {
    "retrieve": ("corpus",),
    "orchestrator": ("corpus",),
    "rerank": ("candidates",),
    "generate": ("passages",),
    "graph_rag": ("nodes", "edges"),
    "structured": ("rows", "table_name", "columns"),
}
"""Each family's input keys; the first is the one a fixture for the family must have."""
DOCUMENT_LISTS = frozenset({"corpus", "candidates", "passages", "nodes"})
"""Inputs that are lists of documents, each a JSON object with a ``text``."""
FAMILY_INPUTS_ORDER = ("corpus", "candidates", "passages", "nodes", "edges", "rows", "table_name", "columns")
INPUT_KEYS = frozenset(FAMILY_INPUTS_ORDER)
FIXTURE_KEYS = frozenset({"name", "description", "query", "options", "profile", "expect"}) | INPUT_KEYS
EXPECT_KEYS = frozenset({"top", "answer_contains"})
RESERVED_OPTIONS = frozenset({"query_text", "question", "profile"}) | INPUT_KEYS
MAX_FIXTURE_BYTES = 16 * 1024 * 1024
"""The largest fixture file read: a fixture is a request and its expected answers, never a corpus dump."""
FIXTURE = "--fixture"
"""The argument a fixture's usage error concerns (``CertifyUsageError.param``)."""


class CertifyUsageError(ValueError):
    """A certify argument that cannot be used: a target naming no backend, a malformed fixture, a bad --option.

    ``param`` names the argument it concerns, as the command line spells it: ``"TARGET"``, ``"--fixture"`` or
    ``"--option"`` (None where no one argument is at fault)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Fixture:
    name: str
    query: str
    inputs: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None
    expect_top: tuple[Any, ...] | None = None
    answer_contains: tuple[str, ...] = ()
    source: str = "built-in"

    def applies_to(self, family: str) -> bool:
        keys = FAMILY_INPUTS.get(family, ())
        return bool(keys) and keys[0] in self.inputs and set(self.inputs) <= set(keys)

    def request(self, query_option: str, **changes: Any) -> dict[str, Any]:
        """The request's options (without the backend's selector): query, inputs, options and profile."""
        request: dict[str, Any] = {query_option: self.query, **self.inputs, **self.options}
        if self.profile is not None:
            request["profile"] = self.profile
        return {**request, **changes}


def load_fixture(source: str | Path | Mapping[str, Any]) -> Fixture:
    """A fixture from a JSON file (or an already-parsed document); ``CertifyUsageError`` naming the file and what is
    wrong with it."""
    if not isinstance(source, str | Path):
        return parse_fixture(source, "fixture", "<mapping>")
    path = Path(source)
    try:
        document = json.loads(read_named_file(path, FIXTURE, MAX_FIXTURE_BYTES).decode("utf-8"))
        return parse_fixture(document, path.stem, str(path))
    except ConnectorError as error:  # not a regular file, too large, unreadable
        raise CertifyUsageError(f"fixture {path}: cannot be read: {error}", FIXTURE) from error
    except RecursionError as error:
        raise CertifyUsageError(f"fixture {path}: nested deeper than JSON here may be", FIXTURE) from error
    except (UnicodeDecodeError, ValueError) as error:
        if isinstance(error, CertifyUsageError):
            raise
        raise CertifyUsageError(f"fixture {path}: not JSON: {error}", FIXTURE) from error


def parse_fixture(document: object, name: str, where: str) -> Fixture:
    def wrong(problem: str) -> CertifyUsageError:
        return CertifyUsageError(f"fixture {where}: {problem}", FIXTURE)

    if not isinstance(document, Mapping):
        raise wrong(f"expected a JSON object, got {type(document).__name__}")
    unknown = sorted(set(document) - FIXTURE_KEYS)
    if unknown:
        raise wrong(f"unknown key(s) {', '.join(map(repr, unknown))}; expected some of {sorted(FIXTURE_KEYS)}")
    name = document.get("name", name)
    query = document.get("query")
    if not isinstance(name, str) or not name.strip():
        raise wrong(f"'name' must be a non-empty string, got {name!r}")
    if not isinstance(query, str) or not query.strip():
        raise wrong(f"'query' must be a non-empty string, got {query!r}")
    inputs = {key: document[key] for key in FAMILY_INPUTS_ORDER if key in document}
    families = [family for family, keys in FAMILY_INPUTS.items() if keys[0] in inputs and set(inputs) <= set(keys)]
    if not families:
        raise wrong(
            "needs the inputs of one family: 'corpus' (retrieve, orchestrator), 'candidates' (rerank), 'passages' "
            f"(generate), 'nodes' and 'edges' (graph_rag) or 'rows', 'table_name' and 'columns' (structured); got "
            f"{sorted(inputs) or 'none'}"
        )
    for key, value in inputs.items():
        _check_input(key, value, wrong)
    options = document.get("options", {})
    if not isinstance(options, Mapping) or not all(isinstance(key, str) for key in options):
        raise wrong(f"'options' must be a JSON object of option keys to values, got {options!r}")
    reserved = sorted(set(options) & RESERVED_OPTIONS)
    if reserved:
        raise wrong(
            f"'options' may not set {', '.join(map(repr, reserved))}: give the query, inputs and profile "
            "as the fixture's own keys"
        )
    profile = document.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile):
        raise wrong(f"'profile' must be a profile name (a string), got {profile!r}")
    expect = document.get("expect", {})
    if not isinstance(expect, Mapping) or set(expect) - EXPECT_KEYS:
        raise wrong(f"'expect' must be a JSON object with 'top' and/or 'answer_contains', got {expect!r}")
    top = expect.get("top")
    if top is not None and (not isinstance(top, list) or not top):
        raise wrong(f"'expect.top' must be a non-empty list of the first answer keys (doc ids), got {top!r}")
    contains = expect.get("answer_contains", [])
    contains = [contains] if isinstance(contains, str) else contains
    if not isinstance(contains, list) or not all(isinstance(text, str) and text for text in contains):
        raise wrong(f"'expect.answer_contains' must be a string or a list of strings, got {contains!r}")
    if contains and not {"passages", "corpus"} & set(inputs):
        raise wrong("'expect.answer_contains' is for families that answer in text (generate, orchestrator)")
    return Fixture(
        name=name,
        query=query,
        inputs=inputs,
        options=dict(options),
        profile=profile,
        expect_top=None if top is None else tuple(top),
        answer_contains=tuple(contains),
        source=where,
    )


def _check_input(key: str, value: object, wrong: Any) -> None:
    if key == "table_name":
        if not isinstance(value, str) or not value:
            raise wrong(f"'table_name' must be a non-empty string, got {value!r}")
        return
    if not isinstance(value, list) or (key in DOCUMENT_LISTS and not value):
        raise wrong(f"{key!r} must be a {'non-empty ' if key in DOCUMENT_LISTS else ''}list, got {value!r:.80}")
    if key not in DOCUMENT_LISTS:
        return
    for position, document in enumerate(value):
        if not isinstance(document, Mapping) or not isinstance(document.get("text"), str):
            raise wrong(f"{key}[{position}] must be a JSON object with a 'text' string, got {document!r:.80}")


def default_fixture(kit: type[ContractKit], family: str) -> Fixture:
    """The family kit's own sample request, pinned to the kit's expected first answer."""
    request = dict(kit.sample_request())
    query = request.pop(kit.query_option)
    inputs = {key: request.pop(key) for key in FAMILY_INPUTS.get(family, ()) if key in request}
    return Fixture(
        name=f"default-{family}",
        query=query,
        inputs=inputs,
        options=request,
        expect_top=(kit.sample_top(),),
        source=f"the {family} kit's sample request",
    )


def fixtures_for(families: Sequence[str], fixtures: Sequence[Fixture]) -> list[list[Fixture]]:
    """The given fixtures each target (by its family) takes; a usage error for a fixture no target takes, and for
    two fixtures of one name (the name is part of each check's id)."""
    names = [fixture.name for fixture in fixtures]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise CertifyUsageError(f"two fixtures are named {duplicates[0]!r}: give one a 'name' of its own", FIXTURE)
    for fixture in fixtures:
        if not any(fixture.applies_to(family) for family in families):
            raise CertifyUsageError(
                f"fixture {fixture.source}: its inputs {sorted(fixture.inputs)} fit none of the targets' families "
                f"({', '.join(sorted(set(families)))})",
                FIXTURE,
            )
    return [[fixture for fixture in fixtures if fixture.applies_to(family)] for family in families]
