"""``rag-integration certify``: run a family's contract kit and the certify checks against any installed backend,
ours or a third party's, and write a JSON report (docs: "Certify").

A run is validated once, before anything runs: ``plan_certify`` resolves the targets, the ``--option`` texts and the
fixtures into a ``CertifyPlan`` (or raises one ``CertifyUsageError`` naming the argument at fault), and ``run_plan``
runs it. A backend is certified by one subclass of its family's kit per backend (``certification_kit_class``),
exactly as this project's own tests subclass it: pytest runs it from a generated module, and the checks of
``certify_checks`` send their fixture requests (``certify_fixtures``; the kit's own sample request when none is
given) through it. Adapter values a kit cannot guess (extra options such as a local model folder, or that a dense
ranker may return passages sharing no word with the query) come from the backend's own ``certification_adapter()``
classmethod and from ``--option KEY=VALUE`` on the command line. The adapter's ``"kit"`` entry (``"module:Class"``)
names a kit to use instead of the family's, e.g. a store-backed variant; ``"needs_tiny_flashrank_model": True`` asks
for an offline flashrank model folder (``tiny_flashrank``) in ``flashrank_model_dir`` unless one is given.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.request_options import SHARED_OPTIONS
from rag_integration.core.errors import ConnectorError
from rag_integration.core.options import OptionReader, option_specs
from rag_integration.registry import installed_backends
from rag_integration.testing.certify_checks import Check, Subject, backend_checks, kit_store_root, redact
from rag_integration.testing.certify_fixtures import (
    CertifyUsageError,
    Fixture,
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


def certifiable(backends: Sequence[str] = ()) -> list[type[SelectorFeatureGroup]]:
    """Installed backends whose family has a kit, optionally only those named (by class name or selector value)."""
    chosen = [cls for cls in installed_backends(backends) if cls.FAMILY in FAMILY_KITS]
    return sorted(chosen, key=lambda cls: (cls.FAMILY, str(cls.BACKEND), cls.__name__))


TARGET = "TARGET"
"""The argument a target's usage error concerns (``CertifyUsageError.param``)."""
OPTION = "--option"
REPORT = "--report"
"""The argument a malformed ``KEY=VALUE`` concerns."""


def resolve_targets(targets: Sequence[str] = ()) -> list[type[SelectorFeatureGroup]]:
    """The backends to certify: every certifiable one when no target is given; else each target's, a target being
    a class name or selector value of a discovered backend, or an import path ``module:Class``. A target naming none
    is a ``CertifyUsageError`` (``param`` ``"TARGET"``)."""
    if not targets:
        chosen = certifiable()
        if not chosen:
            raise CertifyUsageError("no installed backend with a contract kit; see `rag-integration backends`", TARGET)
        return chosen
    found: dict[type[SelectorFeatureGroup], None] = {}
    for target in targets:
        classes = [import_target(target)] if ":" in target else certifiable([target])
        if not classes:
            raise CertifyUsageError(
                f"no installed backend with a contract kit matches {target!r}; see `rag-integration backends`, or "
                "name a backend class by its import path, module:Class",
                TARGET,
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
        raise CertifyUsageError(f"target {target!r}: cannot import {module_name!r}: {error}", TARGET) from error
    for part in name.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, SelectorFeatureGroup) and found.BACKEND is not None):
        raise CertifyUsageError(
            f"target {target!r} is not a backend class (a SelectorFeatureGroup subclass with BACKEND set): {found!r}",
            TARGET,
        )
    if found.FAMILY not in FAMILY_KITS:
        raise CertifyUsageError(f"target {target!r}: family {found.FAMILY!r} has no contract kit", TARGET)
    problems = found.declaration_problems()
    if problems:
        raise CertifyUsageError(f"target {target!r} declares wrongly: " + "; ".join(problems), TARGET)
    if not found.is_installed():
        raise CertifyUsageError(
            f"target {target!r} needs modules that are not installed: {found.REQUIRED_MODULES}", TARGET
        )
    return found


def parse_options(texts: Sequence[str]) -> dict[str, Any]:
    """``--option`` texts as options, later keys winning; a ``CertifyUsageError`` (``param`` ``"--option"``) for a
    text that is not ``KEY=VALUE``."""
    return dict(parse_option(text) for text in texts)


@dataclass(frozen=True)
class CertifyPlan:
    """A certify run with every argument checked (``plan_certify``): what ``run_plan`` runs."""

    targets: tuple[type[SelectorFeatureGroup], ...]
    """The backends, in the order they are certified."""
    options: Mapping[str, Any]
    """The ``--option`` values, added to every request of the kit and of the checks."""
    fixtures: tuple[tuple[Fixture, ...], ...]
    """Per target, the given fixtures its family takes (none: its kit's sample request)."""
    kit: bool = True
    """Whether the family's contract kit runs before the checks."""
    report: Path | None = None
    """Where the JSON report is written (not checked here)."""
    pytest_args: tuple[str, ...] = ()
    """Further pytest arguments of the kit run (``-k``, ``-x``)."""


def plan_certify(
    targets: Sequence[str] = (),
    options: Sequence[str] = (),
    fixtures: Sequence[str | Path | Mapping[str, Any]] = (),
    *,
    kit: bool = True,
    report: str | Path | None = None,
    pytest_args: Sequence[str] = (),
) -> CertifyPlan:
    """Everything a certify run takes, checked once, before anything runs: the ``--option KEY=VALUE`` texts, the
    targets (class names, selector values or ``module:Class``; none: every certifiable backend) and the fixtures
    (files, or parsed mappings), in that order. The first problem is a ``CertifyUsageError`` whose ``param`` names
    the argument at fault: ``"--option"``, ``"TARGET"`` or ``"--fixture"``."""
    extra = parse_options(options)
    chosen = resolve_targets(targets)
    check_option_values(chosen, extra)
    given = fixtures_for([cls.FAMILY for cls in chosen], [load_fixture(source) for source in fixtures])
    return CertifyPlan(
        targets=tuple(chosen),
        options=extra,
        fixtures=tuple(tuple(own) for own in given),
        kit=kit,
        report=None if report is None else writable_report(Path(report)),
        pytest_args=tuple(pytest_args),
    )


def check_option_values(targets: Sequence[type[SelectorFeatureGroup]], extra: Mapping[str, Any]) -> None:
    """Each ``--option`` value a target declares (or every request shares) read as the request would read it: a
    value of the wrong type is the caller's usage error, not a backend that fails its certification."""
    for cls in targets:
        specs = {spec.key: spec for spec in SHARED_OPTIONS}
        for klass in reversed(cls.__mro__):
            settings = klass.__dict__.get("SETTINGS")
            specs.update({spec.key: spec for spec in option_specs(settings)} if settings is not None else {})
        for key, value in extra.items():
            if key in specs:
                try:
                    specs[key].read(OptionReader({key: value}))
                except ConnectorError as error:
                    raise CertifyUsageError(f"--option {key}: {error}", OPTION) from error


def writable_report(path: Path) -> Path:
    """``--report``'s path, checked before any check runs: a file (new or not) in a folder that exists and can be
    written."""
    folder = path.parent
    if path.is_dir():
        raise CertifyUsageError(f"--report {path}: a folder, expected a file path", REPORT)
    if not folder.is_dir():
        raise CertifyUsageError(f"--report {path}: the folder {folder} does not exist", REPORT)
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CertifyUsageError(f"--report {path}: cannot be written here", REPORT)
    return path


def adapter_for(cls: type[SelectorFeatureGroup], extra_options: Mapping[str, Any]) -> dict[str, Any]:
    """The kit adapter certifying ``cls``: its ``certification_adapter()``, ``extra_options`` (``--option``) over
    its ``backend_options``, and an offline flashrank model folder where it asks for one."""
    adapter = dict(cls.certification_adapter())
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


def certification_kit_class(cls: type[SelectorFeatureGroup], adapter: Mapping[str, Any]) -> type[ContractKit]:
    """The one kit subclass certifying ``cls``, ``TestCertify<Class>``: as a backend's own test subclasses its
    family's kit, with ``connector_class`` returning ``cls``, the adapter's ``backend_options`` over the kit's, and
    each other adapter entry as the kit hook of its name returning its value. pytest runs it (``run_kits``) and the
    certify checks send their requests through an instance of it."""
    kit_module, kit_name = kit_of(cls, adapter)
    base: type[ContractKit] = getattr(importlib.import_module(kit_module), kit_name)
    options = dict(adapter.get("backend_options", {}))

    def backend_options(kit: type[ContractKit]) -> dict[str, Any]:
        kits_own: dict[str, Any] = cast(Any, super(certified, kit)).backend_options()
        return {**kits_own, **copy.deepcopy(options)}

    namespace: dict[str, Any] = {
        "__module__": CERTIFICATION_MODULE,
        "connector_class": classmethod(lambda kit: cls),
        "backend_options": classmethod(backend_options),
    }
    for hook, value in adapter.items():
        if hook not in ("kit", "backend_options"):
            namespace[hook] = classmethod(lambda kit, value=value: copy.deepcopy(value))
    certified: type[ContractKit] = type(f"TestCertify{cls.__name__}", (base,), namespace)
    return certified


CERTIFICATION_MODULE = "test_certify_backends"
"""The generated pytest module holding the kit subclasses of a run (``certification_module``)."""
_RUNNING_KITS: dict[str, type[ContractKit]] = {}
"""The kit subclasses of the kit run under way, by class name, for the generated module to take."""


def running_kit(name: str) -> type[ContractKit]:
    """A kit subclass of the kit run under way (``run_kits``), by class name: what the generated module declares."""
    return _RUNNING_KITS[name]


def certification_module(kits: Sequence[type[ContractKit]]) -> str:
    """Python source of the pytest module declaring ``kits`` (``certification_kit_class``) under their names."""
    lines = [
        "# Generated by rag-integration certify: one subclass of its family's contract kit per backend,",
        "# built by rag_integration.testing.certify.certification_kit_class.",
        "from rag_integration.testing.certify import running_kit",
        "",
    ]
    lines += [f"{kit.__name__} = running_kit({kit.__name__!r})" for kit in kits]
    return "\n".join(lines) + "\n"


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
    the family's contract kit. With ``report``, the JSON report is written there (``build_report``). The arguments
    are checked by ``plan_certify`` and the plan run by ``run_plan``.
    """
    try:
        plan = plan_certify(backends, options, fixtures, kit=kit, report=report, pytest_args=pytest_args)
    except CertifyUsageError as error:
        print(f"rag-integration certify: usage error: {error}", file=sys.stderr)
        return 2
    return run_plan(plan)


def run_plan(plan: CertifyPlan) -> int:
    """Run a checked certify run: the kit (unless ``plan.kit`` is False), then the certify checks of each target on
    its fixtures, printed as they end; the report written to ``plan.report``. 0 when certified, else 1."""
    chosen = plan.targets
    kits = [certification_kit_class(cls, adapter_for(cls, plan.options)) for cls in chosen]
    print("certifying: " + ", ".join(f"{cls.FAMILY}/{cls.BACKEND} ({cls.__name__})" for cls in chosen), flush=True)
    collector = CheckCollector(chosen)
    with tempfile.TemporaryDirectory(prefix="rag-integration-certify-") as scratch:  # removed when the run ends
        code = run_kits(kits, plan.pytest_args, collector, Path(scratch) / "kits") if plan.kit else None
        checks = collector.checks()
        for number, (cls, kit_class, fixtures_of_cls) in enumerate(zip(chosen, kits, plan.fixtures, strict=True)):
            subject = Subject(cls, certification_kit(kit_class, Path(scratch) / "stores" / str(number)))
            own = list(fixtures_of_cls) or [default_fixture(kit_class, cls.FAMILY)]
            for check in backend_checks(subject, own):
                print_check(check)
                checks.append(check)
    document, text = final_report(chosen, checks, code)
    if plan.report is not None:
        plan.report.write_text(text, encoding="utf-8")
    summary = document["summary"]
    verdict = "certified" if document["certified"] else "NOT certified"
    print(f"{verdict}: {summary['pass']} passed, {summary['fail']} failed, {summary['skip']} skipped", flush=True)
    return 0 if document["certified"] else 1


def certification_kit(kit_class: type[ContractKit], stores: Path) -> ContractKit:
    """An instance of a run's kit subclass for the certify checks' requests, with what its pytest fixtures would
    set (``stores``, a folder for the stores it builds)."""
    instance = kit_class()
    kit_store_root(instance, stores)
    return instance


def run_kits(
    kits: Sequence[type[ContractKit]], pytest_args: Sequence[str], collector: CheckCollector, folder: Path
) -> int:
    """The kit subclasses run by pytest in this process, from a generated module declaring them in ``folder``;
    pytest's exit code."""
    import pytest

    folder.mkdir(parents=True, exist_ok=True)
    module = folder / f"{CERTIFICATION_MODULE}.py"
    module.write_text(certification_module(kits), encoding="utf-8")
    arguments = [str(module), "-q", "-p", "no:cacheprovider", "--rootdir", str(folder)]
    arguments += ["--basetemp", str(folder / "pytest")]  # the kits' tmp_path folders go with the run's folder
    arguments += ["-W", "ignore::pytest.PytestAssertRewriteWarning", *pytest_args]
    _RUNNING_KITS.clear()
    _RUNNING_KITS.update({kit.__name__: kit for kit in kits})
    try:
        return int(pytest.main(arguments, plugins=[collector]))
    finally:
        _RUNNING_KITS.clear()


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
    """``KEY=VALUE`` with VALUE as JSON, or as a plain string when it is not JSON; else a ``CertifyUsageError`` (a
    ``ValueError``) on ``--option``."""
    key, separator, raw = text.partition("=")
    if not separator or not key:
        raise CertifyUsageError(f"--option takes KEY=VALUE (VALUE as JSON, or a plain string), got {text!r}", OPTION)
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


if __name__ == "__main__":
    sys.exit(certify(sys.argv[1:]))
