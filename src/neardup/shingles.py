"""Shingling: a text becomes the set of its word or character n-grams, each hashed to 64 bits.

A word n-gram of tokens t1..tn is hashed as the UTF-8 string ``"t1 t2 ... tn"`` (tokens joined
by one space) with :func:`neardup._hash.hash_bytes`; a character n-gram as the UTF-8 string of
its n characters, cut from the normalized character stream (see :mod:`neardup.text`). So a text's
shingle set equals the hashes of the shingle strings one would write by hand, and
``MinHasher.sign_sets`` on those strings gives the same signature as ``MinHasher.sign`` on the text.

A document with fewer than n tokens (or characters) but at least one yields a single shingle of
all of them, so that short documents still compare; an empty document yields the empty set.

Kernels take each document in two passes and make no Python object per token or shingle: the
first copies the normalized units into a buffer (tokens each followed by one space, or the
character stream; ASCII through lookup tables, or 64 bytes a step with AVX-512 VBMI2), the second
hashes every run of n units (vectorized across shingles). The hashes are then folded into a
MinHash or OPH signature, or written out.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal, Sequence

import numba as nb
import numpy as np

from ._hash import P1, P2, SEED, fmix64, rotl64
from ._simd import SIMD64, _ascii64, _chars64, _chars64_pos, _hash8_short, _words64
from .oph import densify, oph_fold_many
from .text import CHAR_CLASS, IDEOGRAPH, IGNORE, OTHER, PUNCT, SPACE, WORD, normalize

_WORD_KIND, _CHAR_KIND = 0, 1
_LOWER_ASCII = 2  # flag on the kind code: the kernel lower-cases ASCII A-Z itself


def _ascii_luts(keep: tuple[int, ...]) -> np.ndarray:
    """uint8[2, 128]: ASCII bytes whose class is in ``keep`` as they are (row 0) or lower-cased
    (row 1), every other byte as a space."""
    lut = np.full((2, 128), 32, dtype=np.uint8)
    for c in range(128):
        if CHAR_CLASS[c] in keep:
            lut[0, c] = c
            lut[1, c] = ord(chr(c).lower())
    return lut


_CHAR_LUT = _ascii_luts((WORD, PUNCT, IDEOGRAPH, IGNORE))
"""Character streams: separators (classes SPACE and OTHER) become spaces."""
_WORD_LUT = _ascii_luts((WORD,))
"""Word tokens: every byte that is not part of a word becomes a space."""


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
    """Normalize texts (NFKC, case folding) and pack their UTF-8 bytes as (data, offsets).

    An ASCII text is its own NFKC form and case-folds to its ASCII lower case, so it is encoded
    as it is and lower-cased with ``bytes.lower`` (a third of the time of ``str.casefold``);
    other texts go through :func:`neardup.text.normalize`. Same bytes either way.
    """
    nfkc, casefold = shingling.nfkc, shingling.casefold
    if casefold:
        encoded = [t.encode("ascii").lower() if t.isascii()
                   else normalize(t, nfkc=nfkc, casefold=True).encode("utf-8", "surrogatepass") for t in texts]
    else:
        encoded = [t.encode("ascii") if t.isascii()
                   else normalize(t, nfkc=nfkc, casefold=False).encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


_ASCII_BYTES = bytes(range(128))
_ENCODE_CHUNK = 256


def _encode_lean(text: str, nfkc: bool, casefold: bool) -> bytes:
    """:func:`neardup.text.normalize`'d UTF-8 bytes of a non-ASCII text, up to ASCII case.

    ``str.casefold`` costs about 4 ns a character, ASCII ones included. It acts on each
    character alone, and on ASCII it is lower-casing, which the kernels do; so when every
    non-ASCII character of the text folds to itself (the common case: accented lower-case
    letters, quotes, dashes), the NFKC form is encoded as it is. The non-ASCII characters are
    found by deleting the ASCII bytes from the encoding (``bytes.translate``, C speed).
    """
    if nfkc:
        text = unicodedata.normalize("NFKC", text)
    data = text.encode("utf-8", "surrogatepass")
    if casefold:
        rest = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        if rest.casefold() != rest:
            data = text.casefold().encode("utf-8", "surrogatepass")
    return data


@nb.njit(cache=True, nogil=True)
def lower_ascii(data):
    """A copy of the UTF-8 bytes ``data`` with ASCII A-Z lower-cased (other bytes as they are):
    turns :func:`encode_for_sketch`'s bytes into :func:`encode_texts`' when the shingling folds case."""
    out = np.empty_like(data)
    for i in range(data.shape[0]):
        c = data[i]
        out[i] = c + np.uint8(32) * np.uint8(np.uint8(c - np.uint8(65)) < np.uint8(26))
    return out


def encode_for_sketch(texts: Sequence[str], shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_texts` for the shingling kernels only: the bytes may keep ASCII upper case.

    The kernels lower-case ASCII A-Z themselves when the kind code carries ``_LOWER_ASCII``
    (:func:`_kind_code` sets it when the shingling folds case), as they copy each byte, so the
    shingles are those of :func:`encode_texts`' bytes. That saves ``bytes.lower`` on ASCII
    texts and most ``str.casefold`` calls on the others (:func:`_encode_lean`), both with the
    GIL held; runs of consecutive ASCII texts are joined as one string and encoded with one
    call, not one per text. Texts go in chunks of :data:`_ENCODE_CHUNK`, each looked at once
    for its length and ASCII-ness and then joined while its string objects are still in cache
    and TLB (touching 20,000 cold string objects costs about 150 ns each here). The bytes
    differ from :func:`encode_texts`' in ASCII case only, so this must not feed anything that
    hashes them raw (the exact pre-pass).
    """
    if not isinstance(texts, list):
        texts = list(texts)
    n = len(texts)
    nfkc, casefold = shingling.nfkc, shingling.casefold
    lengths = np.empty(n, dtype=np.int64)
    pieces = []
    for a in range(0, n, _ENCODE_CHUNK):
        part = texts[a:a + _ENCODE_CHUNK]
        others = []
        for i, t in enumerate(part):
            lengths[a + i] = len(t)
            if not t.isascii():
                others.append(i)
        done = 0
        for i in others:
            if i > done:
                pieces.append("".join(part[done:i]).encode("ascii"))
            b = _encode_lean(part[i], nfkc, casefold)
            pieces.append(b)
            lengths[a + i] = len(b)
            done = i + 1
        if done < len(part):
            pieces.append("".join(part[done:]).encode("ascii"))
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(data, dtype=np.uint8), offsets


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
def _span_steps(words, start, end, h):
    """nd64's word steps over ``buf[start:end]`` (``words`` its uint64 view) from state ``h``,
    without the finaliser.

    Indices are unsigned (numba then emits no negative-index fix-up), the unaligned words come
    from two loads and a funnel shift whose shift-by-64 case is split in two steps, and the
    trailing partial word is folded with a select rather than a branch. It reads up to 16 bytes
    past ``end``, so the buffer must extend that far.
    """
    n = end - start
    st = np.uint64(start)
    q = st >> np.uint64(3)
    sh = (st & np.uint64(7)) << np.uint64(3)
    back = np.uint64(63) - sh
    lo = words[q]
    full = n >> 3
    for m in range(full):
        hi = words[q + np.uint64(m + 1)]
        h = rotl64(h ^ (((lo >> sh) | ((hi << np.uint64(1)) << back)) * P1), 31) * P2
        lo = hi
    rem = n & 7
    hi = words[q + np.uint64(full + 1)]
    w = ((lo >> sh) | ((hi << np.uint64(1)) << back)) & ((np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1))
    step = rotl64(h ^ (w * P1), 31) * P2
    return step if rem else h


@nb.njit(inline="always", cache=True)
def _hash_span(words, start, end):
    """``neardup._hash.hash_span_words(words, start, end)`` (same value), for the kernels below; see
    :func:`_span_steps`."""
    return fmix64(_span_steps(words, start, end, SEED) ^ np.uint64(end - start))


@nb.njit(inline="always", cache=True)
def _at(arr, i):
    """``arr[i]`` for an index known to be >= 0, without numba's negative-index fix-up."""
    return arr[np.uint64(i)]


@nb.njit(inline="always", cache=True)
def _is_ascii(doc):
    acc = np.uint8(0)
    for i in range(doc.shape[0]):  # vectorized: a few hundredths of a ns a byte
        acc |= doc[i]
    return acc < 0x80


@nb.njit(inline="always", cache=True)
def _lower(c, lowbit):
    """ASCII byte ``c`` lower-cased when ``lowbit`` is 32 (A-Z get bit 5), unchanged when 0."""
    return c | (lowbit & np.uint8(-np.int64(np.uint64(c) - np.uint64(65) < np.uint64(26))))


@nb.njit(inline="always", cache=True)
def _le8(buf, i):
    """The 8 bytes ``buf[i:i + 8]`` as a little-endian uint64.

    Written as byte loads so that a loop over consecutive ``i`` vectorizes (LLVM turns it into
    one unaligned 8-byte gather per lane)."""
    j = np.uint64(i)
    return (np.uint64(buf[j]) | (np.uint64(buf[j + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(buf[j + np.uint64(2)]) << np.uint64(16))
            | (np.uint64(buf[j + np.uint64(3)]) << np.uint64(24))
            | (np.uint64(buf[j + np.uint64(4)]) << np.uint64(32))
            | (np.uint64(buf[j + np.uint64(5)]) << np.uint64(40))
            | (np.uint64(buf[j + np.uint64(6)]) << np.uint64(48))
            | (np.uint64(buf[j + np.uint64(7)]) << np.uint64(56)))


@nb.njit(cache=True, nogil=True)
def _hash_fixed(buf, m, n, out, at):
    """``out[at + s] = hash_span(buf, s, s + n)`` for s in 0..m-1: every n-byte window.

    Each loop handles all windows in lockstep, one 8-byte word of each at a time, so it has no
    data-dependent branch and vectorizes (8 windows a step with AVX-512). For n <= 8 (character
    n-grams of one byte a character) the whole hash is one step, 8 windows at a time from one
    load (:func:`_hash8_short`). Reads up to 8 bytes past the last window.
    """
    full = n >> 3
    rem = n & 7
    nn = np.uint64(n)
    mask = (np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1)
    if full == 0 or (full == 1 and rem == 0):
        mask = mask if full == 0 else np.uint64(0xFFFFFFFFFFFFFFFF)
        s = 0
        while s + 8 <= m:
            _hash8_short(buf, s, mask, nn, out, at)
            s += 8
        for s in range(s, m):
            w = _le8(buf, s) & mask
            out[np.uint64(at + s)] = fmix64((rotl64(SEED ^ (w * P1), 31) * P2) ^ nn)
        return
    for s in range(m):
        out[np.uint64(at + s)] = rotl64(SEED ^ (_le8(buf, s) * P1), 31) * P2
    for q in range(1, full):
        for s in range(m):
            h = out[np.uint64(at + s)]
            out[np.uint64(at + s)] = rotl64(h ^ (_le8(buf, s + 8 * q) * P1), 31) * P2
    if rem:
        for s in range(m):
            h = out[np.uint64(at + s)]
            w = _le8(buf, s + 8 * full) & mask
            out[np.uint64(at + s)] = rotl64(h ^ (w * P1), 31) * P2
    for s in range(m):
        out[np.uint64(at + s)] = fmix64(out[np.uint64(at + s)] ^ nn)


@nb.njit(cache=True, nogil=True)
def _word_tokens(data, start, end, table, buf, tok, lowbit=0):
    """Word tokens of ``data[start:end]`` into ``buf``, each followed by one space.

    Returns (tokens, length): token t starts at ``tok[t]``; ``tok[tokens]`` is set so that
    ``buf[tok[t]:tok[t + 1] - 1]`` is token t for every t, and ``length`` is that of the tokens
    joined by single spaces, ``buf[:length]``. ASCII bytes are handled without a branch (one
    unconditional store of the byte or a space, counters advanced by 0 or 1), so token
    boundaries cost no mispredicted branch; other bytes are decoded one code point at a time.
    ASCII bytes go through :data:`_WORD_LUT` (non-word bytes to a space, and A-Z lower-cased
    when ``lowbit`` is 32, see :func:`encode_for_sketch`), one load that gives both the byte to
    store and whether it is part of a token. With AVX-512 VBMI2, ASCII goes 64 bytes a step
    (:func:`_words64`): all of an ASCII text, and every 64-byte stretch of ASCII in others.
    """
    doc = data[start:end]
    size = doc.shape[0]
    prev = 0  # a token is open (its trailing space is not written yet)
    blen = 0
    nt = 0
    lut = _WORD_LUT[np.int64(lowbit != 0)]
    if _is_ascii(doc):
        i = 0
        if SIMD64:
            while i + 64 <= size:
                blen, nt, prev = _words64(doc, i, buf, tok, blen, nt, prev, lowbit)
                i += 64
        for i in range(i, size):
            v = lut[_at(doc, i)]
            w = np.int64(v != 32)
            buf[np.uint64(blen)] = v
            tok[np.uint64(nt)] = blen
            nt += w & (prev ^ 1)
            blen += w | prev
            prev = w
    else:
        i = 0
        stop = 0  # bytes before it go one by one (a chunk that is not all ASCII)
        while i < size:
            if SIMD64 and i >= stop:
                if i + 64 <= size and _ascii64(doc, i):
                    blen, nt, prev = _words64(doc, i, buf, tok, blen, nt, prev, lowbit)
                    i += 64
                    continue
                stop = i + 64
            c = _at(doc, i)
            if c < 0x80:
                v = lut[c]
                w = np.int64(v != 32)
                buf[np.uint64(blen)] = v
                tok[np.uint64(nt)] = blen
                nt += w & (prev ^ 1)
                blen += w | prev
                prev = w
                i += 1
                continue
            cp, j = _decode(doc, i, size)
            cls = table[cp]
            if cls == WORD or cls == IDEOGRAPH:
                if cls == IDEOGRAPH and prev:
                    buf[np.uint64(blen)] = 32
                    blen += 1
                if cls == IDEOGRAPH or not prev:
                    tok[np.uint64(nt)] = blen
                    nt += 1
                for q in range(i, j):
                    buf[np.uint64(blen)] = _at(doc, q)
                    blen += 1
                prev = 1
                if cls == IDEOGRAPH:  # a token of its own
                    buf[np.uint64(blen)] = 32
                    blen += 1
                    prev = 0
            elif cls != IGNORE and prev:
                buf[np.uint64(blen)] = 32
                blen += 1
                prev = 0
            i = j
    tok[np.uint64(nt)] = blen + prev
    return nt, blen + prev - 1


_LOCKSTEP_WORDS = 5
_HASH_BLOCK = 256


@nb.njit(cache=True, nogil=True)
def _hash_starts(buf, words, pos, m, n, cut, out, at, scratch):
    """``out[at + s] = hash_span(buf, pos[s], pos[s + n] - cut)`` for s in 0..m-1: the shingles
    of n units whose starts are ``pos`` (``cut`` 1 drops a word shingle's trailing space).

    nd64 is sequential within a span but independent across spans, so spans are hashed in
    lockstep, in blocks of :data:`_HASH_BLOCK`: first each span's length and its first
    :data:`_LOCKSTEP_WORDS` unaligned 8-byte words are copied into ``scratch`` (one load and
    one store each), then one loop per word position folds that word into every span's state,
    a span that has run out keeping its state through a select. Those loops read contiguous
    rows and have no data-dependent branch, so they vectorize (8 spans a step with AVX-512);
    gathering straight from ``buf`` does not, as LLVM cannot rule out that ``out`` overlaps it.
    Spans longer than 40 bytes (0.3% of the benchmark corpus' word 5-grams) finish one by one. Every span
    must be non-empty; reads stay inside ``buf``. ``scratch``: uint64[_LOCKSTEP_WORDS + 1, _HASH_BLOCK].
    """
    lim = buf.shape[0] - 8
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    lens = scratch[0]
    for b0 in range(0, m, _HASH_BLOCK):
        bm = min(_HASH_BLOCK, m - b0)
        p = pos[b0:]
        o = out[at + b0:at + b0 + bm]
        longest = 0
        for s in range(bm):
            ln = _at(p, s + n) - cut - _at(p, s)
            lens[s] = np.uint64(ln)
            longest = max(longest, ln)
        steps = min((longest + 7) >> 3, _LOCKSTEP_WORDS)
        for q in range(steps):
            row = scratch[q + 1]
            for s in range(bm):
                row[s] = _le8(buf, min(_at(p, s) + 8 * q, lim))
        row = scratch[1]
        for s in range(bm):
            w = row[s] & (ones >> (np.uint64(64) - (min(lens[s], np.uint64(8)) << np.uint64(3))))
            o[s] = rotl64(SEED ^ (w * P1), 31) * P2
        for q in range(1, steps):
            row = scratch[q + 1]
            for s in range(bm):
                left = np.int64(lens[s]) - 8 * q
                w = row[s] & (ones >> np.uint64(64 - 8 * max(min(left, 8), 1)))
                h = o[s]
                step = rotl64(h ^ (w * P1), 31) * P2
                o[s] = step if left > 0 else h
        if longest > 8 * _LOCKSTEP_WORDS:
            for s in range(bm):
                if lens[s] > 8 * _LOCKSTEP_WORDS:
                    st = _at(p, s)
                    o[s] = _span_steps(words, st + 8 * _LOCKSTEP_WORDS, st + np.int64(lens[s]), o[s])
        for s in range(bm):
            o[s] = fmix64(o[s] ^ lens[s])


@nb.njit(inline="always", cache=True)
def _or_new(scratch):
    """``scratch`` for :func:`_hash_starts`, or a new one when the caller brought none."""
    if scratch is None:
        return np.empty((_LOCKSTEP_WORDS + 1, _HASH_BLOCK), dtype=np.uint64)
    return scratch


@nb.njit(inline="always", cache=True)
def _char_ascii_plain(doc, buf, lut, lowbit):
    """The character stream of an all-ASCII ``doc`` without punctuation stripping into ``buf``;
    returns its length.

    ``lut`` (:data:`_CHAR_LUT` row) maps every separator byte to a space and, when lowering,
    A-Z to a-z, so that the stream is the mapped bytes with every run of spaces cut to one and
    none at either end. Each byte is stored, and the length advances unless the byte is a
    space after a space: one store and one add a byte, where the general loop carries a
    pending-space flag through a longer chain of operations. With AVX-512 VBMI2, 64 bytes a
    step (:func:`_chars64`; ``lowbit`` 32 lower-cases as the second row of ``lut`` does).
    """
    size = doc.shape[0]
    i = 0
    while i < size and lut[_at(doc, i)] == 32:
        i += 1
    blen = 0
    prev = 0
    if SIMD64:
        while i + 64 <= size:
            blen, prev = _chars64(doc, i, buf, blen, prev, lowbit)
            i += 64
    for j in range(i, size):
        v = lut[_at(doc, j)]
        sp = np.int64(v == 32)
        buf[np.uint64(blen)] = v
        blen += 1 - (sp & prev)
        prev = sp
    return blen - prev


@nb.njit(inline="always", cache=True)
def _char_ascii(c, table, strip, buf, pos, pending, blen, nch, lowbit):
    cls = table[c]
    sp = np.int64(cls == SPACE or cls == OTHER)
    keep = (sp ^ 1) & np.int64(not (strip and cls == PUNCT))
    es = keep & pending
    pos[np.uint64(nch)] = blen
    buf[np.uint64(blen)] = 32
    nch += es
    blen += es
    pos[np.uint64(nch)] = blen
    buf[np.uint64(blen)] = _lower(c, lowbit)
    nch += keep
    blen += keep
    pending = (keep ^ 1) & ((sp & min(nch, 1)) | ((sp ^ 1) & pending))
    return pending, blen, nch


@nb.njit(cache=True, nogil=True)
def _char_units(data, start, end, table, strip, buf, pos, lowbit=0):
    """The character stream of ``data[start:end]`` (see :func:`neardup.text.char_stream`) in ``buf``.

    Returns (characters, length): character c is ``buf[pos[c]:pos[c + 1]]`` (``pos[characters]``
    is the length), or ``buf[c]`` when characters == length (all one byte; ``pos`` is then not
    written). ASCII bytes are handled without a branch, as in :func:`_word_tokens`; ASCII A-Z
    are lower-cased on the way when ``lowbit`` is 32 (see :func:`encode_for_sketch`). Without
    punctuation stripping and with AVX-512 VBMI2, ASCII goes 64 bytes a step
    (:func:`_char_ascii_plain`, :func:`_chars64_pos`).
    """
    doc = data[start:end]
    size = doc.shape[0]
    pending = 0  # a space is due before the next kept character
    blen = 0
    nch = 0
    if _is_ascii(doc):  # every character is one byte: no need to record where each starts
        if not strip:
            blen = _char_ascii_plain(doc, buf, _CHAR_LUT[np.int64(lowbit != 0)], lowbit)
            return blen, blen
        for i in range(size):
            c = doc[i]
            cls = table[c]
            sp = np.int64(cls == SPACE or cls == OTHER)
            keep = (sp ^ 1) & np.int64(not (strip and cls == PUNCT))
            es = keep & pending
            buf[np.uint64(blen)] = 32
            blen += es
            buf[np.uint64(blen)] = _lower(c, lowbit)
            blen += keep
            pending = (keep ^ 1) & ((sp & min(blen, 1)) | ((sp ^ 1) & pending))
        return blen, blen
    else:
        i = 0
        stop = 0  # as in _word_tokens
        while i < size:
            if SIMD64 and not strip and nch > 0 and i >= stop:
                if i + 64 <= size and _ascii64(doc, i):
                    # the step writes a separator's space at once, this loop before the next
                    # character: write a pending one first, and take back a trailing one
                    pos[np.uint64(nch)] = blen
                    buf[np.uint64(blen)] = 32
                    blen += pending
                    nch += pending
                    b0 = blen
                    blen, pending = _chars64_pos(doc, i, buf, pos, blen, nch, pending, lowbit)
                    nch += blen - b0 - pending
                    blen -= pending
                    i += 64
                    continue
                stop = i + 64
            c = _at(doc, i)
            if c < 0x80:
                pending, blen, nch = _char_ascii(c, table, strip, buf, pos, pending, blen, nch, lowbit)
                i += 1
                continue
            cp, j = _decode(doc, i, size)
            cls = table[cp]
            if cls == IGNORE or (cls == PUNCT and strip):
                pass
            elif cls == SPACE or cls == OTHER:
                pending = min(nch, 1)
            else:
                if pending:
                    pos[np.uint64(nch)] = blen
                    buf[np.uint64(blen)] = 32
                    blen += 1
                    nch += 1
                    pending = 0
                pos[np.uint64(nch)] = blen
                for q in range(i, j):
                    buf[np.uint64(blen)] = _at(doc, q)
                    blen += 1
                nch += 1
            i = j
    pos[np.uint64(nch)] = blen
    return nch, blen


@nb.njit(cache=True, nogil=True)
def _doc_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch=None):
    """The shingle hashes of ``data[start:end]`` in text order, written to ``out[at:]``; returns
    how many. ``buf`` (viewed as ``words``) must hold twice the text plus 24 bytes, ``pos`` its
    length plus 2 entries (:func:`_scratch` makes both); ``scratch`` is uint64[_LOCKSTEP_WORDS + 1,
    _HASH_BLOCK] for :func:`_hash_starts` (made when needed if not given: callers with many
    documents bring one).

    Two passes per document: the text is first normalized into ``buf`` (tokens each followed
    by a space, or the character stream) with the start of every unit in ``pos``; then every
    run of n units is hashed from ``buf``, many shingles at a time. Splitting the passes keeps
    both loops free of hard-to-predict branches, which is what a single streaming pass lost
    most of its time to.
    """
    lowbit = np.uint8(32) if kind & _LOWER_ASCII else np.uint8(0)
    if kind & 1 == _WORD_KIND:
        units, blen = _word_tokens(data, start, end, table, buf, pos, lowbit)
        if units == 0:
            return 0
        if units < n:
            out[np.uint64(at)] = _hash_span(words, 0, blen)
            return 1
        _hash_starts(buf, words, pos, units - n + 1, n, 1, out, at, _or_new(scratch))
        return units - n + 1
    units, blen = _char_units(data, start, end, table, strip, buf, pos, lowbit)
    if units == 0:
        return 0
    if units < n:
        out[np.uint64(at)] = _hash_span(words, 0, blen)
        return 1
    if units == blen:  # one byte a character
        _hash_fixed(buf, units - n + 1, n, out, at)
    else:
        _hash_starts(buf, words, pos, units - n + 1, n, 0, out, at, _or_new(scratch))
    return units - n + 1


@nb.njit(cache=True, nogil=True)
def _scratch(starts, ends):
    """Scratch for :func:`_doc_hashes` sized for the longest text: (buf, words, unit starts)."""
    longest = 0
    for d in range(starts.shape[0]):
        longest = max(longest, ends[d] - starts[d])
    buf = np.zeros(((2 * longest + 24) // 8) * 8, dtype=np.uint8)
    return buf, buf.view(np.uint64), np.empty(longest + 2, dtype=np.int64)


@nb.njit(inline="always", cache=True)
def fold_minhash(hashes, lo, hi, a, b, acc, sig):
    """Set ``sig`` to the classic MinHash of the element hashes ``hashes[lo:hi]``.

    Slot k is ``min_x ((a_k x + b_k) mod 2**64) >> 32``. As ``v -> v >> 32`` is monotone, this
    is the top half of ``min_x ((a_k x + b_k) mod 2**64)``, so the minimum is taken over the full
    64-bit values in ``acc`` (uint64[K] scratch; vectorized as multiply, add, unsigned min) and
    halved once at the end. Two elements are folded per pass over ``acc``, which halves its
    loads and stores; the multiplies are then what bounds the loop.
    """
    acc[:] = np.uint64(0xFFFFFFFFFFFFFFFF)
    k = acc.shape[0]
    i = lo
    while i + 2 <= hi:
        x0 = hashes[np.uint64(i)]
        x1 = hashes[np.uint64(i + 1)]
        for j in range(k):
            acc[j] = min(acc[j], min(a[j] * x0 + b[j], a[j] * x1 + b[j]))
        i += 2
    if i < hi:
        x0 = hashes[np.uint64(i)]
        for j in range(k):
            acc[j] = min(acc[j], a[j] * x0 + b[j])
    for j in range(k):
        sig[j] = np.uint32(acc[j] >> np.uint64(32))


@nb.njit(cache=True, nogil=True)
def minhash_texts_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """Fill ``sigs[d]`` with the MinHash of the shingles of ``data[starts[d]:ends[d]]`` and
    ``counts[d]`` with how many there were."""
    buf, words, pos = _scratch(starts, ends)
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    scratch = np.empty((_LOCKSTEP_WORDS + 1, _HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        c = _doc_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        fold_minhash(hs, 0, c, a, b, acc, sigs[d])
        counts[d] = c


@nb.njit(cache=True, nogil=True)
def oph_texts_kernel(data, starts, ends, table, kind, n, strip, params, seq, sigs, counts):
    """Fill ``sigs[d]`` with the densified one-permutation MinHash (:mod:`neardup.oph`) of the
    shingles of ``data[starts[d]:ends[d]]`` and ``counts[d]`` with how many there were;
    ``params`` and ``seq`` are :func:`neardup.oph.oph_params` and :func:`~neardup.oph.oph_sequence`."""
    buf, words, pos = _scratch(starts, ends)
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    bins = np.empty(pos.shape[0], dtype=np.uint64)
    values = np.empty(pos.shape[0], dtype=np.uint32)
    orig = np.empty(sigs.shape[1], dtype=np.uint32)
    scratch = np.empty((_LOCKSTEP_WORDS + 1, _HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        c = _doc_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        sig = sigs[d]
        sig[:] = np.uint32(0xFFFFFFFF)
        oph_fold_many(hs, 0, c, params[0], sig, bins, values)
        densify(sig, params[1], params[2], seq, orig)
        counts[d] = c


@nb.njit(cache=True, nogil=True)
def shingle_texts_kernel(data, offsets, table, kind, n, strip, unique):
    """Shingle hashes of every document as CSR (hashes, doc_offsets); sorted and unique if asked."""
    ndoc = offsets.shape[0] - 1
    buf, words, units = _scratch(offsets[:-1], offsets[1:])
    out = np.empty(offsets[ndoc] - offsets[0] + ndoc, dtype=np.uint64)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    scratch = np.empty((_LOCKSTEP_WORDS + 1, _HASH_BLOCK), dtype=np.uint64)
    pos = 0
    for d in range(ndoc):
        c = _doc_hashes(data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, units, out, pos,
                        scratch)
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
    """The kernels' kind argument: word or char, with ``_LOWER_ASCII`` when case is folded (a
    no-op on :func:`encode_texts`' bytes, which hold no A-Z then; needed for
    :func:`encode_for_sketch`'s)."""
    kind = _WORD_KIND if shingling.kind == "word" else _CHAR_KIND
    return kind | _LOWER_ASCII if shingling.casefold else kind


def shingle_batch(texts: Sequence[str], shingling: Shingling = Shingling(), *, unique: bool = True):
    """Shingle hashes of many texts as CSR arrays ``(hashes uint64[m], offsets int64[n + 1])``.

    Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``: sorted and duplicate-free when
    ``unique`` (a set), else in text order with repeats (a multiset, for weighted Jaccard).

    >>> h, off = shingle_batch(["a b c", "a b"], Shingling("word", 2))
    >>> off.tolist()
    [0, 2, 3]
    """
    data, offsets = encode_for_sketch(texts, shingling)
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
