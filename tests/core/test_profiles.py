"""Profiles: named option presets with a budget. ``profile`` selects one, the request's own options override its
presets, an unknown one is refused listing those declared; and two enabled classes claiming one value are refused."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.pyarrow import PyArrowTable

from rag_integration.core.contract.profiles import Profile
from rag_integration.core.errors import DuplicateBackendError, UnknownProfileError
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.testing.runner import run_feature

CORPUS = [
    {"doc_id": "a", "text": "the cat sat on the mat"},
    {"doc_id": "b", "text": "a cat and a dog"},
    {"doc_id": "c", "text": "birds sing"},
]


class ProfiledBm25s(Bm25sRetriever):
    BACKEND: ClassVar[str | None] = "profiled_bm25s_for_tests"
    PROFILES: ClassVar[dict[str, Profile]] = {
        "default": Profile(budget_ms=2000),
        "one": Profile({"top_k": 1}, budget_ms=500, description="only the best passage"),
    }


def ids(options: dict[str, Any], backend: type[Bm25sRetriever] = ProfiledBm25s) -> list[str]:
    request = {"retrieve_backend": backend.BACKEND, "query_text": "cat", "corpus": CORPUS, **options}
    (row,) = run_feature("retrieved_passages", request, {backend})
    return [passage["doc_id"] for passage in row]


def test_a_profile_presets_options_and_the_request_overrides_them() -> None:
    assert ids({}) == ["b", "a"]
    assert ids({"profile": "default"}) == ["b", "a"]
    assert ids({"profile": "one"}) == ["b"]
    assert ids({"profile": "one", "top_k": 2}) == ["b", "a"]


@pytest.mark.parametrize(
    ("backend", "value", "declared"),
    [
        (ProfiledBm25s, "fats", "'default', 'one'"),
        (Bm25sRetriever, "fast", "'default'"),
        (ProfiledBm25s, 3, "'default', 'one'"),
    ],
)
def test_an_unknown_profile_is_refused_listing_the_declared_ones(
    backend: type[Bm25sRetriever], value: object, declared: str
) -> None:
    with pytest.raises(UnknownProfileError, match=f"declares the profiles {declared}") as caught:
        ids({"profile": value}, backend)
    assert caught.value.option == "profile"


def test_a_backend_without_profiles_has_the_implicit_default() -> None:
    assert list(Bm25sRetriever.profiles()) == ["default"]
    assert ids({"profile": "default"}, Bm25sRetriever) == ["b", "a"]


class RivalBm25s(Bm25sRetriever):
    BACKEND: ClassVar[str | None] = "profiled_bm25s_for_tests"


def test_two_enabled_classes_claiming_one_value_are_refused_naming_both() -> None:
    request = {"retrieve_backend": "profiled_bm25s_for_tests", "query_text": "cat", "corpus": CORPUS}
    with pytest.raises(DuplicateBackendError, match="RivalBm25s") as caught:
        mlodaAPI.run_all(
            [Feature("retrieved_passages", options=Options(context=request))],
            plugin_collector=PluginCollector.enabled_feature_groups({ProfiledBm25s, RivalBm25s}),
        )
    assert "ProfiledBm25s" in str(caught.value)
    assert ids({}, RivalBm25s) == ["b", "a"]  # enabled alone, each answers


class ExplainedBm25s(Bm25sRetriever):
    BACKEND: ClassVar[str | None] = "explained_bm25s_for_tests"
    PROFILES: ClassVar[dict[str, Profile]] = {
        "default": Profile(),
        "explained": Profile({"explain": True, "return_metadata": True}, budget_ms=1000),
    }


def test_a_profiles_presets_shape_the_rows_on_a_columnar_framework() -> None:

    request = {
        "retrieve_backend": ExplainedBm25s.BACKEND,
        "query_text": "cat",
        "corpus": CORPUS,
        "profile": "explained",
    }
    (arrow,) = run_feature("retrieved_passages", request, {ExplainedBm25s}, framework=PyArrowTable)
    (plain,) = run_feature("retrieved_passages", request, {ExplainedBm25s})
    assert arrow == plain and all("explanation" in passage and "metadata" in passage for passage in arrow)
