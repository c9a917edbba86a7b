"""The embedding stage: ``<source>__embedded`` selected by ``embedding_model``."""

from rag_integration.feature_groups.rag_pipeline.embedding.base import BaseEmbeddingStage
from rag_integration.feature_groups.rag_pipeline.embedding.hash_embedding import HashEmbeddingStage
from rag_integration.feature_groups.rag_pipeline.embedding.minilm_embedding import MiniLMEmbeddingStage
from rag_integration.feature_groups.rag_pipeline.embedding.multilingual_e5_embedding import MultilingualE5EmbeddingStage

EMBEDDING_STAGES = (HashEmbeddingStage, MiniLMEmbeddingStage, MultilingualE5EmbeddingStage)
"""Every embedding stage: the models a vector store accepts rows from."""

__all__ = [
    "EMBEDDING_STAGES",
    "BaseEmbeddingStage",
    "HashEmbeddingStage",
    "MiniLMEmbeddingStage",
    "MultilingualE5EmbeddingStage",
]
