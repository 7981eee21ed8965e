"""Clusters as connected components of verified pairs, and the kept document of each cluster.

Near-duplicate similarity is not transitive (a ~ b and b ~ c do not give a ~ c), so a cluster is
a connected component of the graph of verified pairs, and each member's similarity is reported
against its cluster's kept document rather than assumed.

The components come from a union-find (:mod:`neardup._kernels.unionfind`) that keeps the smallest
index as the root of every component (union by minimum, with path halving; Tarjan 1975), so
roots, and with them clusters, depend only on the edges, not on the order in which they were found.
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
