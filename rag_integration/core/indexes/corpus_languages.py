"""The languages a corpus was analysed in, stored beside a lexical index: the codes as JSON, each document's as one
byte in a ``.npy`` array, both checked when read back (an index folder may have been written by someone else)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rag_integration.core.errors import IndexMismatchError
from rag_integration.core.indexes.store import load_npy, save_npy
from rag_integration.core.text.analysis import UNDETERMINED, supported_languages
from rag_integration.core.text.languages import CorpusLanguages

LANGUAGES_FILE = "languages.json"
DOCUMENT_LANGUAGES_FILE = "document_languages.npy"


def save_corpus_languages(folder: Path, languages: CorpusLanguages) -> None:
    listed = {"languages": list(languages.languages), "main": languages.main}
    (folder / LANGUAGES_FILE).write_text(json.dumps(listed), encoding="utf-8")
    save_npy(folder / DOCUMENT_LANGUAGES_FILE, np.frombuffer(languages.documents, dtype=np.uint8))


def load_corpus_languages(folder: Path, count: int) -> CorpusLanguages:
    """The stored languages of a corpus of ``count`` documents: known codes, the main one among them, and every
    document's among them; anything else is an ``IndexMismatchError``."""
    try:
        stored = json.loads((folder / LANGUAGES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise IndexMismatchError("index_dir", str(folder), "the corpus's languages as JSON") from error
    listed = stored.get("languages") if isinstance(stored, dict) else None
    main = stored.get("main") if isinstance(stored, dict) else None
    known = {*supported_languages(), UNDETERMINED}
    if not isinstance(listed, list) or not all(code in known for code in listed) or not isinstance(main, str):
        raise IndexMismatchError("index_dir", str(folder), "a list of the corpus's languages")
    if main not in [*listed, UNDETERMINED]:
        raise IndexMismatchError("index_dir", str(folder), "the corpus's main language among its languages")
    positions = load_npy(folder / DOCUMENT_LANGUAGES_FILE, (count,), "uint8")
    if count and int(positions.max()) >= len(listed):
        raise IndexMismatchError("index_dir", str(folder), "each document's language among the corpus's")
    return CorpusLanguages(tuple(listed), main, positions.tobytes())
