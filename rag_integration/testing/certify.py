"""``rag-integration certify``: run a family's contract kit and the certify checks against any installed backend,
ours or a third party's, and write a JSON report (docs: "Certify").

A backend is certified by subclassing its family's kit, exactly as this project's own tests do, and by the checks of
``certify_checks`` on fixture requests (``certify_fixtures``; the kit's own sample request when none is given).
Adapter values a kit cannot guess (extra options such as a local model folder, or that a dense ranker may return
passages sharing no word with the query) come from the backend's optional ``certification_adapter()`` classmethod,
from the defaults below for this project's backends, and from ``--option KEY=VALUE`` on the command line. The
adapter's ``"kit"`` entry (``"module:Class"``) names a kit to use instead of the family's, e.g. a store-backed variant.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.registry import backend_classes
from rag_integration.testing.certify_checks import Check, Subject, backend_checks, kit_store_root, redact
from rag_integration.testing.certify_fixtures import (
    CertifyUsageError,
    default_fixture,
    fixtures_for,
    load_fixture,
)
from rag_integration.testing.kit import ContractKit

if TYPE_CHECKING:
    from pytest import TestReport

FAMILY_KITS: Mapping[str, tuple[str, str]] = {
    "retrieve": ("rag_integration.testing.retrieve", "RetrieveContractTests"),
    "rerank": ("rag_integration.testing.rerank", "RerankContractTests"),
    "generate": ("rag_integration.testing.generate", "GenerateContractTests"),
    "graph_rag": ("rag_integration.testing.graph_rag", "GraphRagContractTests"),
    "structured": ("rag_integration.testing.structured", "StructuredContractTests"),
    "orchestrator": ("rag_integration.testing.orchestrator", "OrchestratorContractTests"),
}

BUILTIN_ADAPTERS: Mapping[str, Mapping[str, Any]] = {
    "FaissDenseRetriever": {"matches_by_word_overlap": False},
    "HybridRrfRetriever": {"matches_by_word_overlap": False},
    "FlashRankReranker": {"needs_tiny_flashrank_model": True},
    "ExtractiveResponder": {"cites_one_passage": True},
    "LlmResponder": {"paraphrases": True, "empty_answer": {"answer": "", "citations": [], "unsupported": []}},
}


def certifiable(backends: Sequence[str] = ()) -> list[type[SelectorFeatureGroup]]:
    """Installed backends whose family has a kit, optionally only those named (by class name or selector value)."""
    chosen = []
    for cls in backend_classes():
        if cls.FAMILY not in FAMILY_KITS or not cls.is_installed():
            continue
        if backends and cls.__name__ not in backends and cls.BACKEND not in backends:
            continue
        chosen.append(cls)
    return sorted(chosen, key=lambda cls: (cls.FAMILY, str(cls.BACKEND), cls.__name__))


def resolve_targets(targets: Sequence[str] = ()) -> list[type[SelectorFeatureGroup]]:
    """The backends to certify: every certifiable one when no target is given; else each target's, a target being
    a class name or selector value of a discovered backend, or an import path ``module:Class``. A target naming none
    is a ``CertifyUsageError``."""
    if not targets:
        chosen = certifiable()
        if not chosen:
            raise CertifyUsageError("no installed backend with a contract kit; see `rag-integration backends`")
        return chosen
    found: dict[type[SelectorFeatureGroup], None] = {}
    for target in targets:
        classes = [import_target(target)] if ":" in target else certifiable([target])
        if not classes:
            raise CertifyUsageError(
                f"no installed backend with a contract kit matches {target!r}; see `rag-integration backends`, or "
                "name a backend class by its import path, module:Class"
            )
        found.update(dict.fromkeys(classes))
    return list(found)


def import_target(target: str) -> type[SelectorFeatureGroup]:
    """The backend class an import path ``module:Class`` names (the working folder is searched too)."""
    module_name, _, name = target.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        found: object = importlib.import_module(module_name)
    except Exception as error:
        raise CertifyUsageError(f"target {target!r}: cannot import {module_name!r}: {error}") from error
    for part in name.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, SelectorFeatureGroup) and found.BACKEND is not None):
        raise CertifyUsageError(
            f"target {target!r} is not a backend class (a SelectorFeatureGroup subclass with BACKEND set): {found!r}"
        )
    if found.FAMILY not in FAMILY_KITS:
        raise CertifyUsageError(f"target {target!r}: family {found.FAMILY!r} has no contract kit")
    problems = found.declaration_problems()
    if problems:
        raise CertifyUsageError(f"target {target!r} declares wrongly: " + "; ".join(problems))
    if not found.is_installed():
        raise CertifyUsageError(f"target {target!r} needs modules that are not installed: {found.REQUIRED_MODULES}")
    return found


def adapter_for(cls: type[SelectorFeatureGroup], extra_options: Mapping[str, Any]) -> dict[str, Any]:
    adapter: dict[str, Any] = dict(BUILTIN_ADAPTERS.get(cls.__name__, {}))
    hook = getattr(cls, "certification_adapter", None)
    if callable(hook):
        adapter.update(hook())
    options = dict(adapter.pop("backend_options", {}))
    options.update(extra_options)
    if adapter.pop("needs_tiny_flashrank_model", False) and "flashrank_model_dir" not in options:
        from rag_integration.testing.rerank import KIT_TEXTS
        from rag_integration.testing.tiny_flashrank import build_tiny_flashrank_model

        folder = Path(tempfile.mkdtemp(prefix="certify-flashrank-"))
        build_tiny_flashrank_model(folder, KIT_TEXTS)
        options["flashrank_model_dir"] = str(folder)
    adapter["backend_options"] = options
    return adapter


def kit_of(cls: type[SelectorFeatureGroup], adapter: Mapping[str, Any]) -> tuple[str, str]:
    """``(module, class name)`` of the kit certifying ``cls``: the adapter's ``kit``, or its family's."""
    kit = adapter.get("kit")
    if isinstance(kit, str):
        module, name = kit.split(":", 1)
        return module, name
    return FAMILY_KITS[cls.FAMILY]


def certification_module(
    backends: Sequence[type[SelectorFeatureGroup]],
    extra_options: Mapping[str, Any],
    adapters: Mapping[type[SelectorFeatureGroup], Mapping[str, Any]] | None = None,
) -> str:
    """Python source of a pytest module with one kit subclass per backend."""
    lines = ["# Generated by rag-integration certify.", "from typing import Any", ""]
    for cls in backends:
        adapter = dict(adapters[cls] if adapters is not None else adapter_for(cls, extra_options))
        kit_module, kit_name = kit_of(cls, adapter)
        adapter.pop("kit", None)
        lines += [
            f"from {kit_module} import {kit_name}",
            f"from {cls.__module__} import {cls.__name__}",
            "",
            "",
            f"class TestCertify{cls.__name__}({kit_name}):",
            "    @classmethod",
            "    def connector_class(cls) -> Any:",
            f"        return {cls.__name__}",
        ]
        for hook, value in sorted(adapter.items()):
            body = f"{{**super().backend_options(), **{value!r}}}" if hook == "backend_options" else repr(value)
            lines += ["", "    @classmethod", f"    def {hook}(cls) -> Any:", f"        return {body}"]
        lines += ["", ""]
    return "\n".join(lines)


def certification_kit(cls: type[SelectorFeatureGroup], adapter: Mapping[str, Any]) -> ContractKit:
    """An instance of the same kit subclass the generated module declares, for the certify checks' requests."""
    kit_module, kit_name = kit_of(cls, adapter)
    base: type[ContractKit] = getattr(importlib.import_module(kit_module), kit_name)
    options = dict(adapter.get("backend_options", {}))
    namespace: dict[str, Any] = {
        "connector_class": classmethod(lambda kit: cls),
        "backend_options": classmethod(lambda kit: {**base.backend_options(), **options}),
    }
    for hook, value in adapter.items():
        if hook not in ("kit", "backend_options"):
            namespace[hook] = classmethod(lambda kit, value=value: value)
    instance: ContractKit = type(f"Certify{cls.__name__}", (base,), namespace)()
    kit_store_root(instance)
    return instance


REPORT_VERSION = 2
STATUSES = ("pass", "fail", "skip")


def certify(
    backends: Sequence[str] = (),
    options: Sequence[str] = (),
    pytest_args: Sequence[str] = (),
    report: str | Path | None = None,
    fixtures: Sequence[str | Path | Mapping[str, Any]] = (),
    kit: bool = True,
) -> int:
    """Certify backends: 0 when every check passes (certified), 1 when one fails, 2 for a usage error (a target
    naming no backend, a malformed fixture or ``--option``), printed on stderr.

    ``backends`` are class names, selector values or import paths ``module:Class``; ``fixtures`` are fixture files
    (or parsed mappings) of the format ``certify_fixtures`` describes; ``kit=False`` runs the certify checks without
    the family's contract kit. With ``report``, the JSON report is written there (``build_report``).
    """
    try:
        chosen = resolve_targets(backends)
        extra = dict(parse_option(option) for option in options)
        given = fixtures_for([cls.FAMILY for cls in chosen], [load_fixture(source) for source in fixtures])
    except ValueError as error:  # CertifyUsageError, and a malformed --option
        print(f"rag-integration certify: usage error: {error}", file=sys.stderr)
        return 2
    adapters = {cls: adapter_for(cls, extra) for cls in chosen}
    print("certifying: " + ", ".join(f"{cls.FAMILY}/{cls.BACKEND} ({cls.__name__})" for cls in chosen), flush=True)
    collector = CheckCollector(chosen)
    code = run_kits(chosen, extra, adapters, pytest_args, collector) if kit else None
    checks = collector.checks()
    for cls, fixtures_of_cls in zip(chosen, given, strict=True):
        subject = Subject(cls, certification_kit(cls, adapters[cls]))
        own = fixtures_of_cls or [default_fixture(type(subject.kit), cls.FAMILY)]
        for check in backend_checks(subject, own):
            print_check(check)
            checks.append(check)
    document, text = final_report(chosen, checks, code)
    if report is not None:
        Path(report).write_text(text, encoding="utf-8")
    summary = document["summary"]
    verdict = "certified" if document["certified"] else "NOT certified"
    print(f"{verdict}: {summary['pass']} passed, {summary['fail']} failed, {summary['skip']} skipped", flush=True)
    return 0 if document["certified"] else 1


def run_kits(
    chosen: Sequence[type[SelectorFeatureGroup]],
    extra: Mapping[str, Any],
    adapters: Mapping[type[SelectorFeatureGroup], Mapping[str, Any]],
    pytest_args: Sequence[str],
    collector: CheckCollector,
) -> int:
    """The generated kit module run by pytest in this process; pytest's exit code."""
    import pytest

    folder = Path(tempfile.mkdtemp(prefix="rag-integration-certify-"))
    module = folder / "test_certify_backends.py"
    module.write_text(certification_module(chosen, extra, adapters), encoding="utf-8")
    arguments = [str(module), "-q", "-p", "no:cacheprovider", "--rootdir", str(folder)]
    arguments += ["-W", "ignore::pytest.PytestAssertRewriteWarning", *pytest_args]
    return int(pytest.main(arguments, plugins=[collector]))


def print_check(check: Check) -> None:
    print(f"{check.status.upper():4}  {check.id}  ({check.duration_ms:.0f} ms)", flush=True)
    for issue in check.issues:
        print(f"      {redact(issue, list(check.canaries))}", flush=True)


def final_report(
    chosen: Sequence[type[SelectorFeatureGroup]], checks: list[Check], pytest_exit_code: int | None
) -> tuple[dict[str, Any], str]:
    """The report and its JSON text; a secret check whose canary shows in that text fails, and the text is written
    with the canary replaced."""
    canaries = [canary for check in checks for canary in check.canaries]
    text = json.dumps(build_report(chosen, checks, pytest_exit_code), indent=2)
    leaked = [check for check in checks if any(canary in text for canary in check.canaries)]
    for check in leaked:
        check.status = "fail"
        check.issues.append("the secret shows in the certification report (written with it replaced by [canary])")
    document = build_report(chosen, checks, pytest_exit_code)
    return document, redact(json.dumps(document, indent=2), canaries) + "\n"


def build_report(
    chosen: Sequence[type[SelectorFeatureGroup]], checks: Sequence[Check], pytest_exit_code: int | None
) -> dict[str, Any]:
    """``report_version``, ``certified`` (no check failed, one passed, the kit ran to its end), ``targets``,
    ``checks`` (``id``, ``status`` pass/fail/skip, ``duration_ms``, ``issues``, and ``backend``, ``profile`` and a
    check's measurements where they apply) and ``summary`` (counts by status, ``total``, ``pytest_exit_code``)."""
    all_checks = list(checks)
    if pytest_exit_code not in (None, 0, 1, 5):  # 5: every kit test deselected, e.g. by -k
        issue = f"pytest stopped with exit code {pytest_exit_code} (a collection or usage error)"
        all_checks.insert(0, Check("kit", "fail", 0.0, [issue]))
    counts = {status: sum(1 for check in all_checks if check.status == status) for status in STATUSES}
    return {
        "report_version": REPORT_VERSION,
        "certified": counts["fail"] == 0 and counts["pass"] > 0,
        "targets": [
            {"family": cls.FAMILY, "backend": cls.BACKEND, "class": f"{cls.__module__}.{cls.__name__}"}
            for cls in chosen
        ],
        "checks": [check.as_dict() for check in all_checks],
        "summary": {"total": len(all_checks), **counts, "pytest_exit_code": pytest_exit_code},
    }


class CheckCollector:
    """A pytest plugin keeping each kit test's outcome (pass, fail or skip; an xfail is a skip saying so), time and
    failure messages for the certification report."""

    def __init__(self, chosen: Sequence[type[SelectorFeatureGroup]] = ()) -> None:
        self.kit_checks: dict[str, Check] = {}
        self.backends = {f"TestCertify{cls.__name__}": str(cls.BACKEND) for cls in chosen}

    def pytest_runtest_logreport(self, report: TestReport) -> None:
        check_id = report.nodeid.split("::", 1)[-1]
        check = self.kit_checks.get(report.nodeid)
        if check is None:
            backend = self.backends.get(check_id.split("::", 1)[0])
            check = self.kit_checks[report.nodeid] = Check(check_id, "pass", 0.0, [], backend)
        check.duration_ms += report.duration * 1000.0
        reason = getattr(report, "wasxfail", None)
        if report.failed:
            check.status = "fail"
            check.issues.append(f"{report.when}: {_failure_message(report)}")
        elif report.skipped and check.status != "fail":
            check.status = "skip"
            check.issues.append(f"xfail: {reason}" if reason is not None else _failure_message(report))
        elif report.when == "call" and reason is not None:
            check.issues.append(f"xpass: {reason} (the known failure did not happen)")

    def checks(self) -> list[Check]:
        return list(self.kit_checks.values())

    def report(self, chosen: Sequence[type[SelectorFeatureGroup]], exit_code: int) -> dict[str, Any]:
        """The report of the kit tests alone."""
        return build_report(chosen, self.checks(), exit_code)


def _failure_message(report: TestReport) -> str:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return str(crash.message)[:500]
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[-1])[:500]
    lines = [line for line in str(report.longreprtext).splitlines() if line.strip()]
    return lines[-1][:500] if lines else "no message"


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE as JSON, or as a plain string when it is not JSON."""
    key, separator, raw = text.partition("=")
    if not separator or not key:
        raise ValueError(f"--option takes KEY=VALUE (VALUE as JSON, or a plain string), got {text!r}")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


if __name__ == "__main__":
    sys.exit(certify(sys.argv[1:]))
