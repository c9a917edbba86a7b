"""An option is declared once, as a settings field; reading, ``declared_options``, refusals and the docs' options
tables all follow from that one line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rag_integration.core.contract.request_options import SHARED_OPTIONS
from rag_integration.core.documents.corpus import Document
from rag_integration.core.errors import InvalidOptionError, UnknownOptionError
from rag_integration.core.options import (
    OptionReader,
    OptionSpec,
    option,
    option_rows,
    option_specs,
    options_table,
    read_options,
)
from rag_integration.core.ranking.passages import AllowedMask, Hits
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever
from rag_integration.feature_groups.connectors.retrieve.base import BaseRetrieveConnector
from rag_integration.registry import backend_classes
from rag_integration.testing.runner import run_feature

DOCS = Path(__file__).resolve().parents[2] / "docs"


@dataclass(frozen=True)
class ToySettings:
    """The toy backend's options: the one line under test is ``repeat``."""

    repeat: int = option("toy_repeat", "integer", "times the first hit is listed", default=2, minimum=1, maximum=5)


class ToyDeclaredRetriever(BaseRetrieveConnector[ToySettings, ToySettings, list[set[str]]]):
    """Ranks documents by how many query words they contain; declares its options only through ``SETTINGS``."""

    BACKEND: ClassVar[str | None] = "toy-declared-for-tests"
    SETTINGS: ClassVar[type[Any] | None] = ToySettings
    seen: ClassVar[list[ToySettings]] = []

    @classmethod
    def build_index(cls, documents: Sequence[Document], settings: Any) -> list[set[str]]:
        return [set(document.text.lower().split()) for document in documents]

    @classmethod
    def search(cls, index: Any, queries: list[str], depth: int, allowed: AllowedMask, settings: Any) -> list[Hits]:
        cls.seen.append(settings)
        results = []
        for query in queries:
            words = set(query.lower().split())
            hits = [(position, float(len(words & terms))) for position, terms in enumerate(index) if words & terms]
            results.append(sorted(hits, key=lambda hit: -hit[1])[:depth])
        return results


CORPUS = [{"doc_id": "a", "text": "engine oil"}, {"doc_id": "b", "text": "tyre pressure"}]


def ask(**options: Any) -> Any:
    context = {"retrieve_backend": "toy-declared-for-tests", "corpus": CORPUS, "query_text": "oil", **options}
    return run_feature("retrieved_passages", context, {ToyDeclaredRetriever})


def test_the_one_line_is_read_with_its_default_and_its_bounds() -> None:
    ToyDeclaredRetriever.seen.clear()
    assert [row["doc_id"] for row in ask()[0]] == ["a"]
    assert ask(toy_repeat=4)[0][0]["doc_id"] == "a"
    assert ToyDeclaredRetriever.seen == [ToySettings(repeat=2), ToySettings(repeat=4)]
    assert "toy_repeat" in ToyDeclaredRetriever.declared_options()


@pytest.mark.parametrize("value", [0, 6, "3", 2.0, True])
def test_a_value_outside_the_declaration_is_refused_naming_the_option(value: Any) -> None:
    with pytest.raises(InvalidOptionError, match="toy_repeat"):
        ask(toy_repeat=value)


def test_a_misspelled_option_is_refused_with_the_declared_one_suggested() -> None:
    with pytest.raises(UnknownOptionError, match="toy_repeat"):
        ask(toy_repaet=3)


def test_the_declaration_documents_itself() -> None:
    assert options_table(ToySettings) == "| `toy_repeat` | int 1..5 | 2 | times the first hit is listed |"


def test_nested_settings_are_read_and_declared_alike() -> None:
    settings = read_options(Bm25sRetriever.SETTINGS, OptionReader({"bm25_k1": 1.2, "search_threads": 2}))  # type: ignore[arg-type]
    assert (settings.index.k1, settings.index.b, settings.threads) == (1.2, 0.75, 2)
    keys = [spec.key for spec in option_specs(Bm25sRetriever.SETTINGS)]  # type: ignore[arg-type]
    assert keys == ["bm25_k1", "bm25_b", "bm25_method", "stemmer", "language", "search_threads"]


def test_a_declaration_that_cannot_be_read_is_refused_when_written() -> None:
    with pytest.raises(ValueError, match="kind"):
        OptionSpec("x", "float", "not a kind")
    with pytest.raises(ValueError, match="choices"):
        OptionSpec("x", "choice", "a choice without choices")


def test_every_declared_option_of_our_backends_is_in_its_family_page() -> None:
    """The docs' options rows are ``options_table``'s output, so a declaration and its documentation cannot drift."""
    missing = []
    for backend in backend_classes():
        if backend.SETTINGS is None or not backend.__module__.startswith("rag_integration."):
            continue
        page = (DOCS / f"{backend.DOCS_PAGE or backend.FAMILY}.md").read_text(encoding="utf-8")
        missing += [row for row in options_table(backend.SETTINGS).splitlines() if row not in page]
    assert not missing, "rows to put in the family pages (from core.options.options_table):\n" + "\n".join(missing)


def test_a_backend_built_from_others_accepts_every_option_of_its_parts() -> None:
    """``hybrid_rrf`` reads bm25s's and faiss's settings, so it must accept their keys, declared either way."""
    from rag_integration.feature_groups.connectors.retrieve import FaissDenseRetriever, HybridRrfRetriever

    parts = Bm25sRetriever.declared_options() | FaissDenseRetriever.declared_options()
    missing = parts - HybridRrfRetriever.declared_options() - {"retrieve_backend"}
    assert not missing, missing
    assert {"bm25_k1", "stemmer", "faiss_index", "rrf_k"} <= HybridRrfRetriever.declared_options()


def test_the_options_every_family_shares_are_documented_from_their_declarations() -> None:
    page = (DOCS / "options.md").read_text(encoding="utf-8")
    missing = [row for row in option_rows(SHARED_OPTIONS).splitlines() if row not in page]
    assert not missing, "rows to put in docs/options.md (from core.options.option_rows):\n" + "\n".join(missing)
