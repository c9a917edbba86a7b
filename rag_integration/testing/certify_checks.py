"""The checks ``rag-integration certify`` runs besides the family's contract kit, each on a fixture request (docs:
"Certify"): the fixture's expected answer, replay (in this process and a fresh one), typed refusals of invalid
requests, each profile's latency budget, and that a secret option never shows anywhere."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import secrets
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.documents.visibility import PRINCIPALS, READERS, PrincipalsRequiredError
from rag_integration.core.errors import (
    ConnectorError,
    InvalidOptionError,
    MissingOptionError,
    UnknownOptionError,
    UnknownProfileError,
)
from rag_integration.core.indexes.memory import forget_built
from rag_integration.core.options import option_specs
from rag_integration.testing.certify_fixtures import DOCUMENT_LISTS, FAMILY_INPUTS, Fixture
from rag_integration.testing.graph_rag import edge_ends
from rag_integration.testing.kit import ContractKit, KitItemRows
from rag_integration.testing.runner import query_and_corpus_errors, run_feature, run_in_fresh_process

SHAPING_OPTIONS = frozenset({"return_metadata", "explain", "filters"})
"""Options that change what a row holds: with any of them the kit's row contract (written for rows without them) is
not checked on the fixture's row."""
BAD_VALUES: Mapping[str, object] = {
    "integer": "certify-not-an-integer",
    "number": "certify-not-a-number",
    "boolean": "certify-not-a-bool",
    "choice": "certify-not-a-choice",
    "string": 12345,
    "path": 12345,
    "sequence": 12345,
    "mapping": 12345,
    "string_or_strings": 12345,
}
"""A value of the wrong type for each option kind: what a backend's own declared options must refuse."""
UNKNOWN_OPTION = "certify_not_an_option"
UNKNOWN_PROFILE = "certify-no-such-profile"
CANARY_PREFIX = "certify-canary-"


@dataclass
class Check:
    id: str
    status: str
    duration_ms: float
    issues: list[str]
    backend: str | None = None
    profile: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    canaries: tuple[str, ...] = ()
    """The secrets a secret check planted: never written, looked for in the report."""

    def as_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 3),
            "issues": list(self.issues),
        }
        if self.backend is not None:
            document["backend"] = self.backend
        if self.profile is not None:
            document["profile"] = self.profile
        return {**document, **self.details}


class Subject:
    """One backend under certification; its kit (with the backend's adapter) builds and sends the requests."""

    def __init__(self, cls: type[SelectorFeatureGroup], kit: ContractKit) -> None:
        self.cls = cls
        self.kit = kit
        self.answers: dict[str, list[Any]] = {}
        """The rows each fixture's request gave first, by fixture name."""

    @property
    def backend(self) -> str:
        return str(self.cls.BACKEND)

    def request(
        self, fixture: Fixture, changes: Mapping[str, Any] | None = None, drop: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """The fixture's request for this backend, with ``changes`` and without the ``drop`` keys."""
        options = fixture.request(self.kit.query_option, **(changes or {}))
        return self.kit.request(**{key: value for key, value in options.items() if key not in drop})

    def run(self, request: Mapping[str, Any]) -> list[Any]:
        return run_feature(self.kit.feature_name, request, {self.cls, KitItemRows})

    def check(
        self, name: str, body: Callable[[list[str], dict[str, Any]], str | None], profile: str | None = None
    ) -> Check:
        """Runs ``body(issues, details)``; its status is what it returns, else fail with issues and pass without."""
        issues: list[str] = []
        details: dict[str, Any] = {}
        start = time.perf_counter()
        try:
            status = body(issues, details)
        except Exception as error:  # a check that breaks is a failed check, reported like any other
            issues.append(f"raised {describe(error)}")
            status = "fail"
        elapsed = (time.perf_counter() - start) * 1000.0
        status = status or ("fail" if issues else "pass")
        return Check(f"{self.cls.__name__}::{name}", status, elapsed, issues, self.backend, profile, details)


def describe(error: BaseException, limit: int = 300) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cut(value: object, limit: int = 200) -> str:
    text = json.dumps(value, default=repr, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def comparable(keys: Any) -> list[Any]:
    """Answer keys as the fixture writes them: doc ids as strings (a JSON fixture may give an int)."""
    return [str(key) if isinstance(key, int | str) and not isinstance(key, bool) else key for key in keys]


def fixture_check(subject: Subject, fixture: Fixture) -> Check:
    """The fixture's request answers with one row keeping the family's row contract, starting as it expects."""

    def body(issues: list[str], details: dict[str, Any]) -> str | None:
        request = subject.request(fixture)
        try:
            rows = subject.run(request)
        except Exception as error:
            issues.append(f"the fixture request failed: {describe(error)}")
            return None
        subject.answers[fixture.name] = rows
        if len(rows) != 1:
            issues.append(f"one query gave {len(rows)} rows: {cut(rows)}")
            return None
        row = rows[0]
        if not SHAPING_OPTIONS & set(fixture.options):
            try:
                subject.kit.check_row(row, request)
            except AssertionError as error:
                issues.append(f"the row breaks the {subject.cls.FAMILY} row contract: {str(error)[:300] or 'assert'}")
        keys = comparable(subject.kit.answer_keys(row))
        details["answer_keys"] = keys[:10]
        if fixture.expect_top is not None:
            expected = comparable(fixture.expect_top)
            if keys[: len(expected)] != expected:
                issues.append(f"expect.top is {cut(expected)}, but the answer starts {cut(keys[: len(expected) + 2])}")
        answer = row.get("answer") if isinstance(row, Mapping) else None
        for text in fixture.answer_contains:
            if not isinstance(answer, str) or text not in answer:
                issues.append(f"expect.answer_contains {text!r} is not in the answer {cut(answer)}")
        return None

    return subject.check(f"fixture[{fixture.name}]", body, fixture.profile)


def replay_check(subject: Subject, fixture: Fixture) -> Check:
    """The fixture's request answered again in this process (its built indexes forgotten) and in a fresh process
    (another hash seed) gives the same rows."""

    def body(issues: list[str], details: dict[str, Any]) -> str | None:
        request = subject.request(fixture)
        first = subject.answers.get(fixture.name)
        if first is None:
            first = subject.run(request)
        forget_built()
        again = subject.run(request)
        if again != first:
            issues.append(f"answered twice in one process, the rows differ: first {cut(first)}, then {cut(again)}")
        if subject.cls.__module__ == "__main__":
            issues.append(
                "not replayed in a fresh process: the backend class lives in __main__, which it cannot import"
            )
            return "fail" if len(issues) > 1 else "skip"
        try:
            with _child_import_path():
                fresh = run_in_fresh_process(subject.kit.feature_name, request, subject.cls)
        except subprocess.CalledProcessError as error:
            last = (error.stderr or "").strip().splitlines()[-1:] or ["no output"]
            issues.append(f"the fresh process failed: {last[0][:300]}")
            return None
        if fresh != json.loads(json.dumps(first, default=repr)):
            issues.append(f"a fresh process answered differently: here {cut(first)}, there {cut(fresh)}")
        return None

    return subject.check(f"replay[{fixture.name}]", body, fixture.profile)


@contextlib.contextmanager
def _child_import_path() -> Iterator[None]:
    """A fresh process imports the backend from wherever this one did (a plugin folder on ``sys.path``)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(path or os.getcwd() for path in sys.path)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


Case = tuple[str, dict[str, Any], type[ConnectorError], str]


def invalid_cases(subject: Subject, fixture: Fixture) -> list[Case]:
    """(what is wrong, request, typed error, the option its message names) for each invalid request."""
    kit, query = subject.kit, subject.kit.query_option
    inputs = FAMILY_INPUTS.get(subject.cls.FAMILY, ())
    cases: list[Case] = []
    if kit.items_option == "corpus" and "corpus" in fixture.inputs:
        corpus = list(fixture.inputs["corpus"])
        for options, error, name in query_and_corpus_errors(corpus):
            label = {key: "<the fixture's corpus>" if value is corpus else value for key, value in options.items()}
            cases.append((cut(label, 120), kit.request(**{**fixture.options, **options}), error, name))
    else:
        cases.append(("no query", subject.request(fixture, drop=(query,)), MissingOptionError, query))
        cases.append(("a query that is a number", subject.request(fixture, {query: 5}), InvalidOptionError, query))
        if kit.items_option is not None:
            items = kit.items_option
            cases.append((f"no {items}", subject.request(fixture, drop=inputs), MissingOptionError, items))
            cases.append((f"{items} as a string", subject.request(fixture, {items: "text"}), InvalidOptionError, items))
    cases.append(
        ("an unknown profile", subject.request(fixture, {"profile": UNKNOWN_PROFILE}), UnknownProfileError, "profile")
    )
    cases.append(
        ("an unknown option", subject.request(fixture, {UNKNOWN_OPTION: 1}), UnknownOptionError, UNKNOWN_OPTION)
    )
    settings = subject.cls.SETTINGS
    for spec in option_specs(settings) if settings is not None else ():
        bad = BAD_VALUES[spec.kind]
        cases.append((f"{spec.key}={bad!r}", subject.request(fixture, {spec.key: bad}), InvalidOptionError, spec.key))
    return cases


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from or during, each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def typed_error(error: BaseException, wanted: type[ConnectorError]) -> BaseException | None:
    """``error`` or the first error of its cause chain that is a ``wanted``."""
    return next((link for link in error_chain(error) if isinstance(link, wanted)), None)


def invalid_requests_check(subject: Subject, fixture: Fixture) -> Check:
    """Every invalid request is refused with its typed error (itself or in its cause chain) naming the option."""

    def body(issues: list[str], details: dict[str, Any]) -> str | None:
        cases = invalid_cases(subject, fixture)
        details["requests"] = len(cases)
        for label, request, wanted, option in cases:
            try:
                subject.run(request)
            except Exception as error:
                found = typed_error(error, wanted)
                if found is None:
                    issues.append(f"{label}: raised {describe(error, 200)}, not a {wanted.__name__}")
                elif option not in str(found):
                    issues.append(f"{label}: the {wanted.__name__} does not name {option!r}: {str(found)[:200]}")
                continue
            issues.append(f"{label}: answered instead of raising {wanted.__name__}")
        return None

    return subject.check("invalid_requests", body)


def visibility_check(subject: Subject, fixture: Fixture) -> Check:
    """Every other input item readable by the principal: the answer is the one over the readable items alone (same
    keys, order and scores within 1e-6; a remote engine holding its own corpus only returns nothing hidden), no
    answer names a hidden item, and the labelled request without ``principals`` is refused."""

    def body(issues: list[str], details: dict[str, Any]) -> str | None:
        family = subject.cls.FAMILY
        key = FAMILY_INPUTS[family][0]
        items = [dict(item) for item in fixture.inputs[key]]
        if key in DOCUMENT_LISTS:
            for position, item in enumerate(items):
                item.setdefault("doc_id", str(position))
        labelled = [
            {**item, READERS: [VISIBLE_TO if position % 2 == 0 else HIDDEN_FROM]} for position, item in enumerate(items)
        ]
        readable = items[::2]
        plain: dict[str, Any] = {key: readable}
        if "edges" in fixture.inputs:
            names = {str(item["doc_id"]) for item in readable}
            plain["edges"] = [
                edge for edge in fixture.inputs["edges"] if {str(end) for end in edge_ends(edge)} <= names
            ]
        hidden = {str(item["doc_id"]) for item in items[1::2]} if key in DOCUMENT_LISTS else set()
        details["readable"], details["hidden"] = len(readable), len(items) - len(readable)
        got = subject.run(subject.request(fixture, {key: labelled, PRINCIPALS.key: [VISIBLE_TO]}))
        leaked = sorted({str(k) for row in got for k in subject.kit.answer_keys(row) if str(k) in hidden})
        if leaked:
            issues.append(f"answered with {len(leaked)} item(s) only another principal may read: {cut(leaked)}")
        if not getattr(subject.kit, "engine_holds_its_own_corpus", lambda: False)():
            want = subject.run(subject.request(fixture, plain))
            if not _close(got, want):
                issues.append(f"with principals {cut(got)}, but over the readable items alone {cut(want)}")
        try:
            subject.run(subject.request(fixture, {key: labelled}))
        except Exception as error:
            if typed_error(error, PrincipalsRequiredError) is None:
                issues.append(f"labelled data without principals raised {describe(error, 200)}")
        else:
            issues.append("labelled data without principals was answered instead of refused")
        return None

    return subject.check("visibility", body)


VISIBLE_TO = "certify-reader"
HIDDEN_FROM = "certify-other"


def _close(got: Any, want: Any) -> bool:
    """Equal, numbers within 1e-6 relative: scores made from the same statistics in another order of sums."""
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(got, Mapping) and isinstance(want, Mapping):
        return got.keys() == want.keys() and all(_close(got[k], want[k]) for k in got)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return len(got) == len(want) and all(_close(a, b) for a, b in zip(got, want, strict=True))
    return bool(got == want)


def deadline_checks(subject: Subject, fixture: Fixture) -> list[Check]:
    """Each profile's request, timed cold (indexes forgotten) and then warm; the warm one must keep the budget."""
    checks = []
    for name, profile in subject.cls.profiles().items():

        def body(
            issues: list[str], details: dict[str, Any], name: str = name, budget: int = profile.budget_ms
        ) -> str | None:
            request = subject.request(fixture, {"profile": name})
            forget_built()
            start = time.perf_counter()
            subject.run(request)
            cold = (time.perf_counter() - start) * 1000.0
            start = time.perf_counter()
            subject.run(request)
            warm = (time.perf_counter() - start) * 1000.0
            details.update(budget_ms=budget, cold_ms=round(cold, 1), warm_ms=round(warm, 1))
            if warm > budget:
                issues.append(f"the warm request took {warm:.0f} ms, over profile {name!r}'s budget of {budget} ms")
            elif cold > budget:  # reported, not held against the profile
                issues.append(f"note: the cold request (indexes built) took {cold:.0f} ms, over the {budget} ms")
                return "pass"
            return None

        checks.append(subject.check(f"deadline[{name}]", body, name))
    return checks


def secret_check(subject: Subject, fixture: Fixture) -> Check:
    """A canary secret in each ``SECRET_OPTIONS`` entry must show in no row, error, log record or output."""
    declared = dict(subject.cls.SECRET_OPTIONS)
    canary = CANARY_PREFIX + secrets.token_hex(8)

    def body(issues: list[str], details: dict[str, Any]) -> str | None:
        if not declared:
            issues.append("the backend declares no SECRET_OPTIONS")
            return "skip"
        details["secret_options"] = sorted(declared)
        planted: dict[str, str] = {}
        variables: list[str] = []
        for key, kind in sorted(declared.items()):
            if kind == "env":
                variable = "CERTIFY_CANARY_" + secrets.token_hex(4).upper()
                os.environ[variable] = canary
                variables.append(variable)
                planted[key] = variable
            else:
                planted[key] = canary
        texts: list[tuple[str, str]] = []
        failure: BaseException | None = None
        try:
            with captured(texts):
                try:
                    rows = subject.run(subject.request(fixture, planted))
                    texts += [("the fixture request's rows", json.dumps(rows, default=repr) + repr(rows))]
                except Exception as error:
                    failure = error
                    texts.append(("the fixture request's error", error_text(error)))
                for label, request in (
                    ("an unknown option", subject.request(fixture, {**planted, UNKNOWN_OPTION: 1})),
                    ("no query", subject.request(fixture, planted, drop=(subject.kit.query_option,))),
                ):
                    try:
                        subject.run(request)
                    except Exception as error:
                        texts.append((f"the error of a request with {label}", error_text(error)))
        finally:
            for variable in variables:
                os.environ.pop(variable, None)
        leaks = sorted({where for where, text in texts if canary in text})
        for where in leaks:
            issues.append(f"the secret of {', '.join(sorted(declared))} shows in {where}")
        if not leaks and failure is not None:
            issues.append(
                f"the fixture request failed ({describe(failure).replace(canary, '[canary]')}), so only its error, the "
                "logs and the output were searched: certify with the options the backend needs to answer (a "
                "reachable server, e.g. --option llm_base_url=...)"
            )
            return "skip"
        return None

    check = subject.check("secret", body)
    check.canaries = (canary,)
    return check


def error_text(error: BaseException) -> str:
    """The error as anyone could see it: its traceback with the cause chain, and each error's str and repr."""
    parts = ["".join(traceback.format_exception(error))]
    for link in error_chain(error):
        parts += [str(link), repr(link)]
    return "\n".join(parts)


class _Recorder(logging.Handler):
    def __init__(self, texts: list[tuple[str, str]]) -> None:
        super().__init__(logging.DEBUG)
        self.texts = texts
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception as error:  # a record that cannot be formatted still shows its parts
            text = f"{record.msg!r} {record.args!r} ({error})"
        self.texts.append((f"a {record.levelname} log record of logger {record.name!r}", text))


@contextlib.contextmanager
def captured(texts: list[tuple[str, str]]) -> Iterator[None]:
    """Everything logged (the root logger at DEBUG) and written to stdout and stderr, by Python or by a library
    writing to the file descriptors, appended to ``texts`` as (where, text)."""
    root = logging.getLogger()
    recorder, level = _Recorder(texts), root.level
    root.addHandler(recorder)
    root.setLevel(logging.DEBUG)
    python_out, python_err = io.StringIO(), io.StringIO()
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            with contextlib.redirect_stdout(python_out), contextlib.redirect_stderr(python_err):
                yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            root.removeHandler(recorder)
            root.setLevel(level)
            for where, python, raw in (("stdout", python_out, out), ("stderr", python_err, err)):
                raw.seek(0)
                texts.append((where, python.getvalue() + raw.read().decode("utf-8", "replace")))


def backend_checks(subject: Subject, fixtures: list[Fixture]) -> list[Check]:
    """Every check of one backend: each fixture's answer and replay, then on the first fixture the invalid
    requests, visibility, each profile's budget and the secret."""
    checks: list[Check] = []
    for fixture in fixtures:
        checks += [fixture_check(subject, fixture), replay_check(subject, fixture)]
    first = fixtures[0]
    checks.append(invalid_requests_check(subject, first))
    checks.append(visibility_check(subject, first))
    checks += deadline_checks(subject, first)
    checks.append(secret_check(subject, first))
    return checks


def redact(text: str, canaries: list[str]) -> str:
    for canary in canaries:
        text = text.replace(canary, "[canary]")
    return text


def kit_store_root(kit: ContractKit, folder: Path) -> None:
    """What a kit's pytest fixtures would set on it outside pytest: a folder for stores it builds."""
    folder.mkdir(parents=True, exist_ok=True)
    kit.store_root = folder  # type: ignore[attr-defined]
