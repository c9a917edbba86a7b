"""What every family's contract kit shares: the adapter a backend's test fills in, one way to send a request, and
the standard tests that hold for every family alike, written once here and fed by each family's adapter hooks."""

from __future__ import annotations

import importlib
import itertools
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import pytest
from mloda.provider import ComputeFramework, FeatureGroup, FeatureSet
from mloda.user import DataAccessCollection, Feature, FeatureName, Options
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core import deadline
from rag_integration.core.contract.frames import ArrowBackedAdapter, adapter_for
from rag_integration.core.errors import (
    DeadlineExceededError,
    DuplicateDocIdError,
    InvalidOptionError,
    UnknownOptionError,
)
from rag_integration.core.indexes.memory import forget_built
from rag_integration.testing.runner import run_feature, run_in_fresh_process

ROWS_FEATURE = "kit_item_rows"
PASSAGE_KEYS = frozenset({"doc_id", "text", "score", "rank"})
BAD_TOP_K: tuple[Any, ...] = (0, -1, -2, -3, True, 1.0, 2.0, "3", "4", "5", [3], [5])
"""``top_k`` values every family with a ``top_k`` refuses: zero, negatives, a bool, floats, numeric text, lists."""
BAD_EXPLAIN: tuple[Any, ...] = ("yes", "true", 1, 0, [True])
"""``explain`` values every family with explanations refuses: it is a bool, never coerced."""
BATCH_TOP_K = 3
"""The ``top_k`` of the batched and determinism requests: below the kits' corpus sizes, so each query's cut (and
its ties) is exercised."""

FRAMEWORK_MODULES: dict[str, str] = {
    "PyArrowTable": "mloda.user.pyarrow",
    "PandasDataFrame": "mloda.user.pandas",
    "PolarsDataFrame": "mloda.user.polars",
    "PolarsLazyDataFrame": "mloda.user.polars",
    "SparkFramework": "mloda.user.spark",
}
"""The compute frameworks besides PythonDict that every backend must answer identically on (SPEC section 4)."""


class KitItemRows(FeatureGroup):
    """A root feature whose rows are the ``kit_rows`` option: an upstream for ``*_source`` tests."""

    @classmethod
    def match_feature_group_criteria(
        cls,
        feature_name: FeatureName | str,
        options: Options,
        data_access_collection: DataAccessCollection | None = None,
    ) -> bool:
        return str(feature_name) == ROWS_FEATURE

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return None

    @classmethod
    def calculate_feature(cls, data: object, features: FeatureSet) -> Any:
        """The rows as a typed column of the run's framework (mloda's Spark would store a list of dicts as its
        repr), as a real upstream of typed data gives them."""
        feature = next(iter(features.features))
        rows = list(feature.options.get("kit_rows"))
        adapter = adapter_for(feature.get_compute_framework().get_class_name())
        if not isinstance(adapter, ArrowBackedAdapter):
            return {ROWS_FEATURE: rows}
        import pyarrow as pa

        return adapter.attach(ROWS_FEATURE, pa.array(rows), None)


def kit_rows_feature(rows: list[Any]) -> Feature:
    """An upstream feature (with its own options) whose rows are ``rows``."""
    return Feature(ROWS_FEATURE, options=Options(context={"kit_rows": rows}))


def framework_class(name: str) -> type[ComputeFramework]:
    """A compute framework by class name; Spark gets a small ``local[2]`` session that every kit test reuses."""
    if name == "SparkFramework":
        spark_test_session()
    framework: type[ComputeFramework] = getattr(importlib.import_module(FRAMEWORK_MODULES[name]), name)
    return framework


def document_texts(documents: list[Any]) -> dict[str, str]:
    """doc_id (normalised as the connectors do: a str, or the 0-based position when absent) -> text."""
    return {str(document.get("doc_id", position)): document["text"] for position, document in enumerate(documents)}


def assert_ranked_passages(passages: object, texts: Mapping[str, str], *, positive: bool = False) -> None:
    """The passage row contract (SPEC section 1): exact keys and types, ranks 1..n, scores non-increasing, each
    doc_id once and its text the supplied document's; ``positive`` also demands every score be above zero."""
    assert isinstance(passages, list), passages
    for passage in passages:
        assert set(passage) == PASSAGE_KEYS, passage
        assert type(passage["doc_id"]) is str and type(passage["text"]) is str, passage
        assert type(passage["score"]) is float and type(passage["rank"]) is int, passage
        assert passage["text"] == texts[passage["doc_id"]], passage
    assert [passage["rank"] for passage in passages] == list(range(1, len(passages) + 1))
    scores = [passage["score"] for passage in passages]
    assert scores == sorted(scores, reverse=True), scores
    assert len({passage["doc_id"] for passage in passages}) == len(passages)
    if positive:
        assert all(score > 0.0 for score in scores), scores


Test = TypeVar("Test", bound=Callable[..., None])
_REQUIRES = "__kit_requires__"


def requires(capability: Callable[[Any], bool]) -> Callable[[Test], Test]:
    """Marks a standard test that only kits with ``capability`` (a predicate on the kit class) have: for any other
    kit the test is absent, not skipped, as a family without ``top_k`` has no test of it at all."""

    def mark(test: Test) -> Test:
        setattr(test, _REQUIRES, capability)
        return test

    return mark


def xfail_reason(test: object) -> str | None:
    """The reason of a ``pytest.mark.xfail(reason=...)`` on ``test``, or None when it carries no such mark."""
    for mark in getattr(test, "pytestmark", []):
        reason = mark.kwargs.get("reason") if mark.name == "xfail" else None
        if isinstance(reason, str) and reason.strip():
            return reason
    return None


def silent_overrides(kit: type[object]) -> list[str]:
    """Every ``test_*`` that a class in ``kit``'s MRO redefines over a kit class further up without an xfail mark.

    A standard test may only be replaced visibly: capability flags and adapter hooks change what it checks, and a
    check that truly cannot hold is marked ``pytest.mark.xfail(reason=...)``. The capability gate's own entries
    (absent when the capability is missing, the standard test when present) are not overrides.
    """
    mro = kit.__mro__  # every class, a mixin that is no kit included: pytest collects the first definition
    found = []
    for position, klass in enumerate(mro):
        for name, value in vars(klass).items():
            if not name.startswith("test_"):
                continue
            later = (other for other in mro[position + 1 :] if issubclass(other, ContractKit) and name in vars(other))
            base = next(later, None)
            if base is None or _gated_entry(klass, name, value) or xfail_reason(value) is not None:
                continue
            found.append(f"{klass.__qualname__}.{name} redefines {base.__qualname__}.{name}")
    return found


def _gated_entry(klass: type[object], name: str, value: object) -> bool:
    standard = vars(ContractKit).get(name)
    capability = getattr(standard, _REQUIRES, None)
    if capability is None:
        return False
    return value is standard if capability(klass) else value is None


def spark_test_session() -> Any:
    from pyspark.sql import SparkSession

    from rag_integration.core.contract.frames import quiet_pyspark_pandas_warning

    quiet_pyspark_pandas_warning()
    return (
        SparkSession.builder.master("local[2]")
        .appName("rag-integration-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )


class ContractKit:
    """The base of every family's kit: the adapter a backend's test fills in and the standard tests.

    A backend's test subclasses its family's kit and returns the class under test from ``connector_class``;
    ``backend_options`` adds what the backend needs in tests (a small embedder, a local model folder). The
    standard tests below are written once for every family, in the manner of LangChain's ``langchain_tests``:
    each family kit fills the adapter hooks (``sample_request``, ``batch_queries``, ``check_row``, ...) and
    capability flags (``supports_top_k``, ``items_option``) say which standard tests it has. A subclass must not
    redefine a standard test silently (``test_no_standard_test_is_silently_overridden``); one that truly cannot
    hold is overridden with ``pytest.mark.xfail(reason=...)``.

    The hooks a kit must fill raise ``NotImplementedError`` instead of being ``abc`` abstract methods on purpose:
    pytest does not collect an abstract class, so a backend's test that forgot ``connector_class`` would pass by
    running no test at all, where it now fails every test naming the missing hook.
    """

    feature_name: ClassVar[str] = ""
    query_option: ClassVar[str] = "query_text"
    """The option holding the query (or a list of queries, one output row each)."""
    items_option: ClassVar[str | None] = None
    """The option holding the request's documents, whose doc ids must be unique; None for a family without
    documents, which then has no duplicate-id test."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Gives each kit exactly the standard tests its capabilities call for (see ``requires``)."""
        super().__init_subclass__(**kwargs)
        for name, standard in vars(ContractKit).items():
            capability = getattr(standard, _REQUIRES, None)
            if capability is None or name in vars(cls):
                continue  # a class's own definition of a standard test is the override guard's to judge
            if not capability(cls):
                setattr(cls, name, None)
            elif getattr(cls, name, None) is None:
                setattr(cls, name, standard)

    @classmethod
    def connector_class(cls) -> type[Any]:
        raise NotImplementedError("return the backend class under test")

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        """Extra options every request of this backend needs in tests."""
        return {}

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        """Requests (upstream sources and free-form metadata among them) that must answer the same everywhere."""
        return []

    @classmethod
    def supports_top_k(cls) -> bool:
        """True when the family ranks passages under a ``top_k`` option (False for generate and structured)."""
        return True

    @classmethod
    def supports_explain(cls) -> bool:
        """True when the family's passages take ``explain=True`` (an ``explanation`` on each passage)."""
        return False

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        """One query with a known, non-empty answer whose first item is ``sample_top``."""
        raise NotImplementedError("return a request with one query and a known answer")

    @classmethod
    def sample_top(cls) -> Any:
        """The first of ``answer_keys`` for ``sample_request``: what a correct backend answers first."""
        raise NotImplementedError("return the first answer key of sample_request")

    @classmethod
    def batch_queries(cls) -> list[Any]:
        """Several queries, each with a non-empty answer, sent as one list in ``sample_request`` otherwise."""
        raise NotImplementedError("return queries for the batched and determinism tests")

    @classmethod
    def top_k_request(cls) -> dict[str, Any]:
        """A request (without ``top_k``) answered by several passages; families with ``top_k`` only."""
        raise NotImplementedError("return a request answered by several passages")

    @classmethod
    def top_k_answer_size(cls) -> tuple[int, int]:
        """The fewest and the most passages ``top_k_request`` may return when ``top_k`` exceeds its candidates."""
        raise NotImplementedError("return (fewest, most) passages of top_k_request")

    @classmethod
    def duplicate_ids_request(cls, documents: list[dict[str, Any]]) -> dict[str, Any]:
        """``sample_request`` with ``documents`` (two of one effective doc id) in ``items_option``."""
        assert cls.items_option is not None
        return {**cls.sample_request(), cls.items_option: documents}

    @classmethod
    def passages_of(cls, row: Any) -> list[dict[str, Any]]:
        """The ranked passages of one output row (the row itself, unless the family wraps them)."""
        return list(row)

    @classmethod
    def answer_keys(cls, row: Any) -> list[Any]:
        """What a row answers with, in order and comparable: passages' doc ids unless the family says otherwise."""
        return [passage["doc_id"] for passage in cls.passages_of(row)]

    def check_row(self, row: Any, request: Mapping[str, Any]) -> None:
        """Asserts one output row keeps the family's contract for ``request`` (sent without ``filters``)."""
        raise NotImplementedError("assert the family's row contract")

    def check_explanation(self, passage: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """Asserts one passage's ``explanation`` (``explain=True``): a JSON-ready dict naming the backend and its
        ``kind``, repeating the passage's score, and, where it lists ``contributions``, parts adding up to it."""
        explanation = passage["explanation"]
        assert isinstance(explanation, dict), explanation
        assert explanation["backend"] == self.connector_class().BACKEND, explanation
        assert isinstance(explanation["kind"], str) and explanation["kind"], explanation
        assert explanation["score"] == passage["score"], (explanation, passage)
        assert json.loads(json.dumps(explanation, allow_nan=False)) == explanation
        if "contributions" in explanation:
            parts = [entry["contribution"] for entry in explanation["contributions"]]
            assert all(type(part) is float for part in parts), explanation
            assert math.isclose(sum(parts), passage["score"], rel_tol=1e-9, abs_tol=1e-12), explanation

    def request(self, **options: object) -> dict[str, Any]:
        """The backend's selector, then ``backend_options``, then the test's own options."""
        connector = self.connector_class()
        return {connector.SELECTOR: connector.BACKEND, **self.backend_options(), **options}

    def run(self, **options: object) -> list[Any]:
        """The feature's rows for one request, through ``mlodaAPI.run_all``."""
        return self.run_on(PythonDictFramework, **options)

    def run_on(self, framework: type[ComputeFramework], **options: object) -> list[Any]:
        """The feature's rows for one request on ``framework``, decoded to the values PythonDict gives."""
        groups: set[type[FeatureGroup]] = {self.connector_class(), KitItemRows}
        return run_feature(self.feature_name, self.request(**options), groups, framework=framework)

    def run_in_group(self, **options: object) -> list[Any]:
        """The feature's rows with the request in ``Options(group=...)`` instead of ``context``."""
        groups: set[type[FeatureGroup]] = {self.connector_class(), KitItemRows}
        return run_feature(self.feature_name, self.request(**options), groups, in_group=True)

    def batch_request(self) -> dict[str, Any]:
        """``sample_request`` asking ``batch_queries`` at once (and a ``top_k`` below the corpus size)."""
        request = {**self.sample_request(), self.query_option: self.batch_queries()}
        return {**request, "top_k": BATCH_TOP_K} if self.supports_top_k() else request

    @pytest.fixture(autouse=True)
    def _fresh_index_cache(self) -> None:
        forget_built()

    def test_row_shape_and_types(self) -> None:
        request = self.sample_request()
        rows = self.run(**request)
        assert len(rows) == 1, rows
        self.check_row(rows[0], request)
        keys = self.answer_keys(rows[0])
        assert keys and keys[0] == self.sample_top(), keys

    @requires(lambda kit: kit.supports_top_k())
    def test_top_k_bounds(self) -> None:
        request = self.top_k_request()
        answers = {}
        for top_k in (1, 2, 1000, None):
            options = request if top_k is None else {**request, "top_k": top_k}
            [row] = self.run(**options)
            self.check_row(row, options)
            answers[top_k] = self.passages_of(row)
        fewest, most = self.top_k_answer_size()
        assert len(answers[1]) == 1
        assert fewest <= len(answers[1000]) <= most, answers[1000]
        assert answers[2] == answers[1000][:2]
        assert answers[None] == answers[1000][:10]  # the default top_k is 10

    @requires(lambda kit: kit.supports_top_k())
    @pytest.mark.parametrize("bad_top_k", BAD_TOP_K, ids=repr)
    def test_bad_top_k_is_a_typed_error(self, bad_top_k: object) -> None:
        with pytest.raises(InvalidOptionError, match="top_k"):
            self.run(**{**self.sample_request(), "top_k": bad_top_k})

    def test_an_unknown_option_is_refused(self) -> None:
        with pytest.raises(UnknownOptionError, match="not_an_option_of_anyone"):
            self.run(**{**self.sample_request(), "not_an_option_of_anyone": 1})

    def test_deadline_ms_is_kept(self, monkeypatch: pytest.MonkeyPatch) -> None:
        ticks = itertools.count(0.0, 10.0)  # every clock reading is 10 s after the last: any deadline has passed
        monkeypatch.setattr(deadline, "_clock", lambda: next(ticks))
        with pytest.raises(DeadlineExceededError, match="deadline_ms"):
            self.run(**{**self.sample_request(), "deadline_ms": 1})

    def test_options_in_group_work_too(self) -> None:
        request = {**self.sample_request(), **({"top_k": 1} if self.supports_top_k() else {})}
        rows = self.run_in_group(**request)
        assert rows == self.run(**request)
        assert len(rows) == 1, rows
        self.check_row(rows[0], request)
        assert self.answer_keys(rows[0])[0] == self.sample_top()

    @requires(lambda kit: kit.items_option is not None)
    @pytest.mark.parametrize("doc_ids", [("1", 1), ("a", "a")], ids=["int-and-str", "identical"])
    def test_duplicate_doc_ids_are_refused(self, doc_ids: tuple[Any, Any]) -> None:
        documents = [{"doc_id": doc_ids[0], "text": "a cat"}, {"doc_id": doc_ids[1], "text": "a dog"}]
        with pytest.raises(DuplicateDocIdError, match=str(self.items_option)):
            self.run(**self.duplicate_ids_request(documents))

    def test_batched_queries_equal_one_by_one(self) -> None:
        request = self.batch_request()
        queries = request[self.query_option]
        batched = self.run(**request)
        assert len(batched) == len(queries) >= 2
        for query, row in zip(queries, batched, strict=True):
            self.check_row(row, request)
            assert self.answer_keys(row), (query, row)
            assert [row] == self.run(**{**request, self.query_option: query}), query

    def test_deterministic_across_runs(self) -> None:
        request = self.batch_request()
        first = self.run(**request)
        forget_built()
        assert self.run(**request) == first

    def test_same_answers_in_a_fresh_process(self) -> None:
        connector = self.connector_class()
        request = self.request(**self.batch_request())
        assert run_in_fresh_process(self.feature_name, request, connector) == run_feature(
            self.feature_name, request, {connector}
        )

    @pytest.mark.parametrize("framework_name", sorted(FRAMEWORK_MODULES))
    def test_same_answers_on_every_framework(self, framework_name: str) -> None:
        requests = self.parity_requests()
        assert requests, f"{type(self).__name__} names no parity request"
        framework = framework_class(framework_name)
        for options in requests:
            assert self.run_on(framework, **options) == self.run(**options), options

    @requires(lambda kit: kit.supports_explain())
    def test_explain_adds_an_explanation_to_every_passage(self) -> None:
        request = self.batch_request()
        plain = self.run(**request)
        explained = self.run(**{**request, "explain": True})
        assert len(explained) == len(plain)
        for row, plain_row in zip(explained, plain, strict=True):
            passages = self.passages_of(row)
            assert passages, row
            unexplained = [
                {key: value for key, value in passage.items() if key != "explanation"} for passage in passages
            ]
            assert unexplained == self.passages_of(plain_row)  # explaining changes no ranking and no score
            for passage in passages:
                self.check_explanation(passage, request)

    @requires(lambda kit: kit.supports_explain())
    @pytest.mark.parametrize("bad_explain", BAD_EXPLAIN, ids=repr)
    def test_bad_explain_is_a_typed_error(self, bad_explain: object) -> None:
        with pytest.raises(InvalidOptionError, match="explain"):
            self.run(**{**self.sample_request(), "explain": bad_explain})

    def test_no_standard_test_is_silently_overridden(self) -> None:
        overrides = silent_overrides(type(self))
        assert not overrides, (
            "a standard test is replaced without pytest.mark.xfail(reason=...); use the kit's capability flags and "
            "adapter hooks instead, or mark the override: " + "; ".join(overrides)
        )


class CorpusContractKit(ContractKit):
    """The adapter hooks of the families answering over a ``corpus`` (retrieve, orchestrator), written once: both
    kits ask the same queries of six documents with the same doc ids (cat, dog, engine, bread, tide, volcano), each
    family's ``kit_corpus`` wording them as its answers need."""

    items_option: ClassVar[str | None] = "corpus"
    kit_corpus: ClassVar[list[dict[str, Any]]]
    """The family kit's six documents."""

    @classmethod
    def matches_by_word_overlap(cls) -> bool:
        """True when a query that shares no word with the corpus finds nothing (no passage; for orchestrator, no
        document and an empty answer)."""
        return True

    @classmethod
    def sample_top(cls) -> Any:
        return "engine"

    @classmethod
    def batch_queries(cls) -> list[Any]:
        return ["cat windowsill", "engine oil", "moon tide ocean", "lava eruption", "the dog and the cat", "oil"]

    @classmethod
    def top_k_request(cls) -> dict[str, Any]:
        return {"query_text": "the cat and the dog", "corpus": cls.kit_corpus}

    @classmethod
    def top_k_answer_size(cls) -> tuple[int, int]:
        return 2, len(cls.kit_corpus)
