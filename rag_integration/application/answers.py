"""An answer as ``ask`` gives it: its text with ``[n]`` markers, each cited source (file, chunk, page or lines, and
the sentence quoted from it, or the model's claim it was checked against), or why there is no answer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.text.grounding import MARKER
from rag_integration.core.text.lexical import missing_query_words

MAX_QUESTIONS_BYTES = 16 * 1024 * 1024
QUESTION_KEYS = ("question", "query", "text")


@dataclass(frozen=True)
class Source:
    """One cited passage: its number in the answer, where it comes from, and what the answer says from it: the
    sentences it ``quotes`` verbatim (extractive, template), or the model's ``claims`` (llm), its own words checked
    against the passage, never shown as a quote."""

    number: int
    doc_id: str
    file: str | None
    chunk: int | None
    page: int | None
    lines: tuple[int, int] | None
    title: str | None
    quotes: tuple[str, ...]
    claims: tuple[str, ...] = ()

    def where(self) -> str:
        parts = [self.file or self.doc_id]
        if self.title:
            parts.append(f"“{self.title}”")
        if self.page is not None:
            parts.append(f"page {self.page}")
        if self.chunk is not None:
            parts.append(f"chunk {self.chunk}")
        if self.lines is not None:
            first, last = self.lines
            parts.append(f"line {first}" if first == last else f"lines {first}-{last}")
        return ", ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "n": self.number,
            "doc_id": self.doc_id,
            "file": self.file,
            "chunk": self.chunk,
            "page": self.page,
            "lines": list(self.lines) if self.lines else None,
            "title": self.title,
            "quotes": list(self.quotes),
            "claims": list(self.claims),
        }


@dataclass(frozen=True)
class Answer:
    """One question's answer and its sources; ``error`` (its ``type`` and ``message``) when it failed
    (``--on-error row``), ``reason`` when it is empty; ``unsupported`` the sentences a model wrote that its
    passages did not support and that were dropped (None for a backend that only quotes)."""

    question: str
    text: str
    sources: tuple[Source, ...] = ()
    reason: str | None = None
    error: Mapping[str, str] | None = None
    passages: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    unsupported: tuple[str, ...] | None = None
    missing_words: tuple[str, ...] = ()
    """The question's words that name something none of the cited passages holds (``missing_query_words``)."""

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"question": self.question, "answer": self.text}
        row["citations"] = [source.doc_id for source in self.sources]
        row["sources"] = [source.as_json() for source in self.sources]
        if self.text:
            row["missing_words"] = list(self.missing_words)
        if self.unsupported is not None:
            row["unsupported"] = list(self.unsupported)
        if self.reason is not None:
            row["reason"] = self.reason
        if self.error is not None:
            row["error"] = dict(self.error)
        return row


def answer_of(
    question: str,
    row: Mapping[str, Any],
    passages: Sequence[Mapping[str, Any]] | None,
    no_documents: str | None = None,
) -> Answer:
    """The answer row of ``generated_answer`` with its citations resolved against the passages it was given;
    ``no_documents`` is the reason an empty answer gives when there was nothing to search.

    A row that carries ``unsupported`` comes from a backend whose model writes the answer in its own words (``llm``):
    its sentences are the model's claims, not quotes, and an empty answer is the model's finding, not a missing
    word."""
    if row.get("error"):
        return Answer(question, "", error=error_of(row["error"]), passages=len(passages or []))
    text = str(row.get("answer") or "")
    citations = [str(doc_id) for doc_id in row.get("citations") or []]
    by_id = {str(passage["doc_id"]): passage for passage in passages or []}
    written = row.get("unsupported")
    unsupported = None if written is None else tuple(str(sentence) for sentence in written)
    said = quoted_sentences(text, len(citations))
    sources = tuple(
        source_of(number, doc_id, by_id.get(doc_id, {}), said.get(number, ()), claims=unsupported is not None)
        for number, doc_id in enumerate(citations, start=1)
    )
    reason = None
    if not text:
        if not passages:
            reason = no_documents or "no passage matched: none of the question's words is in the indexed text"
        elif unsupported is not None:
            reason = f"the model found no answer to the question in the {len(passages)} passages found"
        else:
            reason = (
                f"none of the {len(passages)} passages found holds a sentence sharing a content word with the question"
            )
    cited = [str(by_id[doc_id].get("text") or "") for doc_id in citations if doc_id in by_id]
    missing = tuple(missing_query_words(question, cited)) if text and cited else ()
    return Answer(
        question, text, sources, reason, passages=len(passages or []), unsupported=unsupported, missing_words=missing
    )


def error_of(error: object) -> dict[str, str]:
    """A failed row's ``error`` as its ``type`` and ``message``: every family writes it as one string,
    ``"GroundingError: ..."`` (``describe_error``); a mapping with those keys is taken as it is."""
    if isinstance(error, Mapping):
        return {"type": str(error.get("type") or "Error"), "message": str(error.get("message") or "")}
    kind, separator, message = str(error).partition(": ")
    if not separator or not kind.isidentifier():
        return {"type": "Error", "message": str(error)}
    return {"type": kind, "message": message}


def quoted_sentences(answer: str, citations: int) -> dict[int, tuple[str, ...]]:
    """Marker number -> the answer's text before each of its markers (markers in a row cite the same text)."""
    quotes: dict[int, list[str]] = {}
    position = 0
    pending: str | None = None
    for match in MARKER.finditer(answer):
        before = answer[position : match.start()].strip()
        if before:
            pending = before
        number = int(match.group(1))
        if pending and 1 <= number <= citations and pending not in quotes.setdefault(number, []):
            quotes[number].append(pending)
        position = match.end()
    return {number: tuple(texts) for number, texts in quotes.items()}


def source_of(
    number: int, doc_id: str, passage: Mapping[str, Any], said: tuple[str, ...], claims: bool = False
) -> Source:
    """A cited passage with what the answer ``said`` from it: quotes, or with ``claims`` the model's sentences."""
    metadata = passage.get("metadata")
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    text = str(passage.get("text") or "")
    return Source(
        number=number,
        doc_id=doc_id,
        file=_text(meta.get("source")),
        chunk=_int(meta.get("chunk_index")),
        page=_int(meta.get("page")),
        lines=_quote_lines(text, meta, said),
        title=_text(meta.get("title")),
        quotes=() if claims else said,
        claims=said if claims else (),
    )


def _quote_lines(text: str, metadata: Mapping[str, Any], quotes: tuple[str, ...]) -> tuple[int, int] | None:
    """The file lines the quotes span: found in the passage's text (whitespace may differ), counted from the
    passage's own ``line_start``; the passage's lines when a quote is not found; None without line numbers."""
    first, last = _int(metadata.get("line_start")), _int(metadata.get("line_end"))
    if first is None:
        return None
    spans = [_find_loosely(text, quote) for quote in quotes]
    found = [span for span in spans if span is not None]
    if not found:
        return (first, last if last is not None else first)
    start = min(span[0] for span in found)
    end = max(span[1] for span in found)
    return (first + text.count("\n", 0, start), first + text.count("\n", 0, end))


def _find_loosely(text: str, quote: str) -> tuple[int, int] | None:
    words = quote.split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(word) for word in words), text)
    return None if match is None else (match.start(), match.end())


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def read_questions(path: Path, data: bytes, option: str = "questions") -> list[str]:
    """Questions from a file: one per line, or JSON Lines whose objects hold a ``question`` (or ``query``, or
    ``text``); blank lines are skipped. A wrong file, or its first wrong line, is an ``InvalidOptionError`` naming
    ``option``."""
    lines = read_question_lines(path, data, option)
    for line in lines:
        if isinstance(line, InvalidOptionError):
            raise line
    return [line for line in lines if isinstance(line, str)]


def read_question_lines(path: Path, data: bytes, option: str = "questions") -> list[str | InvalidOptionError]:
    """``read_questions``'s lines, each a question or the error that line is (a malformed JSON line, one without a
    question): with ``--on-error row`` a wrong line is reported in its place and the others are answered. A file
    that is not UTF-8 or holds no line is an error as a whole."""
    try:
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidOptionError(option, str(path), f"UTF-8 text (byte {error.start})") from error
    questions: list[str | InvalidOptionError] = []
    for number, line in enumerate(content.splitlines(), start=1):
        line = line.strip()
        if line:
            questions.append(_question_of(line, f"{path}:{number}", option))
    if not questions:
        raise InvalidOptionError(option, str(path), "at least one question")
    return questions


def _question_of(line: str, where: str, option: str) -> str | InvalidOptionError:
    if not line.startswith("{"):
        return line
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as error:
        detail = str(error) if isinstance(error, ValueError) else "nested too deeply"
        return InvalidOptionError(
            option, where, f"a JSON object per line ({detail}); a plain question starts otherwise"
        )
    question = next((record[key] for key in QUESTION_KEYS if isinstance(record, dict) and key in record), None)
    if not isinstance(question, str) or not question.strip():
        return InvalidOptionError(
            option, where, "a JSON object with a non-empty 'question' (or 'query', 'text') string"
        )
    return question.strip()
