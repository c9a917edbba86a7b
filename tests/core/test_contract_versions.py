"""A third-party backend declares the family contract versions it was written against; a request selecting it is
refused, with a typed error naming the backend, its distribution and both versions, unless one is its family's."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from rag_integration.core.errors import ConnectorError, ContractVersionError
from rag_integration.feature_groups.connectors import generate, graph_rag, orchestrator, rerank, retrieve, structured
from rag_integration.feature_groups.connectors.generate import ExtractiveResponder
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.runner import run_feature


def backend(supported: Any) -> type[Bm25sRetriever]:
    class VersionedBm25s(Bm25sRetriever):
        BACKEND: ClassVar[str | None] = "versioned_bm25s"
        SUPPORTED_CONTRACTS: ClassVar[Any] = supported

    return VersionedBm25s


def ask(connector: type[Any]) -> Any:
    corpus = [{"doc_id": "oil", "text": "engine oil"}, {"doc_id": "bread", "text": "sourdough bread"}]
    request = {"retrieve_backend": connector.BACKEND, "query_text": "oil", "corpus": corpus}
    return run_feature("retrieved_passages", request, {connector})


def test_every_family_declares_a_major_minor_contract() -> None:
    bases = [
        retrieve.BaseRetrieveConnector,
        rerank.BaseRerankConnector,
        generate.BaseGenerateConnector,
        graph_rag.BaseGraphRagConnector,
        structured.BaseStructuredConnector,
        orchestrator.BaseOrchestratorConnector,
    ]
    assert [base.__dict__.get("CONTRACT_VERSION") for base in bases] == ["1.0"] * 6
    assert ExtractiveResponder.CONTRACT_VERSION == "1.0" and not ExtractiveResponder.SUPPORTED_CONTRACTS


def test_a_backend_listing_its_familys_version_answers() -> None:
    assert ask(backend(("0.9", "1.0")))[0][0]["doc_id"] == "oil"


@pytest.mark.parametrize(
    ("supported", "problem"),
    [
        (("2.0",), "was written for another major version"),
        (("1.1",), "does not list this minor version"),
        (("1",), "declares malformed versions"),
        ("1.0", "declares malformed versions"),
        ((1.0,), "declares malformed versions"),
    ],
)
def test_a_backend_not_listing_its_familys_version_is_refused(supported: Any, problem: str) -> None:
    with pytest.raises(ContractVersionError) as raised:
        ask(backend(supported))
    message = str(raised.value)
    assert "'versioned_bm25s'" in message and problem in message and "contract is 1.0" in message
    assert "distribution" in message and isinstance(raised.value, ConnectorError)
