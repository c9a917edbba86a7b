"""The file source treats folders and their files as untrusted: it stays inside each root, follows no link unless
told to, never descends a symlinked folder or loops, bounds file size, and turns hostile content into typed errors.
Every case writes its own files into ``tmp_path`` and goes through ``mlodaAPI.run_all``."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.documents.files import SKIPPED_FILES
from rag_integration.core.errors import InvalidOptionError, UnsafePathError
from rag_integration.feature_groups.rag_pipeline import STAGES
from rag_integration.testing.runner import run_feature


def docs(paths: Any, **options: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = run_feature("docs", {"document_source": "files", "paths": paths, **options}, STAGES)
    return rows


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha", encoding="utf-8")
    (folder / "sub" / "b.md").write_text("beta", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside the root", encoding="utf-8")
    return folder


def skipped() -> dict[str, str]:
    """The files skipped since the last call, by name, with why."""
    return {Path(file.path).name: file.reason for file in SKIPPED_FILES.take()}


def test_a_link_to_a_file_outside_the_folder_is_skipped_with_why_and_refused_when_named(root: Path) -> None:
    (root / "leak.txt").symlink_to(root.parent / "secret.txt")
    for paths in (str(root), str(root / "*.txt")):
        for follow in (False, True):
            skipped()
            rows = docs(paths, follow_symlinks=follow)
            assert "outside the root" not in [row["text"] for row in rows]
            assert "a.txt" in [row["doc_id"] for row in rows]
            assert ("outside" if follow else "follow_symlinks") in skipped()["leak.txt"]
    with pytest.raises(UnsafePathError, match="inside"):
        docs(str(root / "leak.txt"))


def test_a_link_to_a_proc_file_is_never_read(root: Path) -> None:
    (root / "status.txt").symlink_to("/proc/self/status")
    for follow in (False, True):
        skipped()
        assert [row["doc_id"] for row in docs(str(root), follow_symlinks=follow)] == ["a.txt", "sub/b.md"]
        assert "status.txt" in skipped()
    with pytest.raises(UnsafePathError):
        docs(str(root / "status.txt"), follow_symlinks=True)


def test_links_inside_the_folder_are_read_unless_links_are_not_followed(root: Path) -> None:
    (root / "again.txt").symlink_to(root / "a.txt")
    rows = docs(str(root))
    assert [(row["doc_id"], row["text"]) for row in rows] == [
        ("a.txt", "alpha"),
        ("again.txt", "alpha"),
        ("sub/b.md", "beta"),
    ]
    skipped()
    assert [row["doc_id"] for row in docs(str(root), follow_symlinks=False)] == ["a.txt", "sub/b.md"]
    assert "follow_symlinks" in skipped()["again.txt"]


def test_a_fifo_or_a_large_file_in_a_folder_is_skipped_not_fatal(root: Path) -> None:
    os.mkfifo(root / "pipe.txt")
    (root / "big.txt").write_bytes(b"x" * 2_000)
    skipped()
    assert [row["doc_id"] for row in docs(str(root), max_file_bytes=1_000)] == ["a.txt", "sub/b.md"]
    assert {"pipe.txt", "big.txt"} <= set(skipped())
    with pytest.raises(InvalidOptionError, match="max_file_bytes"):
        docs(str(root / "big.txt"), max_file_bytes=1_000)


def test_symlinked_folders_are_not_descended_and_loops_end(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    outside = root.parent / "elsewhere"
    outside.mkdir()
    (outside / "c.txt").write_text("gamma", encoding="utf-8")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="rag_integration.core.documents.files"):
        for paths in (str(root), str(root / "**" / "*.*"), str(root / "**")):
            assert [row["doc_id"] for row in docs(paths, follow_symlinks=True)] in (
                ["a.txt", "sub/b.md"],
                ["a.txt", "b.md"],
            )
    assert "symlinked folder" in caplog.text and "linked" in caplog.text


def test_globs_match_like_glob(root: Path) -> None:
    (root / ".hidden.txt").write_text("hidden", encoding="utf-8")
    (root / "sub" / "deeper").mkdir()
    (root / "sub" / "deeper" / "d.txt").write_text("delta", encoding="utf-8")
    assert [row["text"] for row in docs(str(root / "*.txt"))] == ["alpha"]
    assert [row["text"] for row in docs(str(root / "**" / "*.txt"))] == ["alpha", "delta"]
    assert [row["text"] for row in docs(str(root / "sub" / "*" / "?.txt"))] == ["delta"]
    assert [row["text"] for row in docs(str(root / ".*.txt"))] == ["hidden"]


def test_files_skipped_for_their_type_are_logged(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    (root / "image.png").write_bytes(b"\x89PNG")
    with caplog.at_level(logging.INFO, logger="rag_integration.core.documents.files"):
        assert len(docs(str(root))) == 2
    assert "skipped" in caplog.text and "image.png: not a file type read here (.png)" in caplog.text


def test_a_file_over_the_size_limit_is_refused_when_named_and_skipped_in_a_folder(root: Path) -> None:
    (root / "big.txt").write_text("x" * 100, encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="max_file_bytes"):
        docs(str(root / "big.txt"), max_file_bytes=50)
    assert [row["doc_id"] for row in docs(str(root), max_file_bytes=50)] == ["a.txt", "sub/b.md"]
    assert len(docs(str(root), max_file_bytes=100)) == 3
    with pytest.raises(InvalidOptionError, match="max_file_bytes"):
        docs(str(root), max_file_bytes=0)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe.txt")
    with pytest.raises(UnsafePathError, match="regular file"):
        docs(str(root / "pipe.txt"))


def test_a_read_error_is_typed(root: Path) -> None:
    (root / "gone.txt").symlink_to(root / "deleted.txt")  # named on its own: in a folder it is skipped, with why
    with pytest.raises(InvalidOptionError, match="readable file"):
        docs(str(root / "gone.txt"), follow_symlinks=True)


@pytest.mark.parametrize("depth", [65, 5_000, 200_000])
def test_deeply_nested_jsonl_is_a_typed_error(tmp_path: Path, depth: int) -> None:
    line = '{"text": "t", "deep": ' + "[" * depth + "]" * depth + "}"
    (tmp_path / "deep.jsonl").write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match=r"deep\.jsonl:1.*nested"):
        docs(str(tmp_path))


def test_moderately_nested_jsonl_is_read(tmp_path: Path) -> None:
    (tmp_path / "ok.jsonl").write_text(json.dumps({"text": "t", "deep": [[[{"a": [1]}]]]}) + "\n", encoding="utf-8")
    assert docs(str(tmp_path))[0]["deep"] == [[[{"a": [1]}]]]


def test_a_5000_digit_integer_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "big.jsonl").write_text('{"text": "t", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match=r"big\.jsonl:1"):
        docs(str(tmp_path))


def test_a_csv_field_over_128_kib_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "wide.csv").write_text("doc_id,text\nd1," + "x" * (128 * 1024 + 1) + "\n", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match=r"wide\.csv.*field"):
        docs(str(tmp_path))


def test_a_globs_files_are_named_by_their_path_inside_its_folder(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(f"about {folder}", encoding="utf-8")
        (tmp_path / folder / "notes.jsonl").write_text(json.dumps({"text": f"note {folder}"}) + "\n", encoding="utf-8")
    rows = docs(str(tmp_path / "**" / "*.*"))
    assert [row["doc_id"] for row in rows] == [row["doc_id"] for row in docs(str(tmp_path))]
    assert len({row["doc_id"] for row in rows}) == 4
    assert "a/README.md" in {row["doc_id"] for row in rows}


def test_a_looping_or_dangling_link_in_a_folder_is_skipped_with_why(root: Path) -> None:
    (root / "self.txt").symlink_to("self.txt")
    (root / "x.md").symlink_to("y.md")
    (root / "y.md").symlink_to("x.md")
    (root / "gone.txt").symlink_to("missing.txt")
    SKIPPED_FILES.take()
    assert [row["doc_id"] for row in docs(str(root))] == ["a.txt", "sub/b.md"]
    skipped = {Path(entry.path).name: entry.reason for entry in SKIPPED_FILES.take()}
    assert {skipped[name] for name in ("self.txt", "x.md", "y.md", "gone.txt")} == {"a looping or unresolvable link"}


def test_a_path_holding_wildcard_characters_that_exists_is_read_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "My [Docs] 2024"
    folder.mkdir()
    (folder / "capy.txt").write_text("Capybaras are the largest rodents.", encoding="utf-8")
    (tmp_path / "report [final].txt").write_text("The report is due in March.", encoding="utf-8")
    (tmp_path / "other.txt").write_text("not named", encoding="utf-8")
    assert [row["text"] for row in docs(str(folder))] == ["Capybaras are the largest rodents."]
    assert [row["text"] for row in docs(str(tmp_path / "report [final].txt"))] == ["The report is due in March."]


def test_files_of_several_folders_sharing_a_name_are_each_read_under_their_own_path(tmp_path: Path) -> None:
    for team, day in (("a", "Monday"), ("b", "Friday")):
        (tmp_path / team).mkdir()
        (tmp_path / team / "notes.txt").write_text(f"Team {team} meets on {day}.", encoding="utf-8")
    rows = docs([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "a" / "notes.txt")])
    assert [(row["doc_id"], row["text"]) for row in rows] == [
        ((tmp_path / "a" / "notes.txt").as_posix(), "Team a meets on Monday."),
        ((tmp_path / "b" / "notes.txt").as_posix(), "Team b meets on Friday."),
    ]
    assert [row["doc_id"] for row in docs([str(tmp_path / "a"), str(tmp_path)])] == ["notes.txt", "b/notes.txt"]


def test_a_walk_leaves_hidden_and_tool_folders_unless_named(root: Path) -> None:
    for folder in (".git", "node_modules/pkg", ".venv/lib/site-packages"):
        (root / folder).mkdir(parents=True)
        (root / folder / "README.md").write_text("not the user's", encoding="utf-8")
    SKIPPED_FILES.take()
    assert [row["doc_id"] for row in docs(str(root))] == ["a.txt", "sub/b.md"]
    assert {Path(entry.path).name for entry in SKIPPED_FILES.take()} == {".git", "node_modules", ".venv"}
    assert [row["doc_id"] for row in docs(str(root / ".git"))] == ["README.md"]


def test_a_glob_matches_names_whatever_their_letter_case(root: Path) -> None:
    (root / "UPPER.TXT").write_text("shouted", encoding="utf-8")
    assert [row["doc_id"] for row in docs(str(root / "*.txt"))] == ["UPPER.TXT", "a.txt"]
