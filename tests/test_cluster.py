"""Tests of union-find clustering (neardup.cluster).

Properties checked: components equal a brute-force BFS on random graphs; each root is the
smallest member of its component; the result does not depend on edge order or direction;
``choose_kept`` picks the first or the longest member, ties to the earliest.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.components import choose_kept, components


def bfs_components(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Reference: label every node with the smallest node reachable from it."""
    adj = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    label = [-1] * n
    for start in range(n):  # increasing, so the first visitor is the minimum
        if label[start] != -1:
            continue
        label[start] = start
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if label[v] == -1:
                    label[v] = start
                    queue.append(v)
    return label


@st.composite
def graphs(draw, max_n: int = 40):
    n = draw(st.integers(1, max_n))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    return n, edges


def _run(n, edges):
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    return components(n, a, b)


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_components_equal_bfs(graph):
    """components() labels every node with the same root as a brute-force BFS (the component minimum)."""
    n, edges = graph
    assert _run(n, edges).tolist() == bfs_components(n, edges)


@settings(max_examples=100, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_components_independent_of_edge_order(graph, rnd):
    """Shuffling the edge list and swapping edge ends gives identical roots."""
    n, edges = graph
    shuffled = [(b, a) if rnd.random() < 0.5 else (a, b) for a, b in edges]
    rnd.shuffle(shuffled)
    assert _run(n, shuffled).tolist() == _run(n, edges).tolist()


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_root_is_component_minimum(graph):
    """Every root is a member of its own component, is its own root, and is <= every member."""
    n, edges = graph
    root = _run(n, edges)
    for i in range(n):
        r = root[i]
        assert r <= i
        assert root[r] == r


def test_components_doc_example_and_chains():
    """Hand examples: the docstring case, a long chain in reverse order, no edges."""
    assert components(5, np.array([3, 1]), np.array([4, 3])).tolist() == [0, 1, 2, 1, 1]
    n = 1000
    a = np.arange(n - 1, 0, -1)
    assert components(n, a, a - 1).tolist() == [0] * n  # a path: one component rooted at 0
    assert components(4, np.array([], dtype=np.int64), np.array([], dtype=np.int64)).tolist() == [0, 1, 2, 3]
    assert components(3, np.array([2, 2]), np.array([2, 2])).tolist() == [0, 1, 2]  # self-loops


def test_components_accepts_lists():
    """Edge endpoints may be given as Python lists of ints."""
    assert components(4, [0, 3], [1, 2]).tolist() == [0, 0, 2, 2]


# ---------------------------------------------------------------------------------------------
# choose_kept


def test_choose_kept_first_is_root():
    """keep='first' keeps the earliest document of each cluster (the root)."""
    root = np.array([0, 0, 2, 0, 2, 5])
    assert choose_kept(root, "first").tolist() == [0, 0, 2, 0, 2, 5]
    kept = choose_kept(root)
    assert kept is not root  # a copy, not the input


def test_choose_kept_longest_with_ties():
    """keep='longest' keeps the longest member, ties going to the earliest index."""
    root = np.array([0, 0, 2, 0, 2, 5])
    lengths = np.array([5, 9, 1, 9, 1, 0])
    # cluster 0: lengths 5, 9, 9 -> index 1 (tie with 3, earlier wins); cluster 2: 1, 1 -> index 2
    assert choose_kept(root, "longest", lengths).tolist() == [1, 1, 2, 1, 2, 5]
    assert choose_kept(np.array([0, 0, 2, 0]), "longest", np.array([5, 9, 1, 9])).tolist() == [1, 1, 2, 1]


@settings(max_examples=100, deadline=None)
@given(graphs(max_n=30), st.data())
def test_choose_kept_longest_brute_force(graph, data):
    """For random clusters and lengths, the kept member is argmax length, earliest among ties."""
    n, edges = graph
    root = _run(n, edges)
    lengths = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int64)
    kept = choose_kept(root, "longest", lengths)
    for i in range(n):
        members = [m for m in range(n) if root[m] == root[i]]
        best = max(members, key=lambda m: (lengths[m], -m))
        assert kept[i] == best


@pytest.mark.parametrize("keep, lengths", [("random", None), ("longest", None), ("longest", np.array([1, 2]))])
def test_choose_kept_rejects_bad_arguments(keep, lengths):
    """Unknown policies and missing / wrong-size lengths raise ValueError."""
    with pytest.raises(ValueError):
        choose_kept(np.array([0, 0, 2]), keep, lengths)
