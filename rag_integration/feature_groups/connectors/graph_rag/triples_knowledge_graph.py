"""A knowledge graph from ``[subject, predicate, object]`` triples, in the shape graph_rag reads via ``graph_source``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rag_integration.core.contract.feature_group import SelectorFeatureGroup
from rag_integration.core.contract.schema import FLOAT, STRING, Shape
from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.corpus import READ_CHECK_EVERY
from rag_integration.core.errors import InvalidOptionError, MissingOptionError
from rag_integration.core.options import OptionReader
from rag_integration.core.unicode_text import require_valid_text

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame

TRIPLE_SHAPE = "a [subject, predicate, object] triple of non-empty strings"


class TriplesKnowledgeGraph(SelectorFeatureGroup):
    """``knowledge_graph`` with ``kg_backend="triples"``: one row ``{"nodes": [...], "edges": [...]}``.

    Every entity becomes a node (``doc_id`` = its name, first-seen order) whose text lists the facts it takes part
    in ("Marie Curie discovered polonium."), so a query can match it. Every pair of distinct entities linked by
    triples becomes one undirected edge weighted by how many distinct triples link them.
    """

    FAMILY: ClassVar[str] = "knowledge_graph"
    FEATURE_NAME: ClassVar[str] = "knowledge_graph"
    SELECTOR: ClassVar[str] = "kg_backend"
    BACKEND: ClassVar[str | None] = "triples"
    OPTIONS: ClassVar[tuple[str, ...]] = ("triples",)

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        if not reader.has("triples"):
            raise MissingOptionError("triples", f"a list of triples, each {TRIPLE_SHAPE}", owner=reader.owner)
        triples = read_triples(reader.raw("triples"))
        check_deadline(f"after reading {len(triples)} triples")
        return {cls.FEATURE_NAME: [triples_to_graph(triples)]}

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        return {
            "nodes": [{"doc_id": STRING, "text": STRING}],
            "edges": [{"source": STRING, "target": STRING, "weight": FLOAT}],
        }


def read_triples(raw: object) -> list[tuple[str, str, str]]:
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, (list, tuple)):
        raise InvalidOptionError("triples", raw, f"a list of triples, each {TRIPLE_SHAPE}")
    triples = []
    for index, item in enumerate(raw):
        if not isinstance(item, (list, tuple)) or len(item) != 3:
            raise InvalidOptionError(f"triples[{index}]", item, TRIPLE_SHAPE)
        if not all(isinstance(part, str) and part.strip() for part in item):
            raise InvalidOptionError(f"triples[{index}]", item, TRIPLE_SHAPE)
        for part_index, part in enumerate(item):
            require_valid_text(part, f"triples[{index}][{part_index}]")
        if not index % READ_CHECK_EVERY:
            check_deadline(f"while reading 'triples' (at triple {index} of {len(raw)})")
        subject, predicate, obj = (part.strip() for part in item)
        triples.append((subject, predicate, obj))
    return triples


def triples_to_graph(triples: list[tuple[str, str, str]]) -> dict[str, Any]:
    facts: dict[str, list[str]] = {}
    links: dict[frozenset[str], set[tuple[str, str, str]]] = {}
    for triple in dict.fromkeys(triples):
        subject, predicate, obj = triple
        fact = f"{subject} {predicate} {obj}."
        for entity in dict.fromkeys((subject, obj)):
            facts.setdefault(entity, []).append(fact)
        if subject != obj:
            links.setdefault(frozenset((subject, obj)), set()).add(triple)
    order = {entity: position for position, entity in enumerate(facts)}
    edges = []
    for pair, linking in links.items():
        source, target = sorted(pair, key=order.__getitem__)
        edges.append({"source": source, "target": target, "weight": float(len(linking))})
    return {"nodes": [{"doc_id": entity, "text": " ".join(lines)} for entity, lines in facts.items()], "edges": edges}
