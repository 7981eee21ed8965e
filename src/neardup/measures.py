"""Exact set similarity measures, for Python sets and for sorted hash arrays.

- Jaccard resemblance J(A, B) = |A n B| / |A u B| (Broder 1997); 1.0 for A = B, 0.0 when the
  sets are disjoint. Undefined for two empty sets: we return 0.0, since an empty document is
  never a near-duplicate of anything.
- Weighted (multiset) Jaccard sum_x min(wA(x), wB(x)) / sum_x max(wA(x), wB(x)) (the form
  SpotSigs uses, Theobald et al. 2008).
- Containment C(A, B) = |A n B| / |A|: how much of A lies inside B (Broder 1997); not symmetric,
  the measure for quoting and plagiarism (a short answer copied from a long source).

The array versions take sorted, duplicate-free uint64 arrays (as ``shingle`` returns) and run
as a merge in O(|A| + |B|).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

import numba as nb
import numpy as np


def _as_set(items: Iterable) -> set:
    return items if isinstance(items, (set, frozenset)) else set(items)


def jaccard(a: Iterable, b: Iterable) -> float:
    """Exact Jaccard of two sets.

    >>> jaccard({"jack london", "london traveled", "traveled to", "to oakland"},
    ...         {"jack london", "london traveled", "traveled to", "to the", "the city", "city of", "of oakland"})
    0.375
    """
    a, b = _as_set(a), _as_set(b)
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def containment(a: Iterable, b: Iterable) -> float:
    """Exact containment |A n B| / |A| of A in B (0.0 when A is empty).

    >>> containment({1, 2}, {1, 2, 3, 4})
    1.0
    """
    a, b = _as_set(a), _as_set(b)
    return len(a & b) / len(a) if a else 0.0


def weighted_jaccard(a: Mapping | Iterable, b: Mapping | Iterable) -> float:
    """Exact weighted Jaccard of two multisets, given as mappings item -> weight or iterables
    with repeats (counted).

    >>> weighted_jaccard({"x": 5, "y": 4, "z": 4}, {"x": 8, "y": 4})   # (5 + 4) / (8 + 4 + 4)
    0.5625
    """
    wa = a if isinstance(a, Mapping) else Counter(a)
    wb = b if isinstance(b, Mapping) else Counter(b)
    num = sum(min(w, wb[x]) for x, w in wa.items() if x in wb)
    den = sum(wa.values()) + sum(wb.values()) - num
    return num / den if den else 0.0


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
def _all_pairs_kernel(values, offsets, min_similarity):
    n = offsets.shape[0] - 1
    a, b, s = [], [], []
    for i in range(n):
        x = values[offsets[i]:offsets[i + 1]]
        for j in range(i + 1, n):
            y = values[offsets[j]:offsets[j + 1]]
            lo, hi = min(x.shape[0], y.shape[0]), max(x.shape[0], y.shape[0])
            if hi == 0 or lo < min_similarity * hi:  # J(X, Y) <= |smaller| / |larger|
                continue
            v = jaccard_sorted(x, y)
            if v >= min_similarity:
                a.append(i)
                b.append(j)
                s.append(v)
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(s, dtype=np.float64)


def all_pairs_jaccard(values, offsets, min_similarity: float):
    """Every pair (i < j) of CSR sets (as :func:`neardup.shingles.shingle_batch` returns) with
    exact Jaccard >= ``min_similarity``, by brute force over all n(n-1)/2 pairs: the reference
    the approximate methods are tested against. Returns (a, b, similarity) in (a, b) order.

    >>> from neardup.shingles import shingle_batch, Shingling
    >>> v, o = shingle_batch(["a b c d", "a b c e", "x y z"], Shingling("word", 2))
    >>> [x.tolist() for x in all_pairs_jaccard(v, o, 0.3)]
    [[0], [1], [0.5]]
    """
    return _all_pairs_kernel(values, offsets, min_similarity)
