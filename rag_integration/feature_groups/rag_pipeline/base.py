"""A pipeline stage: ``<source>__<suffix>`` reads the rows of feature ``<source>`` and writes transformed rows.

Stages chain by name, mloda style (``docs__chunked__deduped__embedded__indexed``); every stage receives the
request's options, and each stage's backend is chosen by its own selector option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mloda.provider import ComputeFramework, FeatureSet
from mloda.user import Feature, FeatureName, Options
from mloda.user.python_dict import PythonDictFramework

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.frames import column_values
from rag_integration.core.deadline import Deadline, deadline_scope
from rag_integration.core.documents.corpus import Document, read_documents
from rag_integration.core.options import OptionReader


class PythonDictStage(SelectorFeatureGroup):
    """A stage whose rows are documents with their metadata keys as columns: any metadata fits only PythonDict's
    columns, so stages run there (mloda picks PythonDict from an ordered ``compute_frameworks`` list), while the
    ``vector_store`` retrieval that reads their store serves every framework."""

    DOCS_PAGE: ClassVar[str] = "pipeline"

    @classmethod
    def compute_framework_rule(cls) -> set[type[ComputeFramework]] | None:
        return {PythonDictFramework}


class StageFeatureGroup(PythonDictStage):
    """Matches any feature named ``<source>{SUFFIX}`` whose ``SELECTOR`` option equals ``BACKEND``."""

    SUFFIX: ClassVar[str] = ""

    @classmethod
    def serves(cls, feature_name: str) -> bool:
        return feature_name.endswith(cls.SUFFIX) and len(feature_name) > len(cls.SUFFIX)

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        return {Feature(self.source_name(str(feature_name)), options=options)}

    @classmethod
    def source_name(cls, feature_name: str) -> str:
        return feature_name[: -len(cls.SUFFIX)]

    @classmethod
    def calculate_feature(cls, data: object, features: FeatureSet) -> object:
        output: dict[str, list[dict[str, Any]]] = {}
        for feature in features.features:
            name = str(feature.name)
            source = cls.source_name(name)
            reader = OptionReader(feature.options, owner=f"{cls.__name__} ({name})")
            with deadline_scope(Deadline.read(reader)) as deadline:  # reading the rows counts against it too
                documents = read_documents(column_values(data, source, source), source)
                output[name] = cls.transform(documents, reader)
                deadline.check(f"after stage '{name}'")
        return output

    @classmethod
    def reduces_rows(cls) -> bool:
        return False

    @classmethod
    def transform(cls, documents: Sequence[Document], reader: OptionReader) -> list[dict[str, Any]]:
        """The stage's rows, computed from the source rows (already validated as documents)."""
        raise NotImplementedError


def document_row(doc_id: str, text: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A stage row: ``doc_id`` and ``text`` first, then the metadata keys."""
    return {"doc_id": doc_id, "text": text, **metadata}
