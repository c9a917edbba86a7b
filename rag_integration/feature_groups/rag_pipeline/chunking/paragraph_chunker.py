"""Chunks of whole paragraphs (text separated by blank lines), a heading kept with what it titles and a lead-in
kept with its list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_integration.core.options import option
from rag_integration.core.text.sentences import Paragraph, paragraph_spans
from rag_integration.feature_groups.rag_pipeline.chunking.base import MAX_CHARS, BaseChunker, group_spans

DEFAULT_MAX_CHARS = MAX_CHARS.default if isinstance(MAX_CHARS.default, int) else 4000
"""The cap ``split`` joins within when called without a request (the stage passes the request's ``max_chars``)."""


@dataclass(frozen=True)
class ParagraphChunkSettings:
    size: int = option("paragraphs_per_chunk", "integer", "paragraphs per chunk", default=1, minimum=1)


class ParagraphChunker(BaseChunker[ParagraphChunkSettings]):
    """``chunker="paragraph"``: ``paragraphs_per_chunk`` (default 1)."""

    BACKEND: ClassVar[str | None] = "paragraph"
    SETTINGS: ClassVar[type[Any] | None] = ParagraphChunkSettings

    @classmethod
    def split(cls, text: str, settings: ParagraphChunkSettings) -> list[str]:
        return cls.split_within(text, settings, DEFAULT_MAX_CHARS)

    @classmethod
    def split_within(cls, text: str, settings: ParagraphChunkSettings, max_chars: int) -> list[str]:
        """Paragraphs as ``core.text.sentences.paragraph_spans`` reads them (markup alone, a rule or an underline
        between blank lines, is no paragraph), joined into units (``units``), ``paragraphs_per_chunk`` units a
        chunk."""
        spans = units(paragraph_spans(text), max_chars)
        return group_spans(spans, settings.size, 0, text) if spans else []


def units(paragraphs: Sequence[Paragraph], max_chars: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each unit a chunk keeps whole, in one pass over the paragraphs.

    A paragraph that is only headings joins the paragraph after it (a heading titles what follows; a heading at
    the end of the text stays alone), and a lead-in (ending in ":") joins the paragraph after it unless that is a
    heading. A list joined this way brings the list items that follow it in paragraphs of their own (a loose
    list). A join that would make the unit longer than ``max_chars`` is not made, except that a heading or a
    lead-in joins a paragraph longer than ``max_chars`` on its own: that one is cut anyway, and the heading rides
    with its first piece."""
    found: list[tuple[int, int]] = []
    position = 0
    while position < len(paragraphs):
        first = last = paragraphs[position]
        in_list = False
        position += 1
        while position < len(paragraphs):
            following = paragraphs[position]
            introduces = last.heading or (last.lead_in and not following.heading)
            if not (introduces or (in_list and following.first == "item")):
                break
            fits = following.end - first.start <= max_chars
            if not fits and not (introduces and following.end - following.start > max_chars):
                break
            in_list = following.first == "item" and (introduces or in_list)
            last = following
            position += 1
        found.append((first.start, last.end))
    return found
