"""The embedding stage: ``<source>__embedded`` selected by ``embedding_model``."""

from rag_integration.feature_groups.rag_pipeline.embedding.base import BaseEmbeddingStage
from rag_integration.feature_groups.rag_pipeline.embedding.hash_embedding import HashEmbeddingStage
from rag_integration.feature_groups.rag_pipeline.embedding.minilm_embedding import MiniLMEmbeddingStage

__all__ = ["BaseEmbeddingStage", "HashEmbeddingStage", "MiniLMEmbeddingStage"]
