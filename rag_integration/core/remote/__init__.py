"""Clients of remote services: bounded HTTP and the one LLM client."""
