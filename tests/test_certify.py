"""`rag-integration certify`: the kits certify a third-party backend, and catch one that breaks the contract."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.certify import adapter_for, certifiable, certification_module

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
    (tmp_path / "third_party_backends.py").write_text(THIRD_PARTY, encoding="utf-8")
    script = (
        "import sys\n"
        "import third_party_backends\n"
        "from rag_integration.testing.certify import certify\n"
        f"sys.exit(certify([{backend!r}], pytest_args={list(pytest_args)!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)


def test_a_correct_third_party_backend_is_certified(tmp_path: Path) -> None:
    completed = certify_in_subprocess(tmp_path, "polite")
    assert completed.returncode == 0, completed.stdout[-2000:]
    assert "passed" in completed.stdout and "failed" not in completed.stdout


def test_a_backend_that_leaks_filtered_documents_fails_certification(tmp_path: Path) -> None:
    completed = certify_in_subprocess(tmp_path, "leaky", ("-k", "not SparkFramework"))  # Spark: polite covers it
    assert completed.returncode == 1
    assert "test_filters_never_leak" in completed.stdout
    assert "test_row_shape_and_types" not in completed.stdout  # it ranks fine; only the filter is broken


def test_every_installed_backend_with_a_kit_is_certifiable() -> None:
    families = {cls.FAMILY for cls in certifiable()}
    assert families == {"retrieve", "rerank", "generate", "graph_rag", "structured", "orchestrator"}


def test_generated_module_subclasses_the_family_kit_with_the_adapter() -> None:
    source = certification_module([Bm25sRetriever], {"bm25_k1": 1.2})
    assert "class TestCertifyBm25sRetriever(RetrieveContractTests):" in source
    assert "{**super().backend_options(), **{'bm25_k1': 1.2}}" in source
    assert adapter_for(Bm25sRetriever, {}) == {"backend_options": {}}


def test_the_stage_pipelines_retrieval_is_certified_with_its_store_backed_kit() -> None:
    script = "import sys\nfrom rag_integration.testing.certify import certify\nsys.exit(certify(['vector_store']))\n"
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout[-2000:]
    source = certification_module(certifiable(["vector_store"]), {})
    assert "(VectorStoreContractTests):" in source and "def kit" not in source
