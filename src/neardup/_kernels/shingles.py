"""Shingling kernels: a text becomes the set of its word or character n-grams, each hashed to 64 bits.

A word n-gram of tokens t1..tn is hashed as the UTF-8 string ``"t1 t2 ... tn"`` (tokens joined
by one space) with :func:`neardup._kernels.hashing.hash_bytes`; a character n-gram as the UTF-8
string of its n characters, cut from the normalized character stream (see
:mod:`neardup.text.normalize`). So a text's shingle set equals the hashes of the shingle strings
one would write by hand, and :meth:`~neardup.methods.minhash.sketch.MinHasher.sign_sets` on those
strings gives the same signature as :meth:`~neardup.methods.minhash.sketch.MinHasher.sign` on the text.

A document with fewer than n tokens (or characters) but at least one yields a single shingle of
all of them, so that short documents still compare; an empty document yields the empty set.

Kernels take each document in two passes and make no Python object per token or shingle: the
first copies the normalized units into a buffer (tokens each followed by one space, or the
character stream; ASCII through lookup tables, or 64 bytes a step with AVX-512 VBMI2 or AVX2), the second
hashes every run of n units, vectorized across shingles (:func:`doc_hashes`). The hashes are
then folded into a MinHash or OPH signature (:mod:`neardup._kernels.minhash`,
:mod:`neardup._kernels.oph`) or a SimHash fingerprint (:mod:`neardup._kernels.simhash`), or
written out (:func:`shingle_words_kernel`, :func:`shingle_chars_kernel`, made sets by
:func:`unique_rows`). The Python side, with the settings
(:class:`~neardup.text.shingles.Shingling`) and the encoding of texts to UTF-8, is
:mod:`neardup.text.shingles`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .charclass import CHAR_CLASS, IDEOGRAPH, IGNORE, OTHER, PUNCT, SPACE, SYLLABLE, WORD
from .hashing import P1, P2, SEED, fmix64, rotl64
from .intrinsics import STEP64, ascii64, chars64, chars64_pos, hash8_short, words64

WORD_KIND, CHAR_KIND = 0, 1


LOWER_ASCII = 2  # flag on the kind code: the kernel lower-cases ASCII A-Z itself


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


@nb.njit(cache=True, nogil=True)
def lower_ascii(data):
    """A copy of the UTF-8 bytes ``data`` with ASCII A-Z lower-cased (other bytes as they are):
    turns :func:`~neardup.text.shingles.encode_for_sketch`'s bytes into
    :func:`~neardup.text.shingles.encode_texts`' when the shingling folds case."""
    out = np.empty_like(data)
    for i in range(data.shape[0]):
        c = data[i]
        out[i] = c + np.uint8(32) * np.uint8(np.uint8(c - np.uint8(65)) < np.uint8(26))
    return out


@nb.njit(cache=True, nogil=True)
def lower_ascii_inplace(data):
    """:func:`lower_ascii` in place (``data`` writable): no copy of a large text."""
    for i in range(data.shape[0]):
        c = data[i]
        data[i] = c + np.uint8(32) * np.uint8(np.uint8(c - np.uint8(65)) < np.uint8(26))


@nb.njit(inline="always", cache=True)
def decode(data, i, end):
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
    """``neardup._kernels.hashing.hash_span_words(words, start, end)`` (same value), for the kernels below; see
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
    return (
        np.uint64(buf[j])
        | (np.uint64(buf[j + np.uint64(1)]) << np.uint64(8))
        | (np.uint64(buf[j + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(buf[j + np.uint64(3)]) << np.uint64(24))
        | (np.uint64(buf[j + np.uint64(4)]) << np.uint64(32))
        | (np.uint64(buf[j + np.uint64(5)]) << np.uint64(40))
        | (np.uint64(buf[j + np.uint64(6)]) << np.uint64(48))
        | (np.uint64(buf[j + np.uint64(7)]) << np.uint64(56))
    )


@nb.njit(cache=True, nogil=True)
def _hash_fixed(buf, m, n, out, at):
    """``out[at + s] = hash_span(buf, s, s + n)`` for s in 0..m-1: every n-byte window.

    Each loop handles all windows in lockstep, one 8-byte word of each at a time, so it has no
    data-dependent branch and vectorizes (8 windows a step with AVX-512). For n <= 8 (character
    n-grams of one byte a character) the whole hash is one step, 8 windows at a time from one
    load (:func:`~neardup._kernels.intrinsics.hash8_short`). Reads up to 8 bytes past the last window.
    """
    full = n >> 3
    rem = n & 7
    nn = np.uint64(n)
    mask = (np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1)
    if full == 0 or (full == 1 and rem == 0):
        mask = mask if full == 0 else np.uint64(0xFFFFFFFFFFFFFFFF)
        s = 0
        while s + 8 <= m:
            hash8_short(buf, s, mask, nn, out, at)
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
    when ``lowbit`` is 32, see :func:`~neardup.text.shingles.encode_for_sketch`), one load that
    gives both the byte to store and whether it is part of a token. With AVX-512 VBMI2 or AVX2
    (:data:`~neardup._kernels.intrinsics.STEP64`), ASCII goes 64 bytes a step
    (:func:`~neardup._kernels.intrinsics.words64`; 2.7x the byte loop's speed under
    ``NUMBA_CPU_NAME=haswell``): all of an ASCII text, and every 64-byte stretch of ASCII in others.
    """
    doc = data[start:end]
    size = doc.shape[0]
    prev = 0  # a token is open (its trailing space is not written yet)
    blen = 0
    nt = 0
    lut = _WORD_LUT[np.int64(lowbit != 0)]
    if _is_ascii(doc):
        i = 0
        if STEP64:
            while i + 64 <= size:
                blen, nt, prev = words64(doc, i, buf, tok, blen, nt, prev, lowbit)
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
            if STEP64 and i >= stop:
                if i + 64 <= size and ascii64(doc, i):
                    blen, nt, prev = words64(doc, i, buf, tok, blen, nt, prev, lowbit)
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
            cp, j = decode(doc, i, size)
            cls = table[cp]
            if cls == WORD or cls == IDEOGRAPH or cls == SYLLABLE:
                if cls != WORD and prev:  # an ideograph or a syllable starts a token
                    buf[np.uint64(blen)] = 32
                    blen += 1
                if cls != WORD or not prev:
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


LOCKSTEP_WORDS = 5


HASH_BLOCK = 256


@nb.njit(cache=True, nogil=True)
def _hash_starts(buf, words, pos, m, n, cut, out, at, scratch):
    """``out[at + s] = hash_span(buf, pos[s], pos[s + n] - cut)`` for s in 0..m-1: the shingles
    of n units whose starts are ``pos`` (``cut`` 1 drops a word shingle's trailing space).

    nd64 is sequential within a span but independent across spans, so spans are hashed in
    lockstep, in blocks of :data:`HASH_BLOCK`: first each span's length and its first
    :data:`LOCKSTEP_WORDS` unaligned 8-byte words are copied into ``scratch`` (one load and
    one store each), then one loop per word position folds that word into every span's state,
    a span that has run out keeping its state through a select. Those loops read contiguous
    rows and have no data-dependent branch, so they vectorize (8 spans a step with AVX-512);
    gathering straight from ``buf`` does not, as LLVM cannot rule out that ``out`` overlaps it.
    Spans longer than 40 bytes (0.3% of the benchmark corpus' word 5-grams) finish one by one. Every span
    must be non-empty; reads stay inside ``buf``. ``scratch``: uint64[LOCKSTEP_WORDS + 1, HASH_BLOCK].
    """
    lim = buf.shape[0] - 8
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    lens = scratch[0]
    for b0 in range(0, m, HASH_BLOCK):
        bm = min(HASH_BLOCK, m - b0)
        p = pos[b0:]
        o = out[at + b0 : at + b0 + bm]
        longest = 0
        for s in range(bm):
            ln = _at(p, s + n) - cut - _at(p, s)
            lens[s] = np.uint64(ln)
            longest = max(longest, ln)
        steps = min((longest + 7) >> 3, LOCKSTEP_WORDS)
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
        if longest > 8 * LOCKSTEP_WORDS:
            for s in range(bm):
                if lens[s] > 8 * LOCKSTEP_WORDS:
                    st = _at(p, s)
                    o[s] = _span_steps(words, st + 8 * LOCKSTEP_WORDS, st + np.int64(lens[s]), o[s])
        for s in range(bm):
            o[s] = fmix64(o[s] ^ lens[s])


@nb.njit(inline="always", cache=True)
def _or_new(scratch):
    """``scratch`` for :func:`_hash_starts`, or a new one when the caller brought none."""
    if scratch is None:
        return np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    return scratch


@nb.njit(inline="always", cache=True)
def _char_ascii_plain(doc, buf, lut, lowbit):
    """The character stream of an all-ASCII ``doc`` without punctuation stripping into ``buf``;
    returns its length.

    ``lut`` (:data:`_CHAR_LUT` row) maps every separator byte to a space and, when lowering,
    A-Z to a-z, so that the stream is the mapped bytes with every run of spaces cut to one and
    none at either end. Each byte is stored, and the length advances unless the byte is a
    space after a space: one store and one add a byte, where the general loop carries a
    pending-space flag through a longer chain of operations. With AVX-512 VBMI2 or AVX2, 64
    bytes a step (:func:`~neardup._kernels.intrinsics.chars64`; ``lowbit`` 32 lower-cases as the
    second row of ``lut`` does; 4x the byte loop's speed under ``NUMBA_CPU_NAME=haswell``).
    """
    size = doc.shape[0]
    i = 0
    while i < size and lut[_at(doc, i)] == 32:
        i += 1
    blen = 0
    prev = 0
    if STEP64:
        while i + 64 <= size:
            blen, prev = chars64(doc, i, buf, blen, prev, lowbit)
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
    """The character stream of ``data[start:end]`` (see :func:`neardup.text.normalize.char_stream`) in ``buf``.

    Returns (characters, length): character c is ``buf[pos[c]:pos[c + 1]]`` (``pos[characters]``
    is the length), or ``buf[c]`` when characters == length (all one byte; ``pos`` is then not
    written). ASCII bytes are handled without a branch, as in :func:`_word_tokens`; ASCII A-Z
    are lower-cased on the way when ``lowbit`` is 32 (see
    :func:`~neardup.text.shingles.encode_for_sketch`). Without punctuation stripping and with
    AVX-512 VBMI2 or AVX2, ASCII goes 64 bytes a step (:func:`_char_ascii_plain`,
    :func:`~neardup._kernels.intrinsics.chars64_pos`).
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
            if STEP64 and not strip and nch > 0 and i >= stop:
                if i + 64 <= size and ascii64(doc, i):
                    # the step writes a separator's space at once, this loop before the next
                    # character: write a pending one first, and take back a trailing one
                    pos[np.uint64(nch)] = blen
                    buf[np.uint64(blen)] = 32
                    blen += pending
                    nch += pending
                    b0 = blen
                    blen, pending = chars64_pos(doc, i, buf, pos, blen, nch, pending, lowbit)
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
            cp, j = decode(doc, i, size)
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
def doc_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch=None):
    """The shingle hashes of ``data[start:end]`` in text order, written to ``out[at:]``; returns
    how many. ``buf`` (viewed as ``words``) must hold twice the text plus 24 bytes, ``pos`` its
    length plus 2 entries (:func:`doc_scratch` makes both); ``scratch`` is uint64[LOCKSTEP_WORDS + 1,
    HASH_BLOCK] for :func:`_hash_starts` (made when needed if not given: callers with many
    documents bring one).

    Two passes per document: the text is first normalized into ``buf`` (tokens each followed
    by a space, or the character stream) with the start of every unit in ``pos``; then every
    run of n units is hashed from ``buf``, many shingles at a time. Splitting the passes keeps
    both loops free of hard-to-predict branches, which is what a single streaming pass lost
    most of its time to. Word shingles are :func:`word_hashes`, character shingles
    :func:`char_hashes`: a kernel that knows its kind calls one of them, and compiles half.
    """
    if kind & 1 == WORD_KIND:
        return word_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch)
    return char_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch)


@nb.njit(cache=True, nogil=True)
def word_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch=None):
    """:func:`doc_hashes` of a word kind (``strip`` is not used)."""
    lowbit = np.uint8(32) if kind & LOWER_ASCII else np.uint8(0)
    units, blen = _word_tokens(data, start, end, table, buf, pos, lowbit)
    if units == 0:
        return 0
    if units < n:
        out[np.uint64(at)] = _hash_span(words, 0, blen)
        return 1
    _hash_starts(buf, words, pos, units - n + 1, n, 1, out, at, _or_new(scratch))
    return units - n + 1


@nb.njit(cache=True, nogil=True)
def char_hashes(data, start, end, table, kind, n, strip, buf, words, pos, out, at, scratch=None):
    """:func:`doc_hashes` of a character kind."""
    lowbit = np.uint8(32) if kind & LOWER_ASCII else np.uint8(0)
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
def doc_scratch(starts, ends):
    """Scratch for :func:`doc_hashes` sized for the longest text: (buf, words, unit starts)."""
    longest = 0
    for d in range(starts.shape[0]):
        longest = max(longest, ends[d] - starts[d])
    buf = np.zeros(((2 * longest + 24) // 8) * 8, dtype=np.uint8)
    return buf, buf.view(np.uint64), np.empty(longest + 2, dtype=np.int64)


@nb.njit(cache=True, nogil=True)
def shingle_words_kernel(data, offsets, table, kind, n, strip):
    """Word shingle hashes (``kind & 1 == WORD_KIND``) of every document as CSR (hashes,
    doc_offsets), in text order with repeats (:func:`unique_rows` makes them sets).
    :func:`shingle_chars_kernel` is the same for character shingles: a kernel per kind compiles
    half the shingling code."""
    ndoc = offsets.shape[0] - 1
    buf, words, units = doc_scratch(offsets[:-1], offsets[1:])
    out = np.empty(offsets[ndoc] - offsets[0] + ndoc, dtype=np.uint64)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    pos = 0
    for d in range(ndoc):
        pos += word_hashes(
            data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, units, out, pos, scratch
        )
        doc_off[d + 1] = pos
    return out[:pos].copy(), doc_off


@nb.njit(cache=True, nogil=True)
def shingle_chars_kernel(data, offsets, table, kind, n, strip):
    """:func:`shingle_words_kernel` for character shingles (``kind & 1 == CHAR_KIND``)."""
    ndoc = offsets.shape[0] - 1
    buf, words, units = doc_scratch(offsets[:-1], offsets[1:])
    out = np.empty(offsets[ndoc] - offsets[0] + ndoc, dtype=np.uint64)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    pos = 0
    for d in range(ndoc):
        pos += char_hashes(
            data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, units, out, pos, scratch
        )
        doc_off[d + 1] = pos
    return out[:pos].copy(), doc_off


@nb.njit(cache=True, nogil=True)
def unique_rows(values, offsets):
    """Row d of the CSR ``(values, offsets)``, ``values[offsets[d]:offsets[d + 1]]``, sorted with
    its repeats dropped, for every d: as new CSR arrays (``values`` is overwritten).

    A kernel of its own, not a flag of the shingling kernels, which compile faster without the
    sort (and SimHash, which never asks for sets, does not compile it at all)."""
    ndoc = offsets.shape[0] - 1
    out_off = np.zeros(ndoc + 1, dtype=np.int64)
    pos = 0  # rows are compacted towards the front: pos <= offsets[d] throughout
    for d in range(ndoc):
        lo = offsets[d]
        c = offsets[d + 1] - lo
        if c > 1:
            s = np.sort(values[lo : lo + c])
            values[pos] = s[0]
            k = 1
            for q in range(1, c):
                if s[q] != s[q - 1]:
                    values[pos + k] = s[q]
                    k += 1
        else:
            k = c
            if c:
                values[pos] = values[lo]
        pos += k
        out_off[d + 1] = pos
    return values[:pos].copy(), out_off
