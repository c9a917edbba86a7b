"""Text files and web pages in other encodings than UTF-8: a byte-order mark decides, then a page's declared
charset, then the ``encoding`` option (``core.documents.encodings``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_integration.core.documents.encodings import declared_charset, decode_text

LATIN_PAGE = (
    b'<html><head><meta charset="ISO-8859-1"><title>Caf\xe9</title></head>'
    b"<body><p>The caf\xe9 opens at 8. \x93Fresh\x94 bread daily.</p></body></html>"
)


@pytest.mark.parametrize(
    ("data", "html", "text"),
    [
        ("Grüße aus Köln".encode("utf-16"), False, "Grüße aus Köln"),
        ("Grüße".encode("utf-16-be").join([b"\xfe\xff", b""]), False, "Grüße"),
        ("日本語のテキスト".encode("utf-32"), False, "日本語のテキスト"),
        (b"\xef\xbb\xbfplain", False, "plain"),
        (LATIN_PAGE, True, LATIN_PAGE.decode("cp1252")),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><p>\xcf\xf0\xe8\xe2\xe5\xf2',
            True,
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><p>Привет',
        ),
        (b'<meta charset="no-such-codec"><p>caf\xc3\xa9', True, '<meta charset="no-such-codec"><p>café'),
        (b'<meta charset="iso-8859-1"><p>\x81\xe9', True, '<meta charset="iso-8859-1"><p>\x81é'),
    ],
)
def test_the_mark_then_the_declaration_then_the_option_decide(data: bytes, html: bool, text: str) -> None:
    assert decode_text(data, "utf-8", html=html) == text


def test_a_declaration_counts_only_in_a_page_read_with_the_default_and_in_its_first_kilobyte() -> None:
    assert declared_charset(b" " * 1100 + b'<meta charset="latin1">') is None
    assert declared_charset(b'<meta charset="utf-16">') == "utf-8"
    with pytest.raises(UnicodeDecodeError):
        decode_text(LATIN_PAGE, "utf-8", html=False)
    assert decode_text(LATIN_PAGE, "cp1252", html=True) == LATIN_PAGE.decode("cp1252")
    with pytest.raises(LookupError):
        decode_text(b"x", "no-such-codec")


def test_a_folder_of_latin_1_pages_and_utf_16_files_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rag_integration.cli import main

    (tmp_path / "cafe.html").write_bytes(LATIN_PAGE)
    (tmp_path / "notes.txt").write_bytes("The bakery closes at six on Sundays.".encode("utf-16"))
    for question, answer in (("When does the café open?", "opens at 8"), ("When does the bakery close?", "six")):
        assert main(["ask", question, "--files", str(tmp_path), "--no-cache", "--no-progress", "--verbose"]) == 0
        out, err = capsys.readouterr()
        assert answer in out and "skipped" not in err
