"""One unreadable file in a folder (text not in the encoding, a damaged PDF) is skipped, counted and listed with
its reason like a file of another type, so the others are still read; a file named on its own is still the typed
error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pdf_files import pdf_bytes

from rag_integration.cli import main
from rag_integration.core.documents.files import READ_FILES, SKIPPED_FILES, FileRules, find_files, skip_unreadable
from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature

DEPOSIT = "Die Kaution beträgt drei Monatsmieten und wird bei Auszug zurückgezahlt."
RULES = FileRules(suffixes=(".txt", ".md", ".pdf"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "haus.md").write_text(f"# Mietvertrag\n\n{DEPOSIT}\n", encoding="utf-8")
    (docs / "mietvertrag.txt").write_bytes("Die Miete ist am 3. Werktag fällig.\n".encode("latin-1"))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
    return docs


def test_a_file_named_on_its_own_is_marked_so_and_one_found_in_a_folder_is_not(folder: Path) -> None:
    assert {file.name: file.named for file in find_files([str(folder)], RULES)} == {
        "broken.pdf": False,
        "haus.md": False,
        "mietvertrag.txt": False,
    }
    assert [file.named for file in find_files([str(folder / "haus.md")], RULES)] == [True]
    assert [file.named for file in find_files([str(folder / "*.md")], RULES)] == [False]


def test_only_a_refused_file_found_in_a_folder_is_recorded_as_skipped(folder: Path) -> None:
    SKIPPED_FILES.take()
    [walked] = [file for file in find_files([str(folder)], RULES) if file.name == "mietvertrag.txt"]
    [named] = find_files([str(folder / "mietvertrag.txt")], RULES)
    refused = InvalidOptionError("paths", str(walked.shown), "text in utf-8 (byte 31: invalid continuation byte)")
    assert not skip_unreadable(named, refused, RULES)
    assert not skip_unreadable(walked, InvalidOptionError("encoding", "utf-9", "a codec Python knows"), RULES)
    record = InvalidOptionError("paths", f"{walked.shown}:3", "one JSON object per line")  # a record, not the file
    assert not skip_unreadable(walked, record, RULES)
    assert skip_unreadable(walked, refused, RULES)
    [skipped] = SKIPPED_FILES.take()
    assert skipped.path == str(walked.shown)
    assert skipped.reason == "not readable: expected text in utf-8 (byte 31: invalid continuation byte)"


def test_a_file_named_on_the_command_line_is_still_the_typed_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "Wann ist die Miete fällig?", "--files", str(folder / "mietvertrag.txt"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "InvalidOptionError" in err and "mietvertrag.txt" in err and "utf-8" in err


def test_ask_skips_an_unreadable_file_in_a_folder_and_answers_from_the_others(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pypdf")
    (folder / "handbook.pdf").write_bytes(pdf_bytes([["Hausordnung", "Ruhezeit ist ab 22 Uhr."]]))
    code = main(
        ["ask", "Wie hoch ist die Kaution?", "--files", str(folder), "--verbose", "--no-progress", "--no-cache"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"{DEPOSIT} [1]")
    assert err.splitlines()[0] == "skipped 2 file(s) not read"
    assert f"  {folder / 'mietvertrag.txt'}: not readable: expected text in utf-8 (byte " in err
    assert f"  {folder / 'broken.pdf'}: not readable: expected a readable PDF (" in err


def test_index_skips_an_unreadable_file_in_a_folder_and_says_so(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["index", str(folder), "--index-dir", str(tmp_path / "store"), "--embedding-model", "hash"]
    code = main([*arguments, "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("indexed ") and "skipped 2 file(s) not read (--verbose lists them)" in err


def test_a_data_table_in_a_folder_is_skipped_and_one_named_is_the_typed_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.txt").write_text("Kettles should be descaled every month.\n", encoding="utf-8")
    (tmp_path / "stats.csv").write_text("date,visitors\n2024-01-01,5\n", encoding="utf-8")
    code = main(["ask", "How often are kettles descaled?", "--files", str(tmp_path), "--verbose", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0 and out.startswith("Kettles should be descaled every month. [1]")
    assert "stats.csv: records without a 'text' field (text_field): data, not documents" in err
    code = main(["ask", "visitors?", "--files", str(tmp_path / "stats.csv"), "--no-progress", "--no-cache"])
    assert code == 1 and "text_field" in capsys.readouterr().err


def test_two_runs_in_two_threads_each_see_only_their_own_files(tmp_path: Path) -> None:
    """The notes of what a run read and skipped belong to that run (a context), not to the process."""
    import threading

    from rag_integration.application.notes import RunNotes

    folders = []
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.txt").write_text(f"The {name} folder's text.", encoding="utf-8")
        (folder / f"{name}.png").write_bytes(b"\x89PNG")
        folders.append(folder)
    start = threading.Barrier(2)
    seen: dict[str, tuple[set[str], set[str]]] = {}
    SKIPPED_FILES.take()  # what earlier tests left in the process-wide logs
    READ_FILES.take()

    def run(folder: Path) -> None:
        notes = RunNotes()
        start.wait()
        with notes.reading_files():
            for _ in range(20):
                assert run_feature("docs", {"document_source": "files", "paths": str(folder)}, set(STAGES))
        seen[folder.name] = ({Path(f.path).name for f in notes.read}, {Path(f.path).name for f in notes.skipped})

    threads = [threading.Thread(target=run, args=(folder,)) for folder in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"first": ({"first.txt"}, {"first.png"}), "second": ({"second.txt"}, {"second.png"})}
    assert SKIPPED_FILES.take() == [] and READ_FILES.take() == []  # nothing leaked to the process-wide log
