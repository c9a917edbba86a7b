"""A Spark corpus built in shards on the executors (``index_shards``): every shard scored with the corpus-wide
statistics, so the merged answers equal one index over the whole corpus on PythonDict, exactly."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from rag_integration.application import forget
from rag_integration.core.contract.frames import SparkAdapter
from rag_integration.core.contract.spark_shard_builds import (
    _Change,
    _change_written,
    _merged,
    _selected,
    _sorted_rows,
    by_shard,
    partition_keys,
    spark_hash,
)
from rag_integration.core.contract.spark_shards import ARROW_BATCH_SIZES, ShardJob, arrow_batches
from rag_integration.core.errors import ConnectorError, InvalidOptionError, MissingOptionError
from rag_integration.core.indexes.shards import DOCUMENTS_FILE, ROW_HASHES_FILE, SHARDS_FOLDER, read_shard_documents
from rag_integration.core.options import OptionReader
from rag_integration.evaluation.datasets import load_dataset
from rag_integration.feature_groups.connectors.retrieve import (
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector
from rag_integration.testing.kit import spark_test_session
from rag_integration.testing.runner import run_feature

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
COLUMN = "corpus_rows"
BACKENDS: dict[str, type[BaseRetrieveConnector[Any, Any, Any]]] = {
    "bm25s": Bm25sRetriever,
    "tfidf": TfidfRetriever,
    "faiss": FaissDenseRetriever,
    "hybrid_rrf": HybridRrfRetriever,
}


def corpus_frame(documents: list[dict[str, Any]], partitions: int) -> Any:
    import pyarrow as pa

    frame = spark_test_session().createDataFrame(pa.table({COLUMN: pa.array(documents)}))
    return frame.repartition(partitions)


def sharded(frame: Any, options: dict[str, Any]) -> list[list[dict[str, Any]]]:
    backend = BACKENDS[options["retrieve_backend"]]
    answered = backend.answer_frame(SparkAdapter(), frame, OptionReader({**options, "corpus_source": COLUMN}))
    return [[as_python(passage) for passage in row["retrieved_passages"]] for row in answered.collect()]


def as_python(passage: Any) -> dict[str, Any]:
    """A passage as PythonDict gives it: Spark's rows hold ``metadata`` and ``explanation`` as JSON text."""
    found: dict[str, Any] = passage.asDict(recursive=True)
    return {key: json.loads(value) if key in ("metadata", "explanation") else value for key, value in found.items()}


def one_index(documents: list[dict[str, Any]], options: dict[str, Any]) -> list[list[dict[str, Any]]]:
    backend = BACKENDS[options["retrieve_backend"]]
    plain = {key: value for key, value in options.items() if key not in ("index_shards", "index_dir")}
    return run_feature("retrieved_passages", {**plain, "corpus": documents}, {backend})


def ranked(rows: list[list[dict[str, Any]]]) -> list[list[tuple[str, float]]]:
    return [[(passage["doc_id"], passage["score"]) for passage in passages] for passages in rows]


@pytest.mark.skipif(not (SHARED_DATA / "scifact").is_dir(), reason="shared evaluation data not present")
@pytest.mark.parametrize("backend", ["bm25s", "tfidf"])
def test_scifact_in_four_shards_ranks_as_one_index_exactly(backend: str, tmp_path: Path) -> None:
    scifact = load_dataset(SHARED_DATA / "scifact")
    queries = list(scifact.queries.values())[:300]
    options = {"retrieve_backend": backend, "query_text": queries, "top_k": 10, "index_shards": 4}
    found = sharded(corpus_frame(scifact.documents, 8), {**options, "index_dir": str(tmp_path)})
    expected = one_index(scifact.documents, options)
    assert len(found) == len(expected) == 300
    assert ranked(found) == ranked(expected)  # same doc_ids, same order, bit-identical scores
    assert found == expected


WORDS = ["oil", "engine", "tide", "moon", "bread", "oven", "lava", "river", "stone", "light", "salt", "wind"]
GERMAN = ["das", "öl", "der", "motor", "und", "die", "flut", "mond", "brot", "ofen", "ist", "nicht"]


def random_corpus(generator: random.Random, size: int) -> list[dict[str, Any]]:
    """Short documents, a few German and a few empty ones, with metadata to filter on."""
    documents = []
    for number in range(size):
        words = GERMAN if number % 5 == 0 else WORDS
        text = " ".join(generator.choice(words) for _ in range(generator.randint(0, 9)))
        documents.append({"doc_id": f"doc-{generator.randrange(10**6)}-{number}", "text": text, "group": number % 3})
    return documents


def edited(generator: random.Random, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Some documents removed, some changed, some added."""
    kept = [dict(document) for document in documents if generator.random() > 0.1]
    for document in kept:
        if generator.random() < 0.1:
            document["text"] = document["text"] + " " + generator.choice(WORDS)
    return kept + random_corpus(generator, generator.randint(0, 6))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_shard_counts_partitionings_and_edits_rank_as_one_index(seed: int, tmp_path: Path) -> None:
    generator = random.Random(seed)
    documents = random_corpus(generator, generator.randint(30, 80))
    queries = [" ".join(generator.sample(WORDS + GERMAN, 2)) for _ in range(12)] + ["moon"]
    for _ in range(2):
        backend = generator.choice(["bm25s", "tfidf"])
        options: dict[str, Any] = {"retrieve_backend": backend, "query_text": queries, "top_k": 5}
        options.update(index_shards=generator.randint(2, 6), language=generator.choice(["auto", "en"]))
        if generator.random() < 0.5:
            options["filters"] = {"group": [0, 2]}
        if backend == "bm25s":
            options["bm25_method"] = generator.choice(["lucene", "bm25l", "bm25+", "robertson", "atire"])
        frame = corpus_frame(documents, generator.randint(1, 5))
        found = sharded(frame, {**options, "index_dir": str(tmp_path), "return_metadata": True})
        assert found == one_index(documents, {**options, "return_metadata": True}), options
        documents = edited(generator, documents)


@pytest.mark.parametrize(
    ("backend", "seed", "language"), [("bm25s", 4, "auto"), ("tfidf", 5, "auto"), ("bm25s", 6, "en")]
)
def test_edits_kept_as_overlays_rank_as_one_index(backend: str, seed: int, language: str, tmp_path: Path) -> None:
    """Edit after edit kept beside the shards' bases as overlays (``index_overlay_share`` 1: never written whole),
    then undone: each answer equals one index over the corpus of its request, under every variant and filter; the
    bases stay the first build's until an edit undone leaves a shard its base alone again."""
    generator = random.Random(seed)
    documents = random_corpus(generator, 150)
    queries = [" ".join(generator.sample(WORDS + GERMAN, 2)) for _ in range(12)] + ["moon", "öl"]
    options: dict[str, Any] = {"retrieve_backend": backend, "query_text": queries, "top_k": 5, "index_shards": 3}
    options.update(language=language, index_overlay_share=1.0, return_metadata=True)
    if backend == "bm25s":
        options["bm25_method"] = generator.choice(["lucene", "bm25l", "bm25+"])
    first = documents
    assert sharded(corpus_frame(documents, 2), {**options, "index_dir": str(tmp_path)}) == one_index(documents, options)
    bases = {shard: versions[0] for shard, versions in shard_versions(tmp_path).items()}
    for round_number in range(3):
        documents = edited(generator, documents)
        if round_number == 1:
            documents[0] = {**documents[0], "text": "moon moon moon"}
        filtered = {**options, "filters": {"group": [0, 1]}} if round_number == 2 else options
        found = sharded(corpus_frame(documents, generator.randint(1, 4)), {**filtered, "index_dir": str(tmp_path)})
        assert found == one_index(documents, filtered), round_number
        versions = shard_versions(tmp_path)
        assert {shard: version[0] for shard, version in versions.items()} == bases
        assert any(version[1] for version in versions.values())
    assert sharded(corpus_frame(first, 3), {**options, "index_dir": str(tmp_path)}) == one_index(first, options)
    assert shard_versions(tmp_path) == {shard: (version, "") for shard, version in bases.items()}


def overlay_round(
    generator: random.Random, documents: list[dict[str, Any]], history: list[Any]
) -> list[dict[str, Any]]:
    """One random edit of the kinds an overlay must keep exact: removals alone, additions alone, texts or metadata
    changed, an earlier corpus back, or everything at once."""
    kind = generator.choice(["remove", "add", "change", "metadata", "back", "mixed"])
    if kind == "remove":
        return [document for document in documents if generator.random() > 0.08]
    if kind == "add":
        return documents + random_corpus(generator, generator.randint(1, 8))
    if kind == "change":
        return [
            {**document, "text": document["text"] + " " + generator.choice(WORDS)}
            if generator.random() < 0.05
            else document
            for document in documents
        ]
    if kind == "metadata":
        return [{**document, "group": 5} if generator.random() < 0.05 else document for document in documents]
    if kind == "back":
        return list(generator.choice(history))
    return edited(generator, documents)


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_random_edits_kept_as_overlays_rank_as_one_index(seed: int, tmp_path: Path) -> None:
    """A property test of overlays: random corpora, shard counts, partitionings, variants, filters and rounds of
    edits of every kind, all kept as overlays (share 1), each answer equal to one index over its corpus."""
    generator = random.Random(seed)
    documents = random_corpus(generator, generator.randint(80, 160))
    queries = [" ".join(generator.sample(WORDS + GERMAN, generator.randint(1, 3))) for _ in range(10)]
    backend = generator.choice(["bm25s", "tfidf"])
    options: dict[str, Any] = {"retrieve_backend": backend, "query_text": queries, "top_k": 4}
    options.update(index_shards=generator.randint(2, 4), language=generator.choice(["auto", "en"]))
    if backend == "bm25s":
        options["bm25_method"] = generator.choice(["lucene", "bm25l", "bm25+", "robertson", "atire"])
    index = {**options, "index_dir": str(tmp_path), "index_overlay_share": 1.0}
    history = [documents]
    for round_number in range(4):
        asked = {**options, "filters": {"group": [0, 2, 5]}} if generator.random() < 0.4 else options
        found = sharded(corpus_frame(documents, generator.randint(1, 4)), {**index, **asked})
        assert found == one_index(documents, asked), (round_number, options)
        documents = overlay_round(generator, documents, history)
        history.append(documents)


def test_shards_with_overlays_are_analysed_again_under_the_corpus_placement(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Shards of at most 512 documents in a corpus of more place their texts each by itself at first, so under
    ``auto`` every shard is analysed again under the corpus's sample: with an overlay, both its parts are."""
    generator = random.Random(17)
    documents = random_corpus(generator, 1200)
    queries = [" ".join(generator.sample(WORDS + GERMAN, 2)) for _ in range(20)]
    options = {"retrieve_backend": "bm25s", "query_text": queries, "index_shards": 4, "language": "auto"}
    index = {**options, "index_dir": str(tmp_path), "index_overlay_share": 1.0}
    sharded(corpus_frame(documents, 3), index)
    documents = edited(generator, documents)
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(corpus_frame(documents, 3), index)
    messages = [record.getMessage() for record in caplog.records]
    assert "index_shards: 4 of 4 shards analysed again under the corpus's placement" in messages
    assert all(version[1] for version in shard_versions(tmp_path).values())
    assert found == one_index(documents, options)


@pytest.mark.parametrize(
    "options",
    [
        {"retrieve_backend": "tfidf"},
        {"retrieve_backend": "bm25s", "bm25_method": "lucene"},
        {"retrieve_backend": "bm25s", "bm25_method": "bm25l"},
        {"retrieve_backend": "bm25s", "bm25_method": "bm25+"},
    ],
)
def test_an_overlay_of_removals_alone_ranks_as_one_index(options: dict[str, Any], tmp_path: Path) -> None:
    """Documents removed and none added: the overlay holds no rows, only the base's gone ones, and is not ranked."""
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i % 9} river stone {WORDS[i % 12]}"} for i in range(60)]
    options = {**options, "query_text": ["river w3", "moon", "stone oil"], "index_shards": 2, "top_k": 4}
    index = {**options, "index_dir": str(tmp_path)}
    sharded(corpus_frame(documents, 2), index)
    documents = [document for document in documents if document["doc_id"] not in ("d03", "d04")]
    assert sharded(corpus_frame(documents, 2), index) == one_index(documents, options)
    assert any(version[1] for version in shard_versions(tmp_path).values())
    assert sharded(corpus_frame(documents, 3), index) == one_index(documents, options)


def test_a_snapshot_naming_overlays_for_a_backend_written_whole_is_built_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overlays are only written for backends whose hooks take the base's live rows: a snapshot (written by someone
    else) that names one for another backend is ignored, and its shards built again."""
    from rag_integration.core.indexes.shards import ShardSet, read_snapshot, write_snapshot

    monkeypatch.setattr(FaissDenseRetriever, "SHARD_OVERLAYS", False)  # the request's check runs on the driver

    documents = [{"doc_id": f"d{i}", "text": f"the {WORDS[i % 12]} number {i}"} for i in range(30)]
    options = {"retrieve_backend": "faiss", "query_text": ["moon light"], "top_k": 3, "index_shards": 2}
    options.update(embedding_model="hash", index_dir=str(tmp_path))
    first = sharded(corpus_frame(documents, 2), options)
    [root] = (tmp_path / SHARDS_FOLDER).glob("*/2-shards")
    [manifest] = root.glob("snapshot/v-*/manifest.json")
    settings = json.loads(manifest.read_text(encoding="utf-8"))["settings"]
    snapshot = read_snapshot(root, settings)
    assert snapshot is not None and not snapshot.overlays
    numbers = tuple(sorted(snapshot.versions))
    versions = tuple(snapshot.versions[number] for number in numbers)
    forged = ShardSet(root, numbers, versions, None, None, overlays=("v-forged",) + (None,) * (len(numbers) - 1))
    write_snapshot(forged, settings)
    assert read_snapshot(root, settings).overlays == {numbers[0]: "v-forged"}  # type: ignore[union-attr]
    with caplog.at_level("WARNING", logger="rag_integration"):
        assert sharded(corpus_frame(documents, 2), options) == first
    assert any("overlays for a backend without them" in record.getMessage() for record in caplog.records)
    assert read_snapshot(root, settings).overlays == {}  # type: ignore[union-attr]


def test_an_overlay_claimed_by_another_shard_and_a_snapshot_of_other_digits_are_refused(tmp_path: Path) -> None:
    from rag_integration.core.documents.corpus import Corpus, Document
    from rag_integration.core.errors import IndexMismatchError
    from rag_integration.core.indexes.shards import (
        SNAPSHOT_KIND,
        read_overlay,
        read_snapshot,
        shard_folder,
        shard_table,
        write_overlay,
    )
    from rag_integration.core.indexes.store import StoreClaim, write_store

    rows = {"doc_id": ["a"], "text": ["oil"], "metadata": ["{}"], "row_hash": pa.array([b"h" * 32], pa.binary())}
    table = shard_table(pa.table(rows), Corpus([Document("a", "oil")]))
    name = write_overlay(shard_folder(tmp_path, 1), 0, "v-base", table, np.array([2], dtype=np.int64))
    with pytest.raises(IndexMismatchError, match="overlay of this shard"):
        read_overlay(shard_folder(tmp_path, 1), name, "v-base", 5)
    name = write_overlay(shard_folder(tmp_path, 1), 1, "v-base", table, np.array([2], dtype=np.int64))
    assert read_overlay(shard_folder(tmp_path, 1), name, "v-base", 5).dead.tolist() == [2]
    with pytest.raises(IndexMismatchError, match="overlay of this shard"):
        read_overlay(shard_folder(tmp_path, 1), name, "v-other", 5)
    with pytest.raises(IndexMismatchError, match="increasing positions"):
        read_overlay(shard_folder(tmp_path, 1), name, "v-base", 2)
    settings = {"index": {}, "shards": 4}
    for listed in ({"shards": {"²": "v-a"}}, {"shards": {"1": "v-a"}, "overlays": {"¹": "v-b"}}):

        def save(folder: Path, listed: dict[str, Any] = listed) -> None:
            (folder / "snapshot.json").write_text(json.dumps(listed), encoding="utf-8")

        write_store(tmp_path / "root" / "snapshot", StoreClaim(SNAPSHOT_KIND, settings, ""), save)
        assert read_snapshot(tmp_path / "root", settings) is None


def test_an_edit_past_the_overlay_share_rewrites_the_shard_whole(tmp_path: Path) -> None:
    """Within ``index_overlay_share`` of a shard's rows an edit is kept as an overlay over the same base; past it,
    or with a share of 0, the shard is written whole again, without an overlay."""
    documents = [{"doc_id": f"d{i:03d}", "text": f"w{i} river stone"} for i in range(120)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w7", "moon"], "index_shards": 2}
    index = {**options, "index_dir": str(tmp_path)}
    sharded(corpus_frame(documents, 2), index)
    built = shard_versions(tmp_path)
    documents[7] = {"doc_id": "d007", "text": "w7 moon"}
    assert sharded(corpus_frame(documents, 2), index) == one_index(documents, options)
    overlaid = shard_versions(tmp_path)
    assert sorted(bool(overlaid[shard][1]) for shard in overlaid) == [False, True]
    assert {shard: version[0] for shard, version in overlaid.items()} == {s: v[0] for s, v in built.items()}
    documents = [
        {**document, "text": document["text"] + " tide"} if i % 4 == 0 else document
        for i, document in enumerate(documents)
    ]
    assert sharded(corpus_frame(documents, 2), index) == one_index(documents, options)
    rewritten = shard_versions(tmp_path)
    assert all(not rewritten[shard][1] and rewritten[shard][0] != built[shard][0] for shard in built)
    documents[9] = {"doc_id": "d009", "text": "w9 moon"}
    assert sharded(corpus_frame(documents, 2), {**index, "index_overlay_share": 0}) == one_index(documents, options)
    assert all(not version[1] for version in shard_versions(tmp_path).values())


def test_an_edit_rewrites_only_the_shards_holding_changed_documents(tmp_path: Path) -> None:
    documents = [{"doc_id": f"d{i:03d}", "text": f"w{i} river stone"} for i in range(200)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w7"], "index_shards": 4, "index_dir": str(tmp_path)}
    sharded(corpus_frame(documents, 3), options)
    before = shard_versions(tmp_path)
    changed = [dict(document) for document in documents]
    changed[7]["text"] = "w7 moon"
    found = sharded(corpus_frame(changed, 3), options)
    after = shard_versions(tmp_path)
    assert sum(before[shard] != after[shard] for shard in before) == 1
    assert found == one_index(changed, options)


CHANGED = re.compile(r"index_shards: (\d+) of (\d+) shards changed, (\d+) of (\d+) rows sent their text")


def changes_logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, ...]]:
    found = [CHANGED.match(record.getMessage()) for record in caplog.records]
    return [tuple(int(group) for group in match.groups()) for match in found if match]


def test_an_edit_reads_again_only_the_rows_that_changed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A text changed, a metadata value changed, a document removed and one added: only those three rows cross to
    their shards with their text; the answers equal one index over the edited corpus."""
    documents = [{"doc_id": f"d{i:03d}", "text": f"w{i} river stone", "group": i % 3} for i in range(200)]
    queries = ["river w7", "stone w8", "moon", "w9"]
    options = {"retrieve_backend": "bm25s", "query_text": queries, "index_shards": 4, "return_metadata": True}
    options["filters"] = {"group": [0, 1]}
    sharded(corpus_frame(documents, 3), {**options, "index_dir": str(tmp_path)})
    changed = [dict(document) for document in documents if document["doc_id"] != "d009"]
    changed[7]["text"] = "w7 moon"
    changed[8]["group"] = 0
    changed.append({"doc_id": "new", "text": "moon river", "group": 0})
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(corpus_frame(changed, 2), {**options, "index_dir": str(tmp_path)})
    [(shards, of, sent, rows)] = changes_logged(caplog)
    assert (of, sent, rows) == (4, 3, 200) and 1 <= shards <= 4
    assert found == one_index(changed, options)


@pytest.mark.parametrize("edit", ["remove", "rewrite most", "none"])
def test_removals_large_edits_and_no_edit_rank_as_one_index(
    edit: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Removals send no text; rewritten texts send theirs; an unchanged corpus keeps every shard version."""
    documents = [{"doc_id": f"d{i:03d}", "text": f"w{i % 17} river stone"} for i in range(120)]
    options = {"retrieve_backend": "tfidf", "query_text": ["river w3", "w5 stone"], "index_shards": 3}
    sharded(corpus_frame(documents, 2), {**options, "index_dir": str(tmp_path)})
    before = shard_versions(tmp_path)
    if edit == "remove":
        documents = documents[::2]
    elif edit == "rewrite most":
        documents = [{**document, "text": document["text"] + " tide"} for document in documents[:100]]
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(corpus_frame(documents, 3), {**options, "index_dir": str(tmp_path)})
    logged = changes_logged(caplog)
    expected = {"remove": [(3, 3, 0, 60)], "rewrite most": [(3, 3, 100, 100)], "none": [(0, 3, 0, 120)]}[edit]
    assert logged == expected
    assert (shard_versions(tmp_path) == before) == (edit == "none")
    assert found == one_index(documents, options)


def test_a_row_withheld_that_its_shard_does_not_hold_is_read_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The hashes file a row is looked up in is a hint: a changed row whose hash it lists (here planted) crosses
    without its text, its shard finds the hash among none of its rows, and the row is read again by doc_id in a job
    of its own."""
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["moon", "river w3"], "index_shards": 2}
    sharded(corpus_frame(documents, 2), {**options, "index_dir": str(tmp_path)})
    documents[3] = {"doc_id": "d03", "text": "w3 moon"}
    frame = corpus_frame(documents, 2)
    settings = Bm25sRetriever.read_settings(OptionReader({"retrieve_backend": "bm25s"}))
    job = ShardJob(Bm25sRetriever, settings, settings.index, Path("unused"), 2, COLUMN, "en")
    [edited_row] = [row for row in _selected(frame, job).collect() if row["doc_id"] == "d03"]
    folder = next((tmp_path / SHARDS_FOLDER).glob(f"*/2-shards/shard-{edited_row['shard']}/documents"))
    hashes_file = folder / (folder / "CURRENT").read_text(encoding="ascii").strip() / ROW_HASHES_FILE
    planted = np.vstack([np.load(hashes_file), np.frombuffer(edited_row["row_hash"], dtype=np.uint8)])
    np.save(hashes_file, planted[np.argsort(planted[:, :8].copy().view("<u8").ravel())])
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(frame, {**options, "index_dir": str(tmp_path)})
    assert any("read again" in record.getMessage() for record in caplog.records)
    assert found == one_index(documents, options)


def test_a_frame_that_gives_other_rows_when_read_again_is_a_typed_error(tmp_path: Path) -> None:
    """A row read again must be the row the shard asked for: a frame that reads differently each time (randomness
    not cached) cannot be indexed as one corpus."""
    change = _Change(0, None, {"d1": b"h" * 32})
    settings = Bm25sRetriever.read_settings(OptionReader({"retrieve_backend": "bm25s"}))
    job = ShardJob(Bm25sRetriever, settings, settings.index, tmp_path, 2, COLUMN, "en")
    rows = {"doc_id": ["d1"], "text": ["other text"], "metadata": ["{}"], "row_hash": [b"x" * 32]}
    with pytest.raises(InvalidOptionError, match="same rows each time it is read"):
        _change_written(job, change, pa.table(rows))


def test_no_two_rows_hash_the_same_input() -> None:
    """A row's hash reads its doc_id and metadata JSON, each after its length in characters, then its text: moving
    characters between doc_id, metadata and text, or changing any part, changes it; the same row hashes the same,
    and a row without text has none."""
    rows = [
        ("a", "text", None),
        ("a", "text", "1"),
        ("a", "1text", None),
        ("a{", "text", None),
        ("ab", "text", None),
        ("a", "text ", None),
        ("海", "text", None),
        ("\U0001f600", "text", None),
        ("", "", None),
        ("x", None, None),
    ]
    documents = [{"doc_id": doc_id, "text": text, "k": k} for doc_id, text, k in rows]
    frame = spark_test_session().createDataFrame(pa.table({COLUMN: pa.array(documents)}))
    settings = Bm25sRetriever.read_settings(OptionReader({"retrieve_backend": "bm25s"}))
    job = ShardJob(Bm25sRetriever, settings, settings.index, Path("unused"), 2, COLUMN, "en")
    hashes = [row["row_hash"] for row in _selected(frame, job).collect()]
    assert hashes == [row["row_hash"] for row in _selected(frame, job).collect()]
    assert hashes[-1] is None
    assert len(set(hashes[:-1])) == len(rows) - 1 and all(len(row_hash) == 32 for row_hash in hashes[:-1])
    assert hashes[6] == hashlib.sha256('1:海10:{"k":null}text'.encode()).digest()


def test_a_shards_rows_are_sorted_as_python_sorts_doc_ids_and_the_least_repeated_one_is_named() -> None:
    """Arrow sorts strings by their UTF-8 bytes: the order of code points, which is how Python sorts doc_ids (and
    how a shard's file keeps them), across scripts and outside the Basic Multilingual Plane."""
    doc_ids = ["z", "é", "海", "a", "😀", "Z", "ﬀ", "a1", "؀"]
    table = pa.table({"doc_id": doc_ids, "text": [f"t{i}" for i in range(len(doc_ids))], "row_hash": [b"h"] * 9})
    rows = _sorted_rows(table, COLUMN)
    assert rows.column("doc_id").to_pylist() == sorted(doc_ids)
    assert rows.column("text").to_pylist() == [f"t{doc_ids.index(doc_id)}" for doc_id in sorted(doc_ids)]
    assert rows.column("metadata").to_pylist() == ["{}"] * len(doc_ids)
    repeated = pa.table({"doc_id": ["b", "海", "a", "海", "b"], "text": ["x"] * 5, "row_hash": [b"h"] * 5})
    with pytest.raises(ConnectorError, match="duplicate doc_id 'b'"):
        _sorted_rows(repeated, COLUMN)


def test_a_broken_snapshot_is_built_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w3"], "index_shards": 2, "index_dir": str(tmp_path)}
    sharded(corpus_frame(documents, 2), options)
    [snapshot] = (tmp_path / SHARDS_FOLDER).glob("*/*-shards/snapshot")
    live = snapshot / (snapshot / "CURRENT").read_text(encoding="ascii").strip()
    (live / "snapshot.json").write_text('{"shards": {"0": "v-elsewhere"}}', encoding="utf-8")
    with caplog.at_level("WARNING", logger="rag_integration"):
        found = sharded(corpus_frame(documents, 2), options)
    assert any("ignoring the snapshot" in record.getMessage() for record in caplog.records)
    assert found == one_index(documents, options)


def test_a_damaged_documents_file_of_an_unchanged_shard_is_written_again(tmp_path: Path) -> None:
    """A request that finds a shard's rows unchanged still reads them to compare, checked against the manifest: a
    documents file damaged in place (its size kept) is found then and the shard written again from the frame (its
    withheld texts read again) as a new version, which later requests keep; each answers as one index."""
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w3"], "index_shards": 2, "index_dir": str(tmp_path)}
    sharded(corpus_frame(documents, 2), options)
    [store] = (tmp_path / SHARDS_FOLDER).glob("*/*-shards/shard-0/documents")

    def live() -> str:
        return (store / "CURRENT").read_text(encoding="ascii").strip()

    damaged_version = live()
    damaged = store / damaged_version / DOCUMENTS_FILE
    data = bytearray(damaged.read_bytes())
    position = data.index(b"river")
    data[position : position + 5] = b"rivet"
    damaged.write_bytes(bytes(data))
    assert sharded(corpus_frame(documents, 2), options) == one_index(documents, options)
    written_again = live()
    assert written_again != damaged_version
    texts = [document.text for document in read_shard_documents(store.parent, written_again)]
    assert texts and all(text.endswith(" river stone") for text in texts)
    assert sharded(corpus_frame(documents, 2), options) == one_index(documents, options)
    assert live() == written_again


@pytest.mark.parametrize(("shards", "again"), [(2, None), (4, "4 of 4")])
def test_shards_analyse_in_their_writer_unless_their_own_sample_places_otherwise(
    shards: int, again: str | None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under ``auto`` a shard analyses its texts as its own sample places them; a shard of at most 512 documents
    places each by itself while a corpus of more uses one sample, so those shards are analysed again: both exact."""
    generator = random.Random(7)
    documents = random_corpus(generator, 1200)
    queries = [" ".join(generator.sample(WORDS + GERMAN, 2)) for _ in range(20)]
    options = {"retrieve_backend": "bm25s", "query_text": queries, "index_shards": shards, "language": "auto"}
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(corpus_frame(documents, 3), {**options, "index_dir": str(tmp_path)})
    messages = [record.getMessage() for record in caplog.records if "analysed again" in record.getMessage()]
    assert messages == (
        [] if again is None else [f"index_shards: {again} shards analysed again under the corpus's placement"]
    )
    assert found == one_index(documents, options)


def test_unchanged_shards_are_taken_from_the_snapshots_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request that finds a shard unchanged takes its sample and statistics from the snapshot's record of it
    instead of reading the shard again, so it is not analysed again under the corpus's placement either (a shard
    of at most 512 documents first places each text by itself: only the edited one is), and a request that changed
    nothing writes no new snapshot; every answer equals one index over the corpus of its request."""
    generator = random.Random(11)
    documents = random_corpus(generator, 1200)
    queries = [" ".join(generator.sample(WORDS + GERMAN, 2)) for _ in range(10)]
    options = {"retrieve_backend": "bm25s", "query_text": queries, "index_shards": 4, "language": "auto"}
    sharded(corpus_frame(documents, 3), {**options, "index_dir": str(tmp_path)})
    [pointer] = tmp_path.glob(f"{SHARDS_FOLDER}/*/4-shards/snapshot/CURRENT")
    edited_documents = [dict(document) for document in documents]
    edited_documents[5]["text"] = "river moon " + str(edited_documents[5]["text"])
    for corpus, taken, again in ((documents, 4, []), (edited_documents, 3, ["1 of 4"])):
        caplog.clear()
        live = pointer.read_text()
        with caplog.at_level("INFO", logger="rag_integration"):
            found = sharded(corpus_frame(corpus, 3), {**options, "index_dir": str(tmp_path)})
        assert (pointer.read_text() == live) == (corpus is documents)  # nothing changed: no snapshot written
        messages = [record.getMessage() for record in caplog.records]
        assert f"index_shards: {taken} unchanged shards taken from the snapshot's records" in messages
        analysed = [message.split(": ")[1].split(" shards")[0] for message in messages if "analysed again" in message]
        assert analysed == again
        assert found == one_index(corpus, options)


@pytest.mark.parametrize("backend", ["tfidf", "faiss", "hybrid_rrf"])
def test_every_backend_takes_unchanged_shards_from_the_records(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Records hold term statistics (tfidf), none (flat FAISS) or a part of both (hybrid_rrf): a request with no
    change and one with an edit answer as one index, the unchanged shards taken from their records."""
    documents = [{"doc_id": f"d{i:02d}", "text": f"the {WORDS[i % 12]} and {WORDS[i % 7]} n{i}"} for i in range(48)]
    options = {"retrieve_backend": backend, "query_text": ["moon light", "engine oil n7"], "top_k": 4}
    options.update(index_shards=3, index_dir=str(tmp_path))
    sharded(corpus_frame(documents, 2), options)
    edited_documents = [dict(document) for document in documents]
    edited_documents[7]["text"] = "moon engine n7"
    for corpus, taken in ((documents, 3), (edited_documents, 2)):
        caplog.clear()
        with caplog.at_level("INFO", logger="rag_integration"):
            found = sharded(corpus_frame(corpus, 2), options)
        messages = [record.getMessage() for record in caplog.records]
        assert f"index_shards: {taken} unchanged shards taken from the snapshot's records" in messages
        expected = one_index(corpus, options)
        assert [[doc_id for doc_id, _ in query] for query in ranked(found)] == [
            [doc_id for doc_id, _ in query] for query in ranked(expected)
        ]
        for query_found, query_expected in zip(ranked(found), ranked(expected), strict=True):
            assert [score for _, score in query_found] == pytest.approx(
                [score for _, score in query_expected], rel=1e-6
            )


@pytest.mark.parametrize(
    "spoiled",
    [
        lambda listed: listed["records"]["0"]["statistics"].update(document_count=-1),
        lambda listed: listed["records"]["0"]["sample"]["least"][0].__setitem__(0, "ab"),
        lambda listed: listed["records"]["0"]["statistics"].update(terms=10**9),
        lambda listed: listed["records"].update({"7": listed["records"]["0"]}),
        lambda listed: listed.update(records=[]),
    ],
)
def test_records_that_cannot_be_read_are_dropped_and_their_shards_read_again(
    spoiled: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w3"], "index_shards": 2, "language": "auto"}
    options["index_dir"] = str(tmp_path)
    sharded(corpus_frame(documents, 2), options)
    [snapshot] = (tmp_path / SHARDS_FOLDER).glob("*/*-shards/snapshot")
    live = snapshot / (snapshot / "CURRENT").read_text(encoding="ascii").strip()
    listed = json.loads((live / "snapshot.json").read_text(encoding="utf-8"))
    spoiled(listed)
    written = json.dumps(listed).encode()
    (live / "snapshot.json").write_bytes(written)
    manifest = json.loads((live / "manifest.json").read_text(encoding="ascii"))
    manifest["files"]["snapshot.json"] = {"bytes": len(written), "sha256": hashlib.sha256(written).hexdigest()}
    (live / "manifest.json").write_text(json.dumps(manifest), encoding="ascii")
    with caplog.at_level("INFO", logger="rag_integration"):
        found = sharded(corpus_frame(documents, 2), options)
    messages = [record.getMessage() for record in caplog.records]
    assert any("snapshot's records in" in message and "are not usable" in message for message in messages)
    assert not any("taken from the snapshot's records" in message for message in messages)
    assert found == one_index(documents, options)


def shard_versions(index_dir: Path) -> dict[str, tuple[str, ...]]:
    """Each shard's live documents version and overlay version, as the live snapshot names them."""
    versions: dict[str, tuple[str, ...]] = {}
    for snapshot in sorted((index_dir / SHARDS_FOLDER).glob("*/*-shards/snapshot")):
        live = snapshot / (snapshot / "CURRENT").read_text(encoding="ascii").strip() / "snapshot.json"
        listed = json.loads(live.read_text(encoding="utf-8"))
        for number, version in listed["shards"].items():
            versions[f"shard-{number}"] = (version, listed["overlays"].get(number, ""))
    return versions


def test_more_shards_than_documents_are_capped_and_explained(tmp_path: Path) -> None:
    documents = [{"doc_id": f"d{i}", "text": f"w{i} oil"} for i in range(3)]
    options = {"retrieve_backend": "bm25s", "query_text": ["oil w1"], "index_shards": 16, "explain": True}
    found = sharded(corpus_frame(documents, 2), {**options, "index_dir": str(tmp_path)})
    assert [passage["explanation"]["shards"] for passage in found[0]] == [3, 3, 3]
    expected = one_index(documents, options)
    assert ranked(found) == ranked(expected)


def test_dense_shards_rank_as_one_flat_index(tmp_path: Path) -> None:
    documents = [
        {"doc_id": f"d{i}", "text": f"the {WORDS[i % 12]} and the {WORDS[i % 7]} number {i}"} for i in range(60)
    ]
    options = {"retrieve_backend": "faiss", "query_text": ["moon light", "engine oil"], "top_k": 5, "index_shards": 3}
    found = sharded(corpus_frame(documents, 4), {**options, "index_dir": str(tmp_path)})
    expected = one_index(documents, options)
    assert [[doc_id for doc_id, _ in query] for query in ranked(found)] == [
        [doc_id for doc_id, _ in query] for query in ranked(expected)
    ]
    for query_found, query_expected in zip(ranked(found), ranked(expected), strict=True):
        assert [score for _, score in query_found] == pytest.approx([score for _, score in query_expected], rel=1e-6)


@pytest.mark.parametrize("filters", [None, {"group": [0, 1]}])
def test_hybrid_shards_fuse_the_merged_rankings_as_one_index(filters: dict[str, Any] | None, tmp_path: Path) -> None:
    generator = random.Random(7)
    documents = random_corpus(generator, 90)
    queries = ["oil engine", "moon tide light", "das brot", "stone", "river salt wind"]
    options = {"retrieve_backend": "hybrid_rrf", "embedding_model": "hash", "query_text": queries, "top_k": 6}
    options.update(index_shards=3, rrf_candidates=8, explain=True)
    if filters is not None:
        options["filters"] = filters
    found = sharded(corpus_frame(documents, 4), {**options, "index_dir": str(tmp_path)})
    expected = one_index(documents, options)
    assert ranked(found) == ranked(expected)
    for query_found, query_expected in zip(found, expected, strict=True):
        for passage, one in zip(query_found, query_expected, strict=True):
            assert passage["explanation"] == {**one["explanation"], "shards": 3}


def test_a_frame_of_queries_gets_each_answer_on_its_row(tmp_path: Path) -> None:
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} common", "query": f"w{i}"} for i in range(40)]
    frame = corpus_frame(documents, 3).selectExpr(COLUMN, f"{COLUMN}.query AS spark_queries")
    options = {"retrieve_backend": "bm25s", "queries_source": "spark_queries", "corpus_source": COLUMN, "top_k": 1}
    options.update(index_shards=2, index_dir=str(tmp_path))
    answered = Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader(options)).collect()
    assert len(answered) == 40 and set(answered[0].asDict()) == {COLUMN, "spark_queries", "retrieved_passages"}
    for row in answered:
        assert row["retrieved_passages"][0]["doc_id"] == f"d{int(row['spark_queries'][1:]):02d}"


@pytest.mark.parametrize("value", [0, -1, "2", 2.0, True, [2]])
def test_index_shards_that_is_not_an_int_of_at_least_one_is_refused(value: object, tmp_path: Path) -> None:
    options = {"retrieve_backend": "bm25s", "query_text": "oil", "index_shards": value, "index_dir": str(tmp_path)}
    with pytest.raises(InvalidOptionError, match="index_shards"):
        sharded(corpus_frame([{"doc_id": "a", "text": "oil"}], 1), options)


def test_shards_need_a_spark_corpus_and_an_index_dir(tmp_path: Path) -> None:
    inline = {"retrieve_backend": "bm25s", "query_text": "oil", "corpus": [{"doc_id": "a", "text": "oil"}]}
    with pytest.raises(InvalidOptionError, match=r"index_shards.*Spark frame"):
        run_feature("retrieved_passages", {**inline, "index_shards": 2}, {Bm25sRetriever})
    frame = corpus_frame([{"doc_id": "a", "text": "oil"}, {"doc_id": "b", "text": "gas"}], 1)
    with pytest.raises(MissingOptionError, match="index_dir"):
        sharded(frame, {"retrieve_backend": "bm25s", "query_text": "oil", "index_shards": 2})


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"retrieve_backend": "tfidf", "tfidf_ngram_max": 2}, "tfidf_ngram_max"),
        ({"retrieve_backend": "faiss", "faiss_index": "hnsw"}, "faiss_index"),
        ({"retrieve_backend": "hybrid_rrf", "faiss_index": "ivf"}, "faiss_index"),
        ({"retrieve_backend": "bm25s", "principals": ["ann"]}, "principals"),
    ],
)
def test_settings_whose_shards_would_not_rank_as_one_index_are_refused(
    options: dict[str, Any], option: str, tmp_path: Path
) -> None:
    request = {**options, "query_text": "oil", "index_shards": 2, "index_dir": str(tmp_path)}
    with pytest.raises(InvalidOptionError, match=option):
        sharded(corpus_frame([{"doc_id": "a", "text": "oil"}, {"doc_id": "b", "text": "gas"}], 1), request)


def test_a_column_the_frame_lacks_is_a_typed_error(tmp_path: Path) -> None:
    options = {"retrieve_backend": "bm25s", "query_text": "oil", "index_shards": 2, "index_dir": str(tmp_path)}
    frame = corpus_frame([{"doc_id": "a", "text": "oil"}], 1)
    with pytest.raises(MissingOptionError, match="corpus_source"):
        Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader({**options, "corpus_source": "elsewhere"}))
    asked = {**options, "corpus_source": COLUMN, "queries_source": "questions"}
    asked.pop("query_text")
    with pytest.raises(MissingOptionError, match="queries_source"):
        Bm25sRetriever.answer_frame(SparkAdapter(), frame, OptionReader(asked))


def test_a_bad_row_is_the_typed_error_of_the_executor_that_read_it(tmp_path: Path) -> None:
    options = {"retrieve_backend": "bm25s", "query_text": "oil", "index_shards": 2, "index_dir": str(tmp_path)}
    without_id = corpus_frame([{"doc_id": "a", "text": "oil"}, {"doc_id": None, "text": "gas"}], 2)
    with pytest.raises(InvalidOptionError, match="doc_id"):
        sharded(without_id, options)
    twice = corpus_frame([{"doc_id": "a", "text": "oil"}, {"doc_id": "a", "text": "gas"}], 2)
    with pytest.raises(ConnectorError, match="duplicate doc_id 'a'"):
        sharded(twice, options)


def test_a_bad_row_in_an_edited_corpus_is_a_typed_error_too(tmp_path: Path) -> None:
    """With a snapshot, rows are hashed where they are read: a row that cannot be hashed (no text, metadata that is
    not JSON) travels with its text to its shard, whose task names what is wrong with it."""
    options = {"retrieve_backend": "bm25s", "query_text": "oil", "index_shards": 2, "index_dir": str(tmp_path)}
    documents = [{"doc_id": f"d{i}", "text": f"oil {i}", "year": 2000 + i} for i in range(6)]
    sharded(corpus_frame(documents, 2), options)
    not_json = [*documents[:-1], {"doc_id": "d5", "text": "oil 5", "year": float("nan")}]
    with pytest.raises(InvalidOptionError, match=r"d5.*JSON values"):
        sharded(corpus_frame(not_json, 2), options)
    without_text = [*documents[:-1], {"doc_id": "d5", "text": None, "year": 2005}]
    with pytest.raises(InvalidOptionError, match="text"):
        sharded(corpus_frame(without_text, 2), options)


LARGE_CORPUS_RUN = """
import sys
import pyarrow as pa
from pyspark.sql import SparkSession
from mloda.user import DataAccessCollection, Feature, Options, PluginCollector, mlodaAPI
from mloda.user.spark import SparkFramework
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.kit import KitItemRows

spark = (
    SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    .config("spark.driver.maxResultSize", "4m").getOrCreate()
)
words = [f"w{number}" for number in range(5000)]
rows = spark.range(0, 30000, numPartitions=8).selectExpr(
    "named_struct('doc_id', concat('d', cast(id as string)), 'text', "
    "concat_ws(' ', transform(sequence(1, 240), i -> concat('w', cast((id * 7919 + i * 104729) % 5000 as string)))))"
    " AS kit_item_rows"
)
size = rows.selectExpr("sum(length(kit_item_rows.text)) AS size").collect()[0]["size"]
assert size >= 40_000_000, size


class SparkRows(KitItemRows):
    @classmethod
    def calculate_feature(cls, data, features):
        return rows


options = {
    "retrieve_backend": "bm25s", "query_text": ["w17 w4242", "w99"], "corpus_source": Feature("kit_item_rows", options=Options(context={"kit_rows": []})),
    "index_shards": 4, "index_dir": sys.argv[1], "top_k": 3,
}
result = mlodaAPI.run_all(
    [Feature("retrieved_passages", options=Options(context=options))],
    compute_frameworks=[SparkFramework],
    plugin_collector=PluginCollector.enabled_feature_groups({Bm25sRetriever, SparkRows}),
    data_access_collection=DataAccessCollection(connections=[spark]),
)
answers = [row["retrieved_passages"] for row in result[0].collect()]
print(size, [len(passages) for passages in answers])
"""


def test_a_corpus_larger_than_the_drivers_result_limit_is_answered(tmp_path: Path) -> None:
    """``spark.driver.maxResultSize=4m`` and a corpus frame of over 40 MB: collecting it would fail; shards answer."""
    script = tmp_path / "large_corpus.py"
    script.write_text(LARGE_CORPUS_RUN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "index")], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    size, lengths = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(size) >= 40_000_000 and lengths == "[3, 3]"


@pytest.mark.parametrize("shards", [1, 2, 3, 4, 7, 16])
def test_each_shard_is_its_own_spark_partition(shards: int) -> None:
    """The keys ``partition_keys`` picks are sent by Spark's own hash partitioning to the partition of their shard."""
    keys = partition_keys(shards)
    frame = spark_test_session().createDataFrame([(key,) for key in keys], "partition_key long")
    spread = frame.repartition(shards, "partition_key").selectExpr("partition_key", "spark_partition_id() AS part")
    assert {row["partition_key"]: row["part"] for row in spread.collect()} == {key: s for s, key in enumerate(keys)}
    checked = spark_test_session().range(-300, 300).selectExpr("id", "hash(id) AS hashed").collect()
    assert [spark_hash(row["id"]) for row in checked] == [row["hashed"] for row in checked]
    documents = [{"doc_id": f"d{i}", "text": "oil", "year": i} for i in range(20 * shards)]
    settings = Bm25sRetriever.read_settings(OptionReader({"retrieve_backend": "bm25s"}))
    job = ShardJob(Bm25sRetriever, settings, settings.index, Path("unused"), shards, COLUMN, "en")
    placed = by_shard(corpus_frame(documents, 3), job).selectExpr("shard", "spark_partition_id() AS part").collect()
    assert all(row["shard"] == row["part"] for row in placed) and len({row["shard"] for row in placed}) == shards


def test_forget_removes_every_shard_that_held_the_document(tmp_path: Path) -> None:
    secret = "The quixotelium merger closes on Friday."
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(30)]
    documents.append({"doc_id": "secret", "text": secret})
    for backend in ("bm25s", "faiss"):
        options = {"retrieve_backend": backend, "query_text": ["merger"], "index_shards": 3, "index_dir": str(tmp_path)}
        sharded(corpus_frame(documents, 2), {**options, "embedding_model": "hash"} if backend == "faiss" else options)

    def traces() -> list[Path]:
        return [path for path in tmp_path.rglob("*") if path.is_file() and b"quixotel" in path.read_bytes()]

    assert traces()
    report = forget(tmp_path, ["secret"], documents=documents)
    assert report.shards == 2 and traces() == []
    remaining = documents[:-1]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w3"], "index_shards": 3, "index_dir": str(tmp_path)}
    assert sharded(corpus_frame(remaining, 2), options) == one_index(remaining, options)


@pytest.mark.parametrize("kept", ["in the overlay", "gone from the base"])
def test_forget_removes_a_shard_whose_overlay_or_gone_base_rows_held_the_document(kept: str, tmp_path: Path) -> None:
    """A forgotten text is in an overlay's rows, or in a base row an overlay marks gone: either way no file keeps
    it, and the next request answers as one index."""
    secret = "The quixotelium merger closes on Friday."
    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(60)]
    if kept == "gone from the base":
        documents.append({"doc_id": "secret", "text": secret})
    options = {"retrieve_backend": "bm25s", "query_text": ["merger"], "index_shards": 2, "index_dir": str(tmp_path)}
    options["index_overlay_share"] = 1.0
    sharded(corpus_frame(documents, 2), options)
    if kept == "gone from the base":
        documents = documents[:-1]
    else:
        documents.append({"doc_id": "secret", "text": secret})
    assert sharded(corpus_frame(documents, 2), options) == one_index(documents, options)
    assert any(version[1] for version in shard_versions(tmp_path).values())

    def traces() -> list[Path]:
        return [path for path in tmp_path.rglob("*") if path.is_file() and b"quixotel" in path.read_bytes()]

    assert traces()
    report = forget(tmp_path, ["secret"], documents=[{"doc_id": "secret", "text": secret}])
    assert report.shards == 1 and traces() == []
    remaining = [document for document in documents if document["doc_id"] != "secret"]
    assert sharded(corpus_frame(remaining, 2), options) == one_index(remaining, options)


def test_an_overlay_repeating_a_document_its_base_still_holds_is_a_typed_error(tmp_path: Path) -> None:
    """A stored overlay (written by someone else) whose rows repeat a doc_id its base still holds would answer that
    document twice: the shard is refused when it is opened; the overlay as written passes."""
    from rag_integration.core.contract.spark_shards import _live_rows
    from rag_integration.core.errors import IndexMismatchError
    from rag_integration.core.indexes.shards import Overlay, read_overlay, read_shard_table

    documents = [{"doc_id": f"d{i:02d}", "text": f"w{i} river stone"} for i in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river"], "index_shards": 2, "index_dir": str(tmp_path)}
    options["index_overlay_share"] = 1.0
    sharded(corpus_frame(documents, 2), options)
    documents[0] = {"doc_id": "d00", "text": "w0 moon"}
    sharded(corpus_frame(documents, 2), options)
    [(shard, (base, overlay))] = [(shard, version) for shard, version in shard_versions(tmp_path).items() if version[1]]
    [folder] = (tmp_path / SHARDS_FOLDER).glob(f"*/2-shards/{shard}")
    stored = read_shard_table(folder, base)
    written = read_overlay(folder, overlay, base, stored.num_rows)
    assert written.table.column("doc_id").to_pylist() == ["d00"] and len(written.dead) == 1
    assert int(_live_rows(stored, written, folder).sum()) == stored.num_rows - 1
    live = written.live(stored.num_rows)
    repeated = pa.concat_tables([written.table, stored.filter(live).slice(0, 1)]).sort_by("doc_id")
    with pytest.raises(IndexMismatchError, match="overlay of documents its base no longer holds"):
        _live_rows(stored, Overlay(repeated, written.dead), folder)


@pytest.mark.parametrize("backend", ["faiss", "hybrid_rrf"])
def test_dense_and_hybrid_edits_kept_as_overlays_rank_as_one_index(backend: str, tmp_path: Path) -> None:
    """FAISS flat and hybrid_rrf shards keep small edits as overlays too: a gone base row is never a candidate of
    either ranking, and the answers equal one index (FAISS's scores within 1e-6, hybrid's fused ranks exactly)."""
    generator = random.Random(41)
    documents = random_corpus(generator, 120)
    queries = ["oil engine", "moon tide light", "das brot", "stone", "river salt wind"]
    options: dict[str, Any] = {"retrieve_backend": backend, "embedding_model": "hash", "query_text": queries}
    options.update(top_k=5, index_shards=3)
    if backend == "hybrid_rrf":
        options.update(rrf_candidates=8, filters={"group": [0, 1]})
    index = {**options, "index_dir": str(tmp_path), "index_overlay_share": 1.0}

    def same(found: list[list[dict[str, Any]]], expected: list[list[dict[str, Any]]]) -> None:
        assert [[doc_id for doc_id, _ in query] for query in ranked(found)] == [
            [doc_id for doc_id, _ in query] for query in ranked(expected)
        ]
        for query_found, query_expected in zip(ranked(found), ranked(expected), strict=True):
            scores = [score for _, score in query_expected]
            assert [score for _, score in query_found] == (
                scores if backend == "hybrid_rrf" else pytest.approx(scores, rel=1e-6)
            )

    first = documents
    same(sharded(corpus_frame(documents, 3), index), one_index(documents, options))
    bases = {shard: version[0] for shard, version in shard_versions(tmp_path).items()}
    for round_number in range(2):
        changed = [{**document, "text": "moon salt " + document["text"]} for document in documents[3:6]]
        documents = changed + documents[6:] + random_corpus(generator, 3)
        same(sharded(corpus_frame(documents, 2), index), one_index(documents, options))
        assert any(version[1] for version in shard_versions(tmp_path).values()), round_number
        assert {shard: version[0] for shard, version in shard_versions(tmp_path).items()} == bases
    same(sharded(corpus_frame(first, 2), index), one_index(first, options))


def test_an_overlay_share_for_a_backend_whose_shards_are_written_whole_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FaissDenseRetriever, "SHARD_OVERLAYS", False)  # a backend whose hooks do not take ``live``
    documents = [{"doc_id": f"d{i}", "text": f"w{i} oil"} for i in range(6)]
    options = {"retrieve_backend": "faiss", "query_text": ["oil"], "index_shards": 2, "index_dir": str(tmp_path)}
    with pytest.raises(InvalidOptionError, match="index_overlay_share"):
        sharded(corpus_frame(documents, 2), {**options, "embedding_model": "hash", "index_overlay_share": 0.2})
    with pytest.raises(ConnectorError, match="index_overlay_share"):
        sharded(corpus_frame(documents, 2), {**options, "retrieve_backend": "bm25s", "index_overlay_share": 2})


@pytest.mark.parametrize("oil", ["oil", "oil\ud800"])  # a lone surrogate: looked up by dict, not Arrow
def test_a_shards_counts_keep_their_rows_and_a_gone_rows_unknown_term_is_counted_as_empty(oil: str) -> None:
    from rag_integration.core.indexes.shards import CorpusTerms, TermStatistics
    from rag_integration.core.indexes.term_counts import AnalysedCorpus
    from rag_integration.core.ranking.bm25_scores import TermCountArrays
    from rag_integration.core.text.languages import CorpusLanguages

    vocabulary = {"": 0, oil: 1, "gone": 2, "tide": 3}
    counts = TermCountArrays(
        np.array([0, 2, 3, 3, 5]),
        np.array([1, 3, 2, 1, 3], dtype=np.int32),
        np.array([2, 1, 4, 1, 1], dtype=np.int32),
        4,
    )
    languages = CorpusLanguages(("en",), "en", bytes(4))
    analysed = AnalysedCorpus(counts, vocabulary, b"", languages, ("fixed", "en"), {})
    live = np.array([True, False, True, True])
    part = TermStatistics.of(analysed, live)
    assert (part.document_count, part.total_length) == (3, 6)
    assert dict(zip(part.terms, part.frequencies.tolist(), strict=True)) == {"": 1, oil: 2, "tide": 2}
    only = counts.only(live)
    assert only.indptr.tolist() == [0, 2, 2, 4] and only.terms.tolist() == [1, 3, 1, 3]
    corpus = CorpusTerms.merged([part])
    renumbered = corpus.counts(analysed, live)
    assert renumbered.indptr.tolist() == counts.indptr.tolist()
    assert renumbered.terms.tolist() == [1, 2, 0, 1, 2]  # the gone row's "gone" counts as the empty term
    from rag_integration.core.errors import IndexMismatchError

    with pytest.raises(IndexMismatchError):
        corpus.counts(analysed)


@pytest.mark.parametrize("seed", range(6))
def test_added_rows_merge_into_a_shards_kept_rows_in_doc_id_order(seed: int) -> None:
    generator = random.Random(seed)
    ids = sorted({"".join(generator.choice("aZé海0") for _ in range(generator.randint(1, 4))) for _ in range(300)})
    previous_ids = sorted(generator.sample(ids, generator.randint(0, len(ids))))
    dropped = frozenset(generator.sample(previous_ids, generator.randint(0, len(previous_ids))))
    kept = [doc_id for doc_id in previous_ids if doc_id not in dropped]
    new = sorted(generator.sample([doc_id for doc_id in ids if doc_id not in kept], generator.randint(0, 40)))
    previous = pa.table({"doc_id": pa.array(previous_ids, pa.large_string()), "n": range(len(previous_ids))})
    added = pa.table({"doc_id": pa.array(new, pa.large_string()), "n": range(-len(new), 0)})
    merged = _merged(previous, np.array([doc_id not in dropped for doc_id in previous_ids], dtype=bool), added)
    assert merged.column("doc_id").to_pylist() == sorted(kept + new)
    position = {doc_id: n for doc_id, n in zip(previous_ids, range(len(previous_ids)))}
    position.update(zip(new, range(-len(new), 0)))
    assert merged.column("n").to_pylist() == [position[doc_id] for doc_id in sorted(kept + new)]
    assert merged.schema == previous.schema and all(column.num_chunks <= 1 for column in merged.columns)


def test_a_shard_job_runs_with_larger_arrow_batches_and_leaves_the_sessions_own_sizes_alone(tmp_path: Path) -> None:
    session = spark_test_session()
    records, size = "spark.sql.execution.arrow.maxRecordsPerBatch", "spark.sql.execution.arrow.maxBytesPerBatch"
    assert session.conf.get(records, None) is None and session.conf.get(size, None) is None
    with arrow_batches(session):
        assert {key: session.conf.get(key) for key in ARROW_BATCH_SIZES} == ARROW_BATCH_SIZES
    assert session.conf.get(records, None) is None and session.conf.get(size, None) is None
    documents = [{"doc_id": f"d{number}", "text": f"river w{number % 7} bank"} for number in range(40)]
    options = {"retrieve_backend": "bm25s", "query_text": ["river w3"], "index_shards": 3, "index_dir": str(tmp_path)}
    session.conf.set(records, "3")
    try:
        with arrow_batches(session):
            assert session.conf.get(records) == "3" and session.conf.get(size) == ARROW_BATCH_SIZES[size]
        assert sharded(corpus_frame(documents, 2), options) == one_index(documents, options)
        documents[5] = {"doc_id": "d5", "text": "river w3 w3 changed"}
        assert sharded(corpus_frame(documents, 2), options) == one_index(documents, options)
        assert session.conf.get(records) == "3" and session.conf.get(size, None) is None
    finally:
        session.conf.unset(records)


def test_a_value_set_during_a_shard_job_outlives_it() -> None:
    session = spark_test_session()
    records = "spark.sql.execution.arrow.maxRecordsPerBatch"
    try:
        with arrow_batches(session):
            session.conf.set(records, "777")
        assert session.conf.get(records) == "777"
    finally:
        session.conf.unset(records)


@pytest.mark.parametrize("case", ["same", "edited", "removed", "added", "hashes damaged", "documents damaged"])
def test_an_unchanged_recorded_shard_is_kept_by_its_row_hashes_without_reading_its_documents(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard whose rows all arrive withheld and whose snapshot records it is kept when its checked row hashes are
    exactly the arriving ones; any other rows, or a version whose files fail their manifest, read the documents."""
    from rag_integration.core.contract import spark_shard_builds
    from rag_integration.core.documents.corpus import Corpus, Document
    from rag_integration.core.indexes.shards import read_shard_table, shard_folder, shard_table, write_shard_table

    documents = [Document(f"d{number}", f"river w{number} bank") for number in range(6)]
    hashes = [hashlib.sha256(document.text.encode()).digest() for document in documents]
    rows = {
        "doc_id": pa.array([document.doc_id for document in documents]),
        "text": pa.array([document.text for document in documents]),
        "metadata": pa.array(["{}"] * len(documents)),
        "row_hash": pa.array(hashes, pa.binary()),
    }
    folder = shard_folder(tmp_path, 0)
    version = write_shard_table(folder, 0, shard_table(pa.table(rows), Corpus(documents)))
    arriving = list(zip([document.doc_id for document in documents], hashes, strict=True))
    if case == "edited":
        arriving[2] = ("d2", hashlib.sha256(b"other").digest())
    elif case == "removed":
        arriving.pop()
    elif case == "added":
        arriving.append(("d9", hashlib.sha256(b"new").digest()))
    elif case != "same":
        damaged = folder / "documents" / version / (ROW_HASHES_FILE if case == "hashes damaged" else DOCUMENTS_FILE)
        data = bytearray(damaged.read_bytes())
        data[-1] ^= 1
        damaged.write_bytes(bytes(data))
    part = pa.table(
        {
            "partition_key": pa.array([0] * len(arriving), pa.int64()),
            "shard": pa.array([0] * len(arriving), pa.int32()),
            "doc_id": pa.array([doc_id for doc_id, _ in arriving]),
            "text": pa.array([None] * len(arriving), pa.string()),
            "missing": pa.array([False] * len(arriving)),
            "row_hash": pa.array([row for _, row in arriving], pa.binary()),
            "sent": pa.array([False] * len(arriving)),
        }
    )
    settings = Bm25sRetriever.read_settings(OptionReader({"retrieve_backend": "bm25s", "language": "en"}))
    job = ShardJob(Bm25sRetriever, settings, settings.index, tmp_path, 1, COLUMN, "en")
    reads: list[str] = []

    def counted(shard: Path, name: str) -> Any:
        reads.append(name)
        return read_shard_table(shard, name)

    monkeypatch.setattr(spark_shard_builds, "read_shard_table", counted)
    found = spark_shard_builds._shard_written(job, 0, version, part, recorded=True)
    if case == "same":
        assert isinstance(found, spark_shard_builds._Written) and not found.changed and reads == []
        assert (found.version, found.documents) == (version, len(documents))
    elif case == "removed":
        assert reads == [version] and isinstance(found, spark_shard_builds._Written) and found.changed
    else:  # rows to read again from the frame: their texts were withheld
        assert reads == [version] and isinstance(found, _Change) and found.wanted


@pytest.mark.parametrize("seed", range(4))
def test_shard_statistics_sum_by_term_in_code_point_order_in_every_script(seed: int) -> None:
    """Parts' terms (Latin, CJK, Arabic, Devanagari, emoji, the empty term, a lone surrogate in one seed) summed once
    each, in Python's code-point order with the empty term first: as a dict of every term would give them."""
    from rag_integration.core.indexes.shards import CorpusTerms, TermStatistics

    generator = random.Random(seed)
    alphabet = "abz" + "日本語" + "عربي" + "हिंदी" + "😀é" + ("\ud800" if seed == 3 else "")
    parts = []
    for _ in range(generator.randint(1, 4)):
        own = {"".join(generator.choice(alphabet) for _ in range(generator.randint(1, 3))) for _ in range(40)}
        terms = ("", *sorted(own, key=lambda _: generator.random()))
        frequencies = np.array([generator.randint(0, 5) for _ in terms], dtype=np.int64)
        parts.append(TermStatistics(10, 30, terms, frequencies, (("en", 10),)))
    expected: dict[str, int] = {}
    for part in parts:
        for term, frequency in zip(part.terms, part.frequencies.tolist(), strict=True):
            expected[term] = expected.get(term, 0) + frequency
    corpus = CorpusTerms.merged(parts)
    assert list(corpus.vocabulary) == ["", *sorted(term for term in expected if term)]
    assert corpus.statistics.frequencies.tolist() == [expected[term] for term in corpus.vocabulary]
    summed = parts[0] + parts[-1]
    assert dict(zip(summed.terms, summed.frequencies.tolist(), strict=True)) == {
        term: sum(
            frequency
            for part in (parts[0], parts[-1])
            for t, frequency in zip(part.terms, part.frequencies)
            if t == term
        )
        for term in set(parts[0].terms) | set(parts[-1].terms)
    }
