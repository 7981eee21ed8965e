"""The directory scanner: every ``.txt``, ``.html`` and ``.htm`` file under a directory is a document.

A single such file given as an input is read the same way: one document, id = the path as given.

Files are read recursively in sorted path order; the id is the file's path joined from the given
directory. HTML files are decoded in the charset their ``<meta>`` declares when they are not
UTF-8 (:func:`neardup.text.html.decode_html`) and converted to their visible text, except when
scanned to be written out (the page as it is).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..text.html import decode_html, html_to_text
from .formats import HTML_SUFFIXES, TEXT_SUFFIXES
from .paths import _file_or_broken_link, is_url, local_path, open_binary
from .policy import Chunk, Policy, bad_utf8, unreadable
from .streams import BOM

_TXT_BLOCK_FILES = 256  # .txt/.html files per yielded chunk


def scan_txtdir(root: str, pol: Policy, full: bool = False) -> Iterator[Chunk]:
    """Every ``*.txt`` and ``*.html``/``*.htm`` under ``root``; no payload (the record is
    ``{"id": id, "text": text}``). HTML files are converted to text unless ``full`` (write_kept
    writes the original page)."""
    if is_url(root) or not os.path.isdir(local_path(root)):
        files = [(root, Path(root.split("?", 1)[0]).suffix.lower())]  # a single file
    else:
        base = Path(root)
        found = sorted(
            p for p in base.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES and _file_or_broken_link(p)
        )
        files = [(os.path.join(root, str(p.relative_to(base))), p.suffix.lower()) for p in found]
    ids: list[str] = []
    texts: list[str] = []
    for name, suffix in files:
        pol.stats.files += 1
        pol.opening(name)
        try:
            with open_binary(name) as f:
                data = f.read()
        except OSError as exc:
            pol.reject(unreadable(name, exc))
            continue
        pol.stats.bytes_read += len(data)
        if data.startswith(BOM):
            data = data[3:]
        is_html = suffix in HTML_SUFFIXES
        try:
            text = decode_html(data) if is_html else data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            pol.reject(bad_utf8(name, line, exc, "file"))
            continue
        if is_html and not full:
            text = html_to_text(text, main_content=pol.main_content)
        ids.append(name)
        texts.append(text)
        if len(ids) >= _TXT_BLOCK_FILES:
            yield Chunk(ids, texts, None)
            ids, texts = [], []
    if ids:
        yield Chunk(ids, texts, None)
