"""Text normalization and tokenization rules.

A text is normalized in two steps:

1. in Python, once per document: Unicode NFKC (compatibility characters such as ligatures,
   full-width letters and non-breaking spaces fold to their plain forms) and then case folding
   (``str.casefold``, a stronger lower-casing: "Straße" and "STRASSE" agree);
2. in the tokenizer kernel, per character, with the class table of
   :mod:`neardup._kernels.charclass`: whitespace runs collapse to one space, invisible format
   characters (soft hyphen, zero-width space) are dropped, and punctuation is dropped where asked.

A **word token** is a maximal run of letters, marks and digits of any script. Characters of
scripts written without spaces (Han ideographs, Hiragana, Katakana) are one token each.
Everything else separates tokens.

The character classes come from a table generated once from Unicode 14.0 and shipped with
the package (:mod:`neardup._kernels.unicode_data`), so tokenization does not change with the
Python version. :func:`tokenize` and :func:`char_stream` here are slow Python references of what
the shingling kernels (:mod:`neardup._kernels.shingles`) do.
"""

from __future__ import annotations

import unicodedata

from .._kernels.charclass import (
    CHAR_CLASS,
    IDEOGRAPH,
    IGNORE,
    OTHER,
    PUNCT,
    SPACE,
    SYLLABLE,
    WORD,
)


def normalize(text: str, *, nfkc: bool = True, casefold: bool = True) -> str:
    """The per-document part of normalization: NFKC, then case folding.

    >>> normalize("Ｆｕｌｌ-width ﬁsh, STRASSE")
    'full-width fish, strasse'
    """
    if nfkc:
        text = unicodedata.normalize("NFKC", text)
    if casefold:
        text = text.casefold()
    return text


def tokenize(text: str, *, nfkc: bool = True, casefold: bool = True) -> list[str]:
    """Word tokens of a text, as the shingling kernels see them (a slow reference in Python).

    >>> tokenize("Jack London traveled to Oakland!")
    ['jack', 'london', 'traveled', 'to', 'oakland']
    >>> tokenize("東京は2024年")
    ['東', '京', 'は', '2024', '年']
    >>> tokenize("ที่นี่")  # Thai: a token per letter, with the marks that follow it
    ['ที่', 'นี่']
    """
    tokens: list[str] = []
    current: list[str] = []
    for ch in normalize(text, nfkc=nfkc, casefold=casefold):
        cls = CHAR_CLASS[ord(ch)]
        if cls == WORD:
            current.append(ch)
            continue
        if cls == IGNORE:
            continue
        if current:
            tokens.append("".join(current))
            current = []
        if cls == IDEOGRAPH:
            tokens.append(ch)
        elif cls == SYLLABLE:  # starts a token its marks join
            current.append(ch)
    if current:
        tokens.append("".join(current))
    return tokens


def char_stream(text: str, *, strip_punctuation: bool = False, nfkc: bool = True, casefold: bool = True) -> str:
    """The character sequence character shingles are cut from (a slow reference in Python).

    Whitespace and other separators collapse to one space, with none at either end; format
    characters are dropped, and so are punctuation and symbols when ``strip_punctuation``.

    >>> char_stream("  Hello,\\n\\n  World!  ", strip_punctuation=True)
    'hello world'
    """
    out: list[str] = []
    pending_space = False
    for ch in normalize(text, nfkc=nfkc, casefold=casefold):
        cls = CHAR_CLASS[ord(ch)]
        if cls == IGNORE or (cls == PUNCT and strip_punctuation):
            continue
        if cls in (SPACE, OTHER):
            pending_space = bool(out)
            continue
        if pending_space:
            out.append(" ")
            pending_space = False
        out.append(ch)
    return "".join(out)
