"""Shingling: a text becomes the set of its word or character n-grams, each hashed to 64 bits.

A word n-gram of tokens t1..tn is hashed as the UTF-8 string ``"t1 t2 ... tn"`` (tokens joined
by one space) with :func:`neardup._hash.hash_bytes`; a character n-gram as the UTF-8 string of
its n characters, cut from the normalized character stream (see :mod:`neardup.text`). So a text's
shingle set equals the hashes of the shingle strings one would write by hand, and
``MinHasher.sign_sets`` on those strings gives the same signature as ``MinHasher.sign`` on the text.

A document with fewer than n tokens (or characters) but at least one yields a single shingle of
all of them, so that short documents still compare; an empty document yields the empty set.

Kernels stream over the UTF-8 bytes once per document, keeping the start positions of the last
n tokens in a ring, so no Python object is made per token or shingle. The same inner loop either
writes shingle hashes out (for exact similarity) or folds them straight into a MinHash signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numba as nb
import numpy as np

from ._hash import hash_span_words
from .text import CHAR_CLASS, IDEOGRAPH, IGNORE, OTHER, PUNCT, SPACE, WORD, normalize

_WORD_KIND, _CHAR_KIND = 0, 1
_EMIT_HASHES, _EMIT_MINHASH = 0, 1


@dataclass(frozen=True)
class Shingling:
    """How a text becomes a set of 64-bit shingle hashes.

    Attributes:
        kind: ``"word"`` for word n-grams, ``"char"`` for character n-grams.
        n: shingle size in words or characters (>= 1).
        strip_punctuation: for character shingles, drop punctuation and symbols first
            (word tokens never contain them, so it changes nothing for word shingles).
        nfkc: apply Unicode NFKC normalization.
        casefold: fold case (``str.casefold``).
    """

    kind: Literal["word", "char"] = "word"
    n: int = 5
    strip_punctuation: bool = False
    nfkc: bool = True
    casefold: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ("word", "char"):
            raise ValueError(f"shingle kind must be 'word' or 'char', got {self.kind!r}")
        if not isinstance(self.n, (int, np.integer)) or isinstance(self.n, bool) or self.n < 1:
            raise ValueError(f"shingle size n must be an integer >= 1, got {self.n!r}")
        if self.kind == "word" and self.strip_punctuation:
            object.__setattr__(self, "strip_punctuation", False)


def encode_texts(texts: Sequence[str], shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """Normalize texts (NFKC, case folding) and pack their UTF-8 bytes as (data, offsets)."""
    encoded = [
        normalize(t, nfkc=shingling.nfkc, casefold=shingling.casefold).encode("utf-8", "surrogatepass")
        for t in texts
    ]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


@nb.njit(inline="always", cache=True)
def _decode(data, i, end):
    """The code point starting at ``data[i]`` and the index after it (U+FFFD on bad bytes)."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, i + 1
    if b0 >= 0xF0 and i + 3 < end:
        cp = ((b0 & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
        cp |= ((np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F)
        return (cp if cp < 0x110000 else 0xFFFD), i + 4
    if b0 >= 0xE0 and i + 2 < end:
        cp = ((b0 & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F)
        return cp, i + 3
    if b0 >= 0xC0 and i + 1 < end:
        return ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), i + 2
    return 0xFFFD, i + 1


@nb.njit(inline="always", cache=True)
def _emit(h, mode, a, b, sig, out, pos):
    if mode == _EMIT_MINHASH:
        for k in range(sig.shape[0]):
            v = np.uint32((a[k] * h + b[k]) >> np.uint64(32))
            if v < sig[k]:
                sig[k] = v
    else:
        out[pos] = h


@nb.njit(cache=True, nogil=True)
def _word_doc(data, start, end, table, n, buf, words, ring, mode, a, b, sig, out, pos):
    """Word n-gram shingles of ``data[start:end]``; returns how many were emitted."""
    blen = 0
    ntok = 0
    count = 0
    in_tok = False
    tok_start = 0
    i = start
    while i <= end:
        if i < end:
            cp, j = _decode(data, i, end)
            cls = table[cp]
        else:
            j = end + 1
            cls = OTHER
        if cls == WORD:
            if not in_tok:
                if ntok > 0:
                    buf[blen] = 32
                    blen += 1
                tok_start = blen
                in_tok = True
            for q in range(i, j):
                buf[blen] = data[q]
                blen += 1
        elif cls != IGNORE:
            if in_tok:
                in_tok = False
                ring[ntok % n] = tok_start
                ntok += 1
                if ntok >= n:
                    _emit(hash_span_words(words, ring[(ntok - n) % n], blen), mode, a, b, sig, out, pos + count)
                    count += 1
            if cls == IDEOGRAPH:
                if ntok > 0:
                    buf[blen] = 32
                    blen += 1
                ring[ntok % n] = blen
                for q in range(i, j):
                    buf[blen] = data[q]
                    blen += 1
                ntok += 1
                if ntok >= n:
                    _emit(hash_span_words(words, ring[(ntok - n) % n], blen), mode, a, b, sig, out, pos + count)
                    count += 1
        i = j
    if 0 < ntok < n:
        _emit(hash_span_words(words, 0, blen), mode, a, b, sig, out, pos)
        count = 1
    return count


@nb.njit(cache=True, nogil=True)
def _char_doc(data, start, end, table, n, strip, buf, words, ring, mode, a, b, sig, out, pos):
    """Character n-gram shingles of ``data[start:end]``; returns how many were emitted."""
    blen = 0
    nch = 0
    count = 0
    pending_space = False
    i = start
    while i < end:
        cp, j = _decode(data, i, end)
        cls = table[cp]
        if cls == IGNORE or (cls == PUNCT and strip):
            i = j
            continue
        if cls == SPACE or cls == OTHER:
            pending_space = nch > 0
            i = j
            continue
        for step in range(2):
            if step == 0 and not pending_space:
                continue
            ring[nch % n] = blen
            if step == 0:
                buf[blen] = 32
                blen += 1
                pending_space = False
            else:
                for q in range(i, j):
                    buf[blen] = data[q]
                    blen += 1
            nch += 1
            if nch >= n:
                _emit(hash_span_words(words, ring[(nch - n) % n], blen), mode, a, b, sig, out, pos + count)
                count += 1
        i = j
    if 0 < nch < n:
        _emit(hash_span_words(words, 0, blen), mode, a, b, sig, out, pos)
        count = 1
    return count


@nb.njit(inline="always", cache=True)
def _doc(data, start, end, table, kind, n, strip, buf, words, ring, mode, a, b, sig, out, pos):
    if kind == _WORD_KIND:
        return _word_doc(data, start, end, table, n, buf, words, ring, mode, a, b, sig, out, pos)
    return _char_doc(data, start, end, table, n, strip, buf, words, ring, mode, a, b, sig, out, pos)


@nb.njit(cache=True, nogil=True)
def _scratch(starts, ends):
    longest = 0
    for d in range(starts.shape[0]):
        longest = max(longest, ends[d] - starts[d])
    buf = np.zeros(((2 * longest + 24) // 8) * 8, dtype=np.uint8)
    return buf, buf.view(np.uint64)


@nb.njit(cache=True, nogil=True)
def minhash_texts_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """Fill ``sigs[d]`` with the MinHash of the shingles of ``data[starts[d]:ends[d]]`` and
    ``counts[d]`` with how many there were."""
    buf, words = _scratch(starts, ends)
    ring = np.empty(n, dtype=np.int64)
    dummy = np.empty(0, dtype=np.uint64)
    for d in range(starts.shape[0]):
        sig = sigs[d]
        sig[:] = np.uint32(0xFFFFFFFF)
        counts[d] = _doc(data, starts[d], ends[d], table, kind, n, strip, buf, words, ring,
                         _EMIT_MINHASH, a, b, sig, dummy, 0)


@nb.njit(cache=True, nogil=True)
def shingle_texts_kernel(data, offsets, table, kind, n, strip, unique):
    """Shingle hashes of every document as CSR (hashes, doc_offsets); sorted and unique if asked."""
    ndoc = offsets.shape[0] - 1
    buf, words = _scratch(offsets[:-1], offsets[1:])
    ring = np.empty(n, dtype=np.int64)
    out = np.empty(offsets[ndoc] - offsets[0] + ndoc, dtype=np.uint64)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    dummy_a = np.empty(0, dtype=np.uint64)
    dummy_sig = np.empty(0, dtype=np.uint32)
    pos = 0
    for d in range(ndoc):
        c = _doc(data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, ring,
                 _EMIT_HASHES, dummy_a, dummy_a, dummy_sig, out, pos)
        if unique and c > 1:
            s = np.sort(out[pos:pos + c])
            k = 1
            for q in range(1, c):
                if s[q] != s[k - 1]:
                    s[k] = s[q]
                    k += 1
            out[pos:pos + k] = s[:k]
            c = k
        pos += c
        doc_off[d + 1] = pos
    return out[:pos].copy(), doc_off


def _kind_code(shingling: Shingling) -> int:
    return _WORD_KIND if shingling.kind == "word" else _CHAR_KIND


def shingle_batch(texts: Sequence[str], shingling: Shingling = Shingling(), *, unique: bool = True):
    """Shingle hashes of many texts as CSR arrays ``(hashes uint64[m], offsets int64[n + 1])``.

    Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``: sorted and duplicate-free when
    ``unique`` (a set), else in text order with repeats (a multiset, for weighted Jaccard).

    >>> h, off = shingle_batch(["a b c", "a b"], Shingling("word", 2))
    >>> off.tolist()
    [0, 2, 3]
    """
    data, offsets = encode_texts(texts, shingling)
    return shingle_texts_kernel(data, offsets, CHAR_CLASS, _kind_code(shingling), shingling.n,
                                shingling.strip_punctuation, unique)


def shingle(text: str, shingling: Shingling = Shingling(), *, unique: bool = True) -> np.ndarray:
    """The shingle hashes of one text (see :func:`shingle_batch`).

    >>> from neardup._hash import hash_str
    >>> shingle("Jack London traveled", Shingling("word", 2)).tolist() == sorted(
    ...     [hash_str("jack london"), hash_str("london traveled")])
    True
    """
    return shingle_batch([text], shingling, unique=unique)[0]
