"""Sorting kernels shared by the indexes (LSH band tables, SimHash permuted tables).

Both keep, per table, sorted runs of uint64 keys with a payload (row ids), appended batch by batch
and merged like an LSM tree, so an index of n entries has O(log n) runs.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def radix_sort_with(keys, payload):
    """Sort uint64 ``keys`` in place, stably, moving ``payload`` (same length) along."""
    n = keys.shape[0]
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
        keys[:] = sk
        payload[:] = sp


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
