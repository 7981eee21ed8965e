"""Kernels of the sorted-runs storage of the indexes (:class:`neardup.index.runs.SortedRuns`).

A storage of T tables holds, per table, uint64 keys with a uint32 row id each, in log-structured
runs: run k is columns ``lo:hi`` of every table, sorted by key within each table. Every run has,
per table, a *bucket directory* on the top ``d`` bits of its keys: ``dirs[t, s + u]`` is the
offset in the run of the first key of table t whose top ``d`` bits are ``>= u``, for
``u = 0..2^d`` (``s``: the start of the run's directory), so the keys whose top bits are ``u``
are ``dirs[t, s + u]:dirs[t, s + u + 1]``. ``runs[k] = (lo, hi, s, 64 - d)``.

The directory is correct for any keys; it is fast when their top bits are spread out (hash
outputs, or the leading bits of SimHash fingerprints), when a bucket holds one or two keys.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_LINEAR = 16  # a bucket at most this long is scanned, a longer one binary-searched


@nb.njit(cache=True, nogil=True)
def compact_runs(keys, ids, bounds, remap):
    """Drop entries whose ``remap[id] < 0`` and renumber the rest; returns the new bounds."""
    new_bounds = np.zeros_like(bounds)
    for j in range(keys.shape[0]):
        o = 0
        for k in range(bounds.shape[0] - 1):
            for c in range(bounds[k], bounds[k + 1]):
                new_id = remap[ids[j, c]]
                if new_id >= 0:
                    keys[j, o] = keys[j, c]
                    ids[j, o] = np.uint32(new_id)
                    o += 1
            new_bounds[k + 1] = o
    return new_bounds


@nb.njit(cache=True, nogil=True)
def fill_directory(keys, shift, out):
    """``out[u]`` = the first position p in the sorted ``keys`` with ``keys[p] >> shift >= u``."""
    sh = np.uint64(shift)
    n = keys.shape[0]
    p = 0
    for u in range(out.shape[0]):
        while p < n and (keys[p] >> sh) < np.uint64(u):
            p += 1
        out[u] = p


@nb.njit(inline="always")
def equal_range(keys, dirs, runs, t, r, key):
    """``(a, b)``: the columns of run ``r`` of table ``t`` whose key equals ``key`` (``a == b``: none).

    One directory read gives the key's bucket; a short bucket is scanned, a long one (many equal
    keys, or keys whose top bits agree) binary-searched.
    """
    lo = runs[r, 0]
    if runs[r, 1] <= lo:  # an empty run (everything compacted away)
        return lo, lo
    u = runs[r, 2] + np.int64(key >> np.uint64(runs[r, 3]))
    a = lo + np.int64(dirs[t, u])
    b = lo + np.int64(dirs[t, u + 1])
    if b - a > _LINEAR:
        a += np.searchsorted(keys[t, a:b], key)
    else:
        while a < b and keys[t, a] < key:
            a += 1
    e = a
    while e < b and keys[t, e] == key:
        e += 1
    return a, e
