"""Indexes: embedders, the FAISS vector index, the in-memory cache and the persisted store."""
