"""Clusters as connected components of verified pairs, and the kept document of each cluster.

Near-duplicate similarity is not transitive (a ~ b and b ~ c do not give a ~ c), so a cluster is
a connected component of the graph of verified pairs, and each member's similarity is reported
against its cluster's kept document rather than assumed.

The components come from a union-find (:mod:`neardup._kernels.unionfind`) that keeps the smallest
index as the root of every component (union by minimum, with path halving; Tarjan 1975), so
roots, and with them clusters, depend only on the edges, not on the order in which they were found.

Connected components chain: a ~ b and b ~ c put c in a's cluster even when c and a differ, so a
removed document may be below the threshold to the document kept for it. :func:`center_clusters`
is the clustering without that: greedy center (star) clustering over the verified pairs, in which
every removed document is a verified neighbour of its kept document.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .._kernels.unionfind import roots, union_edges


def new_forest(n: int) -> np.ndarray:
    """n singleton components."""
    return np.arange(n, dtype=np.int64)


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The root of each of n elements after joining the pairs (a[i], b[i]).

    >>> components(5, np.array([3, 1]), np.array([4, 3])).tolist()
    [0, 1, 2, 1, 1]
    """
    parent = new_forest(n)
    union_edges(parent, np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return roots(parent)


def choose_kept(
    root: np.ndarray, keep: Literal["first", "longest"] = "first", lengths: np.ndarray | None = None
) -> np.ndarray:
    """The kept document of every element's cluster.

    ``first`` keeps the earliest document (the root); ``longest`` the one with the greatest
    ``lengths`` value, ties going to the earliest.

    >>> choose_kept(np.array([0, 0, 2, 0]), "longest", np.array([5, 9, 1, 9])).tolist()
    [1, 1, 2, 1]
    """
    if keep == "first":
        return root.copy()
    if keep != "longest":
        raise ValueError(f"keep must be 'first' or 'longest', got {keep!r}")
    if lengths is None or len(lengths) != len(root):
        raise ValueError("keep='longest' needs one length per document")
    n = len(root)
    # best first: by component, then longest, then earliest
    order = np.lexsort((np.arange(n), -np.asarray(lengths, dtype=np.int64), root))
    sorted_roots = root[order]
    first_of_run = np.ones(n, dtype=bool)
    first_of_run[1:] = sorted_roots[1:] != sorted_roots[:-1]
    best_for_root = np.empty(n, dtype=np.int64)
    best_for_root[sorted_roots[first_of_run]] = order[first_of_run]
    return best_for_root[root]


def keep_order(n: int, keep: Literal["first", "longest"] = "first", lengths: np.ndarray | None = None) -> np.ndarray:
    """The n documents in the order in which ``keep`` prefers them: input order for ``first``;
    longest first, ties in input order, for ``longest``.

    >>> keep_order(4, "longest", np.array([5, 9, 1, 9])).tolist()
    [1, 3, 0, 2]
    """
    if keep == "first":
        return np.arange(n, dtype=np.int64)
    if keep != "longest":
        raise ValueError(f"keep must be 'first' or 'longest', got {keep!r}")
    if lengths is None or len(lengths) != n:
        raise ValueError("keep='longest' needs one length per document")
    return np.lexsort((np.arange(n), -np.asarray(lengths, dtype=np.int64))).astype(np.int64)


def center_clusters(
    n: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(root, kept, similarity)`` of n documents by greedy center (star) clustering of the
    verified pairs ``(a[i], b[i])`` of similarity ``s[i]``.

    The documents are visited in ``order`` (:func:`keep_order`); the first one not yet in a
    cluster becomes a center (its own kept document, similarity 1.0), and each of its verified
    neighbours not yet in a cluster joins it, with the similarity of their pair. So every removed
    document is a verified neighbour of its kept document (at or above the threshold the pairs
    were verified at); the price is that a near-duplicate of a removed document that is not a
    neighbour of its center starts a cluster of its own. ``root`` is the smallest member of each
    cluster, as for :func:`components`. The result depends only on the pairs and ``order``.

    >>> root, kept, sim = center_clusters(
    ...     4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([0.9, 0.85, 0.95]), np.arange(4)
    ... )
    >>> root.tolist(), kept.tolist(), sim.tolist()
    ([0, 0, 2, 2], [0, 0, 2, 2], [1.0, 0.9, 1.0, 0.95])
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    s = np.asarray(s, dtype=np.float64)
    order = np.asarray(order, dtype=np.int64)
    if not (len(a) == len(b) == len(s)):
        raise ValueError("a, b and s must have one entry per pair")
    if len(order) != n:
        raise ValueError(f"order must list the {n} documents")
    if len(a) and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise ValueError(f"pairs must join documents 0..{n - 1}")
    from .._kernels.centers import csr_both_ways, greedy_centers  # compiled for --cluster center only

    start, neighbour, weight = csr_both_ways(n, a, b, s)
    kept, sim = greedy_centers(order, start, neighbour, weight)
    smallest = np.arange(n, dtype=np.int64)
    np.minimum.at(smallest, kept, np.arange(n, dtype=np.int64))
    return smallest[kept], kept, sim
