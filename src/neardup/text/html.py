"""Markup removal for HTML input: web pages become the text a reader sees.

:func:`html_to_text` runs the standard library's tolerant HTML tokenizer
(:class:`html.parser.HTMLParser`, no extra dependency) and keeps the text:

* the content of ``script``, ``style``, ``noscript``, ``template``, ``title``, ``iframe``,
  ``object``, ``svg`` and ``canvas`` elements is dropped, and so are comments, doctype,
  processing instructions and CDATA sections; attributes never contribute text;
* character references are decoded (``&amp;`` -> ``&``, ``&#233;`` -> ``é``, ``&nbsp;`` -> U+00A0),
  with the HTML5 rules of :func:`html.unescape`;
* block elements (``p``, ``div``, ``br``, ``li``, ``h1``-``h6``, ``tr``, ``section``, ``article``,
  ``header``, ``footer``, ``nav``, ``table``, ``blockquote``, ``pre``, ... see :data:`BLOCK`)
  end the current line, and so do table cells (``td``, ``th``); inline elements
  (``b``, ``span``, ``a``, ...) join their text to the surrounding text as a browser does;
* each line has its whitespace runs (``str.split``: Unicode whitespace, U+00A0 included)
  collapsed to one space and is stripped; empty lines are dropped; lines are joined by ``\\n``.
  Inside ``pre`` the newlines of the text are line breaks too.

So two pages that differ only in markup (tags, attributes, comments, scripts, whitespace, a
character written as an entity or literally) give the same text, and the same exact key.

Broken markup never raises: unclosed elements are closed where a browser would close them well
enough for text extraction (an end tag closes every element opened after its start tag; a new
``p``/``li``/``a``/``td``/... closes the previous one where HTML says so), stray ``<`` is text,
and a document cut off in the middle of a tag loses only that tag (an unclosed comment, though,
comes out as text: that is what the stdlib tokenizer does).

``main_content=True`` keeps only the main block of a page with heavy boilerplate (navigation,
link lists, footers), by a text-density heuristic: every *container* element (``div``,
``article``, ``main``, ``section``, ``td``, ``body``, ... see :data:`CONTAINERS`) and the whole
page get the score ``S = chars - 2 * link_chars`` over the lines inside them (non-space
characters; link characters are those inside ``a`` elements), i.e. text counts and link text
counts against. Among the candidates whose score is at least 80% of the best one, the one with
the fewest characters wins (the tightest block holding most of the content); its lines are the
result. If no candidate scores above zero (a page of links), the whole text is returned.

The output depends on the stdlib tokenizer, which can change for malformed input between Python
versions; golden tests pin it (``tests/test_html.py``).
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

SKIP = frozenset({"script", "style", "noscript", "template", "title", "iframe", "object", "svg", "canvas"})
"""Elements whose content is dropped."""


_RAW_SKIP = frozenset({"title", "iframe"})
"""Skipped elements that cannot contain markup: any start tag inside them closes them first."""


BLOCK = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "frameset",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "noframes",
        "ol",
        "optgroup",
        "option",
        "p",
        "pre",
        "section",
        "select",
        "summary",
        "table",
        "tbody",
        "textarea",
        "tfoot",
        "thead",
        "tr",
        "ul",
    }
)
"""Elements that start and end a line."""


CONTAINERS = frozenset(
    {
        "article",
        "aside",
        "blockquote",
        "body",
        "center",
        "div",
        "footer",
        "form",
        "header",
        "html",
        "main",
        "nav",
        "section",
        "table",
        "tbody",
        "td",
        "th",
    }
)
"""Elements that are candidates of the main-content block."""


_VOID = frozenset(
    {
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)


# start tag -> (open elements it closes, elements that stop the search)
_IMPLIED_END = {
    "p": ({"p"}, BLOCK - {"p"}),
    "li": ({"li"}, {"ul", "ol", "menu", "dir"}),
    "dt": ({"dt", "dd"}, {"dl"}),
    "dd": ({"dt", "dd"}, {"dl"}),
    "tr": ({"tr", "td", "th"}, {"table", "tbody", "thead", "tfoot"}),
    "td": ({"td", "th"}, {"tr", "table"}),
    "th": ({"td", "th"}, {"tr", "table"}),
    "option": ({"option"}, {"select", "datalist", "optgroup"}),
    "a": ({"a"}, BLOCK),
}


_CLOSES_P = BLOCK - {
    "br",
    "body",
    "html",
    "head",
    "option",
    "optgroup",
    "select",
    "textarea",
    "li",
    "dt",
    "dd",
    "tr",
    "tbody",
    "thead",
    "tfoot",
    "caption",
}


_MAIN_SHARE = 0.8


_LINK_WEIGHT = 2


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.chars: list[int] = []  # non-space characters of each line
        self.link_chars: list[int] = []  # of which inside <a>
        self._cur: list[str] = []
        self._cur_links = 0
        self._stack: list[tuple[str, int]] = []  # (tag, node id or -1)
        self._skip = 0
        self._pre = 0
        self._links = 0
        self.nodes: list[list[int]] = []  # [first line, end line] of each container, in opening order

    # ---- lines

    def _break(self) -> None:
        if not self._cur:
            return
        text = " ".join("".join(self._cur).split())
        self._cur = []
        if text:
            self.lines.append(text)
            self.chars.append(len(text) - text.count(" "))
            self.link_chars.append(self._cur_links)
        self._cur_links = 0

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._links:
            self._cur_links += len("".join(data.split()))
        if self._pre and "\n" in data:
            parts = data.split("\n")
            self._cur.append(parts[0])
            for part in parts[1:]:
                self._break()
                self._cur.append(part)
        else:
            self._cur.append(data)

    # ---- elements

    def _push(self, tag: str) -> None:
        node = -1
        if tag in CONTAINERS:
            node = len(self.nodes)
            self.nodes.append([len(self.lines), -1])
        self._stack.append((tag, node))
        if tag in SKIP:
            self._skip += 1
        elif tag == "pre":
            self._pre += 1
        elif tag == "a":
            self._links += 1

    def _pop_to(self, index: int) -> None:
        """Close the open elements from the top of the stack down to ``index`` (included)."""
        while len(self._stack) > index:
            tag, node = self._stack.pop()
            if tag in SKIP:
                self._skip -= 1
            elif tag == "pre":
                self._pre -= 1
            elif tag == "a":
                self._links -= 1
            if tag in BLOCK or node >= 0:
                self._break()
            if node >= 0:
                self.nodes[node][1] = len(self.lines)

    def _find(self, names, barrier) -> int:
        for i in range(len(self._stack) - 1, -1, -1):
            tag = self._stack[i][0]
            if tag in names:
                return i
            if tag in barrier:
                return -1
        return -1

    def handle_starttag(self, tag: str, attrs) -> None:
        if self._stack and self._stack[-1][0] in _RAW_SKIP:
            self._pop_to(len(self._stack) - 1)
        rule = _IMPLIED_END.get(tag)
        if rule is not None:
            i = self._find(*rule)
            if i >= 0:
                self._pop_to(i)
        if tag in _CLOSES_P:
            i = self._find({"p"}, BLOCK - {"p"})
            if i >= 0:
                self._pop_to(i)
        if tag in BLOCK or tag in CONTAINERS:
            self._break()
        if tag not in _VOID:
            self._push(tag)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                self._pop_to(i)
                return
        if tag in BLOCK:  # a stray </p> or </br> still ends a line, as in a browser
            self._break()

    def finish(self) -> None:
        self._pop_to(0)
        self._break()


_TAG_START = re.compile(r"<[A-Za-z/!?]")


def _cut_unfinished_tail(html: str) -> str:
    """Drop an unfinished tag at the end of a truncated document (a browser drops it too; the
    stdlib tokenizer would emit it as text)."""
    start = html.rfind("<")
    if start >= 0 and ">" not in html[start:] and (start == len(html) - 1 or _TAG_START.match(html, start)):
        return html[:start]
    return html


def _parse(html: str) -> _TextParser:
    parser = _TextParser()
    try:
        parser.feed(_cut_unfinished_tail(html))
        parser.close()
    except Exception:  # the stdlib tokenizer is tolerant; this is a last line of defence
        rest = getattr(parser, "rawdata", "")
        parser.rawdata = ""
        parser._skip = 0
        parser.handle_data(re.sub(r"<[^>]*>?", " ", rest))
    parser.finish()
    return parser


def _main_lines(p: _TextParser) -> list[str]:
    n = len(p.lines)
    score = [0] * (n + 1)
    size = [0] * (n + 1)
    for i in range(n):
        score[i + 1] = score[i] + p.chars[i] - _LINK_WEIGHT * p.link_chars[i]
        size[i + 1] = size[i] + p.chars[i]
    candidates = [(0, n)] + [(a, b if b >= 0 else n) for a, b in p.nodes]
    best = max(score[b] - score[a] for a, b in candidates)
    if best <= 0:
        return p.lines
    good = [(size[b] - size[a], k) for k, (a, b) in enumerate(candidates) if score[b] - score[a] >= _MAIN_SHARE * best]
    a, b = candidates[min(good)[1]]
    return p.lines[a:b]


PARSERS = ("auto", "resiliparse", "stdlib")
"""``parser`` of :func:`html_to_text`: ``auto`` is resiliparse when installed, else stdlib."""


def _resiliparse():
    try:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree
    except ImportError:
        return None
    return extract_plain_text, HTMLTree


def _resiliparse_text(html: str, main_content: bool, lib) -> str:
    """Text by resiliparse (Bevendorff et al., ECIR 2023 / CIKM 2023: the ChatNoir web-archive
    toolkit): its HTML5 parser (lexbor) and plain-text extraction, with its main-content
    heuristic when asked; lines then collapsed as by the stdlib path."""
    extract_plain_text, tree = lib
    try:
        parsed = tree.parse(html)
    except UnicodeEncodeError:  # lone surrogates: replaced, as a browser would show U+FFFD
        parsed = tree.parse(html.encode("utf-8", "replace").decode("utf-8"))
    text = extract_plain_text(
        parsed,
        preserve_formatting=True,
        main_content=main_content,
        list_bullets=False,
        alt_texts=False,
        links=False,
        form_fields=False,
        noscript=False,
    )
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def html_to_text(html: str, main_content: bool = False, parser: str = "auto") -> str:
    """The visible text of an HTML document, one line per block (see the module docstring).

    ``parser="resiliparse"`` (what ``auto`` picks when the ``[html]`` extra is installed) parses
    with resiliparse/lexbor, about ten times the stdlib path's speed (``benchmarks/bench_html.py``),
    and ``main_content`` then uses resiliparse's main-content extraction (navigation, footers and
    link lists dropped by element role and text density); ``stdlib`` is the pure-Python path above.
    Both give the same text for well-formed pages with ordinary blocks; for boilerplate removal
    and broken markup they may differ.

    >>> html_to_text("<p>Caf&eacute; <b>au</b> lait<script>x=1</script></p><!-- c --><ul><li>a<li>b</ul>")
    'Café au lait\\na\\nb'
    >>> html_to_text("<div>unclosed <p>stray < sign &amp; <i>truncat", parser="stdlib")
    'unclosed\\nstray < sign & truncat'
    """
    if not isinstance(html, str):
        raise TypeError(f"html_to_text expects a str, got {type(html).__name__}")
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {PARSERS}, got {parser!r}")
    if parser != "stdlib":
        lib = _resiliparse()
        if lib is not None:
            return _resiliparse_text(html, main_content, lib)
        if parser == "resiliparse":
            raise ImportError("parser='resiliparse' needs resiliparse: pip install 'neardup[html]'")
    parser = _parse(html)
    lines = _main_lines(parser) if main_content else parser.lines
    return "\n".join(lines)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)


def decode_html(data: bytes) -> str:
    """Decode an HTML file: UTF-8 (a BOM is dropped); else the charset its ``<meta>`` declares
    in the first 4 KiB. Raises ``UnicodeDecodeError`` when neither works.

    >>> decode_html('<meta charset="latin-1"><p>café'.encode("latin-1"))
    '<meta charset="latin-1"><p>café'
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        m = _META_CHARSET.search(data[:4096])
        if m:
            try:
                codec = codecs.lookup(m.group(1).decode("ascii"))
            except LookupError:
                raise exc from None
            if codec.name != "utf-8":
                try:
                    return data.decode(codec.name)
                except UnicodeDecodeError:
                    pass
        raise
