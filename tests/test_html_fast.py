"""HTML through resiliparse (``parser="auto"``/``"resiliparse"``): the same text as the stdlib
path on ordinary pages, main-content extraction, no exceptions on junk, and dedup with
``--html`` writing the kept records with their original markup."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.text.html import html_to_text

pytest.importorskip("resiliparse")

NAV = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(12))


def page(article: str, site: str = "The Daily Example") -> str:
    return (
        f"<html><head><title>{site}</title><script>var x = '<p>no</p>';</script></head><body>"
        f"<header><div class=logo>{site}</div><nav><ul>{NAV}</ul></nav></header>"
        f"<main><article><h1>Headline here</h1>{article}</article></main>"
        f"<footer><p>Copyright 2026 {site}. <a href='/privacy'>Privacy</a> <a href='/terms'>Terms</a></p></footer>"
        "</body></html>"
    )


ARTICLE = "".join(
    f"<p>The council met on Tuesday to discuss the new <b>bridge</b> over the river, paragraph {i}, "
    "and agreed to fund its repair before the winter &amp; spring floods.</p>"
    for i in range(4)
)


@pytest.mark.parametrize(
    "html",
    [
        "<p>Hello <b>world</b></p>",
        "<h1>Title</h1><p>one</p><p>two</p>",
        "<ul><li>a<li>b</ul><ol><li>c</li></ol>",
        "x<style>p { color: red }</style>y<p>Caf&eacute; &amp; <i>co</i></p>",
        "<!DOCTYPE html><html><head><title>Page</title></head><body><div>ok <span>then</span></div></body></html>",
        page(ARTICLE),
    ],
)
def test_same_text_as_the_stdlib_path_on_ordinary_pages(html):
    assert html_to_text(html, parser="resiliparse") == html_to_text(html, parser="stdlib")
    assert html_to_text(html) == html_to_text(html, parser="resiliparse")


def test_main_content_drops_navigation_and_footer():
    main = html_to_text(page(ARTICLE), main_content=True, parser="resiliparse")
    full = html_to_text(page(ARTICLE), parser="resiliparse")
    assert "Headline here" in main and "paragraph 3" in main and "& spring" in main
    for junk in ("Section 3", "Copyright", "Privacy"):
        assert junk in full and junk not in main
    # the same article under another site's template gives the same main text
    assert html_to_text(page(ARTICLE, "Other Site"), main_content=True, parser="resiliparse") == main


def test_errors():
    with pytest.raises(ValueError, match="parser"):
        html_to_text("<p>x</p>", parser="lxml")
    with pytest.raises(TypeError):
        html_to_text(b"<p>x</p>")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.booleans())
def test_junk_never_raises(text, main):
    out = html_to_text("<p>" + text, main_content=main, parser="resiliparse")
    assert isinstance(out, str) and "\n\n" not in out


def test_dedup_html_keeps_original_markup(tmp_path):
    rows = [
        {"id": "a", "text": page(ARTICLE)},
        {"id": "b", "text": page(ARTICLE.replace("Tuesday", "Wednesday"), "Other Site")},
        {"id": "c", "text": page("<p>A different story about a school fair with cakes and music.</p>")},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(src), "--html", "--main-content", "--verify", "edit"]
    cmd += ["--threshold", "0.9", "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    kept = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in kept] == ["a", "c"]
    assert kept == [rows[0], rows[2]], "kept records are written as read, markup included"
