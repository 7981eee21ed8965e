"""Kernels of the Hamming-distance search over 64- and 128-bit fingerprints (rows of uint64 words).

Bit helpers (popcount, a table's key, the blocks where two fingerprints differ, the first table
that reports a pair); the batch all-pairs by permuted tables (:func:`table_entries`,
:func:`scan_table`, :func:`expand`) and its brute-force reference (:func:`brute`); the keys and
probes of the index, whose tables are :class:`neardup.index.runs.SortedRuns` (:func:`index_keys`,
:func:`query_kernel`). The scheme (blocks, tables, which table reports a pair) is described in
:mod:`neardup.methods.simhash.search`; the index is :class:`neardup.index.hamming.HammingIndex`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .intrinsics import copy_into
from .runs import equal_range
from .unionfind import find, root_edges, union

_M1 = np.uint64(0x5555555555555555)


_M2 = np.uint64(0x3333333333333333)


_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)


_H01 = np.uint64(0x0101010101010101)


# ---------------------------------------------------------------------------------------------
# bit helpers
@nb.njit(inline="always", cache=True)
def popcount64(x):
    """Number of set bits of a uint64 (SWAR; LLVM turns it into one instruction where it can)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@nb.njit(inline="always", cache=True)
def _distance(words, i, j):
    d = 0
    for w in range(words.shape[1]):
        d += popcount64(words[i, w] ^ words[j, w])
    return d


@nb.njit(inline="always", cache=True)
def _bits_at(row, start, size):
    """``size`` (1..64) bits of a fingerprint row (uint64[W]) starting at bit ``start``."""
    w = start >> 6
    off = start & 63
    v = row[w] >> np.uint64(off)
    if off + size > 64:
        v |= row[w + 1] << np.uint64(64 - off)
    if size < 64:
        v &= (np.uint64(1) << np.uint64(size)) - np.uint64(1)
    return v


@nb.njit(inline="always", cache=True)
def _range_nonzero(row, start, size):
    """Whether any of bits [start, start + size) of ``row`` is set (size may exceed 64)."""
    p = start
    end = start + size
    while p < end:
        s = min(64, end - p)
        if _bits_at(row, p, s) != 0:
            return True
        p += s
    return False


@nb.njit(inline="always", cache=True)
def _key(row, kept_start, kept_size, nkept, keybits):
    """The first ``keybits`` (<= 64) of the concatenated kept ranges of a fingerprint row."""
    key = np.uint64(0)
    have = 0
    for q in range(nkept):
        start = kept_start[q]
        size = kept_size[q]
        while size > 0 and have < keybits:
            take = min(size, keybits - have, 64)
            v = _bits_at(row, start, take)
            if take == 64:
                key = v
            else:
                key = (key << np.uint64(take)) | v
            have += take
            start += take
            size -= take
    return key


@nb.njit(inline="always", cache=True)
def _block_mask(x, block_start, block_size):
    """Bit b set when the xor row ``x`` has a set bit in block b."""
    m = np.uint64(0)
    for b in range(block_start.shape[0]):
        if _range_nonzero(x, block_start[b], block_size[b]):
            m |= np.uint64(1) << np.uint64(b)
    return m


@nb.njit(inline="always", cache=True)
def _first_table(dmask, kept_mask):
    """The first table whose kept blocks avoid every block in ``dmask`` (-1: none)."""
    for t in range(kept_mask.shape[0]):
        if kept_mask[t] & dmask == 0:
            return t
    return -1


@nb.njit(inline="always", cache=True)
def _grow(arr, size):
    out = np.empty(max(2 * arr.shape[0], size, 64), dtype=arr.dtype)
    copy_into(out, 0, arr, 0, arr.shape[0])
    return out


# ---------------------------------------------------------------------------------------------
# batch all-pairs
@nb.njit(cache=True, nogil=True)
def table_entries(words, kstart, ksize, nkept, keybits, idx_bits, out):
    for i in range(words.shape[0]):
        key = _key(words[i], kstart, ksize, nkept, keybits)
        out[i] = (key << np.uint64(idx_bits)) | np.uint64(i)


@nb.njit(cache=True, nogil=True)
def scan_table(entries, idx_bits, words, kmax, t, kmask, bstart, bsize):
    """Pairs (i < j) inside runs of equal keys with d <= kmax whose first table is t."""
    n = entries.shape[0]
    idx_mask = (np.uint64(1) << np.uint64(idx_bits)) - np.uint64(1)
    sh = np.uint64(idx_bits)
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pd = np.empty(64, dtype=np.int32)
    npairs = 0
    checked = 0
    x_row = np.empty(words.shape[1], dtype=np.uint64)
    s = 0
    for e in range(1, n + 1):
        if e < n and (entries[e] >> sh) == (entries[s] >> sh):
            continue
        for x in range(s, e):
            i = np.int64(entries[x] & idx_mask)
            for y in range(x + 1, e):
                j = np.int64(entries[y] & idx_mask)
                checked += 1
                d = _distance(words, i, j)
                if d > kmax:
                    continue
                for w in range(words.shape[1]):
                    x_row[w] = words[i, w] ^ words[j, w]
                if _first_table(_block_mask(x_row, bstart, bsize), kmask) != t:
                    continue
                if npairs == pa.shape[0]:
                    pa = _grow(pa, npairs + 1)
                    pb = _grow(pb, npairs + 1)
                    pd = _grow(pd, npairs + 1)
                pa[npairs] = i
                pb[npairs] = j
                pd[npairs] = d
                npairs += 1
        s = e
    return pa[:npairs], pb[:npairs], pd[:npairs], checked


@nb.njit(cache=True, nogil=True)
def expand(ua, ub, ud, order, starts):
    """Pairs of unique rows -> pairs of original rows, plus the pairs inside each group (d = 0)."""
    total = 0
    for p in range(ua.shape[0]):
        total += (starts[ua[p] + 1] - starts[ua[p]]) * (starts[ub[p] + 1] - starts[ub[p]])
    for g in range(starts.shape[0] - 1):
        s = starts[g + 1] - starts[g]
        total += s * (s - 1) // 2
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    d = np.empty(total, dtype=np.int32)
    q = 0
    for p in range(ua.shape[0]):
        for x in range(starts[ua[p]], starts[ua[p] + 1]):
            for y in range(starts[ub[p]], starts[ub[p] + 1]):
                i, j = order[x], order[y]
                a[q] = min(i, j)
                b[q] = max(i, j)
                d[q] = ud[p]
                q += 1
    for g in range(starts.shape[0] - 1):
        for x in range(starts[g], starts[g + 1]):
            for y in range(x + 1, starts[g + 1]):
                a[q] = order[x]
                b[q] = order[y]
                d[q] = 0
                q += 1
    return a, b, d


@nb.njit(cache=True, nogil=True)
def brute(words, k):
    n = words.shape[0]
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pd = np.empty(64, dtype=np.int32)
    q = 0
    for i in range(n):
        for j in range(i + 1, n):
            d = _distance(words, i, j)
            if d <= k:
                if q == pa.shape[0]:
                    pa = _grow(pa, q + 1)
                    pb = _grow(pb, q + 1)
                    pd = _grow(pd, q + 1)
                pa[q] = i
                pb[q] = j
                pd[q] = d
                q += 1
    return pa[:q], pb[:q], pd[:q]


# ---------------------------------------------------------------------------------------------
# groups of candidates (an engine's shuffle bucket: groups of rows sharing a table key)
@nb.njit(cache=True, nogil=True)
def within_groups(members, bounds, words, kmax):
    """The pairs (a < b) of rows of every group ``members[bounds[g]:bounds[g + 1]]`` within ``kmax``
    bits, with their distances; a pair in several groups is listed each time."""
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pd = np.empty(64, dtype=np.int32)
    q = 0
    for g in range(bounds.shape[0] - 1):
        for x in range(bounds[g], bounds[g + 1]):
            i = members[x]
            for y in range(x + 1, bounds[g + 1]):
                j = members[y]
                d = _distance(words, i, j)
                if d <= kmax:
                    if q == pa.shape[0]:
                        pa = _grow(pa, q + 1)
                        pb = _grow(pb, q + 1)
                        pd = _grow(pd, q + 1)
                    pa[q] = min(i, j)
                    pb[q] = max(i, j)
                    pd[q] = d
                    q += 1
    return pa[:q], pb[:q], pd[:q]


@nb.njit(cache=True, nogil=True)
def connect_within_groups(members, bounds, words, kmax):
    """Edges (a < b) spanning the components of :func:`within_groups`' pairs: a member is compared
    only with the earlier members of its group not yet in its component (a union-find of the
    rows), and each row joined to another gives one edge, to its root."""
    size = 0
    for x in range(members.shape[0]):
        size = max(size, members[x] + 1)
    parent = np.arange(size)
    for g in range(bounds.shape[0] - 1):
        for y in range(bounds[g] + 1, bounds[g + 1]):
            j = members[y]
            for x in range(bounds[g], y):
                i = members[x]
                if find(parent, i) != find(parent, j) and _distance(words, i, j) <= kmax:
                    union(parent, i, j)
    return root_edges(parent)


# ---------------------------------------------------------------------------------------------
# the index (HammingIndex: one SortedRuns table per permuted table, see runs.py)
@nb.njit(cache=True, nogil=True)
def index_keys(words, kstart, ksize, nkept, keybits, out):
    """``out[t, i]``: the key of fingerprint i in table t, its ``keybits[t]`` bits at the top of the
    uint64 (so that the leading bits of a key, which the bucket directories split on, are bits of
    the fingerprint rather than zeros)."""
    for t in range(kstart.shape[0]):
        shift = np.uint64(64 - keybits[t])
        for i in range(words.shape[0]):
            out[t, i] = _key(words[i], kstart[t], ksize[t], nkept[t], keybits[t]) << shift


@nb.njit(cache=True, nogil=True)
def query_kernel(
    q_words, kmax, keys, ids, dirs, runs, kstart, ksize, nkept, keybits, kmask, bstart, bsize, fps, alive, limit
):
    """The stored fingerprints within ``kmax`` of each query row, as ``(offsets, rows, distances)``:
    query q's results are ``offsets[q]:offsets[q + 1]``, by distance, then row ascending, at most
    ``limit`` of them (``limit < 0``: all).

    Each table is probed for the query's key (``index_keys``) in every run through the run's
    directory; a live row with an equal key is a result when its distance is at most ``kmax`` and
    the table is the pair's first table (``_first_table``), so every row is reported once.
    """
    nq = q_words.shape[0]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    codes = np.empty(64, dtype=np.int64)
    q = 0
    x_row = np.empty(fps.shape[1], dtype=np.uint64)
    for qi in range(nq):
        row = q_words[qi]
        start = q
        for t in range(keys.shape[0]):
            key = _key(row, kstart[t], ksize[t], nkept[t], keybits[t]) << np.uint64(64 - keybits[t])
            for r in range(runs.shape[0]):
                a, b = equal_range(keys, dirs, runs, t, r, key)
                for p in range(a, b):
                    cand = np.int64(ids[t, p])
                    if not alive[cand]:
                        continue
                    d = 0
                    for w in range(fps.shape[1]):
                        x_row[w] = fps[cand, w] ^ row[w]
                        d += popcount64(x_row[w])
                    if d > kmax:
                        continue
                    if _first_table(_block_mask(x_row, bstart, bsize), kmask) != t:
                        continue
                    if q == codes.shape[0]:
                        codes = _grow(codes, q + 1)
                    codes[q] = (np.int64(d) << 32) | cand
                    q += 1
        if q - start > 1:
            codes[start:q] = np.sort(codes[start:q])
        if limit >= 0 and q - start > limit:
            q = start + limit
        offsets[qi + 1] = q
    rows = np.empty(q, dtype=np.int64)
    dist = np.empty(q, dtype=np.int64)
    for i in range(q):
        rows[i] = codes[i] & 0xFFFFFFFF
        dist[i] = codes[i] >> 32
    return offsets, rows, dist
