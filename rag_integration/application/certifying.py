"""``certify``: a backend's contract kit and the certify checks, its arguments checked before any check runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rag_integration.application.arguments import literal, parse_options
from rag_integration.core.errors import ArgumentError


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
    from rag_integration.testing.certify import certify as run_certify
    from rag_integration.testing.certify import resolve_targets
    from rag_integration.testing.certify_fixtures import CertifyUsageError, fixtures_for, load_fixture

    parse_options(options, "option")
    try:
        chosen = resolve_targets(targets)
    except CertifyUsageError as error:
        raise ArgumentError("target", literal(str(error))) from error
    try:
        fixtures_for([cls.FAMILY for cls in chosen], [load_fixture(path) for path in fixtures])
    except CertifyUsageError as error:
        raise ArgumentError("fixture", literal(str(error))) from error
    return run_certify(list(targets), list(options), report=report, fixtures=list(fixtures), kit=kit)
