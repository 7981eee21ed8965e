"""Exact set measures over sorted, duplicate-free uint64 arrays, each a merge in O(|A| + |B|).

Intersection size, Jaccard and containment of two sets, and the brute-force all-pairs Jaccard of
CSR sets (:func:`neardup.core.measures.all_pairs_jaccard`, with the definitions of the measures).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def intersection_size(x, y):
    """|X n Y| for sorted duplicate-free arrays."""
    i = j = c = 0
    while i < x.shape[0] and j < y.shape[0]:
        if x[i] == y[j]:
            c += 1
            i += 1
            j += 1
        elif x[i] < y[j]:
            i += 1
        else:
            j += 1
    return c


@nb.njit(cache=True, nogil=True)
def jaccard_sorted(x, y):
    """Exact Jaccard of two sorted duplicate-free arrays (0.0 if both are empty)."""
    c = intersection_size(x, y)
    u = x.shape[0] + y.shape[0] - c
    return c / u if u > 0 else 0.0


@nb.njit(cache=True, nogil=True)
def containment_sorted(x, y):
    """Exact containment |X n Y| / |X| of sorted duplicate-free arrays (0.0 if X is empty)."""
    return intersection_size(x, y) / x.shape[0] if x.shape[0] > 0 else 0.0


@nb.njit(cache=True)
def all_pairs_kernel(values, offsets, min_similarity):
    n = offsets.shape[0] - 1
    a, b, s = [], [], []
    for i in range(n):
        x = values[offsets[i] : offsets[i + 1]]
        for j in range(i + 1, n):
            y = values[offsets[j] : offsets[j + 1]]
            lo, hi = min(x.shape[0], y.shape[0]), max(x.shape[0], y.shape[0])
            if hi == 0 or lo < min_similarity * hi:  # J(X, Y) <= |smaller| / |larger|
                continue
            v = jaccard_sorted(x, y)
            if v >= min_similarity:
                a.append(i)
                b.append(j)
                s.append(v)
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(s, dtype=np.float64)
