"""Exact set similarity measures, for Python sets and for sorted hash arrays.

- Jaccard resemblance J(A, B) = |A n B| / |A u B| (Broder 1997); 1.0 for A = B, 0.0 when the
  sets are disjoint. Undefined for two empty sets: we return 0.0, since an empty document is
  never a near-duplicate of anything.
- Weighted (multiset) Jaccard sum_x min(wA(x), wB(x)) / sum_x max(wA(x), wB(x)) (the form
  SpotSigs uses, Theobald et al. 2008).
- Containment C(A, B) = |A n B| / |A|: how much of A lies inside B (Broder 1997); not symmetric,
  the measure for quoting and plagiarism (a short answer copied from a long source).

The array versions take sorted, duplicate-free uint64 arrays (as
:func:`neardup.text.shingles.shingle` returns) and run as a merge in O(|A| + |B|): the kernels
``jaccard_sorted`` and ``containment_sorted`` of :mod:`neardup._kernels.measures`, and
:func:`all_pairs_jaccard` here over CSR sets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from .._kernels.measures import all_pairs_kernel


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


def all_pairs_jaccard(values, offsets, min_similarity: float):
    """Every pair (i < j) of CSR sets (as :func:`neardup.text.shingles.shingle_batch` returns) with
    exact Jaccard >= ``min_similarity``, by brute force over all n(n-1)/2 pairs: the reference
    the approximate methods are tested against. Returns (a, b, similarity) in (a, b) order.

    >>> from neardup.text.shingles import shingle_batch, Shingling
    >>> v, o = shingle_batch(["a b c d", "a b c e", "x y z"], Shingling("word", 2))
    >>> [x.tolist() for x in all_pairs_jaccard(v, o, 0.3)]
    [[0], [1], [0.5]]
    """
    return all_pairs_kernel(values, offsets, min_similarity)
