"""Kernels of the Dask engine's candidate stage: (table, key, document) entries split into
shuffle buckets, and a bucket's entries grouped by (table, key).

:func:`split_entries` sends entry ``(j, key)`` to bucket ``h(j, key) mod P``, ``h`` being the
splitmix64 finalizer (Steele, Lea and Flood, OOPSLA 2014) folded over the table number and the
key's words (:mod:`neardup.engine.dask_groupby` states the rule), in one counting pass and one
scatter pass over the entries of one or several shards. :func:`group_entries` finds the
groups of two or more entries with equal (table, key): the entries sorted by the top bits of the
key's first word (one NumPy sort of the words with their low bits replaced by the entry's
number, :func:`by_prefix`), then each run of equal top bits (few entries, since the words are
hash values and most band keys are alone) sorted by (table, key words, document) and cut into
groups.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import SPLITMIX_GAMMA, splitmix_mix

_INSERTION = 32  # runs up to this long are sorted by insertion


@nb.njit(inline="always")
def _table_seed(j):
    return splitmix_mix(np.uint64(j) * SPLITMIX_GAMMA + np.uint64(1))


@nb.njit(inline="always")
def _bucket(hj, keys, i, j, w, nb_):
    """The bucket of entry ``(j, keys[i, j])``, ``hj`` being ``_table_seed(j)``."""
    h = hj
    for q in range(w):
        h = splitmix_mix(h ^ keys[i, j, q])
    return np.int32(h % nb_)


@nb.njit(cache=True, nogil=True)
def entry_buckets(keys, member, buckets, counts):
    """Each entry's bucket: int32[t, n], ``-1`` where ``member[i, j]`` is False; adds each
    bucket's entries to ``counts`` (int64[buckets]). ``keys``: uint64[n, t, w]."""
    n, t, w = keys.shape
    nb_ = np.uint64(buckets)
    where = np.empty((t, n), dtype=np.int32)
    for j in range(t):
        hj = _table_seed(j)
        for i in range(n):
            if member[i, j]:
                b = _bucket(hj, keys, i, j, w, nb_)
                where[j, i] = b
                counts[b] += 1
            else:
                where[j, i] = -1
    return where


@nb.njit(cache=True, nogil=True)
def first_shared_buckets(keys, member, pa, pb, buckets):
    """For each pair of rows ``(pa[i], pb[i])``: the bucket of the first table in which both take
    part with equal keys (the group that holds the pair with the lowest table), ``-1`` when
    they share none. ``keys``: uint64[n, t, w]; ``member``: bool[n, t]."""
    _, t, w = keys.shape
    nb_ = np.uint64(buckets)
    out = np.full(pa.shape[0], -1, dtype=np.int32)
    for i in range(pa.shape[0]):
        x, y = pa[i], pb[i]
        for j in range(t):
            if not (member[x, j] and member[y, j]):
                continue
            same = True
            for q in range(w):
                if keys[x, j, q] != keys[y, j, q]:
                    same = False
                    break
            if same:
                out[i] = _bucket(_table_seed(j), keys, x, j, w, nb_)
                break
    return out


@nb.njit(cache=True, nogil=True)
def key_bucket(j, key, buckets):
    """The bucket of one entry of table ``j`` and key words ``key`` (uint64[w])."""
    return _bucket(_table_seed(j), key.reshape(1, 1, key.shape[0]), 0, 0, key.shape[0], np.uint64(buckets))


@nb.njit(cache=True, nogil=True)
def scatter_entries(keys, where, start, fill, table, key, doc):
    """Write the entries ``(j, keys[i, j], start + i)`` whose bucket ``where[j, i]`` is set at
    ``fill[bucket]`` (advanced), in (table, document) order within each bucket."""
    n, t, w = keys.shape
    for j in range(t):
        for i in range(n):
            b = where[j, i]
            if b >= 0:
                p = fill[b]
                table[p] = j
                for q in range(w):
                    key[p, q] = keys[i, j, q]
                doc[p] = start + i
                fill[b] = p + 1


def split_entries(keys_list, member_list, starts, buckets):
    """The entries ``(j, keys[i, j], start + i)`` with ``member[i, j]`` of every ``(keys,
    member, start)`` of the lists, ordered by bucket and, within a bucket, by list position, table
    and document: ``(bounds, table, key, doc)``, bucket ``b`` being ``[bounds[b], bounds[b + 1])``.
    ``keys``: uint64[n, t, w]; ``member``: bool[n, t]. One counting pass over every list, one
    allocation, one scatter pass: entries are never joined by copying."""
    counts = np.zeros(buckets, dtype=np.int64)
    wheres = [entry_buckets(k, m, buckets, counts) for k, m in zip(keys_list, member_list)]
    bounds = np.zeros(buckets + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    total = int(bounds[-1])
    w = keys_list[0].shape[2] if keys_list else 1
    table = np.empty(total, dtype=np.int32)
    key = np.empty((total, w), dtype=np.uint64)
    doc = np.empty(total, dtype=np.int64)
    fill = bounds[:-1].copy()
    for k, where, start in zip(keys_list, wheres, starts):
        scatter_entries(k, where, np.int64(start), fill, table, key, doc)
    return bounds, table, key, doc


@nb.njit(inline="always")
def _less(x, y, table, key, doc):
    """Entry x before entry y in (table, key words, document) order."""
    if table[x] != table[y]:
        return table[x] < table[y]
    for q in range(key.shape[1]):
        if key[x, q] != key[y, q]:
            return key[x, q] < key[y, q]
    return doc[x] < doc[y]


@nb.njit(inline="always")
def _same(x, y, table, key):
    if table[x] != table[y]:
        return False
    for q in range(key.shape[1]):
        if key[x, q] != key[y, q]:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def _sort_run(run, tmp, table, key, doc):
    """Sort the entry numbers ``run`` by :func:`_less` (insertion when short, else bottom-up
    merge sort through ``tmp``)."""
    r = run.shape[0]
    if r <= _INSERTION:
        for i in range(1, r):
            v = run[i]
            j = i - 1
            while j >= 0 and _less(v, run[j], table, key, doc):
                run[j + 1] = run[j]
                j -= 1
            run[j + 1] = v
        return
    src, dst = run, tmp[:r]
    width = 1
    flipped = False
    while width < r:
        for lo in range(0, r, 2 * width):
            mid = min(lo + width, r)
            hi = min(lo + 2 * width, r)
            a, b, o = lo, mid, lo
            while a < mid and b < hi:
                if _less(src[b], src[a], table, key, doc):
                    dst[o] = src[b]
                    b += 1
                else:
                    dst[o] = src[a]
                    a += 1
                o += 1
            while a < mid:
                dst[o] = src[a]
                a += 1
                o += 1
            while b < hi:
                dst[o] = src[b]
                b += 1
                o += 1
        src, dst = dst, src
        flipped = not flipped
        width *= 2
    if flipped:
        run[:] = src


def by_prefix(first: np.ndarray) -> tuple[np.ndarray, int]:
    """``(packed, bits)``: the key's first words with their low ``bits`` replaced by the entry's
    number, sorted (``packed >> bits`` is the top of the word, ``packed & (2**bits - 1)`` the
    entry): one vectorised NumPy sort, several times faster here than an argsort or a numba
    scatter pass. Entries whose words share the top bits are neighbours; :func:`_group_sorted`
    sorts each such run on the whole key."""
    m = first.shape[0]
    bits = max(1, (m - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    packed = (first & ~low) | np.arange(m, dtype=np.uint64)
    packed.sort()
    return packed, bits


def group_entries(table: np.ndarray, key: np.ndarray, doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups of two or more entries with equal (table, key): ``(picked, bounds)``, group
    ``g`` being the entries ``picked[bounds[g]:bounds[g + 1]]``, in document order. Groups come in
    order of the top bits of the key's first word (:func:`by_prefix`), then table, then the
    key's words."""
    packed, bits = by_prefix(np.ascontiguousarray(key[:, 0]) if len(doc) else np.empty(0, np.uint64))
    return _group_sorted(table, key, doc, packed, np.uint64(bits))


@nb.njit(cache=True, nogil=True)
def _group_sorted(table, key, doc, packed, bits):
    """:func:`group_entries` of the entries sorted by :func:`by_prefix` (``packed``)."""
    m = doc.shape[0]
    low = (np.uint64(1) << bits) - np.uint64(1)
    order = np.empty(m, dtype=np.int64)
    for i in range(m):
        order[i] = np.int64(packed[i] & low)
    picked = np.empty(m, dtype=np.int64)
    bounds = np.empty(m // 2 + 2, dtype=np.int64)
    bounds[0] = 0
    tmp = np.empty(m, dtype=np.int64)
    q = 0
    g = 0
    s = 0
    for i in range(1, m + 1):
        if i == m or (packed[i] >> bits) != (packed[s] >> bits):
            if i - s >= 2:
                run = order[s:i]
                _sort_run(run, tmp, table, key, doc)
                a = 0
                r = i - s
                for b in range(1, r + 1):
                    if b == r or not _same(run[b], run[a], table, key):
                        if b - a >= 2:
                            for c in range(a, b):
                                picked[q] = run[c]
                                q += 1
                            g += 1
                            bounds[g] = q
                        a = b
            s = i
    return picked[:q], bounds[: g + 1]
