"""Grouping equal exact keys: clusters, the pairs of a group, and the exact pre-pass.

:func:`group_equal` turns keys into clusters (root = the first document with the key) by sorting;
:func:`group_pairs` lists every pair inside the groups (quadratic in group size, for ``--pairs``).
:class:`ExactGroups` and :class:`ExactPrepass` are the exact pre-pass every near-duplicate method
gets from the engine: the first document of each group of identical normalized texts is the
*representative* that goes through the method, and :class:`ExactGroups` spreads the method's
result (roots, pairs, emptiness) back to every document. Equal keys mean equal normalized texts,
hence equal features under every method, so the pre-pass never changes a result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._kernels.exact import admit_kernel, cross, pairs_within, rehash_kernel
from ...core.budget import Spill, current_spill
from ...core.extsort import equal_runs
from .keys import nonempty


# --------------------------------------------------------------------------------------------
# grouping
def group_equal(keys: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """int64[n]: for every document the smallest index with an equal key (itself if none).

    Documents where ``valid`` is False (no key) are their own group. Sorting keys, O(n log n).

    >>> group_equal(np.array([[1, 2], [3, 4], [1, 2], [1, 5]], dtype=np.uint64)).tolist()
    [0, 1, 0, 3]
    """
    keys = np.asarray(keys, dtype=np.uint64)
    if keys.ndim != 2 or keys.shape[1] != 2:
        raise ValueError(f"keys must have shape (n, 2), got {keys.shape}")
    n = keys.shape[0]
    root = np.arange(n, dtype=np.int64)
    idx = root.copy() if valid is None else np.flatnonzero(np.asarray(valid, dtype=bool))
    if len(idx) < 2:
        return root
    k = keys[idx]
    order = np.lexsort((idx, k[:, 1], k[:, 0]))
    sk = k[order]
    new = np.ones(len(idx), dtype=bool)
    new[1:] = (sk[1:] != sk[:-1]).any(axis=1)
    sorted_idx = idx[order]
    first = sorted_idx[new]  # smallest index of each run (ties sorted by index)
    root[sorted_idx] = first[np.cumsum(new) - 1]
    return root


def group_equal_external(keys: np.ndarray, valid: np.ndarray | None, spill: Spill) -> np.ndarray:
    """:func:`group_equal` for a job past its memory budget: the same roots, in an array of the
    budget (a spill file), with the keys grouped by an external sort
    (:func:`neardup.core.extsort.equal_runs`) in the stage's working memory."""
    n = keys.shape[0]
    root = spill.array(n, np.int64)
    step = 1 << 20
    for lo in range(0, n, step):
        root[lo : lo + step] = np.arange(lo, min(lo + step, n), dtype=np.int64)
    spill.relieve()
    for members, heads in equal_runs(np.asarray(keys, dtype=np.uint64), valid, spill):
        root[members] = heads
        spill.relieve()
    return root


def _runs(root: np.ndarray):
    """Members of every group of two or more, as (members sorted by (root, index), starts, ends)."""
    n = len(root)
    order = np.lexsort((np.arange(n), root))
    sr = root[order]
    new = np.ones(n, dtype=bool)
    new[1:] = sr[1:] != sr[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    big = ends - starts >= 2
    return order.astype(np.int64), starts[big].astype(np.int64), ends[big].astype(np.int64)


def group_pairs(root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a < b) of documents with the same root, sorted by (a, b).

    Quadratic in group size: a group of m documents gives m (m - 1) / 2 pairs.

    >>> [x.tolist() for x in group_pairs(np.array([0, 1, 0, 0]))]
    [[0, 0, 2], [2, 3, 3]]
    """
    root = np.asarray(root, dtype=np.int64)
    if not len(root):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    members, starts, ends = _runs(root)
    sizes = ends - starts
    a, b = pairs_within(members, starts, ends, int((sizes * (sizes - 1) // 2).sum()))
    order = np.lexsort((b, a))
    return a[order], b[order]


def groups_pairs(members: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a < b) inside each group ``members[bounds[g]:bounds[g + 1]]`` (a pair in
    several groups is listed each time): m (m - 1) / 2 pairs for a group of m.

    >>> [x.tolist() for x in groups_pairs(np.array([4, 1, 7, 2, 3]), np.array([0, 3, 5]))]
    [[1, 4, 1, 2], [4, 7, 7, 3]]
    """
    members = np.ascontiguousarray(members, dtype=np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    starts, ends = np.ascontiguousarray(bounds[:-1]), np.ascontiguousarray(bounds[1:])
    sizes = ends - starts
    a, b = pairs_within(members, starts, ends, int((sizes * (sizes - 1) // 2).sum()))
    return np.minimum(a, b), np.maximum(a, b)


def groups_stars(members: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each member of a group ``members[bounds[g]:bounds[g + 1]]`` joined to the group's first
    member (a < b): edges spanning the components of :func:`groups_pairs`, m - 1 for a group of m.

    >>> [x.tolist() for x in groups_stars(np.array([4, 1, 7, 2, 3]), np.array([0, 3, 5]))]
    [[1, 4, 2], [4, 7, 3]]
    """
    members = np.asarray(members, dtype=np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    first = np.repeat(members[bounds[:-1]], np.diff(bounds))
    rest = np.ones(len(members), dtype=bool)
    rest[bounds[:-1]] = False  # groups have two or more members
    a, b = first[rest], members[rest]
    return np.minimum(a, b), np.maximum(a, b)


# --------------------------------------------------------------------------------------------
# the exact pre-pass of the near-duplicate methods
@dataclass(frozen=True, eq=False)
class ExactGroups:
    """Exact-duplicate groups of a collection, and the maps between all documents and the
    *representatives* (the first document of each group), which are the only ones sketched.

    Representatives keep their input order, so sketch-stage arrays of the representatives are
    indexed by ``sub = to_sketched(doc)`` (0 .. n_sketched - 1).
    """

    rep: np.ndarray
    """int64[n] smallest document index with the same exact key (itself for unique documents)."""

    @property
    def sketch(self) -> np.ndarray:
        """bool[n] the documents to sketch: the representatives."""
        return self.rep == np.arange(len(self.rep))

    @property
    def index(self) -> np.ndarray:
        """int64[m] document index of each representative, in input order (sub -> doc)."""
        return np.flatnonzero(self.sketch)

    @property
    def n_duplicates(self) -> int:
        """Documents not sketched because an earlier one has the same key."""
        return int(len(self.rep) - np.count_nonzero(self.sketch))

    def to_sketched(self, docs: np.ndarray) -> np.ndarray:
        """Position among the representatives of each document's representative (doc -> sub)."""
        pos = np.cumsum(self.sketch) - 1
        return pos[self.rep[np.asarray(docs, dtype=np.int64)]]

    def _dissolved(self, sub_empty: np.ndarray | None) -> np.ndarray:
        """``rep`` with the groups whose representative is empty split into singletons."""
        if sub_empty is None:
            return self.rep
        sub_empty = np.asarray(sub_empty, dtype=bool)
        empty_doc = sub_empty[self.to_sketched(np.arange(len(self.rep)))]
        return np.where(empty_doc, np.arange(len(self.rep)), self.rep)

    def expand_root(self, sub_root: np.ndarray, sub_empty: np.ndarray | None = None) -> np.ndarray:
        """Clusters of all documents from the clusters of the representatives.

        ``sub_root[s]`` is the root (smallest member, a sub index) of representative s's cluster;
        the result is the root of every document's cluster as a document index, again the
        smallest member. Groups whose representative is empty (``sub_empty``, e.g. no shingles)
        are dissolved: empty documents never match, not even each other.
        """
        sub_root = np.asarray(sub_root, dtype=np.int64)
        if len(sub_root) != len(self.index):
            raise ValueError(
                f"sub_root has {len(sub_root)} entries, expected one per representative ({len(self.index)})"
            )
        root = self.index[sub_root][self.to_sketched(np.arange(len(self.rep)))]
        if sub_empty is not None:
            empty_doc = np.asarray(sub_empty, dtype=bool)[self.to_sketched(np.arange(len(self.rep)))]
            root = np.where(empty_doc, np.arange(len(self.rep)), root)
        return root

    def expand_pairs(
        self, a: np.ndarray, b: np.ndarray, s: np.ndarray, sub_empty: np.ndarray | None = None, complete: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs of all documents from the verified pairs ``(a, b, s)`` of the representatives.

        ``complete=True`` gives the pairs the method would have found without the pre-pass:
        every pair inside an exact group (similarity 1.0) and, for each representative pair,
        every member of one group with every member of the other (similarity s). Quadratic in
        group sizes. ``complete=False`` gives a spanning version: each member paired with its
        representative (1.0) plus the representative pairs. Sorted by (a, b), a < b.
        """
        rep = self._dissolved(sub_empty)
        members, starts, ends = _runs(rep)
        if complete:
            sizes = ends - starts
            ga, gb = pairs_within(members, starts, ends, int((sizes * (sizes - 1) // 2).sum()))
        else:
            ga, gb = _to_rep(rep)
        index = self.index
        a = index[np.asarray(a, dtype=np.int64)]
        b = index[np.asarray(b, dtype=np.int64)]
        s = np.asarray(s, dtype=np.float64)
        if complete and len(a):
            # CSR of the members of every group, keyed by representative
            n = len(rep)
            order = np.lexsort((np.arange(n), rep))
            counts = np.bincount(rep, minlength=n)
            first = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=first[1:])
            ca, cb, cs = cross(order.astype(np.int64), first, a, b, s)
        else:
            ca, cb, cs = np.minimum(a, b), np.maximum(a, b), s
        pa = np.concatenate([ga, ca])
        pb = np.concatenate([gb, cb])
        ps = np.concatenate([np.ones(len(ga)), cs])
        order = np.lexsort((pb, pa))
        return pa[order], pb[order], ps[order]


def _to_rep(rep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    docs = np.flatnonzero(rep != np.arange(len(rep)))
    return rep[docs].astype(np.int64), docs.astype(np.int64)


def exact_duplicate_groups(keys: np.ndarray, valid: np.ndarray | None = None) -> ExactGroups:
    """The exact pre-pass over the keys of a whole collection: representative of every document
    and the mask of documents to sketch (``.rep``, ``.sketch``).

    ``valid`` (default: keys other than :data:`EMPTY_KEY`) marks the documents that may be
    grouped; the others are their own representatives.

    >>> from neardup.methods.exact.keys import exact_keys
    >>> g = exact_duplicate_groups(exact_keys(["a b", "x", "A  B", ""]))
    >>> g.rep.tolist(), g.sketch.tolist()
    ([0, 1, 0, 3], [True, True, False, True])
    """
    keys = np.asarray(keys, dtype=np.uint64)
    if valid is None:
        valid = nonempty(keys)
    return ExactGroups(group_equal(keys, valid))


class ExactPrepass:
    """The exact pre-pass in streaming form: batch after batch, which documents to sketch.

    ``admit(keys)`` must be called once per batch, in input order, from one thread; it returns
    the batch's mask of documents whose key was not seen before (the representatives). After
    the last batch, :meth:`groups` equals ``exact_duplicate_groups(all keys)``. The distinct keys
    live in an open-addressing hash table kept at most half full (a kernel call per batch, no
    Python object per key): 48 to 96 bytes per distinct key.

    >>> from neardup.methods.exact.keys import exact_keys
    >>> p = ExactPrepass()
    >>> p.admit(exact_keys(["a", "b"])).tolist(), p.admit(exact_keys(["B", "c", ""])).tolist()
    ([True, True], [False, True, True])
    >>> p.groups().rep.tolist()
    [0, 1, 1, 3, 4]
    """

    def __init__(self) -> None:
        self._slots, self._table_reps = _table(1024)
        self._distinct = 0
        self._reps: list[np.ndarray] = []
        spill = current_spill()
        self._spilled_reps = None if spill is None else spill.rows((), np.int64)
        """Under a budget: each document's representative, written to a spill file past it."""
        self._n = 0

    def admit(self, keys: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        if keys.ndim != 2 or keys.shape[1] != 2:
            raise ValueError(f"keys must have shape (n, 2), got {keys.shape}")
        if valid is None:
            valid = nonempty(keys)
        valid = np.ascontiguousarray(valid, dtype=bool)
        start, m = self._n, len(keys)
        self._reserve(self._distinct + m)
        rep = np.empty(m, dtype=np.int64)
        self._distinct += admit_kernel(self._slots, self._table_reps, keys, valid, start, rep)
        if self._spilled_reps is None:
            self._reps.append(rep)
        else:
            self._spilled_reps.append(rep)
        self._n += m
        return rep == np.arange(start, start + m)

    def _reserve(self, distinct: int) -> None:
        """Grow the table (rehashing every entry) so that ``distinct`` keys fill at most half of it."""
        cap = len(self._table_reps)
        if 2 * distinct <= cap:
            return
        while 2 * distinct > cap:
            cap *= 2
        old_slots, old_reps = self._slots, self._table_reps
        self._slots, self._table_reps = _table(cap)
        spill = current_spill()
        if spill is None:
            rehash_kernel(self._slots, self._table_reps, old_slots, old_reps)
            return
        # a stretch of the old table at a time, so that the pages of a spilled new table it
        # touches can be released between stretches (the same insertions, in the same order)
        for lo in range(0, len(old_reps), _REHASH_STEP):
            hi = lo + _REHASH_STEP
            rehash_kernel(self._slots, self._table_reps, old_slots[lo:hi], old_reps[lo:hi])
            spill.relieve()

    def groups(self) -> ExactGroups:
        if self._spilled_reps is None:
            return ExactGroups(np.concatenate(self._reps) if self._reps else np.empty(0, dtype=np.int64))
        rep, self._spilled_reps = self._spilled_reps.finish(), None
        return ExactGroups(rep)


_REHASH_STEP = 1 << 18


def _table(cap: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty hash table of ``cap`` slots, under the job's memory budget when there is one (a
    table past it is a spill file, whose pages the engine releases between batches)."""
    spill = current_spill()
    if spill is None:
        return np.zeros((cap, 2), dtype=np.uint64), np.full(cap, -1, dtype=np.int64)
    slots, reps = spill.array((cap, 2), np.uint64), spill.array(cap, np.int64)
    for lo in range(0, cap, 1 << 20):
        slots[lo : lo + (1 << 20)] = 0
        reps[lo : lo + (1 << 20)] = -1
        spill.relieve()
    return slots, reps


def group_counters(root: np.ndarray) -> dict[str, int]:
    """Groups of two or more documents, and documents that are not the first of their group."""
    n = len(root)
    if not n:
        return {"groups": 0, "duplicates": 0}
    spill = current_spill()
    if spill is not None and (spill.spilled or not spill.fits(8 * n)):
        return _group_counters_external(root, spill)
    sizes = np.bincount(root, minlength=n)
    return {"groups": int(np.count_nonzero(sizes >= 2)), "duplicates": int(n - np.count_nonzero(sizes))}


def _group_counters_external(root: np.ndarray, spill: Spill) -> dict[str, int]:
    """:func:`group_counters` a stretch of documents at a time, with one byte a document (of the
    budget: a spill file past it) marking the roots of groups of two or more."""
    n = len(root)
    head = spill.array(n, np.uint8)
    step = max(spill.work // 32, 1 << 12)
    for lo in range(0, n, step):
        head[lo : lo + step] = 0
    duplicates = 0
    for lo in range(0, n, step):
        r = np.asarray(root[lo : lo + step])
        moved = r != np.arange(lo, lo + len(r))
        duplicates += int(np.count_nonzero(moved))
        head[r[moved]] = 1
        spill.relieve()
    groups = sum(int(np.count_nonzero(head[lo : lo + step])) for lo in range(0, n, step))
    return {"groups": groups, "duplicates": duplicates}
