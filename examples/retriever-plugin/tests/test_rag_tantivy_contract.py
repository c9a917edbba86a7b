"""The Tantivy backend through rag-integration's retrieve contract kit, as the project's own backends are tested."""

from __future__ import annotations

from typing import Any

from rag_tantivy import TantivyRetriever

from rag_integration.feature_groups.connectors.retrieve import BaseRetrieveConnector
from rag_integration.testing.retrieve import RetrieveContractTests


class TestTantivyContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector[Any, Any, Any]]:
        return TantivyRetriever


class TestTantivyUnstemmedContract(RetrieveContractTests):
    """Surface words only (no Snowball stemmer): another index over the same corpus, the same contract."""

    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector[Any, Any, Any]]:
        return TantivyRetriever

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"stemmer": False}
