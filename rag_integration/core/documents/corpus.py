"""Documents as the SPEC defines them: ``text`` required, ``doc_id`` str/int (else its position), the rest metadata."""

from __future__ import annotations

import abc
import hashlib
import json
import struct
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, overload

from rag_integration.core.deadline import check_deadline
from rag_integration.core.documents.visibility import READERS, Labels, label_of
from rag_integration.core.errors import DuplicateDocIdError, InvalidOptionError
from rag_integration.core.unicode_text import require_valid_text, surrogate_position


class Document(NamedTuple):
    """A validated document; a named tuple because corpora of many thousands are built on every request."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = MappingProxyType({})


def read_documents(raw: object, option: str) -> list[Document]:
    """Validate and normalise a list of document dicts; duplicate effective doc_ids are an error, and so is a text or
    doc_id that is not valid Unicode (``core.unicode_text.InvalidTextError``)."""
    if isinstance(raw, Corpus):
        return list(raw)
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Sequence):
        raise InvalidOptionError(option, raw, "a list of document dicts")
    documents: list[Document] = []
    append = documents.append
    for position, item in enumerate(raw):
        if not position % READ_CHECK_EVERY:  # reading a huge corpus counts against deadline_ms too
            check_deadline(f"while reading '{option}' (at document {position} of {len(raw)})")
        # The common shape, a plain {"doc_id": str, "text": str}, without the general checks' per-item cost.
        if type(item) is dict and len(item) == 2:
            doc_id, text = item.get("doc_id"), item.get("text")
            if (
                type(doc_id) is str
                and type(text) is str
                and surrogate_position(text) is None
                and surrogate_position(doc_id) is None
            ):
                append(Document(doc_id, text))
                continue
        append(read_document(item, option, position))
    doc_ids = [document.doc_id for document in documents]
    if len(set(doc_ids)) != len(doc_ids):
        _raise_first_duplicate(doc_ids, option)
    return documents


def _raise_first_duplicate(doc_ids: Sequence[str], option: str) -> None:
    first_position: dict[str, int] = {}
    for position, doc_id in enumerate(doc_ids):
        earlier = first_position.setdefault(doc_id, position)
        if earlier != position:
            raise DuplicateDocIdError(option, doc_id, earlier, position)


READ_CHECK_EVERY = 4_096
"""Documents read between two looks at the request's ``deadline_ms``."""
PASSAGE_ONLY_KEYS = ("score", "rank", "metadata", "explanation")


def read_passages(raw: object, option: str) -> list[Document]:
    """Passages (from retrieve or rerank) or plain documents, in the given order.

    An incoming ``score``, ``rank`` and ``explanation`` belong to the previous step and are dropped; a passage's
    ``metadata`` dict is its metadata, merged with any other extra key (a plain document's metadata); a key given
    both ways with different values, or a ``metadata`` that is not a dict, is an error rather than a silent choice.
    """
    documents = read_documents(raw, option)
    return [
        Document(document.doc_id, document.text, _own_metadata(document.metadata, f"{option}[{position}]"))
        for position, document in enumerate(documents)
    ]


def _own_metadata(extra: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    rest = {key: value for key, value in extra.items() if key not in PASSAGE_ONLY_KEYS}
    if "metadata" not in extra:
        return MappingProxyType(rest)
    nested = extra["metadata"]
    if isinstance(nested, str):  # the JSON text the columnar frameworks carry metadata as (core.contract.schema)
        nested = _json_object(nested)
    if not isinstance(nested, Mapping):
        raise InvalidOptionError(f"{where}.metadata", nested, "a dict of metadata, or its JSON text")
    for key, value in nested.items():
        if key in rest and rest[key] != value:
            raise InvalidOptionError(f"{where}.metadata.{key}", value, f"the same value as the passage's '{key}'")
    return MappingProxyType({**rest, **nested})


def _json_object(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_document(item: object, option: str, position: int) -> Document:
    if isinstance(item, Document):
        return item
    if not isinstance(item, Mapping):
        raise InvalidOptionError(f"{option}[{position}]", item, "a dict with a 'text' string")
    text = item.get("text")
    if not isinstance(text, str):
        raise InvalidOptionError(f"{option}[{position}].text", text, "a string")
    require_valid_text(text, f"{option}[{position}].text")
    raw_id = item.get("doc_id", position)
    if type(raw_id) is str:
        doc_id = require_valid_text(raw_id, f"{option}[{position}].doc_id")
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        doc_id = int_text(raw_id, f"{option}[{position}].doc_id", "a str or an int")
    else:
        raise InvalidOptionError(f"{option}[{position}].doc_id", raw_id, "a str or int")
    if len(item) == 2 and "doc_id" in item:
        return Document(doc_id, text)
    metadata = {key: value for key, value in item.items() if key != "doc_id" and key != "text"}
    return Document(doc_id, text, MappingProxyType(metadata))


def int_text(value: int, option: str, expected: str) -> str:
    """``str(value)``, or ``InvalidOptionError`` for an int past Python's int/str conversion limit (4,300 digits),
    where ``str`` raises a bare ``ValueError``."""
    try:
        return str(value)
    except ValueError:
        raise InvalidOptionError(
            option, value, f"{expected} of at most {sys.get_int_max_str_digits()} digits"
        ) from None


def _own_readers(document: Document) -> Document:
    """A document whose ``readers`` list is its own copy: a ``Corpus`` checks its labels once, so a caller changing
    the list it gave afterwards must not change them."""
    readers = document.metadata.get(READERS)
    if not isinstance(readers, list):
        return document
    return Document(document.doc_id, document.text, MappingProxyType({**document.metadata, READERS: list(readers)}))


def labels_of(documents: Sequence[Document], option: str) -> Labels:
    """The documents' ``readers``: a ``Corpus``'s own, checked when first asked for; else checked now."""
    if isinstance(documents, Corpus):
        return documents.labels
    return Labels.of([label_of(document.metadata) for document in documents], option)


def corpus_fingerprint(documents: Iterable[Document]) -> str:
    """A content hash of ids and texts in order: equal fingerprints mean an index can be reused. It hashes each
    text's digest (``text_digests``) rather than the text, so a ``Corpus`` reads its texts once for both."""
    if isinstance(documents, Corpus):
        return documents.fingerprint
    listed = documents if isinstance(documents, Sequence) else list(documents)
    return _fingerprint(listed, text_digests(listed))


def _fingerprint(documents: Sequence[Document], digests: Sequence[bytes]) -> str:
    """SHA-256 of the document count, each id's UTF-8 length (all 8-byte little-endian), the ids, then the text
    digests: every part's boundary is fixed by what precedes it, so no two corpora give the same bytes. A corpus
    whose documents name their ``readers`` adds them, so a changed label is a changed corpus to every cache and store."""
    ids = [document.doc_id.encode("utf-8", "surrogatepass") for document in documents]
    digest = hashlib.sha256(_LENGTH.pack(len(ids)))
    digest.update(struct.pack(f"<{len(ids)}Q", *map(len, ids)))
    digest.update(b"".join(ids))
    digest.update(b"".join(digests))
    if any(READERS in document.metadata for document in documents):  # who may read is part of what was indexed
        labels = [document.metadata.get(READERS) for document in documents]
        digest.update(json.dumps(labels, default=_label_text, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _label_text(value: object) -> object:
    """A label JSON cannot write as it is (a tuple is a list already; a NumPy array from a frame): its list, else
    its repr, which an invalid label is refused for later anyway."""
    listed = getattr(value, "tolist", None)
    return listed() if callable(listed) else repr(value)


def text_digests(documents: Sequence[Document]) -> list[bytes]:
    """Each document's text hash (``TEXT_DIGEST_BYTES`` of BLAKE2b): what tells an unchanged text from a changed
    one when a corpus is updated. A ``Corpus`` computes them once."""
    if isinstance(documents, Corpus):
        return documents.text_digests
    return [text_digest(document.text) for document in documents]


def text_digest(text: str) -> bytes:
    """One text's hash (``text_digests``)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=TEXT_DIGEST_BYTES).digest()


def texts_of(documents: Sequence[Document]) -> Sequence[str]:
    """The documents' texts: taken from their column when they are kept as columns (``DocumentColumns``), whose
    documents are made one at a time, else listed."""
    columns = documents.columns if isinstance(documents, Corpus) else documents
    if isinstance(columns, DocumentColumns):
        return columns.texts
    return [document.text for document in documents]


class DocumentColumns(Sequence[Document]):
    """Documents kept as columns, as a store read them back, each made a ``Document`` only when asked for: a query
    over a shard of millions needs a few of them, and its analysis only their digests."""

    @property
    @abc.abstractmethod
    def texts(self) -> Sequence[str]:
        """The texts, by position, without making the documents."""

    @property
    @abc.abstractmethod
    def nbytes(self) -> int:
        """What the columns hold in memory."""


TEXT_DIGEST_BYTES = 16
MAX_KEPT_PARTS = 16
"""Parts of a ``Corpus`` (what one set of principals may read) it keeps, so a repeated request does not cut again."""
_LENGTH = struct.Struct("<Q")


@dataclass(frozen=True, slots=True)
class MetadataFilter:
    """``{metadata_key: value or list of allowed values}``; a document must satisfy every key."""

    allowed: Mapping[str, tuple[Any, ...]]

    @classmethod
    def from_option(cls, raw: object, option: str = "filters") -> MetadataFilter | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise InvalidOptionError(option, raw, "a dict {metadata_key: value or list of allowed values}")
        allowed: dict[str, tuple[Any, ...]] = {}
        for key, value in raw.items():
            if not isinstance(key, str):
                raise InvalidOptionError(option, raw, "string metadata keys")
            values = tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)
            if not values:
                raise InvalidOptionError(f"{option}.{key}", value, "a value or a non-empty list of allowed values")
            allowed[key] = values
        return cls(allowed)

    def accepts(self, document: Document) -> bool:
        for key, values in self.allowed.items():
            if key not in document.metadata:
                return False
            if not any(_same_value(document.metadata[key], value) for value in values):
                return False
        return True

    def positions(self, documents: Sequence[Document]) -> list[int]:
        return [position for position, document in enumerate(documents) if self.accepts(document)]

    def apply(self, documents: Sequence[Document]) -> list[Document]:
        """The documents that pass, in order: what a family ranks or answers from when ``filters`` is given."""
        return [document for document in documents if self.accepts(document)]


def _same_value(actual: object, wanted: object) -> bool:
    """Equality that does not let True match 1 or 1.0 match True."""
    if isinstance(actual, bool) != isinstance(wanted, bool):
        return False
    try:
        return bool(actual == wanted)
    except Exception:
        return False


class Corpus(Sequence[Document]):
    """A validated, immutable corpus (read-only metadata too) that is cheap to pass through mloda's options.

    mloda deep-copies and hashes a request's options on every run, which for a plain list of 10k document dicts
    costs more than answering the query. A ``Corpus`` is validated once, deep-copies to itself and shows mloda a
    one-line repr carrying its content fingerprint; connectors accept it wherever they accept a list.
    """

    __slots__ = ("_documents", "_fingerprint", "_labels", "_option", "_parts", "_text_digests")

    def __init__(self, documents: object, option: str = "corpus") -> None:
        raw = documents  # anything but a sequence or another iterable is refused by read_documents, typed
        if isinstance(documents, Iterable) and not isinstance(documents, (Sequence, Mapping)):
            raw = list(documents)
        self._documents: Sequence[Document] = tuple(map(_own_readers, read_documents(raw, option)))
        self._fingerprint: str | None = None
        self._text_digests: list[bytes] | None = None
        self._option = option
        self._labels: Labels | None = None
        self._parts: dict[bytes, Corpus] = {}

    @classmethod
    def part_of(cls, documents: Sequence[Document], positions: Sequence[int]) -> Corpus:
        """The documents at ``positions``, in order, as a corpus without validating them again: ``documents`` was
        validated, and a ``Corpus``'s text digests are reused rather than computed again."""
        key = b""
        if isinstance(documents, Corpus):  # the same part asked for again (one set of principals' next request)
            key = struct.pack(f"<{len(positions)}q", *positions)
            kept = documents._parts.get(key)
            if kept is not None:
                return kept
        part = cls._holding(tuple(documents[position] for position in positions))
        part._option = documents._option if isinstance(documents, Corpus) else "corpus"
        if isinstance(documents, Corpus):
            if documents._text_digests is not None:
                digests = documents._text_digests
                part._text_digests = [digests[position] for position in positions]
            if len(documents._parts) >= MAX_KEPT_PARTS:
                documents._parts.clear()
            documents._parts[key] = part
        return part

    @classmethod
    def read_back(cls, documents: Sequence[Document], digests: list[bytes]) -> Corpus:
        """Documents a store checked when it wrote them, with the text digests it kept: neither validated nor hashed
        again."""
        if isinstance(documents, DocumentColumns):
            corpus = cls._holding(documents)
        else:
            corpus = cls.part_of(documents, range(len(documents)))
        corpus._text_digests = digests
        return corpus

    @classmethod
    def _holding(cls, documents: Sequence[Document]) -> Corpus:
        """A corpus of ``documents`` as they are: already validated, held without a copy."""
        corpus = cls.__new__(cls)
        corpus._documents = documents
        corpus._fingerprint = None
        corpus._text_digests = None
        corpus._labels = None
        corpus._parts = {}
        corpus._option = "corpus"
        return corpus

    @property
    def columns(self) -> DocumentColumns | None:
        """The columns the documents are made from, for a corpus read back as columns (``read_back``), else None."""
        return self._documents if isinstance(self._documents, DocumentColumns) else None

    @property
    def labels(self) -> Labels:
        """The documents' ``readers``, checked once (``core.documents.visibility``)."""
        if self._labels is None:
            self._labels = Labels.of([label_of(document.metadata) for document in self._documents], self._option)
        return self._labels

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = _fingerprint(self._documents, self.text_digests)
        return self._fingerprint

    @property
    def text_digests(self) -> list[bytes]:
        if self._text_digests is None:
            self._text_digests = text_digests(self._documents)
        return self._text_digests

    def __len__(self) -> int:
        return len(self._documents)

    @overload
    def __getitem__(self, index: int) -> Document: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Document]: ...

    def __getitem__(self, index: int | slice) -> Document | Sequence[Document]:
        return self._documents[index]

    def __iter__(self) -> Iterator[Document]:
        return iter(self._documents)

    def __repr__(self) -> str:
        return f"Corpus({len(self._documents)} documents, sha256 {self.fingerprint})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Corpus)
            and other.fingerprint == self.fingerprint
            and tuple(other._documents) == tuple(self._documents)
        )

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __copy__(self) -> Corpus:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Corpus:
        return self

    def __reduce__(self) -> tuple[type[Corpus], tuple[list[dict[str, object]]]]:
        plain = [{"doc_id": doc.doc_id, "text": doc.text, **doc.metadata} for doc in self._documents]
        return (Corpus, (plain,))
