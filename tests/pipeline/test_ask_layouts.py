"""``rag-integration ask --files`` over Markdown, reStructuredText and HTML with headings, lead-ins with lists,
tables and page chrome (the default ``paragraph`` chunker and ``extractive`` generator): the answer is the text
under a heading, never the heading; a lead-in comes with its steps; a table answer is its one row; a page's
navigation and footer are never quoted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_integration.cli import main


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "meeting.md").write_text(
        "# Meeting notes\n\n## Action items\n\n"
        "- Tom: send the quarterly report to finance by Friday.\n"
        "- Anna: book the venue for the offsite.\n\n"
        "## Decisions\n\nThe budget for the offsite is 5,000 euros.\n",
        encoding="utf-8",
    )
    (docs / "skyhook.rst").write_text(
        "Skyhook\n=======\n\nSkyhook was written by Maria Lopez in 2019.\n\n"
        "Installation\n------------\n\nRun the installer and restart the computer.\n",
        encoding="utf-8",
    )
    (docs / "manual.md").write_text(
        "# Owner's manual\n\n## 2 Engine\n\n### 2.1 Engine oil\n\n"
        "The engine holds 4.5 litres of oil.\n\n"
        "To check the oil level:\n\n"
        "1. Park the car on level ground.\n"
        "2. Wait five minutes after switching off the engine.\n"
        "3. Pull the dipstick and read the level.\n\n"
        "### 2.2 Service intervals\n\n"
        "| Part | Interval |\n|------|----------|\n"
        "| Engine oil | every 15,000 km |\n| Brake fluid | every 2 years |\n| Spark plugs | every 60,000 km |\n",
        encoding="utf-8",
    )
    (docs / "shop.html").write_text(
        "<html><head><title>Acme help</title></head><body>"
        '<header><nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/faq">FAQ</a></nav></header>'
        "<main><h1>Returns</h1><h2>Return window</h2>"
        "<p>You can return any item within 30 days of delivery.</p>"
        "<h2>Return steps</h2><p>To send an item back:</p>"
        "<ol><li>Print the return label.</li><li>Pack the item in its original box.</li></ol>"
        "<table><tr><th>Item</th><th>Refund</th></tr><tr><td>Unopened</td><td>full refund</td></tr>"
        "<tr><td>Opened</td><td>80 percent refund</td></tr></table></main>"
        "<footer>© 2024 Acme GmbH. All rights reserved.</footer></body></html>",
        encoding="utf-8",
    )
    return docs


def ask_json(capsys: pytest.CaptureFixture[str], folder: Path, *questions: str) -> list[dict[str, object]]:
    code = main(["ask", *questions, "--files", str(folder), "--json", "--no-progress", "--no-cache"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    answers: list[dict[str, object]] = json.loads(captured.out)
    return answers


def test_a_heading_is_never_the_answer_the_text_under_it_is(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tom, author, oil = ask_json(
        capsys, folder, "What is Tom's action item?", "Who wrote Skyhook?", "How much oil does the engine hold?"
    )
    assert tom["answer"] == "Tom: send the quarterly report to finance by Friday. [1]"
    assert author["answer"] == "Skyhook was written by Maria Lopez in 2019. [1]"
    assert oil["answer"] == "The engine holds 4.5 litres of oil. [1]"


def test_a_lead_in_is_answered_with_its_steps(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [steps] = ask_json(capsys, folder, "How do I check the oil level?")
    assert steps["answer"] == (
        "To check the oil level: [1] Park the car on level ground. [1] "
        "Wait five minutes after switching off the engine. [1] Pull the dipstick and read the level. [1]"
    )
    [source] = steps["sources"]  # type: ignore[misc]
    assert source["lines"] == [9, 13]


def test_a_table_answer_is_its_row(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [brakes] = ask_json(capsys, folder, "How often should the brake fluid be changed?")
    assert brakes["answer"] == "Brake fluid | every 2 years [1]"
    [source] = brakes["sources"]  # type: ignore[misc]
    assert source["file"].endswith("manual.md") and source["lines"] == [20, 20]


def test_an_html_page_answers_from_its_content_not_its_chrome(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    window, opened, steps, shop, rights = ask_json(
        capsys,
        folder,
        "How long is the return window?",
        "What is the refund for opened items?",
        "How do I send an item back?",
        "Where is the shop FAQ?",
        "Who owns the rights?",
    )
    assert window["answer"] == "You can return any item within 30 days of delivery. [1]"
    assert opened["answer"] == "Opened | 80 percent refund [1]"
    assert steps["answer"] == (
        "To send an item back: [1] Print the return label. [1] Pack the item in its original box. [1]"
    )
    assert shop["answer"] == "" and rights["answer"] == ""
