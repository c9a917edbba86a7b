"""``certify``: a backend's contract kit and the certify checks, its arguments checked once before any check runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rag_integration.application.arguments import literal
from rag_integration.core.errors import ArgumentError

ARGUMENTS = {"TARGET": "target", "--option": "option", "--fixture": "fixture", "--report": "report"}
"""certify's own name of the argument a usage error concerns -> the application's."""


def certify(
    targets: Sequence[str] = (),
    *,
    options: Sequence[str] = (),
    fixtures: Sequence[Path] = (),
    report: Path | None = None,
    kit: bool = True,
) -> int:
    """Certify ``targets`` (default: every backend with a kit); the exit code: 0 certified, 1 not. The kits (and
    pytest under them) are imported only here, so no other command pays for them."""
    from rag_integration.testing.certify import plan_certify, run_plan
    from rag_integration.testing.certify_fixtures import CertifyUsageError

    try:
        plan = plan_certify(targets, options, fixtures, kit=kit, report=report)
    except CertifyUsageError as error:
        raise ArgumentError(ARGUMENTS.get(error.param or "", "target"), literal(str(error))) from error
    return run_plan(plan)
