"""Kernels of the repeats job (:mod:`neardup.repeats`): unit hashes, count groups, Bloom
filters, tokens with their character offsets, the LCP array and the marking of repeated spans.

Unit hashes (lines, paragraphs) are 128-bit: two 64-bit hashes of the unit's collapsed bytes,
``nd64`` (:func:`~neardup._kernels.hashing.hash_span`) and a second stream with other constants
(``h = rotl64(h ^ (w * Q1), 29) * Q2`` over 8-byte little-endian words from ``SEED2``, then
``fmix64(h ^ len)``). Token hashes of the span mode are 64-bit: ``h = (h ^ c) * P1`` over the
folded code points, finished by ``fmix64(h ^ n)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import P1, SEED, fmix64, hash_span, rotl64

Q1 = np.uint64(0xD6E8FEB86659FD93)
Q2 = np.uint64(0xA0761D6478BD642F)
SEED2 = np.uint64(0x8EBC6AF09C88C6E3)
SLOW = np.uint32(0xFFFFFFFF)
"""``fold[c]`` of a code point whose normalized form is not one code point (or may compose)."""

WORD, IDEOGRAPH, IGNORE = 1, 2, 5


@nb.njit(inline="always", cache=True)
def _hash2(data, start, end):
    h = SEED2
    i = start
    while i + 8 <= end:
        w = np.uint64(0)
        for b in range(8):
            w |= np.uint64(data[i + b]) << np.uint64(8 * b)
        h = rotl64(h ^ (w * Q1), 29) * Q2
        i += 8
    if i < end:
        w = np.uint64(0)
        b = 0
        while i < end:
            w |= np.uint64(data[i]) << np.uint64(8 * b)
            b += 1
            i += 1
        h = rotl64(h ^ (w * Q1), 29) * Q2
    return fmix64(h ^ np.uint64(end - start))


@nb.njit(inline="always", cache=True)
def _is_space(b):
    return b == 32 or 9 <= b <= 13


@nb.njit(cache=True, nogil=True)
def _collapsed_hash(data, a, b, buf):
    """The two hashes of ``data[a:b]`` with every run of ASCII whitespace collapsed to one space
    and none at either end, and whether that is empty."""
    n = 0
    pend = False
    for k in range(a, b):
        c = data[k]
        if _is_space(c):
            pend = n > 0
            continue
        if pend:
            buf[n] = 32
            n += 1
            pend = False
        buf[n] = c
        n += 1
    return hash_span(buf, 0, n), _hash2(buf, 0, n), n == 0


@nb.njit(cache=True, nogil=True)
def unit_hashes(data, offsets, paragraphs):
    """The units of each document ``data[offsets[d]:offsets[d+1]]`` (normalized UTF-8): its
    lines (split at ``\\n``), or with ``paragraphs`` its maximal runs of non-blank lines, each
    with the blank lines after it (blank lines before the first paragraph are a unit of their
    own). A unit's content is its text with every run of ASCII whitespace (a line break too)
    collapsed to one space and none at either end; a blank unit has none.

    Returns ``(hi, lo, lines, blank, units_per_doc)``: the two 64-bit hashes of each unit's
    content, the number of ``\\n``-separated lines it spans, whether its content is empty, and
    the number of units of every document (units in document order)."""
    n_docs = offsets.shape[0] - 1
    total = offsets[n_docs] - offsets[0]
    cap = total + n_docs + 1
    hi = np.empty(cap, dtype=np.uint64)
    lo = np.empty(cap, dtype=np.uint64)
    lines = np.empty(cap, dtype=np.int32)
    blank = np.empty(cap, dtype=np.bool_)
    per_doc = np.zeros(n_docs, dtype=np.int64)
    buf = np.empty(max(total, 1) + 1, dtype=np.uint8)
    u = 0
    for d in range(n_docs):
        a, b = offsets[d], offsets[d + 1]
        i = a
        ua = a  # first byte of the open unit
        nl = 0  # lines in the open unit
        content = False  # the open unit has a non-blank line
        trail = False  # ... followed by a blank one
        while True:
            j = i
            nonblank = False
            while j < b and data[j] != 10:
                if not _is_space(data[j]):
                    nonblank = True
                j += 1
            if paragraphs and nonblank and (trail or (nl > 0 and not content)):
                hi[u], lo[u], blank[u] = _collapsed_hash(data, ua, i, buf)
                lines[u] = nl
                u += 1
                per_doc[d] += 1
                ua, nl, content, trail = i, 0, False, False
            nl += 1
            if nonblank:
                content = True
            elif content:
                trail = True
            if not paragraphs:
                hi[u], lo[u], blank[u] = _collapsed_hash(data, i, j, buf)
                lines[u] = 1
                u += 1
                per_doc[d] += 1
            if j >= b:
                break
            i = j + 1
        if paragraphs:
            hi[u], lo[u], blank[u] = _collapsed_hash(data, ua, b, buf)
            lines[u] = nl
            u += 1
            per_doc[d] += 1
    return hi[:u].copy(), lo[:u].copy(), lines[:u].copy(), blank[:u].copy(), per_doc


@nb.njit(cache=True, nogil=True)
def count_groups(hi, lo, order):
    """Group the units by their 128-bit hash ``(hi, lo)``: ``order`` sorts ``hi`` stably.
    Returns ``(count, head)``: how many units share each unit's hash, and the first (lowest)
    index among them."""
    n = hi.shape[0]
    count = np.empty(n, dtype=np.int64)
    head = np.empty(n, dtype=np.int64)
    s = 0
    while s < n:
        e = s + 1
        h = hi[order[s]]
        while e < n and hi[order[e]] == h:
            e += 1
        same = True
        for q in range(s + 1, e):
            if lo[order[q]] != lo[order[s]]:
                same = False
                break
        if same:
            for q in range(s, e):
                count[order[q]] = e - s
                head[order[q]] = order[s]
        else:
            idx = order[s:e].copy()
            sub = np.argsort(lo[idx], kind="mergesort")
            r = 0
            while r < e - s:
                t = r + 1
                while t < e - s and lo[idx[sub[t]]] == lo[idx[sub[r]]]:
                    t += 1
                best = idx[sub[r]]
                for q in range(r, t):
                    best = min(best, idx[sub[q]])
                for q in range(r, t):
                    count[idx[sub[q]]] = t - r
                    head[idx[sub[q]]] = best
                r = t
        s = e
    return count, head


@nb.njit(cache=True, nogil=True)
def bloom_add(counters, hi, lo, skip, k):
    """Add every unit not ``skip``-ped to the counting Bloom filter ``counters`` (uint8,
    saturating at 255): the ``k`` cells ``(hi + j * (lo | 1)) mod m``, ``j = 0..k-1``."""
    m = np.uint64(counters.shape[0])
    for u in range(hi.shape[0]):
        if skip[u]:
            continue
        step = lo[u] | np.uint64(1)
        for j in range(k):
            c = (hi[u] + np.uint64(j) * step) % m
            if counters[c] < 255:
                counters[c] += 1


@nb.njit(cache=True, nogil=True)
def bloom_count(counters, hi, lo, k):
    """The count-min estimate of every unit: the least of its ``k`` cells (never below its count)."""
    m = np.uint64(counters.shape[0])
    out = np.empty(hi.shape[0], dtype=np.int64)
    for u in range(hi.shape[0]):
        step = lo[u] | np.uint64(1)
        best = 255
        for j in range(k):
            c = (hi[u] + np.uint64(j) * step) % m
            best = min(best, np.int64(counters[c]))
        out[u] = best
    return out


@nb.njit(cache=True, nogil=True)
def bloom_test_and_set(bits, hi, lo, k):
    """For a plain Bloom filter of bits (``bits``, uint64 words): whether the unit was in it
    (all ``k`` bits set), then set its bits."""
    m = np.uint64(bits.shape[0] * 64)
    step = lo | np.uint64(1)
    found = True
    for j in range(k):
        c = (hi + np.uint64(j) * step) % m
        w = c >> np.uint64(6)
        b = np.uint64(1) << (c & np.uint64(63))
        if bits[w] & b == 0:
            found = False
            bits[w] |= b
    return found


@nb.njit(cache=True, nogil=True)
def word_tokens(cps, offsets, fold, cls, chars):
    """Tokens of each document ``cps[offsets[d]:offsets[d+1]]`` (code points): with ``chars``
    every code point, else the word tokens of :func:`neardup.text.normalize.tokenize` (runs of
    word characters, format characters inside them dropped; an ideograph alone). Returns
    ``(start, end, hash, slow, per_doc)``: character offsets in the document, the hash of the
    folded code points, whether a code point of the token has no one-code-point fold (its hash
    is made again in Python), and the tokens of each document."""
    n_docs = offsets.shape[0] - 1
    cap = offsets[n_docs] - offsets[0] + 1
    start = np.empty(cap, dtype=np.int32)
    end = np.empty(cap, dtype=np.int32)
    hs = np.empty(cap, dtype=np.uint64)
    slow = np.zeros(cap, dtype=np.bool_)
    per_doc = np.zeros(n_docs, dtype=np.int64)
    t = 0
    for d in range(n_docs):
        a, b = offsets[d], offsets[d + 1]
        i = a
        while i < b:
            c = cps[i]
            k = cls[c]
            if not chars and k != WORD and k != IDEOGRAPH:
                i += 1
                continue
            j = i + 1
            if not chars and k == WORD:
                while j < b and (cls[cps[j]] == WORD or cls[cps[j]] == IGNORE):
                    j += 1
                while cls[cps[j - 1]] == IGNORE:
                    j -= 1
            h = SEED
            n = 0
            s = False
            for q in range(i, j):
                f = fold[cps[q]]
                if not chars and cls[cps[q]] == IGNORE:
                    continue
                if f == SLOW:
                    s = True
                    f = cps[q]
                h = (h ^ np.uint64(f)) * P1
                n += 1
            start[t] = i - a
            end[t] = j - a
            hs[t] = fmix64(h ^ np.uint64(n))
            slow[t] = s
            t += 1
            per_doc[d] += 1
            i = j
    return start[:t].copy(), end[:t].copy(), hs[:t].copy(), slow[:t].copy(), per_doc


@nb.njit(cache=True, nogil=True)
def hash_codepoints(cps, fold, cls, chars):
    """The token hash of :func:`word_tokens` for one token's normalized code points."""
    h = SEED
    n = 0
    for q in range(cps.shape[0]):
        if not chars and cls[cps[q]] == IGNORE:
            continue
        f = fold[cps[q]]
        if f == SLOW:
            f = cps[q]
        h = (h ^ np.uint64(f)) * P1
        n += 1
    return fmix64(h ^ np.uint64(n))


@nb.njit(cache=True, nogil=True)
def kasai_lcp(s, sa):
    """The LCP array of the suffix array ``sa`` of ``s`` (Kasai et al., 2001), where the
    separator 0 matches nothing: ``lcp[r]`` is the common prefix of suffixes ``sa[r-1]`` and
    ``sa[r]`` that holds no 0 (``lcp[0] = 0``). O(n): the value drops by at most one from the
    suffix at ``p`` to the one at ``p + 1``."""
    n = s.shape[0]
    rank = np.empty(n, dtype=np.int32)
    for r in range(n):
        rank[sa[r]] = r
    lcp = np.zeros(n, dtype=np.int32)
    h = 0
    for p in range(n):
        r = rank[p]
        if r == 0:
            h = 0
            continue
        q = sa[r - 1]
        while p + h < n and q + h < n and s[p + h] == s[q + h] and s[p + h] != 0:
            h += 1
        lcp[r] = h
        if h > 0:
            h -= 1
    return lcp


@nb.njit(cache=True, nogil=True)
def repeat_groups(sa, lcp, doc_of, length):
    """For every position ``p``: ``count[p]``, how many positions start the same run of
    ``length`` tokens without a separator (0 if no such run starts at ``p``: it reaches a
    separator), and ``other[p]``, the least document other than its own that holds another such
    position (its own when no other does; ``-1`` alone). Suffixes that share ``length`` tokens are
    neighbours in the suffix array: a group is a maximal run of ranks whose ``lcp >= length``."""
    n = sa.shape[0]
    count = np.zeros(n, dtype=np.int32)
    other = np.full(n, -1, dtype=np.int32)
    r = 0
    while r < n:
        e = r + 1
        while e < n and lcp[e] >= length:
            e += 1
        if e - r > 1:
            lo1 = doc_of[sa[r]]  # the two least distinct documents of the group
            lo2 = np.int32(-1)
            for q in range(r + 1, e):
                dq = doc_of[sa[q]]
                if dq < lo1:
                    lo2 = lo1
                    lo1 = dq
                elif dq != lo1 and (lo2 < 0 or dq < lo2):
                    lo2 = dq
            for q in range(r, e):
                p = sa[q]
                count[p] = e - r
                if lo1 != doc_of[p]:
                    other[p] = lo1
                else:
                    other[p] = lo2 if lo2 >= 0 else lo1
        else:
            count[sa[r]] = 1
        r = e
    return count, other


@nb.njit(cache=True, nogil=True)
def rolling_hashes(s, token_hash, length):
    """The hash of the ``length`` tokens from every position (0 where they would reach a
    separator, ``s == 0``): ``fmix64(sum_i token_hash[p + i] * B^(length - 1 - i) mod 2^64)``."""
    n = s.shape[0]
    out = np.zeros(n, dtype=np.uint64)
    base = np.uint64(0x100000001B3)
    top = np.uint64(1)
    for _ in range(length - 1):
        top *= base
    h = np.uint64(0)
    run = 0
    for p in range(n):
        if s[p] == 0:
            h = np.uint64(0)
            run = 0
            continue
        if run == length:
            h -= token_hash[p - length] * top
            run -= 1
        h = h * base + token_hash[p]
        run += 1
        if run == length:
            out[p - length + 1] = fmix64(h) | np.uint64(1)
    return out


@nb.njit(cache=True, nogil=True)
def cover_runs(starts, length, n):
    """``covered[i]``: some marked start ``p`` (``starts[p]``) has ``p <= i < p + length``."""
    covered = np.zeros(n, dtype=np.bool_)
    reach = -1
    for p in range(n):
        if starts[p]:
            reach = p + length
        if p < reach:
            covered[p] = True
    return covered


@nb.njit(cache=True, nogil=True)
def covered_runs(covered, doc_bounds, total, other):
    """The maximal runs of covered tokens inside each document: ``(doc, first, stop, occurrences,
    other)`` per run, tokens numbered across documents (``doc_bounds[d]`` is document ``d``'s
    first token). ``occurrences`` is the least ``total`` over the run's marked starts (``total
    > 0``), ``other`` the ``other`` of its first token (always a marked start)."""
    n_docs = doc_bounds.shape[0] - 1
    cap = covered.shape[0] // 1 + 1
    doc = np.empty(cap, dtype=np.int64)
    first = np.empty(cap, dtype=np.int64)
    stop = np.empty(cap, dtype=np.int64)
    occ = np.empty(cap, dtype=np.int64)
    oth = np.empty(cap, dtype=np.int64)
    r = 0
    for d in range(n_docs):
        t = doc_bounds[d]
        e = doc_bounds[d + 1]
        while t < e:
            if not covered[t]:
                t += 1
                continue
            u = t
            least = np.int64(1) << 62
            while u < e and covered[u]:
                if total[u] > 0:
                    least = min(least, np.int64(total[u]))
                u += 1
            doc[r] = d
            first[r] = t
            stop[r] = u
            occ[r] = least
            oth[r] = other[t]
            r += 1
            t = u
    return doc[:r].copy(), first[:r].copy(), stop[:r].copy(), occ[:r].copy(), oth[:r].copy()


@nb.njit(cache=True, nogil=True)
def dense_ids(keys):
    """Ids ``1..V`` of the distinct ``keys`` in the order first seen (an open-addressing table
    that doubles past half full): equal keys, equal ids. Returns ``(ids int32, V)``."""
    size = 1 << 16
    table = np.zeros(size, dtype=np.uint64)
    ident = np.zeros(size, dtype=np.int32)  # 0: empty slot
    out = np.empty(keys.shape[0], dtype=np.int32)
    v = 0
    for i in range(keys.shape[0]):
        k = keys[i]
        mask = np.uint64(size - 1)
        s = fmix64(k) & mask
        while ident[s] != 0 and table[s] != k:
            s = (s + np.uint64(1)) & mask
        if ident[s] == 0:
            v += 1
            table[s] = k
            ident[s] = v
            if 2 * v > size:  # grow: reinsert every key
                size *= 2
                mask = np.uint64(size - 1)
                t2 = np.zeros(size, dtype=np.uint64)
                i2 = np.zeros(size, dtype=np.int32)
                for q in range(table.shape[0]):
                    if ident[q] != 0:
                        s2 = fmix64(table[q]) & mask
                        while i2[s2] != 0:
                            s2 = (s2 + np.uint64(1)) & mask
                        t2[s2] = table[q]
                        i2[s2] = ident[q]
                table = t2
                ident = i2
        out[i] = ident[s] if ident[s] != 0 and table[s] == k else _find(table, ident, k)
    return out, v


@nb.njit(inline="always", cache=True)
def _find(table, ident, k):
    mask = np.uint64(table.shape[0] - 1)
    s = fmix64(k) & mask
    while table[s] != k or ident[s] == 0:
        s = (s + np.uint64(1)) & mask
    return ident[s]


@nb.njit(cache=True, nogil=True)
def compact_positions(sa, width):
    """Keep, in place and in order, the entries of ``sa`` divisible by ``width``, divided by
    it; returns how many (the suffix array of the ids from that of their bytes)."""
    k = 0
    for i in range(sa.shape[0]):
        v = sa[i]
        if v % width == 0:
            sa[k] = v // width
            k += 1
    return k


@nb.njit(cache=True, nogil=True)
def merge_counts(mine, theirs, counts, docs, ext, ext_doc):
    """For sorted distinct hashes ``mine`` and ``theirs`` (with ``counts`` and a document
    ``docs`` each): add the count of every hash of ``mine`` found in ``theirs`` to ``ext``, and
    set ``ext_doc`` where it is still -1. One merge pass, O(len(mine) + len(theirs))."""
    i = 0
    j = 0
    while i < mine.shape[0] and j < theirs.shape[0]:
        if mine[i] < theirs[j]:
            i += 1
        elif mine[i] > theirs[j]:
            j += 1
        else:
            ext[i] += counts[j]
            if ext_doc[i] < 0:
                ext_doc[i] = docs[j]
            i += 1
            j += 1


@nb.njit(cache=True, nogil=True)
def bloom_seen_many(bits, hi, lo, k, query):
    """:func:`bloom_test_and_set` of every unit that ``query`` marks, in order (False elsewhere)."""
    out = np.zeros(hi.shape[0], dtype=np.bool_)
    for u in range(hi.shape[0]):
        if query[u]:
            out[u] = bloom_test_and_set(bits, hi[u], lo[u], k)
    return out
