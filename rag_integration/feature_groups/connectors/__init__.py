"""Connector families: each wraps whole open-source RAG tools behind one mloda feature."""
