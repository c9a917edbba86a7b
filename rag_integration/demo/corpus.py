"""Twelve short documents written for this project's demo: a few topics, so each query has a clear winner."""

from __future__ import annotations

from typing import Any

DEMO_CORPUS: list[dict[str, Any]] = [
    {
        "doc_id": "cats",
        "topic": "pets",
        "text": "A cat is an independent and curious pet that spends much of the day asleep.",
    },
    {
        "doc_id": "dogs",
        "topic": "pets",
        "text": "Dogs are loyal companions; a daily walk keeps a dog healthy and calm.",
    },
    {
        "doc_id": "aquarium",
        "topic": "pets",
        "text": "Aquarium fish need filtered water at a steady temperature and a regular feeding routine.",
    },
    {
        "doc_id": "engine-oil",
        "topic": "cars",
        "text": "Change the engine oil of a car every ten thousand kilometres, or the motor wears out.",
    },
    {
        "doc_id": "tyres",
        "topic": "cars",
        "text": "Check tyre pressure monthly: under-inflated tyres waste fuel and wear unevenly.",
    },
    {
        "doc_id": "electric-cars",
        "topic": "cars",
        "text": "Electric cars charge from a wall box at home and have no oil to change.",
    },
    {
        "doc_id": "sourdough",
        "topic": "cooking",
        "text": "Sourdough bread rises slowly with a wild yeast starter fed with flour and water.",
    },
    {
        "doc_id": "pasta",
        "topic": "cooking",
        "text": "Cook pasta in plenty of salted boiling water and keep a cup of the water for the sauce.",
    },
    {
        "doc_id": "photosynthesis",
        "topic": "science",
        "text": "Plants turn sunlight, water and carbon dioxide into sugar by photosynthesis, releasing oxygen.",
    },
    {
        "doc_id": "tides",
        "topic": "science",
        "text": "Ocean tides follow the pull of the moon, with two high tides on most coasts each day.",
    },
    {
        "doc_id": "volcanoes",
        "topic": "science",
        "text": "Volcanoes erupt when molten rock rises through cracks in the earth's crust.",
    },
    {
        "doc_id": "retrieval",
        "topic": "computing",
        "text": "A search engine ranks documents for a query; BM25 scores word overlap weighted by rarity.",
    },
]

DEMO_QUERIES: list[str] = [
    "how often should I change the engine oil",
    "my cat sleeps all day",
    "why does the sea have tides",
    "baking bread with a starter",
]
