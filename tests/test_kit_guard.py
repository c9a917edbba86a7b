"""The override guard of the contract kits: a standard test may only be replaced with an explicit xfail mark."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_integration.feature_groups.connectors.generate import BaseGenerateConnector, TemplateResponder
from rag_integration.feature_groups.connectors.rerank import BaseRerankConnector, LexicalReranker
from rag_integration.testing.generate import GenerateContractTests
from rag_integration.testing.kit import ContractKit, silent_overrides
from rag_integration.testing.rerank import RerankContractTests

# The classes below are not collected (no ``Test`` prefix): only their guard is called, by hand.


class LexicalKit(RerankContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return LexicalReranker


class SilentOverride(LexicalKit):
    def test_top_k_bounds(self) -> None:  # a weaker stand-in for the standard test
        assert True


class MarkedOverride(LexicalKit):
    @pytest.mark.xfail(reason="this backend caps top_k at 5", strict=True)
    def test_top_k_bounds(self) -> None:
        super().test_top_k_bounds()


class MarkedWithoutReason(LexicalKit):
    @pytest.mark.xfail
    def test_top_k_bounds(self) -> None:
        super().test_top_k_bounds()


class SkipMarkedOverride(LexicalKit):
    @pytest.mark.skip(reason="a skip is no xfail")
    def test_top_k_bounds(self) -> None:
        super().test_top_k_bounds()


class DisabledByNone(LexicalKit):
    test_batched_queries_equal_one_by_one = None  # type: ignore[assignment]


class FamilyTestOverride(LexicalKit):
    def test_ties_keep_input_order(self) -> None:  # a family kit's own test counts as standard too
        assert True


class StoreBackedKit(RerankContractTests):
    """An intermediate kit, like ``VectorStoreContractTests``, that redefines a standard test."""

    def test_row_shape_and_types(self) -> None:
        assert True


class ThroughIntermediateKit(StoreBackedKit):
    @classmethod
    def connector_class(cls) -> type[BaseRerankConnector]:
        return LexicalReranker


class LooseMixin:
    def test_options_in_group_work_too(self) -> None:
        assert True


class ThroughMixin(LooseMixin, LexicalKit):
    pass


class TemplateKit(GenerateContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseGenerateConnector]:
        return TemplateResponder


class TemplateWithTopK(TemplateKit):
    """Turning a capability on gives the kit the standard test back; no override is involved."""

    @classmethod
    def supports_top_k(cls) -> bool:
        return True


def guard(kit: type[ContractKit]) -> None:
    kit().test_no_standard_test_is_silently_overridden()


SILENT: list[tuple[type[ContractKit], str]] = [
    (SilentOverride, "SilentOverride.test_top_k_bounds redefines ContractKit.test_top_k_bounds"),
    (MarkedWithoutReason, "MarkedWithoutReason.test_top_k_bounds"),
    (SkipMarkedOverride, "SkipMarkedOverride.test_top_k_bounds"),
    (DisabledByNone, "DisabledByNone.test_batched_queries_equal_one_by_one"),
    (FamilyTestOverride, "redefines RerankContractTests.test_ties_keep_input_order"),
    (ThroughIntermediateKit, "StoreBackedKit.test_row_shape_and_types redefines ContractKit"),
    (ThroughMixin, "LooseMixin.test_options_in_group_work_too redefines ContractKit"),
]


@pytest.mark.parametrize(("kit", "named"), [pytest.param(*case, id=case[0].__name__) for case in SILENT])
def test_the_guard_fails_on_a_silent_override(kit: type[ContractKit], named: str) -> None:
    with pytest.raises(AssertionError, match=r"pytest\.mark\.xfail\(reason=\.\.\.\)") as caught:
        guard(kit)
    assert named in str(caught.value)
    assert len(silent_overrides(kit)) == 1


@pytest.mark.parametrize(
    "kit", [LexicalKit, MarkedOverride, TemplateKit, TemplateWithTopK], ids=lambda kit: kit.__name__
)
def test_the_guard_passes_on_an_xfail_marked_override_and_on_capability_gates(kit: type[ContractKit]) -> None:
    guard(kit)
    assert silent_overrides(kit) == []


def test_capability_flags_decide_which_standard_tests_a_kit_has() -> None:
    """A family without ``top_k`` has no ``top_k`` test at all (pytest collects nothing named so), and turning
    the flag on brings back the standard test itself."""
    assert TemplateKit.test_top_k_bounds is None and TemplateKit.test_bad_top_k_is_a_typed_error is None
    assert TemplateKit.test_duplicate_doc_ids_are_refused is ContractKit.test_duplicate_doc_ids_are_refused
    assert TemplateWithTopK.test_top_k_bounds is ContractKit.test_top_k_bounds
    assert MarkedOverride.test_top_k_bounds is vars(MarkedOverride)["test_top_k_bounds"]


GUARDED_MODULE = textwrap.dedent(
    """
    import pytest

    from rag_integration.feature_groups.connectors.rerank import LexicalReranker
    from rag_integration.testing.rerank import RerankContractTests


    class TestSilent(RerankContractTests):
        @classmethod
        def connector_class(cls):
            return LexicalReranker

        def test_top_k_bounds(self):
            pass


    class TestMarked(RerankContractTests):
        @classmethod
        def connector_class(cls):
            return LexicalReranker

        @pytest.mark.xfail(reason="this backend caps top_k at 5", strict=True)
        def test_top_k_bounds(self):
            raise AssertionError("top_k=1000 returned 5 passages")
    """
)


def test_pytest_reports_the_silent_override_and_runs_the_marked_one_as_xfail(tmp_path: Path) -> None:
    module = tmp_path / "test_guarded_backends.py"
    module.write_text(GUARDED_MODULE, encoding="utf-8")
    arguments = [str(module), "-q", "-rfx", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    arguments += ["-k", "test_no_standard_test_is_silently_overridden or test_top_k_bounds"]
    command = [sys.executable, "-m", "pytest", *arguments]
    completed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    out = completed.stdout[-3000:]
    assert completed.returncode == 1, out
    # pytest prints the failure's message after the name when CI is set, and only the name elsewhere
    assert re.search(
        r"^FAILED test_guarded_backends.py::TestSilent::test_no_standard_test_is_silently_overridden\b", out, re.M
    )
    assert "TestSilent.test_top_k_bounds redefines ContractKit.test_top_k_bounds" in out
    assert "XFAIL test_guarded_backends.py::TestMarked::test_top_k_bounds - this backend caps" in out
    assert re.search(r"\b1 failed, 2 passed, \d+ deselected, 1 xfailed\b", out), out  # only the guard failed
