"""Evaluation: metrics against hand-computed values, the ``retrieval_metrics`` feature through ``run_all``, and the
loaders on well-formed and malformed files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rag_integration.core.errors import DatasetFormatError, InvalidOptionError, MissingOptionError
from rag_integration.evaluation import (
    Dataset,
    RetrievalMetrics,
    evaluate,
    load_beir,
    load_dataset,
    load_smart,
    mean_scores,
    per_query_scores,
)
from rag_integration.evaluation import datasets as datasets_module
from rag_integration.evaluation.plot import plot_metrics
from rag_integration.feature_groups.connectors.rerank import LexicalReranker
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.runner import run_feature

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
METRICS = ("nDCG@10", "Recall@100", "MRR@10", "MAP", "Recall@1", "MRR@1")

CORPUS = [
    {"doc_id": "cat", "text": "A cat is a small curious pet that purrs."},
    {"doc_id": "dog", "text": "A dog is a loyal pet that needs walks."},
    {"doc_id": "oil", "text": "Change the engine oil of your car every year."},
    {"doc_id": "tyre", "text": "Car tyres wear out and need replacing."},
]


def test_metrics_match_hand_computed_values_on_a_toy_run() -> None:
    rankings = [["d1", "d2", "d3"], ["d4", "d5"], [], ["d1"]]
    judgements = [{"d1": 1, "d3": 1}, {"d5": 2, "d9": 1}, {"d1": 1}, {}]
    scores = per_query_scores(rankings, judgements, METRICS)
    log2_3 = math.log2(3)
    # q1: relevant at ranks 1 and 3 of 2 relevant
    assert scores[0] == pytest.approx(
        {
            "nDCG@10": (1 + 1 / 2) / (1 + 1 / log2_3),
            "Recall@100": 1.0,
            "MRR@10": 1.0,
            "MAP": (1 / 1 + 2 / 3) / 2,
            "Recall@1": 0.5,
            "MRR@1": 1.0,
        }
    )
    # q2: graded, the gain-2 document at rank 2, the gain-1 document never retrieved (trec_eval: linear gain)
    assert scores[1] == pytest.approx(
        {
            "nDCG@10": (2 / log2_3) / (2 + 1 / log2_3),
            "Recall@100": 0.5,
            "MRR@10": 0.5,
            "MAP": (1 / 2) / 2,
            "Recall@1": 0.0,
            "MRR@1": 0.0,
        }
    )
    # q3 retrieved nothing, q4 has no relevant document: both stay in the mean with 0
    assert scores[2] == dict.fromkeys(METRICS, 0.0) and scores[3] == dict.fromkeys(METRICS, 0.0)
    means = mean_scores(scores, METRICS)
    assert means["MAP"] == pytest.approx(((1 + 2 / 3) / 2 + 0.25) / 4)
    assert means["nDCG@10"] == pytest.approx(((1.5) / (1 + 1 / log2_3) + (2 / log2_3) / (2 + 1 / log2_3)) / 4)


def test_the_ranking_order_is_evaluated_not_trec_evals_own_tie_order() -> None:
    # trec_eval breaks score ties by doc_id itself; ranks passed as scores keep the connector's order
    assert per_query_scores([["z", "a"]], [{"z": 1}], ["MRR@10"]) == [{"MRR@10": 1.0}]
    assert per_query_scores([["a", "z"]], [{"z": 1}], ["MRR@10"]) == [{"MRR@10": 0.5}]


def test_retrieval_metrics_is_a_feature_over_retrieved_passages() -> None:
    options: dict[str, Any] = {
        "retrieve_backend": "bm25s",
        "query_text": ["curious cat", "engine oil", "walks"],
        "corpus": CORPUS,
        "top_k": 10,
        "qrels": [{"cat": 1}, {"oil": 1, "tyre": 1}, {"tyre": 1}],
        "metrics": ["nDCG@10", "MRR@10", "Recall@100"],
    }
    rows = run_feature("retrieval_metrics", options, {Bm25sRetriever, RetrievalMetrics})
    retrieval = {key: value for key, value in options.items() if key not in ("qrels", "metrics")}
    rankings = run_feature("retrieved_passages", retrieval, {Bm25sRetriever})
    doc_ids = [[passage["doc_id"] for passage in ranking] for ranking in rankings]
    assert doc_ids[0][0] == "cat" and doc_ids[1][0] == "oil" and "tyre" not in doc_ids[2]
    assert rows[0] == {"nDCG@10": 1.0, "MRR@10": 1.0, "Recall@100": 1.0}
    assert rows[2] == {"nDCG@10": 0.0, "MRR@10": 0.0, "Recall@100": 0.0}
    assert rows == per_query_scores(doc_ids, options["qrels"], options["metrics"])


def test_retrieval_metrics_judges_a_rerank_named_by_rankings_source() -> None:
    options: dict[str, Any] = {
        "retrieve_backend": "bm25s",
        "rerank_backend": "lexical",
        "candidates_source": "retrieved_passages",
        "rankings_source": "reranked_passages",
        "query_text": ["pet", "car"],
        "corpus": CORPUS,
        "qrels": [{"dog": 1}, {"tyre": 1}],
        "metrics": ["Recall@100"],
    }
    rows = run_feature("retrieval_metrics", options, {Bm25sRetriever, LexicalReranker, RetrievalMetrics})
    assert rows == [{"Recall@100": 1.0}, {"Recall@100": 1.0}]


@pytest.mark.parametrize(
    ("change", "error", "option"),
    [
        ({"qrels": None}, MissingOptionError, "qrels"),
        ({"qrels": [{"cat": 1}]}, InvalidOptionError, "qrels"),
        ({"qrels": [{"cat": "1"}, {}]}, InvalidOptionError, "qrels[0]"),
        ({"qrels": [{"cat": True}, {}]}, InvalidOptionError, "qrels[0]"),
        ({"qrels": ["cat", {}]}, InvalidOptionError, "qrels[0]"),
        ({"metrics": ["nDCG"]}, InvalidOptionError, "metrics"),
        ({"metrics": ["P@10"]}, InvalidOptionError, "metrics"),
        ({"metrics": []}, InvalidOptionError, "metrics"),
        ({"metrics": ["MAP", "MAP"]}, InvalidOptionError, "metrics"),
    ],
)
def test_bad_evaluation_options_raise_typed_errors(change: dict[str, Any], error: type[Exception], option: str) -> None:
    options: dict[str, Any] = {
        "retrieve_backend": "bm25s",
        "query_text": ["cat", "oil"],
        "corpus": CORPUS,
        "qrels": [{"cat": 1}, {"oil": 1}],
        **change,
    }
    options = {key: value for key, value in options.items() if value is not None}  # None: the option left out
    with pytest.raises(error) as raised:
        run_feature("retrieval_metrics", options, {Bm25sRetriever, RetrievalMetrics})
    assert f"'{option}'" in str(raised.value)


def write_beir(folder: Path, qrels: str = "query-id\tcorpus-id\tscore\nq1\tcat\t1\nq2\toil\t1\n") -> Path:
    (folder / "qrels").mkdir(parents=True)
    corpus = [{"_id": row["doc_id"], "title": "", "text": row["text"]} for row in CORPUS]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(record) for record in corpus) + "\n")
    queries = [{"_id": "q1", "text": "curious cat"}, {"_id": "q2", "text": "engine oil"}, {"_id": "q3", "text": "x"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(record) for record in queries) + "\n")
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return folder


def test_a_beir_folder_loads_and_evaluates_in_one_batched_run(tmp_path: Path) -> None:
    dataset = load_dataset(write_beir(tmp_path / "toy"))
    assert dataset.queries == {"q1": "curious cat", "q2": "engine oil"}  # judged queries only
    assert dataset.qrels == {"q1": {"cat": 1}, "q2": {"oil": 1}} and len(dataset.documents) == 4
    result = evaluate(dataset, "bm25s", metrics=["nDCG@10", "MAP"], index_dir=tmp_path / "indexes")
    assert result.metrics == {"nDCG@10": 1.0, "MAP": 1.0} and result.queries == 2
    assert any((tmp_path / "indexes").iterdir())
    reranked = evaluate(dataset, "bm25s", rerank_backend="lexical", metrics=["MRR@10"])
    assert reranked.label == "bm25s+lexical" and reranked.metrics == {"MRR@10": 1.0}


def test_a_smart_collection_loads_with_positional_query_ids_and_cranfield_gains(tmp_path: Path) -> None:
    folder = tmp_path / "smart"
    folder.mkdir()
    (folder / "toy.all.3").write_text(
        ".I 1\n.T\ncat title\n.A\nsomeone\n.W\na cat\n.I 2\n.T\noil\n.W\nengine oil\n.W\nsecond part\n.I 3\n.T\nx\n"
    )
    (folder / "toy.qry").write_text(".I 001\n.W\ncat\n.I 004\n.W\nwhat oil .\n")
    (folder / "toyqrel").write_text("1 1 1\n1 3 -1\n2 2 4\n2 1 2\n")
    dataset = load_smart(folder)
    assert [row["text"] for row in dataset.documents] == ["cat title a cat", "oil engine oil second part", "x"]
    assert dataset.queries == {"1": "cat", "2": "what oil ."}
    assert dataset.qrels == {"1": {"1": 4}, "2": {"2": 1, "1": 3}}
    assert load_dataset(folder).qrels == dataset.qrels


@pytest.mark.parametrize(
    ("names", "judgements"),
    [
        (("CISI.ALL", "CISI.QRY", "CISI.REL"), "    1     2 0 0.000000\n    2     1 0 0.000000\n"),  # CISI, MED, ADI
        (("cacm.all", "query.text", "qrels.text"), "01 2  0 0\n02 1  0 0\n"),  # CACM
    ],
)
def test_classic_smart_collections_load_with_binary_judgements(
    tmp_path: Path, names: tuple[str, str, str], judgements: str
) -> None:
    documents, queries, qrels = (tmp_path / name for name in names)
    documents.write_text(
        ".I 1\n.T\nCats\n.A\nSomeone, A.\n.W\nA cat sleeps.\n.X\n1 5 1\n.I 2\n.T\nOil\n.B\nCACM 1970\n.N\nCA7001\n"
        ".K\noil, engines\n.W\nEngine oil.\n"
    )
    queries.write_text(".I 1\n.W\nengine oil\n.N\n 1. someone\n.I 2\n.T\nA title\n.A\nX\n.W\ncat\n.B\nsource\n")
    qrels.write_text(judgements)
    dataset = load_dataset(tmp_path)
    assert [row["text"] for row in dataset.documents] == ["Cats A cat sleeps.", "Oil Engine oil."]
    assert dataset.queries == {"1": "engine oil", "2": "cat"}
    assert dataset.qrels == {"1": {"2": 1}, "2": {"1": 1}}
    qrels.write_text("1\n")
    with pytest.raises(DatasetFormatError, match="two integers first"):
        load_dataset(tmp_path)


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("corpus.jsonl", '{"_id": "a", "text": "x"}\n{not json\n', "line 2: invalid JSON"),
        ("corpus.jsonl", '{"_id": "a", "text": 5}\n', "line 1: 'text' is 5"),
        ("corpus.jsonl", '["a"]\n', "a JSON list"),
        ("corpus.jsonl", "[" * 100_000 + "\n", "unreadable JSON"),
        ("corpus.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', "duplicate _id 'a'"),
        ("corpus.jsonl", b'{"_id": "a", "text": "\xff"}\n', "not UTF-8"),
        ("queries.jsonl", '{"_id": "", "text": "x"}\n', "'_id' is ''"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\tcat\n", "line 2"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\tcat\thigh\n", "integer score"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq9\tcat\t1\n", "query-id 'q9'"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\n", "no judgements"),
    ],
)
def test_malformed_beir_files_raise_dataset_format_errors(
    tmp_path: Path, name: str, content: str | bytes, fragment: str
) -> None:
    folder = write_beir(tmp_path / "bad")
    target = folder / name
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DatasetFormatError) as raised:
        load_beir(folder)
    assert fragment in str(raised.value) and name.split("/")[-1] in str(raised.value)


@pytest.mark.parametrize(
    ("documents", "qrels", "fragment"),
    [
        ("text before\n.I 1\n.W\nx\n", "1 1 1\n", "outside a field"),
        (".T\nx\n", "1 1 1\n", "before any record"),
        (".I one\n.W\nx\n", "1 1 1\n", "'.I <number>'"),
        (".I 1\n.W\nx\n", "1 1 7\n", "code 7"),
        (".I 1\n.W\nx\n", "1 1\n", "three integers"),
        (".I 1\n.W\nx\n", "3 1 1\n", "query 3"),
        ("", "1 1 1\n", "no records"),
    ],
)
def test_malformed_smart_files_raise_dataset_format_errors(
    tmp_path: Path, documents: str, qrels: str, fragment: str
) -> None:
    (tmp_path / "c.all.1").write_text(documents)
    (tmp_path / "c.qry").write_text(".I 1\n.W\ncat\n")
    (tmp_path / "cqrel").write_text(qrels)
    with pytest.raises(DatasetFormatError, match="dataset file") as raised:
        load_smart(tmp_path)
    assert fragment in str(raised.value)


def test_an_over_long_line_is_refused_without_reading_it_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_beir(tmp_path / "long")
    monkeypatch.setattr(datasets_module, "MAX_LINE_CHARS", 20)
    with pytest.raises(DatasetFormatError, match="over-long line"):
        load_beir(folder)


def test_a_folder_that_is_no_dataset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match=r"neither corpus\.jsonl"):
        load_dataset(tmp_path)
    with pytest.raises(DatasetFormatError, match="not a folder"):
        load_dataset(tmp_path / "missing")


def test_plot_writes_a_png(tmp_path: Path) -> None:
    target = plot_metrics(
        {"bm25s": {"nDCG@10": 0.68, "MAP": 0.6}, "tfidf": {"nDCG@10": 0.62, "MAP": 0.55}}, tmp_path / "p.png"
    )
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not (SHARED_DATA / "scifact").is_dir(), reason="shared evaluation data not present")
def test_the_shared_collections_load_with_their_published_counts() -> None:
    scifact = load_dataset(SHARED_DATA / "scifact")
    assert (len(scifact.documents), len(scifact.queries)) == (5183, 300)
    assert sum(len(judged) for judged in scifact.qrels.values()) == 339
    cranfield = load_dataset(SHARED_DATA / "cranfield")
    assert (len(cranfield.documents), len(cranfield.queries)) == (1400, 225)
    assert {gain for judged in cranfield.qrels.values() for gain in judged.values()} == {1, 2, 3, 4}


def test_dataset_judgements_follow_query_order() -> None:
    dataset = Dataset("d", [], {"b": "x", "a": "y"}, {"a": {"1": 1}, "b": {"2": 1}})
    assert dataset.judgements() == [{"2": 1}, {"1": 1}] and dataset.query_ids == ["b", "a"]


def test_progress_is_logged_always_and_drawn_only_when_asked(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    options: dict[str, Any] = {"retrieve_backend": "bm25s", "query_text": "cat", "corpus": CORPUS[:3]}
    with caplog.at_level("INFO", logger="rag_integration"):
        run_feature("retrieved_passages", options, {Bm25sRetriever})
    assert "retrieved_passages (bm25s) ..." in caplog.text and "building the bm25s index" in caplog.text
    assert capsys.readouterr().err == ""  # off by default
    run_feature("retrieved_passages", {**options, "corpus": CORPUS[1:], "show_progress": True}, {Bm25sRetriever})
    drawn = capsys.readouterr().err
    assert "retrieved_passages (bm25s)" in drawn and "building the bm25s index" in drawn
    with pytest.raises(InvalidOptionError, match="'show_progress'"):
        run_feature("retrieved_passages", {**options, "show_progress": "yes"}, {Bm25sRetriever})
