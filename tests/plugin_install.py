"""Install a plugin distribution into a folder the way a wheel installer does (its files and a ``.dist-info`` with
``METADATA`` and ``entry_points.txt``), then run Python code in a fresh interpreter that sees it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path


def install_distribution(
    site: Path,
    name: str,
    files: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
    requires: Sequence[str] = (),
    version: str = "0.1.0",
) -> Path:
    """Write ``files`` (relative path -> source) and the distribution's metadata under ``site``."""
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    extras = sorted(
        {requirement.split("extra ==")[1].strip(" '\"") for requirement in requires if "extra ==" in requirement}
    )
    metadata += [f"Provides-Extra: {extra}" for extra in extras]
    (info / "METADATA").write_text("\n".join(metadata) + "\n", encoding="utf-8")
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return info


def run_with(
    site: Path, code: str, timeout: float = 120, arguments: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """``code`` (with ``arguments`` as ``sys.argv[1:]``) in a new interpreter whose path starts with ``site``."""
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=path),
        cwd=site,
    )
