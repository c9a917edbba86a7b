"""Toy retrieve backends that each break one certify check, named to certify by import path
(``certify_toys:SlowRetriever``). bm25s underneath, so everything else about them is right."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.contract.profiles import Profile
from rag_integration.core.documents.corpus import Document
from rag_integration.core.documents.visibility import label_of
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.base import RetrieveRequest

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame

LOG = logging.getLogger(__name__)
_CALLS = itertools.count(1)


class DriftingRetriever(Bm25sRetriever):
    """Every answer's scores drift a little from the last one's: a replay gives other rows."""

    BACKEND = "certify_drifting"

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        drift = next(_CALLS) * 1e-6
        rows = super().answer(data, reader)[cls.FEATURE_NAME]
        return {cls.FEATURE_NAME: [[{**hit, "score": hit["score"] + drift} for hit in row] for row in rows]}


class SlowRetriever(Bm25sRetriever):
    """Two profiles: ``default`` keeps its budget, ``thorough`` sleeps past its own."""

    BACKEND = "certify_slow"
    OPTIONS: ClassVar[tuple[str, ...]] = ("toy_delay_ms",)
    PROFILES: ClassVar[Mapping[str, Profile]] = {
        "default": Profile(budget_ms=5_000, description="no delay"),
        "thorough": Profile({"toy_delay_ms": 300}, budget_ms=100, description="sleeps 300 ms, promises 100"),
    }

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        time.sleep(float(reader.integer("toy_delay_ms", default=0)) / 1000.0)
        return super().answer(data, reader)


class LeakyRetriever(Bm25sRetriever):
    """Declares ``toy_api_key`` secret, then logs it and quotes it in an error."""

    BACKEND = "certify_leaky"
    OPTIONS: ClassVar[tuple[str, ...]] = ("toy_api_key",)
    SECRET_OPTIONS: ClassVar[Mapping[str, str]] = {"toy_api_key": "value"}

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        key = reader.string("toy_api_key", default="")
        LOG.debug("signing the search with key %s", key)
        if not reader.has("query_text") and not reader.has("queries_source"):
            raise MissingOptionError("query_text", f"a query to sign with {key}")
        return super().answer(data, reader)


class CarelessRetriever(Bm25sRetriever):
    """Answers an invalid request with no passages instead of refusing it."""

    BACKEND = "certify_careless"

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        try:
            return super().answer(data, reader)
        except InvalidOptionError:
            return {cls.FEATURE_NAME: [[]]}


class PostFilteringRetriever(Bm25sRetriever):
    """Ranks the whole corpus and drops what the caller may not read afterwards, as a search engine's document-level
    security does: the passages are readable, but their scores use the hidden documents' statistics."""

    BACKEND = "certify_post_filtering"

    @classmethod
    def retrieve(cls, request: RetrieveRequest, settings: Any) -> list[list[dict[str, Any]]]:
        documents = list(request.documents or [])
        positions = request.visibility.visible([label_of(doc.metadata) for doc in documents], "corpus")
        readable = {doc.doc_id for doc in (documents if positions is None else [documents[p] for p in positions])}
        unlabelled = [Document(doc.doc_id, doc.text) for doc in documents]
        everything = dataclasses.replace(request, documents=unlabelled, top_k=max(1, len(documents)))
        rows = super().retrieve(everything, settings)
        kept = [[passage for passage in row if passage["doc_id"] in readable][: request.top_k] for row in rows]
        return [[dict(passage, rank=rank) for rank, passage in enumerate(row, start=1)] for row in kept]
