"""The build-your-own stage pipeline: documents -> chunks -> (dedup) -> embeddings -> FAISS store -> retrieval.

Stages chain by feature name (``docs__chunked__deduped__embedded__indexed``); each is chosen by its own option.
"""

from rag_integration.feature_groups.rag_pipeline.chunking import (
    BaseChunker,
    FixedSizeChunker,
    ParagraphChunker,
    SentenceChunker,
)
from rag_integration.feature_groups.rag_pipeline.dedup import (
    BaseDeduplicator,
    ExactDeduplicator,
    NormalizedDeduplicator,
)
from rag_integration.feature_groups.rag_pipeline.documents import (
    BaseDocumentSource,
    FileDocumentSource,
    InlineDocumentSource,
)
from rag_integration.feature_groups.rag_pipeline.embedding import (
    BaseEmbeddingStage,
    HashEmbeddingStage,
    MiniLMEmbeddingStage,
    MultilingualE5EmbeddingStage,
)
from rag_integration.feature_groups.rag_pipeline.retrieval import VectorStoreRetriever
from rag_integration.feature_groups.rag_pipeline.vector_store import BaseVectorStore, FaissVectorStore

STAGES = (
    InlineDocumentSource,
    FileDocumentSource,
    FixedSizeChunker,
    SentenceChunker,
    ParagraphChunker,
    ExactDeduplicator,
    NormalizedDeduplicator,
    HashEmbeddingStage,
    MiniLMEmbeddingStage,
    MultilingualE5EmbeddingStage,
    FaissVectorStore,
    VectorStoreRetriever,
)
"""Every concrete stage, for ``PluginCollector.enabled_feature_groups(set(STAGES))``."""

__all__ = [
    "STAGES",
    "BaseChunker",
    "BaseDeduplicator",
    "BaseDocumentSource",
    "BaseEmbeddingStage",
    "BaseVectorStore",
    "ExactDeduplicator",
    "FaissVectorStore",
    "FileDocumentSource",
    "FixedSizeChunker",
    "HashEmbeddingStage",
    "InlineDocumentSource",
    "MiniLMEmbeddingStage",
    "MultilingualE5EmbeddingStage",
    "NormalizedDeduplicator",
    "ParagraphChunker",
    "SentenceChunker",
    "VectorStoreRetriever",
]
