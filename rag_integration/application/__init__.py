"""The application behind the command line, callable from Python without it: each command's work (``ask``,
``search``, ``index`` and ``forget``, ``eval``, ``certify``, the backend list and the demos) from plain arguments. A wrong argument
is an ``ArgumentError`` naming it; the command line shows it as a usage error naming its flag.

    from rag_integration.application import ask
    answer = ask("How often should the engine oil be changed?", files=["my_docs/"])
    print(answer.text, [source.where() for source in answer.sources])
"""

from __future__ import annotations

from rag_integration.application.answering import AskResult, ask, ask_all, questions_from
from rag_integration.application.answers import Answer, Source
from rag_integration.application.certifying import certify
from rag_integration.application.demos import run_demo, run_swap_demo
from rag_integration.application.evaluating import EvaluationReport, evaluate_backends
from rag_integration.application.forgetting import ForgetReport, forget
from rag_integration.application.indexing import IndexReport, index, index_models
from rag_integration.application.notes import RunNotes
from rag_integration.application.requests import DEFAULT_EMBEDDING_MODEL
from rag_integration.application.searching import SearchResult, search
from rag_integration.core.errors import ArgumentError, ConnectorError, InvalidOptionError
from rag_integration.registry import BROKEN_PLUGINS, available_backends

__all__ = [
    "BROKEN_PLUGINS",
    "DEFAULT_EMBEDDING_MODEL",
    "Answer",
    "ArgumentError",
    "AskResult",
    "ConnectorError",
    "EvaluationReport",
    "ForgetReport",
    "IndexReport",
    "InvalidOptionError",
    "RunNotes",
    "SearchResult",
    "Source",
    "ask",
    "ask_all",
    "available_backends",
    "certify",
    "evaluate_backends",
    "forget",
    "index",
    "index_models",
    "questions_from",
    "run_demo",
    "run_swap_demo",
    "search",
]
