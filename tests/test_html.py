"""Tests of neardup.html: what is kept and dropped, markup-only variants of one article giving the
same exact key, broken and hostile input never raising, the main-content heuristic, decoding."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.methods.exact.keys import exact_keys
from neardup.text.html import decode_html
from neardup.text.html import html_to_text as html_to_text_auto


def html_to_text(html, main_content=False):
    """The stdlib path, which the golden values below pin (tests/test_html_fast.py: resiliparse)."""
    return html_to_text_auto(html, main_content=main_content, parser="stdlib")


# --------------------------------------------------------------------------------------------
# golden outputs


@pytest.mark.parametrize(
    "html, text",
    [
        ("<p>Hello <b>world</b></p>", "Hello world"),
        ("<p>Hel<b>lo</b> wor<i>ld</i></p>", "Hello world"),
        ("<div>Hello\n\n   world\t</div>", "Hello world"),
        ("<h1>Title</h1><p>one</p><p>two</p>", "Title\none\ntwo"),
        ("<p>a<br>b<br/>c</br>d</p>", "a\nb\nc\nd"),
        ("<ul><li>a<li>b</ul><ol><li>c</li></ol>", "a\nb\nc"),
        ("<table><tr><th>k</th><td>v</td></tr><tr><td>w</td></tr></table>", "k\nv\nw"),
        ("<pre>line 1\n   line  2</pre>after", "line 1\nline 2\nafter"),
        ("x<script>var s = '<p>no</p>';</script>y", "xy"),
        ("x<style>p { color: red }</style><noscript>enable js</noscript>y", "xy"),
        ("<template><p>no</p></template><svg><text>no</text></svg><p>yes</p>", "yes"),
        ("<!DOCTYPE html><html><head><title>Page</title><meta charset=utf-8></head><body>ok</body></html>", "ok"),
        ("a<!-- a comment <p>no</p> -->b<![CDATA[ no ]]>c<?php no ?>d", "abcd"),
        ("&lt;p&gt; &amp;amp; &eacute;&#233;&#xE9; &copy &nbsp;x", "<p> &amp; ééé © x"),
        ('<img alt="no" src="x.png"><a href="/y" title="no">link</a>', "link"),
        ("<title>unclosed <body><p>text", "text"),
        ("<p>x</p", "x"),
        ("a < b and c > d", "a < b and c > d"),
        ("", ""),
    ],
)
def test_golden(html, text):
    assert html_to_text(html) == text


# --------------------------------------------------------------------------------------------
# markup-only variants of one article are identical after markup removal

ARTICLE = [
    "Riverton council approves new parking plan",
    "The city council of Riverton voted 7 to 2 on Tuesday to approve a parking plan that café owners "
    "had asked for since 2019.",
    "\u201cIt is a good day for Main Street,\u201d said Ana Ruiz, who chairs the committee & the board.",
    "Work starts in May; the cost is $1.2 million (about 5% of the budget).",
]


def variant(rng: random.Random, k: int) -> str:
    """The article in one of many markups: tags, attributes, whitespace, comments, scripts,
    entities or literal characters, boilerplate-free."""

    def esc(s: str) -> str:
        s = s.replace("&", rng.choice(["&amp;", "&#38;", "&#x26;"]))
        s = s.replace("é", rng.choice(["é", "&eacute;", "&#233;", "&#xe9;"]))
        s = s.replace("\u201c", rng.choice(["\u201c", "&ldquo;", "&#8220;"]))
        s = s.replace("\u201d", rng.choice(["\u201d", "&rdquo;", "&#8221;"]))
        s = s.replace("$", rng.choice(["$", "&#36;", "&dollar;"]))
        return s.replace(" ", rng.choice([" ", "  ", "\n", " \t ", "&#32;"]), rng.randint(0, 3))

    def inline(s: str) -> str:
        words = s.split(" ")
        i = rng.randrange(len(words))
        tag = rng.choice(["b", "em", "span class='x'", "a href='/p?q=1&amp;r=2'", "strong"])
        words[i] = f"<{tag}>{words[i]}</{tag.split()[0]}>"
        return " ".join(words)

    title, *paras = ARTICLE
    head = rng.choice(
        [
            "",
            "<head><title>Site | Riverton</title><style>body{}</style>"
            "<script>var x = '<p>not text</p>';</script></head>",
        ]
    )
    h = rng.choice(["h1", "h2", "div", "header"])
    body = [f"<{h} id='t{k}'>{esc(title)}</{h}>"]
    for p in paras:
        p = inline(esc(p)) if rng.random() < 0.7 else esc(p)
        if rng.random() < 0.3:
            body.append(f'<!-- para {k} --><p class="c{k}">{p}</p>\n')
        elif rng.random() < 0.5:
            body.append(f"<div>{p}</div>")
        else:
            body.append(f"{p}<br/>")
    if rng.random() < 0.5:
        body.append("<script type='text/javascript'>track('<div>')</script><noscript><img src=x></noscript>")
    wrap = rng.choice(
        ["<article>{}</article>", "<section><div>{}</div></section>", "{}", "<main role='main'>{}</main>"]
    )
    doctype = rng.choice(["", "<!DOCTYPE html>\n", "<!doctype HTML>"])
    return f"{doctype}<HTML lang=en>{head}<Body>{wrap.format(''.join(body))}</BODY></html>"


def test_markup_variants_of_one_article_have_one_exact_key():
    rng = random.Random(4)
    pages = [variant(rng, k) for k in range(200)]
    assert len(set(pages)) > 150
    texts = [html_to_text(p) for p in pages]
    keys = exact_keys(texts)
    assert (keys == keys[0]).all(), "markup-only variants must agree"
    assert " ".join(texts[0].split()) == " ".join(ARTICLE)
    # while a one-word edit of the text is told apart, and the raw pages differ
    edited = html_to_text(pages[0].replace("Tuesday", "Monday"))
    assert not (exact_keys([edited]) == keys[0]).all()
    assert len(np.unique(exact_keys(pages, raw=True), axis=0)) == len(set(pages))


# --------------------------------------------------------------------------------------------
# broken and hostile input


BROKEN = [
    "<div><p>unclosed <b>bold <i>italic",
    "<p>stray < less-than and > greater-than and <3 and a<b",
    "</p></div></nonexistent>text after stray end tags",
    "<a href='x'>unclosed link<a href='y'>another",
    "<script>never closed <p>hidden",
    "<style>never closed",
    "<!-- never closed comment <p>x",
    "<![CDATA[ unclosed",
    '<div class="unterminated attribute>text</div>',
    "<<<<>>>> <> </> <!> <? <! -- >",
    "<table><td>cell<tr><td>cell2</table></table></table>",
    "<p>" * 5000 + "deep" + "</div>" * 10,
    "<title>never closed title and the rest",
    "&#0; &#xD800; &#1114112; &#x110000; &bogus; &amp",
    "\x00\x01\x02\ufffd\ud800 <p>\x1b[31m</p>",
]


@pytest.mark.parametrize("html", BROKEN)
def test_broken_html_does_not_raise(html):
    for main in (False, True):
        out = html_to_text(html, main_content=main)
        assert isinstance(out, str)


def test_truncated_documents_do_not_raise_and_lose_only_the_cut():
    rng = random.Random(1)
    page = variant(rng, 0)
    full = html_to_text(page)
    words = set(full.split())
    for cut in range(0, len(page), 7):
        out = html_to_text(page[:cut]).split()
        # every word but the cut one is a word of the article: no markup leaks out (the cut word
        # may end in a partial character reference: "caf&#x" stays text, as in a browser)
        assert set(out[:-1]) <= words, cut
        assert not out or "<" not in out[-1] or out[-1] in words, cut
    assert html_to_text(page[: page.index("Tuesday") + 3]).endswith("Tue")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_binary_junk_does_not_raise(data):
    for text in (data.decode("latin-1"), data.decode("utf-8", "surrogateescape")):
        out = html_to_text(text)
        assert isinstance(out, str)
        assert html_to_text(text, main_content=True) is not None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<p>",
                "</p>",
                "<div>",
                "</div>",
                "<a href=x>",
                "</a>",
                "<script>",
                "</script>",
                "<!--",
                "-->",
                "<",
                ">",
                "&",
                "&amp;",
                "word",
                " ",
                "<br>",
                "<li>",
                "<td>",
                "<pre>",
                "\n",
                "</",
                "<title>",
                "é",
            ]
        ),
        max_size=60,
    )
)
def test_tag_soup_does_not_raise(parts):
    out = html_to_text("".join(parts))
    assert isinstance(out, str) and "\n\n" not in out and out == out.strip()


def test_scripts_styles_comments_never_leak():
    html = (
        "<p>keep</p><script>SCRIPTWORD</script><style>STYLEWORD</style><!-- COMMENTWORD -->"
        "<noscript>NOSCRIPTWORD</noscript><template>TEMPLATEWORD</template><p>also</p>"
    )
    assert html_to_text(html) == "keep\nalso"
    with pytest.raises(TypeError):
        html_to_text_auto(b"<p>bytes</p>")


# --------------------------------------------------------------------------------------------
# main content


def boilerplate_page(article: str) -> str:
    nav = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(12))
    related = "".join(f"<li><a href='/r{i}'>Related story number {i} about something</a></li>" for i in range(8))
    return (
        f"<html><body><header><div class=logo>The Daily Example</div><nav><ul>{nav}</ul></nav></header>"
        f"<div id=wrap><div id=content><article><h1>Headline here</h1>{article}</article></div>"
        f"<aside><h3>Related</h3><ul>{related}</ul><p>Subscribe for 1 dollar.</p></aside></div>"
        "<footer><p>Copyright 2024 The Daily Example. <a href='/privacy'>Privacy</a> "
        "<a href='/terms'>Terms</a></p></footer></body></html>"
    )


def test_main_content_keeps_the_article_and_drops_boilerplate():
    paras = "".join(f"<p>{' '.join(ARTICLE[1:])} Paragraph {i} with a <a href='/x'>link</a>.</p>" for i in range(4))
    page = boilerplate_page(paras)
    main = html_to_text(page, main_content=True)
    full = html_to_text(page)
    assert main.startswith("Headline here\n") and main.endswith("Paragraph 3 with a link.")
    for junk in ("Section 3", "Related story", "Copyright", "Subscribe", "The Daily Example"):
        assert junk in full and junk not in main
    # the same article in two different templates gives the same main text
    other = (
        "<html><body><div class=menu>"
        + " | ".join(f"<a href=/{i}>Menu {i}</a>" for i in range(20))
        + f"</div><main><h1>Headline here</h1>{paras}</main><div>Other footer text</div></body></html>"
    )
    assert html_to_text(other, main_content=True) == main


def test_main_content_falls_back_to_the_whole_text():
    links = "<ul>" + "".join(f"<li><a href=/{i}>link {i}</a></li>" for i in range(5)) + "</ul>"
    assert html_to_text(links, main_content=True) == html_to_text(links)
    plain = "<p>one paragraph</p><p>two paragraphs</p>"
    assert html_to_text(plain, main_content=True) == html_to_text(plain)
    assert html_to_text("", main_content=True) == ""


# --------------------------------------------------------------------------------------------
# decoding files


def test_decode_html():
    assert decode_html("<p>café</p>".encode()) == "<p>café</p>"
    assert decode_html(b"\xef\xbb\xbf<p>x</p>") == "<p>x</p>"
    latin = '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"><p>café</p>'
    assert decode_html(latin.encode("latin-1")) == latin
    assert decode_html("<meta charset='windows-1252'>“q”".encode("cp1252")) == "<meta charset='windows-1252'>“q”"
    with pytest.raises(UnicodeDecodeError):
        decode_html(b"<p>caf\xe9</p>")  # no declaration
    with pytest.raises(UnicodeDecodeError):
        decode_html(b"<meta charset=no-such-codec><p>caf\xe9</p>")
    with pytest.raises(UnicodeDecodeError):
        decode_html(b"<meta charset=utf-8><p>caf\xe9</p>")
