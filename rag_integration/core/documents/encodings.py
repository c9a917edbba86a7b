"""How the bytes of a text file or a web page become text: a byte-order mark decides first, then an HTML page's
own ``<meta charset>``, then the ``encoding`` option (UTF-8 by default), as browsers and editors read them."""

from __future__ import annotations

import codecs
import re

BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE, whose mark it starts with
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
DECLARATION_BYTES = 1024
"""Where an HTML page's charset declaration must be: its first kilobyte, as the HTML standard's prescan reads."""
_META_CHARSET = re.compile(rb"<meta\b[^>]{0,512}?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]{1,40})", re.IGNORECASE)
_WINDOWS_1252_LABELS = frozenset({"iso8859-1", "ascii", "cp1252"})
"""Codecs whose pages the HTML standard decodes as windows-1252 (a page labelled ISO-8859-1 means it)."""


def byte_order_mark(data: bytes) -> str | None:
    """The codec a leading byte-order mark names (the mark itself is not text), or None."""
    for mark, codec in BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return codec
    return None


def declared_charset(data: bytes) -> str | None:
    """The Python codec an HTML page declares in its first kilobyte (``<meta charset>`` or the ``Content-Type``
    meta), or None when it declares none Python knows; a UTF-16 label is read as UTF-8, as a page whose
    declaration can be read in ASCII cannot be UTF-16."""
    found = _META_CHARSET.search(data[:DECLARATION_BYTES])
    if found is None:
        return None
    try:
        name = codecs.lookup(found.group(1).decode("ascii")).name
    except LookupError:
        return None
    if name.startswith("utf-16"):
        return "utf-8"
    return "cp1252" if name in _WINDOWS_1252_LABELS else name


def decode_text(data: bytes, encoding: str, html: bool = False) -> str:
    """``data`` as text: by its byte-order mark when it has one, else (a page, ``html``, read with the default
    UTF-8) by its declared charset, else in ``encoding``. Raises ``UnicodeDecodeError`` for bytes not in the codec
    chosen and ``LookupError`` for an ``encoding`` Python does not know."""
    default = codecs.lookup(encoding).name == "utf-8"
    codec = byte_order_mark(data)
    if codec is None and html and default:
        codec = declared_charset(data)
    if codec is None:
        codec = "utf-8-sig" if default else encoding
    if codec == "cp1252":
        try:
            return data.decode(codec)
        except UnicodeDecodeError:  # the five bytes windows-1252 leaves undefined are C1 controls to the HTML standard
            return data.decode("latin-1")
    return data.decode(codec)
