"""Every ```python block in README.md and docs/*.md runs, so the examples a reader copies work as printed.

The blocks of one page run in order in one namespace (a later block may use an earlier one's names), in a fresh
working folder. A block that cannot run here (it needs a live LLM server, say) is marked by the line
``<!-- not-run: reason -->`` directly above its fence. A block with ``# prints: <text>`` comments shows its whole
output: the comments, in order, are exactly the non-blank lines it printed. A line whose trailing comment names an error class
(``guard_sql("...; DROP TABLE t")  # SqlSafetyError``) must raise that error.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?P<marker><!-- not-run:[^\n]*-->\n)?```python\n(?P<code>.*?)```", re.DOTALL)
PRINTS = re.compile(r"^# prints: (?P<text>.+)$", re.MULTILINE)
RAISES = re.compile(r"^(?P<indent>[ ]*)(?P<statement>\S.*?)\s+#\s*(?:raises\s+)?(?P<error>[A-Z]\w*Error)\s*$")


def with_expected_errors(code: str) -> str:
    """The block with each line marked ``# SomeError`` wrapped in a check that it raises an error of that name."""
    lines = []
    for line in code.splitlines():
        marked = RAISES.match(line)
        if marked is None:
            lines.append(line)
            continue
        indent, error = marked["indent"], marked["error"]
        lines += [
            f"{indent}try:",
            f"{indent}    {marked['statement']}",
            f"{indent}except Exception as _raised:",
            f"{indent}    assert {error!r} in [kind.__name__ for kind in type(_raised).__mro__], _raised",
            f"{indent}else:",
            f"{indent}    raise AssertionError('expected {error}')",
        ]
    return "\n".join(lines) + "\n"


def python_blocks(page: Path) -> list[tuple[str, bool]]:
    """(code, runs) per ```python block of the page, in order."""
    return [(match["code"], match["marker"] is None) for match in FENCE.finditer(page.read_text(encoding="utf-8"))]


def test_every_family_page_and_the_readme_has_a_runnable_example() -> None:
    pages = ["README.md", "retrieve.md", "rerank.md", "generate.md", "graph_rag.md", "structured.md"]
    pages += ["orchestrator.md", "pipeline.md", "swapping.md", "evaluation.md"]
    runnable = {page.name for page in PAGES if any(runs for _, runs in python_blocks(page))}
    assert set(pages) <= runnable


@pytest.mark.parametrize("page", [page for page in PAGES if python_blocks(page)], ids=lambda page: page.name)
def test_the_python_examples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, (code, runs) in enumerate(python_blocks(page), start=1):
        if not runs:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(with_expected_errors(code), f"{page.name} block {number}", "exec"), namespace)
        shown = [expected["text"].strip() for expected in PRINTS.finditer(code)]
        lines = [line.strip() for line in printed.getvalue().splitlines() if line.strip()]
        if shown:  # a block that shows its output shows all of it, in order
            assert shown == lines, (page.name, number, lines)
    assert os.getcwd() == str(tmp_path)
