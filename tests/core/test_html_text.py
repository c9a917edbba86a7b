"""An HTML page's text in the layout the sentence splitter reads: headings as ``#`` lines, list items as items,
each table row one line, the site's navigation, footer and side bars left out."""

from __future__ import annotations

import pytest

from rag_integration.core.documents.html_text import HtmlText, html_text
from rag_integration.core.text.sentences import sentences, split_sentences

PAGE = """<!doctype html>
<html><head><title>Acme &amp; help</title><style>h2 {color: red}</style></head>
<body>
<header><a href="/">Acme</a><nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/faq">FAQ</a></nav></header>
<div role="navigation"><a href="/a">A</a> | <a href="/b">B</a></div>
<main>
<h1>Returns</h1>
<h2>Return
   window</h2>
<p>You can return any item within 30 days of delivery.</p>
<h2>How to return</h2>
<p>To return an item:</p>
<ol><li>Print the return label.<li>Pack the item in its <b>original</b> box.</ol>
<ul><li><p>Keep the receipt.</p></li><li>Ship it<ul><li>by post</li></ul></li></ul>
<table>
<thead><tr><th>Item</th><th>Refund</th></tr></thead>
<tbody><tr><td>Unopened</td><td>full<br>refund</td></tr><tr><td>Opened<td>80 percent refund</tbody>
</table>
<p hidden>A hidden note.</p>
</main>
<aside>Related: our blog</aside>
<footer>&copy; 2024 Acme GmbH. All rights reserved.</footer>
<script>var x = "<p>not text</p>";</script>
</body></html>"""


def test_a_page_reads_as_headings_items_and_table_rows() -> None:
    page = html_text(PAGE)
    assert page.title == "Acme & help"
    assert page.text == (
        "Acme\n\n"
        "# Returns\n\n"
        "## Return window\n\n"
        "You can return any item within 30 days of delivery.\n\n"
        "## How to return\n\n"
        "To return an item:\n\n"
        "1. Print the return label.\n"
        "2. Pack the item in its original box.\n\n"
        "- Keep the receipt.\n"
        "- Ship it\n"
        "- by post\n\n"
        "| Item | Refund |\n"
        "| --- | --- |\n"
        "| Unopened | full refund |\n"
        "| Opened | 80 percent refund |"
    )


def test_navigation_footer_aside_and_hidden_text_are_left_out() -> None:
    text = html_text(PAGE).text
    for chrome in ("Home", "Shop", "FAQ", "Related", "2024", "rights reserved", "hidden", "not text", "color"):
        assert chrome not in text


def test_the_splitter_reads_the_page_s_layout() -> None:
    """Headings are never sentences to quote, items lose their numbers, each row is one sentence under the
    table's header row, and the separator row is no sentence."""
    text = html_text(PAGE).text
    found = {text[s.start : s.end]: s for s in sentences(text)}
    assert found["Returns"].is_heading and found["Return window"].is_heading and found["Item | Refund"].is_heading
    assert "Print the return label." in found and "1. Print the return label." not in found
    row = found["Opened | 80 percent refund"]
    assert not row.is_heading and row.heading is not None and text[row.heading[0] : row.heading[1]] == "Item | Refund"
    assert not any("---" in sentence for sentence in split_sentences(text))


def test_a_table_without_header_cells_has_no_header_row() -> None:
    text = html_text("<table><tr><td>Oil</td><td>4.5 l</td></tr><tr><td>Coolant</td><td>6 l</td></tr></table>").text
    assert text == "| Oil | 4.5 l |\n| Coolant | 6 l |"
    assert split_sentences(text) == ["Oil | 4.5 l", "Coolant | 6 l"]
    assert not any(sentence.is_heading for sentence in sentences(text))


def test_a_cell_holds_its_blocks_and_a_nested_table_inline() -> None:
    page = "<table><tr><th>A</th><th>B</th></tr><tr><td><p>one</p><p>two | three</p></td><td><table><tr><td>x</td><td>y</td></tr></table></td></tr></table>"
    assert html_text(page).text == "| A | B |\n| --- | --- |\n| one two / three | x y |"


def test_scripts_and_languages() -> None:
    page = (
        "<h2>检查机油</h2><p>检查机油液位\uff1a</p><ol><li>停车。</li><li>拔出油尺。</li></ol>"
        "<h3>فحص الزيت</h3><ul><li>أوقف السيارة.</li></ul><h4>तेल</h4><p>गाड़ी रोकें।</p>"
    )
    text = html_text(page).text
    assert text.split("\n\n") == [
        "## 检查机油",
        "检查机油液位\uff1a",
        "1. 停车。\n2. 拔出油尺。",
        "### فحص الزيت",
        "- أوقف السيارة.",
        "#### तेल",
        "गाड़ी रोकें।",
    ]
    assert [s.is_heading for s in sentences(text)] == [True, False, False, False, True, False, True, False]


def test_text_in_pre_keeps_its_lines_and_an_unclosed_skipped_element_ends_with_the_page() -> None:
    assert html_text("<pre>line one\nline two</pre><p>after</p>").text == "```\nline one\nline two\n```\n\nafter"
    assert html_text("<body><p>kept</p><aside>side</body><p>late</p>").text == "kept\n\nlate"


@pytest.mark.parametrize(
    "page",
    [
        "<HTML><HEAD><TITLE>Owls</TITLE><BODY><P>Owls hunt mice at night.</P>",
        "<html><head><meta charset=utf-8><title>Owls</title><body><p>Owls hunt mice at night.</p></body></html>",
        "<html><head><title>Owls</title><link rel=x><p>Owls hunt mice at night.",
    ],
)
def test_a_head_left_open_ends_where_the_body_begins(page: str) -> None:
    assert html_text(page) == HtmlText("Owls", "Owls hunt mice at night.")


def test_a_pre_block_is_fenced_so_its_hash_lines_are_code_not_headings() -> None:
    page = "<h1>Setup</h1><pre># install the tools\npip install x</pre><p>Then restart.</p><pre> </pre>"
    text = html_text(page).text
    assert text == "# Setup\n\n```\n# install the tools\npip install x\n```\n\nThen restart."
    assert [text[s.start : s.end] for s in sentences(text) if s.is_heading] == ["Setup"]
