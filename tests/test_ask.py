"""``rag-integration ask``: a cited answer from a folder of Markdown, reStructuredText, HTML and PDF files, every
file read or told why not, line and page numbers that point at the quoted sentence."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from pdf_files import pdf_bytes

from rag_integration.cli import main
from rag_integration.core.documents import office_text
from rag_integration.core.documents.corpus import Document
from rag_integration.core.documents.files import SKIPPED_FILES
from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.generate.extractive_responder import (
    ExtractiveResponder,
    ExtractiveSettings,
)
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

OIL = "Change the engine oil every 10,000 km or once a year, whichever comes first."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tyres.md").write_text(
        "# Tyres\n\nCheck the tyre pressure once a month, when the tyres are cold.\n\n"
        "Rotate the tyres every 8,000 km.\n",
        encoding="utf-8",
    )
    (docs / "bread.rst").write_text(
        "Baking bread\n============\n\nSourdough bread needs a starter that is fed daily.\n"
        "A loaf bakes for 40 minutes at 230 degrees.\n",
        encoding="utf-8",
    )
    (docs / "garden.html").write_text(
        "<html><head><title>Garden notes</title><script>var oil = 'engine oil changed';</script></head>"
        "<body><h1>Roses</h1><p>Prune roses in late winter, before new growth starts.</p></body></html>",
        encoding="utf-8",
    )
    manual = [
        ["Owner's manual", "Contents: engine, brakes."],
        ["Servicing the engine", OIL, "Use the grade in the manual."],
    ]
    (docs / "manual.pdf").write_bytes(pdf_bytes(manual, title="Car manual"))
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n")
    return docs


def ask(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    code = main(["ask", *arguments, "--no-progress", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_question_is_answered_from_the_right_file_with_its_page(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask(capsys, "How often should the engine oil be changed?", "--files", str(folder))
    assert code == 0, err
    answer, sources = out.split("\n\n", 1)
    assert answer.strip() == f"{OIL} [1]"
    assert re.fullmatch(
        rf"\[1\] {re.escape(str(folder / 'manual.pdf'))}, “Car manual”, page 2, chunk \d+", sources.splitlines()[0]
    )
    assert f"“{OIL}”" in sources
    assert "skipped 1 file(s) not read (--verbose lists them)" in err


def test_each_answer_cites_its_file_and_the_lines_it_quotes(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = ask(
        capsys, "How long does a loaf bake?", "When should roses be pruned?", "--files", str(folder), "--json"
    )
    assert code == 0
    loaf, roses = json.loads(out)
    assert loaf["answer"] == "A loaf bakes for 40 minutes at 230 degrees. [1]"
    [source] = loaf["sources"]
    assert source["file"] == str(folder / "bread.rst") and source["lines"] == [5, 5]
    lines = (folder / "bread.rst").read_text(encoding="utf-8").splitlines()
    assert source["quotes"][0] in lines[source["lines"][0] - 1]
    assert roses["sources"][0]["title"] == "Garden notes" and roses["sources"][0]["lines"] is None


def test_every_file_not_read_is_counted_and_listed_with_why(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "scan.pdf").write_bytes(pdf_bytes([[]]))
    monkeypatch.setattr(office_text, "optional_module", lambda module: None)  # neither extra installed
    (folder / "notes.docx").write_bytes(b"PK\x03\x04")
    code, _, err = ask(capsys, "When should roses be pruned?", "--files", str(folder), "--verbose")
    assert code == 0
    assert "skipped 4 file(s) not read" in err
    assert f"{folder / 'photo.png'}: not a file type read here (.png)" in err
    assert f"{folder / 'manual.pdf'}: a .pdf needs the 'pdf' extra (pypdf)" in err
    assert f"{folder / 'notes.docx'}: a .docx needs the 'docx' extra (python-docx)" in err


def test_a_pdf_without_text_is_skipped_and_a_damaged_one_is_a_typed_error(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    (tmp_path / "scan.pdf").write_bytes(pdf_bytes([[], []]))
    SKIPPED_FILES.take()
    options = {"document_source": "files", "paths": str(tmp_path / "scan.pdf")}
    assert run_feature("docs", options, set(STAGES)) == []
    assert [file.reason for file in SKIPPED_FILES.take()] == ["no text layer (scanned pages need OCR first)"]
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
    with pytest.raises(InvalidOptionError, match="a readable PDF"):
        run_feature("docs", {**options, "paths": str(tmp_path / "broken.pdf")}, set(STAGES))


def test_a_word_document_is_read_with_its_title_and_tables(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.core_properties.title = "Service plan"
    document.add_paragraph("Brakes are checked at every service.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Oil", "every 10,000 km"
    data = io.BytesIO()
    document.save(data)
    (tmp_path / "plan.docx").write_bytes(data.getvalue())
    [row] = run_feature("docs", {"document_source": "files", "paths": str(tmp_path)}, set(STAGES))
    assert row["text"] == "Brakes are checked at every service.\nOil | every 10,000 km"
    assert row["title"] == "Service plan" and row["doc_id"] == "plan.docx"


def test_chunks_of_a_text_file_know_their_lines(tmp_path: Path) -> None:
    text = "# Title\n\nFirst paragraph, line one.\nStill the first.\n\n\nSecond paragraph.\n\n- a list item\n"
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    options = {"document_source": "files", "paths": str(tmp_path), "chunker": "paragraph"}
    rows = run_feature("docs__chunked", options, set(STAGES))
    lines = text.splitlines()
    assert rows
    for row in rows:
        shown = "\n".join(lines[row["line_start"] - 1 : row["line_end"]])
        assert shown.strip() == row["text"].strip()


def test_questions_from_a_file_are_each_answered_and_a_missing_answer_says_why(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "questions.jsonl"
    rows: list[dict[str, Any]] = [{"question": "How long does a loaf bake?"}, {"question": "Who won the 1954 cup?"}]
    questions.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n", encoding="utf-8")
    code, out, _ = ask(capsys, "--questions", str(questions), "--files", str(folder))
    assert code == 0
    assert out.splitlines()[0] == "How long does a loaf bake?"
    assert "No answer: no passage matched: none of the question's words is in the indexed text." in out
    questions.write_text("How long does a loaf bake?\n{not json\n", encoding="utf-8")
    code, _, err = ask(capsys, "--questions", str(questions), "--files", str(folder))
    assert code == 1 and "--questions" in err and ":2" in err and "Expecting property name" in err


def test_usage_errors_exit_2(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ask(capsys, "--files", str(folder))[0] == 2
    assert ask(capsys, "why?", "--files", str(folder), "--generate", "poem")[0] == 2
    assert ask(capsys, "why?", "--files", str(folder), "--on-error", "ignore")[0] == 2
    assert ask(capsys, "why?")[0] == 2


def test_a_store_says_when_its_files_changed_and_index_keeps_two_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs, store = tmp_path / "docs", tmp_path / "store"
    docs.mkdir()
    for name in ("oil", "tyres", "bread"):
        (docs / f"{name}.md").write_text(f"Notes on {name}, first edition.\n", encoding="utf-8")

    def index() -> None:
        assert main(["index", str(docs), "--index-dir", str(store), "--embedding-model", "hash", "--no-progress"]) == 0

    def search_warning() -> str:
        code = main(["search", "notes", "--index-dir", str(store), "--embedding-model", "hash", "--no-progress"])
        assert code == 0
        return capsys.readouterr().err

    index()
    assert "out of date" not in search_warning()
    (docs / "oil.md").write_text("Notes on oil, second edition.\n", encoding="utf-8")
    (docs / "bread.md").unlink()
    (docs / "brakes.md").write_text("Notes on brakes.\n", encoding="utf-8")
    (docs / "tyres.md").touch()  # touched, not changed
    warning = search_warning()
    assert f"warning: {store} is out of date: 1 file(s) changed, 1 file(s) added, 1 file(s) removed" in warning
    index()
    assert "out of date" not in search_warning()
    (docs / "oil.md").write_text("Notes on oil, third edition.\n", encoding="utf-8")
    index()
    assert len([entry for entry in store.iterdir() if entry.name.startswith("v-")]) == 2  # --keep 2


def test_an_edit_keeping_size_and_time_is_still_seen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Size and time are forged easily (``touch -r``); the inode's change time is not, so such a file is hashed."""
    docs, store = tmp_path / "docs", tmp_path / "store"
    docs.mkdir()
    note = docs / "oil.md"
    note.write_text("Change the oil every 10000 km.\n", encoding="utf-8")
    before = note.stat()
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns - 10_000_000_000))  # as if written long ago
    assert main(["index", str(docs), "--index-dir", str(store), "--embedding-model", "hash", "--no-progress"]) == 0
    capsys.readouterr()

    def warning() -> str:
        assert main(["search", "oil", "--index-dir", str(store), "--embedding-model", "hash", "--no-progress"]) == 0
        return capsys.readouterr().err

    assert "out of date" not in warning()
    kept = note.stat()
    note.write_text("Change the oil every 15000 km.\n", encoding="utf-8")  # same size
    os.utime(note, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert note.stat().st_size == kept.st_size and note.stat().st_mtime_ns == kept.st_mtime_ns
    assert "1 file(s) changed" in warning()


def test_an_empty_result_says_why(tmp_path: Path, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.png").write_bytes(b"\x89PNG")
    code, out, err = ask(capsys, "oil?", "--files", str(images), "--verbose")
    assert code == 0 and out.strip() == "No answer: no documents: none of the files given could be read."
    assert f"{images / 'a.png'}: not a file type read here (.png)" in err
    code = main(["search", "zebra", "oil", "--files", str(folder), "--no-progress", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0 and "no passage matched 'zebra': none of its words is in the indexed text" in out
    assert "no passage matched 'oil'" not in out


def test_a_store_written_by_index_answers_with_the_same_sources(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    arguments = ["--embedding-model", "hash", "--no-progress"]
    assert main(["index", str(folder), "--index-dir", str(store), "--chunker", "paragraph", *arguments]) == 0
    capsys.readouterr()
    code = main(["ask", "How long does a loaf bake?", "--index-dir", str(store), "--json", *arguments])
    [row] = json.loads(capsys.readouterr().out)
    assert code == 0 and row["answer"] == "A loaf bakes for 40 minutes at 230 degrees. [1]"
    assert row["sources"][0]["file"] == str(folder / "bread.rst") and row["sources"][0]["lines"] == [5, 5]


def test_what_ask_needs_over_files_is_installed_with_the_package() -> None:
    """`uv run rag-integration ask ... --files` on a fresh clone installs no extra: BM25 (bm25s, PyStemmer, SciPy),
    the analysis and PDF reading must come with the package itself."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    names = {
        requirement.split(">")[0].split("<")[0].split("=")[0].strip().lower()
        for requirement in project["project"]["dependencies"]
    }
    assert {"bm25s", "pystemmer", "scipy", "pypdf", "stopwordsiso", "fasttext-predict", "typer", "rich"} <= names


LONG = (
    "Set the front tyres to 2.4 bar and the rear tyres to 2.2 bar when the car is lightly loaded, and add 0.3 bar "
    "to both when it carries four people and their luggage on a long motorway trip."
)


def test_piped_output_is_never_wrapped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tyres.md").write_text(f"# Tyres\n\n{LONG}\n", encoding="utf-8")
    code, out, _ = ask(capsys, "What tyre pressure for the front tyres?", "--files", str(tmp_path))
    assert code == 0 and len(LONG) > 160
    assert out.splitlines()[0] == f"{LONG} [1]"  # `| head -1` gets the whole answer, its marker included
    assert out.split("\n\n", 1)[1].splitlines()[1] == f"    “{LONG}”"


def test_in_a_narrow_terminal_a_quote_keeps_its_indent_on_every_line() -> None:
    from rich.console import Console

    from rag_integration.application.answers import answer_of
    from rag_integration.cli.ask import print_answers

    passage = {"doc_id": "tyres.md", "text": LONG, "metadata": {"source": "tyres.md", "line_start": 3}}
    answer = answer_of("tyre pressure?", {"answer": f"{LONG} [1]", "citations": ["tyres.md"]}, [passage])
    out = io.StringIO()
    print_answers([answer], Console(file=out, width=40, soft_wrap=False))
    quote = out.getvalue().split("[1] tyres.md, line 3\n", 1)[1].splitlines()
    assert len(quote) > 3 and all(line.startswith("    ") and line[4] != " " for line in quote)
    assert " ".join(line.strip() for line in quote) == f"“{LONG}”"


def test_an_answer_says_which_words_of_the_question_its_sources_do_not_hold(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask(capsys, "How often should the winter tyres be rotated?", "--files", str(folder))
    assert code == 0, err
    assert out.startswith("Rotate the tyres every 8,000 km. [1]\n(not in the cited passages: winter; ")
    code, out, err = ask(capsys, "How often should the engine oil be changed?", "--files", str(folder), "--json")
    assert code == 0, err
    assert json.loads(out)[0]["missing_words"] == []
    code, out, err = ask(capsys, "Are roses pruned by a gardener?", "--files", str(folder), "--json")
    assert code == 0, err
    assert json.loads(out)[0]["missing_words"] == ["gardener"]


def test_a_pdf_word_hyphenated_across_lines_is_found_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["The maintenance sched-", "ule lists every interval for the trans-", "mission of Baden-", "Wuerttemberg."]
    (tmp_path / "manual.pdf").write_bytes(pdf_bytes([lines]))
    code, out, err = ask(capsys, "Where is the maintenance schedule?", "--files", str(tmp_path))
    assert code == 0, err
    assert out.startswith(
        "The maintenance schedule lists every interval for the transmission of Baden- Wuerttemberg. [1]"
    )


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_lines_ending_in_cr_are_counted_like_lines_ending_in_lf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], newline: str
) -> None:
    text = newline.join(["Old file about cherries.", "", "Cherries bloom in April.", "They are harvested in June.", ""])
    (tmp_path / "cherries.txt").write_bytes(text.encode())
    for ranker in ("overlap", "best"):  # best: the e5 model where the multilingual extra is installed
        code, out, err = ask(
            capsys, "When are cherries harvested?", "--files", str(tmp_path), "--sentence-model", ranker
        )
        assert code == 0, err
        assert out.startswith("They are harvested in June. [1]") and "cherries.txt, chunk 1, line 4" in out


def test_questions_come_from_standard_input_and_an_empty_one_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = b"How often should the engine oil be changed?\n\nWhen should roses be pruned?\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines)))
    code, out, err = ask(capsys, "--questions", "-", "--files", str(folder), "--json")
    assert code == 0, err
    assert [row["question"] for row in json.loads(out)] == [
        "How often should the engine oil be changed?",
        "When should roses be pruned?",
    ]
    code, out, err = ask(capsys, "  ", "--files", str(folder))
    assert code == 2 and "holds no text" in err


def test_a_word_heading_titles_its_paragraph_instead_of_running_into_it(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_heading("Oil change interval", level=2)
    document.add_paragraph("Change the engine oil every 10,000 km.")
    data = io.BytesIO()
    document.save(data)
    (tmp_path / "plan.docx").write_bytes(data.getvalue())
    [row] = run_feature("docs", {"document_source": "files", "paths": str(tmp_path)}, set(STAGES))
    assert row["text"] == "## Oil change interval\nChange the engine oil every 10,000 km."
    passages = [Document("plan.docx", row["text"])]
    answer = ExtractiveResponder.generate("oil change interval", passages, ExtractiveSettings())["answer"]
    assert answer == "Change the engine oil every 10,000 km. [1]"
