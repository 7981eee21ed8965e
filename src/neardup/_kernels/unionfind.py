"""Union-find over an int64 parent array, the smallest index the root of every component.

Union by minimum with path halving (Tarjan 1975): roots, and with them clusters, depend only on
the edges, not on the order in which they were joined. :mod:`neardup.core.components` builds the
clusters on it.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(inline="always", cache=True)
def find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@nb.njit(inline="always", cache=True)
def union(parent, a, b):
    """Join the components of a and b; True if they were apart. The smaller root wins."""
    ra = find(parent, a)
    rb = find(parent, b)
    if ra == rb:
        return False
    if ra < rb:
        parent[rb] = ra
    else:
        parent[ra] = rb
    return True


@nb.njit(cache=True, nogil=True)
def union_edges(parent, a, b):
    """Apply every edge (a[i], b[i]) to ``parent`` in place."""
    for i in range(a.shape[0]):
        union(parent, a[i], b[i])


@nb.njit(cache=True, nogil=True)
def roots(parent):
    """The root (smallest member) of every element's component."""
    out = np.empty(parent.shape[0], dtype=np.int64)
    for i in range(parent.shape[0]):
        out[i] = find(parent, i)
    return out


@nb.njit(cache=True, nogil=True)
def roots_in_place(parent):
    """:func:`roots` written over ``parent``: every element's parent is smaller than it or
    itself (union by minimum, path halving), so in increasing order a parent's entry is already
    its root when an element reads it."""
    for i in range(parent.shape[0]):
        parent[i] = parent[parent[i]]


@nb.njit(cache=True, nogil=True)
def root_edges(parent):
    """Edges (root, x) from every element x not a root to its component's root (root < x: the
    smallest member is the root): a spanning forest of the components, one edge a join."""
    q = 0
    for x in range(parent.shape[0]):
        if find(parent, x) != x:
            q += 1
    pa = np.empty(q, dtype=np.int64)
    pb = np.empty(q, dtype=np.int64)
    q = 0
    for x in range(parent.shape[0]):
        r = find(parent, x)
        if r != x:
            pa[q] = r
            pb[q] = x
            q += 1
    return pa, pb
