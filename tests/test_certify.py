"""`rag-integration certify`: the kits and the certify checks certify a third-party backend, and catch one that
breaks the contract; every check passes for a correct backend and fails for a toy that breaks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from llm_server import quoting_model, running
from typer.testing import CliRunner

from rag_integration.cli import app
from rag_integration.feature_groups.connectors.generate import LlmResponder
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever, FaissDenseRetriever
from rag_integration.testing.certify import (
    CheckCollector,
    adapter_for,
    certifiable,
    certification_kit_class,
    certification_module,
    certify,
    final_report,
    plan_certify,
)
from rag_integration.testing.certify_checks import Check
from rag_integration.testing.certify_fixtures import CertifyUsageError, load_fixture
from rag_integration.testing.retrieve import RetrieveContractTests, VectorStoreContractTests

EXAMPLE_FIXTURE = Path(__file__).parents[1] / "examples" / "fixtures" / "bm25s_cats.json"
NEW_CHECKS = ("fixture", "replay", "invalid_requests", "visibility", "deadline", "secret")
RUNNER = CliRunner()

THIRD_PARTY = textwrap.dedent(
    '''
    """A third party's retriever: bm25s underneath, but it forgets to apply the filter mask."""
    from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever


    class LeakyRetriever(Bm25sRetriever):
        BACKEND = "leaky"

        @classmethod
        def search(cls, index, queries, depth, allowed, settings):
            return super().search(index, queries, depth, None, settings)


    class PoliteRetriever(Bm25sRetriever):
        BACKEND = "polite"

        @classmethod
        def certification_adapter(cls):
            return {"backend_options": {"stemmer": False}}
    '''
)


def certify_in_subprocess(
    tmp_path: Path, backend: str, pytest_args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """certify of a class only imported by name (``module:Class``): discovery does not know it."""
    (tmp_path / "third_party_backends.py").write_text(THIRD_PARTY, encoding="utf-8")
    script = (
        "import sys\n"
        "from rag_integration.testing.certify import certify\n"
        f"sys.exit(certify(['third_party_backends:{backend}'], pytest_args={list(pytest_args)!r}, report='r.json'))\n"
    )
    scratch = tmp_path / "tmp"  # the run's temporary folders go here, and must be gone when it ends
    scratch.mkdir(exist_ok=True)
    environment = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=environment)
    assert list(scratch.iterdir()) == []
    return done


def run(targets: list[str], tmp_path: Path, **arguments: Any) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]]:
    """certify without the kit: exit code, report and its checks by id (without the class prefix)."""
    report = tmp_path / "report.json"
    code = certify(targets, report=report, kit=False, **arguments)
    document = json.loads(report.read_text(encoding="utf-8"))
    return code, document, {check["id"].split("::", 1)[1]: check for check in document["checks"]}


def test_a_correct_third_party_backend_is_certified(tmp_path: Path) -> None:
    completed = certify_in_subprocess(tmp_path, "PoliteRetriever")
    assert completed.returncode == 0, completed.stdout[-2000:]
    assert "certified: " in completed.stdout and "failed" not in completed.stdout.replace("0 failed", "")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["report_version"] == 2 and report["certified"] is True
    assert report["targets"] == [
        {"family": "retrieve", "backend": "polite", "class": "third_party_backends.PoliteRetriever"}
    ]
    ids = [check["id"] for check in report["checks"]]
    assert "TestCertifyPoliteRetriever::test_filters_never_leak" in ids  # the kit's tests
    for check in NEW_CHECKS:  # and every certify check, on the kit's sample request
        assert any(check_id.startswith(f"PoliteRetriever::{check}") for check_id in ids), check
    assert {check["status"] for check in report["checks"]} <= {"pass", "skip"}
    assert report["summary"]["total"] == len(ids) == report["summary"]["pass"] + report["summary"]["skip"]


def test_a_backend_that_leaks_filtered_documents_fails_certification(tmp_path: Path) -> None:
    completed = certify_in_subprocess(tmp_path, "LeakyRetriever", ("-k", "filters_never_leak or row_shape"))
    assert completed.returncode == 1
    assert "test_filters_never_leak" in completed.stdout
    assert "test_row_shape_and_types" not in completed.stdout  # it ranks fine; only the filter is broken
    report = json.loads((tmp_path / "r.json").read_text())
    failed = [check["id"] for check in report["checks"] if check["status"] == "fail"]
    assert failed == ["TestCertifyLeakyRetriever::test_filters_never_leak"]


def test_every_installed_backend_with_a_kit_is_certifiable() -> None:
    families = {cls.FAMILY for cls in certifiable()}
    assert families == {"retrieve", "rerank", "generate", "graph_rag", "structured", "orchestrator"}


def test_the_kit_subclass_is_the_family_kit_with_the_adapter() -> None:
    kit = certification_kit_class(Bm25sRetriever, adapter_for(Bm25sRetriever, {"bm25_k1": 1.2}))
    assert kit.__name__ == "TestCertifyBm25sRetriever" and kit.__bases__ == (RetrieveContractTests,)
    assert kit.connector_class() is Bm25sRetriever and kit.backend_options() == {"bm25_k1": 1.2}
    assert "TestCertifyBm25sRetriever = running_kit('TestCertifyBm25sRetriever')" in certification_module([kit])
    assert adapter_for(Bm25sRetriever, {}) == {"backend_options": {}}


def test_each_backend_says_what_certify_cannot_guess_in_its_own_hook() -> None:
    dense = certification_kit_class(FaissDenseRetriever, adapter_for(FaissDenseRetriever, {}))
    assert dense.matches_by_word_overlap() is False
    llm = certification_kit_class(LlmResponder, adapter_for(LlmResponder, {"llm_model": "x"}))
    assert llm.paraphrases() is True and llm.backend_options() == {"llm_model": "x"}
    assert llm.empty_answer() == {"answer": "", "citations": [], "unsupported": []}
    llm.empty_answer()["answer"] = "changed"  # each call answers a fresh value, as the generated hooks did
    assert llm.empty_answer()["answer"] == ""


@pytest.mark.parametrize(
    ("arguments", "param"),
    [
        ({"targets": ["no_such_backend"]}, "TARGET"),
        ({"targets": ["json:JSONDecoder"]}, "TARGET"),
        ({"targets": ["bm25s"], "options": ["novalue"]}, "--option"),
        ({"targets": ["bm25s"], "fixtures": ["/no/such/fixture.json"]}, "--fixture"),
        ({"targets": ["bm25s"], "fixtures": [{"query": "cat", "candidates": [{"text": "a cat"}]}]}, "--fixture"),
    ],
)
def test_the_plan_names_the_argument_a_usage_error_concerns(arguments: dict[str, Any], param: str) -> None:
    with pytest.raises(CertifyUsageError) as raised:
        plan_certify(**arguments)
    assert raised.value.param == param


def test_the_plan_holds_every_checked_argument() -> None:
    fixture = json.loads(EXAMPLE_FIXTURE.read_text())
    plan = plan_certify(["bm25s", "Bm25sRetriever"], ["top_k=3", "language=en"], [fixture], kit=False, report="r.json")
    assert plan.targets == (Bm25sRetriever,) and plan.options == {"top_k": 3, "language": "en"}
    assert [[one.name for one in own] for own in plan.fixtures] == [["fixture"]]
    assert plan.kit is False and plan.report == Path("r.json") and plan.pytest_args == ()


def test_the_stage_pipelines_retrieval_is_certified_with_its_store_backed_kit() -> None:
    script = "import sys\nfrom rag_integration.testing.certify import certify\nsys.exit(certify(['vector_store']))\n"
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout[-2000:]
    [vector_store] = certifiable(["vector_store"])
    kit = certification_kit_class(vector_store, adapter_for(vector_store, {}))
    assert kit.__bases__ == (VectorStoreContractTests,) and "kit" not in vars(kit)


def test_the_example_fixture_passes_every_check_from_the_command_line(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    arguments = ["certify", "bm25s", "--report", str(report), "--fixture", str(EXAMPLE_FIXTURE), "--no-kit"]
    result = RUNNER.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    checks = {check["id"]: check for check in document["checks"]}
    assert list(checks) == [
        "Bm25sRetriever::fixture[bm25s_cats]",
        "Bm25sRetriever::replay[bm25s_cats]",
        "Bm25sRetriever::invalid_requests",
        "Bm25sRetriever::visibility",
        "Bm25sRetriever::deadline[default]",
        "Bm25sRetriever::secret",
    ]
    assert all(set(check) >= {"id", "status", "duration_ms", "issues", "backend"} for check in checks.values())
    assert checks["Bm25sRetriever::fixture[bm25s_cats]"]["answer_keys"][:2] == ["cat-nap", "pets"]
    assert checks["Bm25sRetriever::invalid_requests"]["requests"] >= 20
    deadline = checks["Bm25sRetriever::deadline[default]"]
    assert deadline["profile"] == "default" and deadline["budget_ms"] == 5000
    assert deadline["warm_ms"] <= deadline["budget_ms"] and deadline["cold_ms"] > 0
    assert checks["Bm25sRetriever::secret"]["status"] == "skip"  # bm25s declares no secret
    assert document["summary"] == {"total": 6, "pass": 5, "fail": 0, "skip": 1, "pytest_exit_code": None}
    assert "PASS  Bm25sRetriever::replay[bm25s_cats]" in result.stdout


def test_an_expected_top_that_does_not_hold_fails_the_fixture_check(tmp_path: Path) -> None:
    fixture = json.loads(EXAMPLE_FIXTURE.read_text())
    wrong = {**fixture, "name": "wrong_top", "expect": {"top": ["dog-walk"]}}
    code, document, checks = run(["bm25s"], tmp_path, fixtures=[wrong, EXAMPLE_FIXTURE])
    assert code == 1 and document["certified"] is False
    assert checks["fixture[wrong_top]"]["status"] == "fail"
    assert checks["fixture[wrong_top]"]["issues"] == [
        'expect.top is ["dog-walk"], but the answer starts ["cat-nap", "pets"]'
    ]
    assert checks["fixture[bm25s_cats]"]["status"] == "pass"  # both fixtures were run
    assert checks["replay[wrong_top]"]["status"] == "pass"


def test_a_backend_answering_differently_on_replay_fails(tmp_path: Path) -> None:
    code, _, checks = run(["certify_toys:DriftingRetriever"], tmp_path)
    assert code == 1
    replay = checks["replay[default-retrieve]"]
    assert replay["status"] == "fail" and "answered twice in one process, the rows differ" in replay["issues"][0]
    assert checks["fixture[default-retrieve]"]["status"] == "pass"


def test_a_backend_scoring_with_hidden_documents_statistics_fails_visibility(tmp_path: Path) -> None:
    code, _, checks = run(["certify_toys:PostFilteringRetriever"], tmp_path)
    assert code == 1
    visibility = checks["visibility"]
    assert visibility["status"] == "fail" and visibility["readable"] >= 1 and visibility["hidden"] >= 1
    assert "over the readable items alone" in visibility["issues"][0]
    assert [check_id for check_id, check in checks.items() if check["status"] == "fail"] == ["visibility"]


def test_bm25s_passes_the_visibility_check(tmp_path: Path) -> None:
    code, _, checks = run(["bm25s"], tmp_path)
    assert code == 0 and checks["visibility"]["status"] == "pass", checks["visibility"]


def test_a_profile_over_its_budget_fails_its_deadline_check(tmp_path: Path) -> None:
    code, _, checks = run(["certify_toys:SlowRetriever"], tmp_path)
    assert code == 1
    assert checks["deadline[default]"]["status"] == "pass"
    slow = checks["deadline[thorough]"]
    assert slow["status"] == "fail" and slow["profile"] == "thorough" and slow["budget_ms"] == 100
    assert slow["warm_ms"] >= 300 and slow["cold_ms"] >= 300
    assert "over profile 'thorough''s budget of 100 ms" in slow["issues"][0]
    assert [check_id for check_id, check in checks.items() if check["status"] == "fail"] == ["deadline[thorough]"]


def test_a_backend_leaking_its_secret_fails_and_the_report_keeps_it_out(tmp_path: Path) -> None:
    code, _, checks = run(["certify_toys:LeakyRetriever"], tmp_path)
    assert code == 1
    secret = checks["secret"]
    assert secret["status"] == "fail" and secret["secret_options"] == ["toy_api_key"]
    assert secret["issues"] == [
        "the secret of toy_api_key shows in a DEBUG log record of logger 'certify_toys'",
        "the secret of toy_api_key shows in the error of a request with no query",
    ]
    assert "certify-canary-" not in (tmp_path / "report.json").read_text()
    assert [check_id for check_id, check in checks.items() if check["status"] == "fail"] == ["secret"]


def test_the_llm_backend_keeps_its_api_key_secret_against_a_local_server(tmp_path: Path) -> None:
    with running(quoting_model) as server:
        options = [f"llm_base_url={server.url}", "llm_model=fake"]
        code, document, checks = run(["LlmResponder"], tmp_path, options=options)
        sent = [request["headers"].get("Authorization", "") for request in server.requests]
    assert code == 0, json.dumps(document, indent=1)[:3000]
    assert checks["secret"]["status"] == "pass" and checks["secret"]["secret_options"] == ["llm_api_key_env"]
    assert any(header.startswith("Bearer certify-canary-") for header in sent)  # the key did reach the server
    assert checks["fixture[default-generate]"]["answer_keys"][0] == "engine"


def test_without_a_server_the_llm_secret_check_is_skipped_saying_why(tmp_path: Path) -> None:
    code, _, checks = run(["LlmResponder"], tmp_path, options=["llm_base_url=http://127.0.0.1:9/v1", "llm_model=x"])
    assert code == 1  # its fixture cannot be answered
    assert checks["secret"]["status"] == "skip"
    assert "the fixture request failed (RemoteServiceError" in checks["secret"]["issues"][0]


def test_a_backend_answering_invalid_requests_fails(tmp_path: Path) -> None:
    code, _, checks = run(["certify_toys:CarelessRetriever"], tmp_path)
    assert code == 1
    invalid = checks["invalid_requests"]
    assert invalid["status"] == "fail"
    assert (
        '{"query_text": 5, "corpus": "<the fixture\'s corpus>"}: answered instead of raising InvalidOptionError'
        in (invalid["issues"])
    )
    assert "bm25_k1='certify-not-a-number': answered instead of raising InvalidOptionError" in invalid["issues"]
    assert not any("profile" in issue or "certify_not_an_option" in issue for issue in invalid["issues"])


def test_a_canary_anywhere_in_the_report_fails_the_secret_check() -> None:
    canary = "certify-canary-0123456789abcdef"
    secret = Check("Toy::secret", "pass", 1.0, [], "toy", canaries=(canary,))
    other = Check("Toy::fixture[x]", "fail", 1.0, [f"the request failed: bad key {canary}"], "toy")
    document, text = final_report([Bm25sRetriever], [other, secret], None)
    assert document["checks"][1]["status"] == "fail" and "certification report" in document["checks"][1]["issues"][0]
    assert canary not in text and "bad key [canary]" in text
    assert document["certified"] is False and document["summary"]["fail"] == 2


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["no_such_backend"], "no installed backend"),
        (["no_such_module:Backend"], "cannot import 'no_such_module'"),
        (["json:JSONDecoder"], "is not a backend class"),
        (["bm25s", "--fixture", "MISSING"], "cannot be read"),
        (["bm25s", "--fixture", "NOT_JSON"], "not JSON"),
        (["bm25s", "--fixture", "NO_QUERY"], "'query' must be a non-empty string"),
        (["bm25s", "--fixture", "RERANK"], "fit none of the targets' families (retrieve)"),
        (["bm25s", "--option", "novalue"], "KEY=VALUE"),
        (["bm25s", "--option", "top_k=abc"], "--option top_k"),
        (["bm25s", "--option", "bm25_k1=-1"], "--option bm25_k1"),
        (["bm25s", "--fixture", "DEEP"], "nested deeper"),
        (["bm25s", "--fixture", "/dev/zero"], "cannot be read"),
        (["bm25s", "--fixture", "FIFO"], "cannot be read"),
        (["bm25s", "--report", "NO_FOLDER"], "does not exist"),
        (["bm25s", "--report", "A_FOLDER"], "a folder, expected a file path"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, arguments: list[str], fragment: str) -> None:
    """Every argument is checked before any check runs: a bad one is a usage error at once, never a backend "NOT
    certified" or a raw error after the whole run."""
    files = {
        "MISSING": tmp_path / "missing.json",
        "NOT_JSON": tmp_path / "broken.json",
        "NO_QUERY": tmp_path / "no_query.json",
        "RERANK": tmp_path / "rerank.json",
        "DEEP": tmp_path / "deep.json",
        "FIFO": tmp_path / "fifo.json",
        "NO_FOLDER": tmp_path / "missing" / "report.json",
        "A_FOLDER": tmp_path,
    }
    files["DEEP"].write_text('{"query": "cat", "corpus": ' + "[" * 100_000 + "]" * 100_000 + "}")
    os.mkfifo(files["FIFO"])
    files["NOT_JSON"].write_text("{'query': 1}")
    files["NO_QUERY"].write_text(json.dumps({"corpus": [{"text": "a cat"}]}))
    files["RERANK"].write_text(json.dumps({"query": "cat", "candidates": [{"doc_id": "a", "text": "a cat"}]}))
    result = RUNNER.invoke(app, ["certify", *(str(files.get(argument, argument)) for argument in arguments)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rag-integration: usage error:") and fragment in result.stderr
    if "--fixture" in arguments:
        assert str(files.get(arguments[-1], arguments[-1])) in result.stderr  # the message names the file
    if arguments[0] != "bm25s":
        assert certify(arguments[:1], kit=False) == 2  # the Python API too


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "expected a JSON object"),
        ({"query": "cat", "corpus": [{"text": "a"}], "expects": {}}, "unknown key(s) 'expects'"),
        ({"query": "cat", "corpus": []}, "'corpus' must be a non-empty list"),
        ({"query": "cat", "corpus": [{"doc_id": "a"}]}, "corpus[0] must be a JSON object with a 'text' string"),
        ({"query": "cat", "corpus": [{"text": "a"}], "candidates": [{"text": "a"}]}, "needs the inputs of one family"),
        ({"query": "cat", "corpus": [{"text": "a"}], "options": {"query_text": "x"}}, "may not set 'query_text'"),
        ({"query": "cat", "corpus": [{"text": "a"}], "expect": {"top": "a"}}, "'expect.top' must be a non-empty"),
        ({"query": "cat", "candidates": [{"text": "a"}], "expect": {"answer_contains": "a"}}, "answer in text"),
        ({"query": "cat", "corpus": [{"text": "a"}], "profile": 3}, "'profile' must be a profile name"),
    ],
)
def test_malformed_fixtures_are_refused_naming_the_problem(document: object, problem: str) -> None:
    with pytest.raises(CertifyUsageError, match="fixture <mapping>: ") as raised:
        load_fixture(document)  # type: ignore[arg-type]
    assert problem in str(raised.value)


def test_fixtures_of_every_family_shape_load() -> None:
    generate = load_fixture(
        {"query": "oil?", "passages": [{"doc_id": "a", "text": "Oil."}], "expect": {"answer_contains": "Oil"}}
    )
    assert generate.applies_to("generate") and not generate.applies_to("retrieve")
    assert generate.answer_contains == ("Oil",)
    graph = load_fixture({"query": "x", "nodes": [{"doc_id": "a", "text": "A"}], "edges": [["a", "a"]]})
    assert graph.applies_to("graph_rag") and graph.request("query_text")["edges"] == [["a", "a"]]
    table = load_fixture({"query": "how many?", "rows": [{"n": 1}], "table_name": "t", "columns": ["n"]})
    assert table.applies_to("structured") and table.request("question")["question"] == "how many?"
    assert load_fixture(EXAMPLE_FIXTURE).request("query_text", top_k=1)["top_k"] == 1


def test_the_kit_tests_are_reported_as_pass_fail_or_skip() -> None:
    class Report:
        def __init__(self, nodeid: str, when: str, outcome: str, duration: float, **extra: object) -> None:
            self.nodeid, self.when, self.duration = nodeid, when, duration
            self.failed, self.skipped, self.passed = outcome == "failed", outcome == "skipped", outcome == "passed"
            self.longrepr, self.longreprtext = None, "E   AssertionError: rank 2 before rank 1"
            self.__dict__.update(extra)

    collector = CheckCollector([Bm25sRetriever])
    test = "m.py::TestCertifyBm25sRetriever::test"
    for report in [
        Report(f"{test}_ok", "setup", "passed", 0.001),
        Report(f"{test}_ok", "call", "passed", 0.002),
        Report(f"{test}_bad", "call", "failed", 0.5),
        Report(f"{test}_known", "call", "skipped", 0.0, wasxfail="reason: not yet"),
        Report(f"{test}_fixed", "call", "passed", 0.0, wasxfail="reason: was broken"),
    ]:
        collector.pytest_runtest_logreport(report)  # type: ignore[arg-type]
    document = collector.report([Bm25sRetriever], 1)
    assert document["report_version"] == 2 and document["certified"] is False
    ok, bad, known, fixed = document["checks"]
    assert ok == {
        "id": "TestCertifyBm25sRetriever::test_ok",
        "status": "pass",
        "duration_ms": 3.0,
        "issues": [],
        "backend": "bm25s",
    }
    assert bad["status"] == "fail" and bad["issues"] == ["call: E   AssertionError: rank 2 before rank 1"]
    assert known["status"] == "skip" and known["issues"] == ["xfail: reason: not yet"]
    assert fixed["status"] == "pass" and fixed["issues"] == [
        "xpass: reason: was broken (the known failure did not happen)"
    ]
    assert document["summary"] == {"total": 4, "pass": 2, "fail": 1, "skip": 1, "pytest_exit_code": 1}
    assert collector.report([Bm25sRetriever], 0)["certified"] is False  # a failed check is never certified
    assert CheckCollector().report([Bm25sRetriever], 2)["checks"][0]["id"] == "kit"  # pytest stopped: a failed check
