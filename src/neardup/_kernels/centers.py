"""Greedy center (star) clustering over a graph of verified pairs in CSR form.

:mod:`neardup.core.components` builds the clusters on it; the brute-force reference is in
``tests/test_centers.py``.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def csr_both_ways(n, a, b, s):
    """The undirected graph of the edges (a[i], b[i]) with weights s[i] as CSR arrays
    ``(start[n + 1], neighbour, weight)``, each edge stored from both ends."""
    start = np.zeros(n + 1, dtype=np.int64)
    for i in range(a.shape[0]):
        start[a[i] + 1] += 1
        start[b[i] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    neighbour = np.empty(start[n], dtype=np.int64)
    weight = np.empty(start[n], dtype=np.float64)
    for i in range(a.shape[0]):
        neighbour[fill[a[i]]] = b[i]
        weight[fill[a[i]]] = s[i]
        fill[a[i]] += 1
        neighbour[fill[b[i]]] = a[i]
        weight[fill[b[i]]] = s[i]
        fill[b[i]] += 1
    return start, neighbour, weight


@nb.njit(cache=True, nogil=True)
def greedy_centers(order, start, neighbour, weight):
    """``(center, similarity)`` of every vertex: visiting the vertices in ``order``, the first one
    not yet assigned becomes a center (similarity 1.0) and every unassigned neighbour joins it
    with the weight of its edge to it. A vertex with several edges to its center keeps the
    largest weight."""
    n = start.shape[0] - 1
    center = np.full(n, -1, dtype=np.int64)
    sim = np.ones(n, dtype=np.float64)
    for i in range(order.shape[0]):
        c = order[i]
        if center[c] != -1:
            continue
        center[c] = c
        for e in range(start[c], start[c + 1]):
            v = neighbour[e]
            if center[v] == -1:
                center[v] = c
                sim[v] = weight[e]
            elif center[v] == c and v != c and weight[e] > sim[v]:
                sim[v] = weight[e]
    return center, sim
