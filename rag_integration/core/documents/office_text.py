"""The text of PDF and Word files: pypdf (a dependency of the package, pure Python, so a fresh install reads PDFs)
and python-docx (the ``docx`` extra).

Both parse files someone else wrote: a file the library cannot read is the caller's typed error naming the file,
never the library's own exception. A file is already bounded in size when it arrives here (``max_file_bytes``).
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from typing import Any

from rag_integration.core.errors import InvalidOptionError
from rag_integration.core.extras import optional_module

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class PdfPage:
    number: int
    text: str
    title: str | None


@dataclass(frozen=True)
class DocxText:
    text: str
    title: str | None


def pdf_pages(data: bytes, shown: str, option: str = "paths") -> list[PdfPage] | None:
    """Each page's extracted text (numbered from 1) and the document's title; None without pypdf."""
    pypdf = optional_module("pypdf")
    if pypdf is None:
        return None
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd but readable files are noise here
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InvalidOptionError(option, shown, "a PDF that opens without a password")
        title = _clean_title(reader.metadata.title if reader.metadata is not None else None)
        pages = enumerate(reader.pages, start=1)
        return [
            PdfPage(number, separated_titles(rejoined_hyphens(page.extract_text() or "")), title)
            for number, page in pages
        ]
    except InvalidOptionError:
        raise
    except Exception as error:  # pypdf raises many kinds (PdfReadError, KeyError, ValueError...) on a damaged file
        raise InvalidOptionError(option, shown, f"a readable PDF ({type(error).__name__}: {error})") from error


_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=([^\W\d_]))")


def rejoined_hyphens(text: str) -> str:
    """A PDF page's words hyphenated across lines joined again ("sched-" / "ule" -> "schedule"): a letter, a hyphen
    ending the line and a lower-case letter starting the next. "Baden-" / "Württemberg" keeps its hyphen and line
    break (a capital follows), as does "2019-" / "2020"."""
    return _LINE_END_HYPHEN.sub(lambda found: "" if found.group(1).islower() else found.group(), text)


def separated_titles(text: str) -> str:
    """A PDF page's lines with a blank line after each that reads as a title: much shorter than the page's full
    lines, ending without punctuation, the next line starting a new sentence. A PDF keeps no paragraphs, only
    lines, and a heading run into its first sentence would be quoted with it."""
    lines = text.split("\n")
    lengths = sorted(len(line.strip()) for line in lines if line.strip())
    if len(lengths) < 2:
        return text
    full = lengths[(len(lengths) * 9) // 10]
    kept: list[str] = []
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        kept.append(line)
        stripped, next_line = line.strip(), following.lstrip()
        if (
            stripped
            and len(stripped) <= TITLE_SHARE * full
            and stripped[-1] not in TITLE_END_MARKS
            and next_line[:1].isupper()
        ):
            kept.append("")
    return "\n".join(kept)


TITLE_SHARE = 0.6
TITLE_END_MARKS = frozenset(".!?\u2026:;,-\u2013\u2014")


def docx_text(data: bytes, shown: str, option: str = "paths") -> DocxText | None:
    """The paragraphs of a Word document, then its tables' cells row by row, one per line; None without
    python-docx."""
    docx = optional_module("docx")
    if docx is None:
        return None
    try:
        document = docx.Document(io.BytesIO(data))
        lines = [_docx_line(paragraph) for paragraph in document.paragraphs]
        for table in document.tables:
            for row in table.rows:
                lines.append(" | ".join(cell.text for cell in row.cells))
        title = _clean_title(document.core_properties.title)
    except Exception as error:  # a zip that is not a Word document, broken XML...
        raise InvalidOptionError(option, shown, f"a readable .docx ({type(error).__name__}: {error})") from error
    return DocxText("\n".join(line for line in lines if line.strip()), title)


_HEADING_STYLE = re.compile(r"Heading ([1-9])")


def _docx_line(paragraph: Any) -> str:
    """A paragraph's text; a heading's (styles ``Title``, ``Heading 1``-``9``) marked as a Markdown heading, so it
    titles the sentences under it instead of running into the first of them."""
    text = " ".join(paragraph.text.split())
    style = getattr(getattr(paragraph, "style", None), "name", None) or ""
    level = 1 if style == "Title" else int(found.group(1)) if (found := _HEADING_STYLE.fullmatch(style)) else 0
    return f"{'#' * min(level, 6)} {text}" if level and text else paragraph.text


def _clean_title(raw: object) -> str | None:
    return " ".join(raw.split()) or None if isinstance(raw, str) else None
