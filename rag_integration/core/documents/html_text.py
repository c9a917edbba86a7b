"""The readable text of an HTML page, by the standard library's ``html.parser``: the title, and the text of the
body with each block element on its own line; scripts, styles and other non-text elements are dropped. One pass,
linear in the page, entities decoded."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object"})
"""Elements whose content is not text a reader sees (``head`` holds the title, read on its own)."""
BLOCKS = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "dl", "dt", "dd", "tr", "table", "section", "article", "header",
        "footer", "nav", "aside", "main", "blockquote", "pre", "hr", "figure", "figcaption", "h1", "h2", "h3",
        "h4", "h5", "h6", "form", "fieldset", "details", "summary", "address",
    }
)  # fmt: skip
"""Elements that end a line of text."""
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"})
_BLANK_LINES = re.compile(r"\n\s*\n\s*")
_SPACES = re.compile(r"[^\S\n]+")


@dataclass(frozen=True)
class HtmlText:
    title: str
    text: str


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.skipping: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        elif tag in SKIPPED and tag not in VOID:
            self.skipping.append(tag)
        elif tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif self.skipping and tag == self.skipping[-1]:
            self.skipping.pop()
        elif tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skipping:
            self.parts.append(data)


def html_text(page: str) -> HtmlText:
    """The title and the visible text of ``page`` (blank lines between blocks, runs of spaces collapsed)."""
    reader = _Reader()
    reader.feed(page)
    reader.close()
    lines = _SPACES.sub(" ", "".join(reader.parts))
    text = _BLANK_LINES.sub("\n\n", "\n".join(line.strip() for line in lines.split("\n"))).strip()
    return HtmlText(" ".join("".join(reader.title).split()), text)
