"""A small built-in corpus and the demo the README runs."""
