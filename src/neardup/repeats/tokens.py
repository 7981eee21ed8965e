"""Tokens of the span mode, with their character offsets in the original text.

``words`` (the default): the word tokens of :func:`neardup.text.normalize.tokenize` (a run of
letters, marks and digits; an ideograph alone), found on the original text so that each has
its character offsets, and compared by their normalized form (NFKC, case folding; invisible
format characters inside a word dropped). ``chars``: every code point, compared by its
normalized form. ``bytes``: every UTF-8 byte, compared as it is (no normalization); a removed
byte range is widened to whole characters.

The comparison key of a token is a 64-bit hash of its normalized code points: code points
whose normalized form is one code point are folded by a table
(``casefold(NFKC(c))``, :func:`fold_table`); a token holding any other (a combining mark, a
Hangul jamo, a ligature that expands, a code point above the BMP) is normalized by Python.
Two different tokens share a hash with probability ``2^-64`` per pair.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

import numpy as np

from .._kernels.charclass import CHAR_CLASS
from .._kernels.repeats import SLOW, hash_codepoints, word_tokens
from ..text.normalize import normalize


@cache
def fold_table() -> np.ndarray:
    """uint32[0x110000]: ``casefold(NFKC(c))`` for the code points of the BMP whose
    normalized form is one code point and that never compose with a neighbour; ``SLOW``
    for every other."""
    table = np.full(0x110000, SLOW, dtype=np.uint32)
    for c in range(0x10000):
        ch = chr(c)
        if 0xD800 <= c < 0xE000 or 0x1100 <= c < 0x1200 or 0x3130 <= c < 0x3190 or 0xAC00 <= c < 0xD7B0:
            continue
        if unicodedata.combining(ch) or unicodedata.category(ch).startswith("M"):
            continue
        f = normalize(ch)
        if len(f) == 1 and not unicodedata.combining(f):
            table[c] = ord(f)
    return table


@dataclass(frozen=True)
class TokenBatch:
    """The tokens of consecutive documents: character offsets in their document, the 64-bit
    comparison key, and the tokens of each document."""

    start: np.ndarray
    end: np.ndarray
    key: np.ndarray
    per_doc: np.ndarray


def _codepoints(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = "".join(texts).encode("utf-32-le", "surrogatepass")
    return np.frombuffer(joined, dtype=np.uint32), offsets


def batch_tokens(texts, unit: str) -> TokenBatch:
    """The tokens of ``texts`` as ``unit`` (``words``, ``chars`` or ``bytes``) defines them."""
    texts = [str(t) for t in texts]
    if unit == "bytes":
        return _byte_tokens(texts)
    cps, offsets = _codepoints(texts)
    fold = fold_table()
    chars = unit == "chars"
    start, end, key, slow, per_doc = word_tokens(cps, offsets, fold, CHAR_CLASS, chars)
    if slow.any():
        doc_of = np.repeat(np.arange(len(texts)), per_doc)
        for t in np.flatnonzero(slow).tolist():
            text = texts[doc_of[t]][start[t] : end[t]]
            norm = np.frombuffer(normalize(text).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            key[t] = hash_codepoints(norm, fold, CHAR_CLASS, chars)
    return TokenBatch(start, end, key, per_doc)


def _byte_tokens(texts: list[str]) -> TokenBatch:
    starts, ends, keys, per_doc = [], [], [], []
    for t in texts:
        b = np.frombuffer(t.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        lead = (b & 0xC0) != 0x80
        char = np.cumsum(lead, dtype=np.int64) - 1
        starts.append(char.astype(np.int32))
        ends.append((char + 1).astype(np.int32))
        keys.append(b.astype(np.uint64) + np.uint64(1))
        per_doc.append(len(b))
    cat = lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt)
    return TokenBatch(
        cat(starts, np.int32), cat(ends, np.int32), cat(keys, np.uint64), np.asarray(per_doc, dtype=np.int64)
    )


def concat(batches: list[TokenBatch]) -> TokenBatch:
    if not batches:
        return TokenBatch(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.uint64), np.zeros(0, np.int64))
    return TokenBatch(*(np.concatenate([getattr(b, f) for b in batches]) for f in TokenBatch.__dataclass_fields__))
