"""The four retrieve backends, each through the retrieve contract kit."""

from __future__ import annotations

from typing import Any

from rag_integration.feature_groups.connectors.retrieve import (
    BaseRetrieveConnector,
    Bm25sRetriever,
    FaissDenseRetriever,
    HybridRrfRetriever,
    TfidfRetriever,
)
from rag_integration.testing.retrieve import RetrieveContractTests


class TestBm25sContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return Bm25sRetriever


class TestBm25sWithoutStemmerContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return Bm25sRetriever

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"stemmer": False, "bm25_method": "robertson"}


class TestTfidfContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return TfidfRetriever


class TestFaissHashContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return FaissDenseRetriever

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"embedding_model": "hash"}

    @classmethod
    def matches_by_word_overlap(cls) -> bool:
        return False


class TestFaissHnswContract(TestFaissHashContract):
    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"embedding_model": "hash", "faiss_index": "hnsw"}


class TestHybridRrfContract(RetrieveContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return HybridRrfRetriever

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        return {"embedding_model": "hash"}

    @classmethod
    def matches_by_word_overlap(cls) -> bool:
        return False


class TestFaissMiniLMContract(RetrieveContractTests):
    """The default dense setup: the real all-MiniLM-L6-v2 encoder, offline."""

    @classmethod
    def connector_class(cls) -> type[BaseRetrieveConnector]:
        return FaissDenseRetriever

    @classmethod
    def matches_by_word_overlap(cls) -> bool:
        return False
