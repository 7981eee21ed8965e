"""Sorting kernels: stable LSD radix sorts of uint64 keys (16-bit digits), and merges of sorted runs.

The indexes (LSH band tables, SimHash permuted tables) keep, per table, sorted runs of uint64 keys
with a payload (row ids), appended batch by batch and merged like an LSM tree
(:func:`merge_runs`), so an index of n entries has O(log n) runs; :func:`radix_sort_with` sorts
their runs, and also band keys and shingle hashes elsewhere. :func:`radix_sort_bits`,
:func:`radix_argsort_rows` and :func:`unique_from_order` serve the batch Hamming search
(:mod:`neardup.methods.simhash.search`): table entries sorted by their key bits, and identical
fingerprints collapsed.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .intrinsics import copy_into

# ---------------------------------------------------------------------------------------------
# keys with a payload, and sorted runs of them
SMALL_SORT = 256
"""Below this many keys :func:`radix_sort_with` sorts by insertion: each radix pass clears and
scans 65,537 counters (~0.1 ms for the four), which dominated appending one row to an index."""


@nb.njit(cache=True, nogil=True)
def radix_sort_with(keys, payload):
    """Sort uint64 ``keys`` in place, stably, moving ``payload`` (same length) along."""
    n = keys.shape[0]
    if n < SMALL_SORT:
        for i in range(1, n):  # insertion: stable, as a key moves only past strictly greater ones
            k, v = keys[i], payload[i]
            j = i - 1
            while j >= 0 and keys[j] > k:
                keys[j + 1] = keys[j]
                payload[j + 1] = payload[j]
                j -= 1
            keys[j + 1] = k
            payload[j + 1] = v
        return
    tk = np.empty_like(keys)
    tp = np.empty_like(payload)
    cnt = np.empty(65537, dtype=np.int64)
    sk, sp, dk, dp = keys, payload, tk, tp
    in_tmp = False
    for p in range(0, 64, 16):
        sh = np.uint64(p)
        cnt[:] = 0
        for i in range(n):
            cnt[((sk[i] >> sh) & np.uint64(0xFFFF)) + np.uint64(1)] += 1
        trivial = False
        for v in range(65537):
            if cnt[v] == n:
                trivial = True
                break
        if trivial:
            continue
        for v in range(65536):
            cnt[v + 1] += cnt[v]
        for i in range(n):
            dgt = (sk[i] >> sh) & np.uint64(0xFFFF)
            dk[cnt[dgt]] = sk[i]
            dp[cnt[dgt]] = sp[i]
            cnt[dgt] += 1
        sk, dk = dk, sk
        sp, dp = dp, sp
        in_tmp = not in_tmp
    if in_tmp:
        copy_into(keys, 0, sk, 0, n)
        copy_into(payload, 0, sp, 0, n)


@nb.njit(cache=True, nogil=True)
def merge_runs(keys, payload, lo, mid, hi):
    """Merge the sorted runs [lo, mid) and [mid, hi) of every row t of ``keys`` (2-D), stably,
    moving ``payload`` (same shape) along, in place."""
    for t in range(keys.shape[0]):
        ka = keys[t, lo:mid].copy()
        ra = payload[t, lo:mid].copy()
        i, j, o = 0, mid, lo
        na = mid - lo
        while i < na and j < hi:
            if keys[t, j] < ka[i]:
                keys[t, o] = keys[t, j]
                payload[t, o] = payload[t, j]
                j += 1
            else:
                keys[t, o] = ka[i]
                payload[t, o] = ra[i]
                i += 1
            o += 1
        while i < na:
            keys[t, o] = ka[i]
            payload[t, o] = ra[i]
            i += 1
            o += 1


# ---------------------------------------------------------------------------------------------
# the batch Hamming search: sorts by a bit range, rows by all their words, groups of equal rows
@nb.njit(cache=True, nogil=True)
def radix_sort_bits(a, shift, nbits):
    """Sort ``a`` (uint64) in place, stably, by its bits [shift, shift + nbits) (LSD, 16-bit digits)."""
    n = a.shape[0]
    tmp = np.empty_like(a)
    cnt = np.empty(65537, dtype=np.int64)
    src, dst = a, tmp
    in_tmp = False
    p = shift
    end = shift + nbits
    while p < end:
        width = min(16, end - p)
        mask = np.uint64((1 << width) - 1)
        sh = np.uint64(p)
        cnt[:] = 0
        for i in range(n):
            cnt[((src[i] >> sh) & mask) + np.uint64(1)] += 1
        trivial = False
        for v in range((1 << width) + 1):
            if cnt[v] == n:
                trivial = True
                break
        if not trivial:
            for v in range(1 << width):
                cnt[v + 1] += cnt[v]
            for i in range(n):
                dgt = (src[i] >> sh) & mask
                dst[cnt[dgt]] = src[i]
                cnt[dgt] += 1
            src, dst = dst, src
            in_tmp = not in_tmp
        p += width
    if in_tmp:
        copy_into(a, 0, src, 0, n)


@nb.njit(cache=True, nogil=True)
def radix_argsort_rows(words):
    """Stable order of the rows of ``words`` (uint64[n, W]) by (word W-1, ..., word 0)."""
    n = words.shape[0]
    perm = np.arange(n)
    keys = np.empty(n, dtype=np.uint64)
    for w in range(words.shape[1]):  # least significant word first; each pass is stable
        for i in range(n):
            keys[i] = words[perm[i], w]
        radix_sort_with(keys, perm)
    return perm


@nb.njit(cache=True, nogil=True)
def unique_from_order(words, order):
    """Group equal rows given their sorted order: (first row of each group, group id per row,
    group starts in ``order``)."""
    n = words.shape[0]
    gid = np.empty(n, dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    ng = 0
    for x in range(n):
        i = order[x]
        new = x == 0
        if not new:
            j = order[x - 1]
            for w in range(words.shape[1]):
                if words[i, w] != words[j, w]:
                    new = True
                    break
        if new:
            starts[ng] = x
            ng += 1
        gid[i] = ng - 1
    starts[ng] = n
    firsts = np.empty(ng, dtype=np.int64)
    for g in range(ng):
        firsts[g] = order[starts[g]]
    return firsts, gid, starts[: ng + 1].copy()
