"""The chunking stage: ``<source>__chunked`` selected by ``chunker``."""

from rag_integration.feature_groups.rag_pipeline.chunking.base import BaseChunker
from rag_integration.feature_groups.rag_pipeline.chunking.fixed_size_chunker import FixedSizeChunker
from rag_integration.feature_groups.rag_pipeline.chunking.paragraph_chunker import ParagraphChunker
from rag_integration.feature_groups.rag_pipeline.chunking.sentence_chunker import SentenceChunker

__all__ = ["BaseChunker", "FixedSizeChunker", "ParagraphChunker", "SentenceChunker"]
