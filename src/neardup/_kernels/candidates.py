"""Kernels of the MinHash + LSH candidate stage: buckets of equal band keys, verification, clusters.

Per band, the caller sorts the documents by band key; :func:`bucket_bounds` finds the runs of
equal keys (the buckets), and :func:`connect_band` (clusters only) or :func:`pairs_band` (every
verified pair) verifies the candidates inside them with :func:`similarity`: the signature
estimate (mode ``SIGNATURE``) or the exact Jaccard of the shingle sets (mode ``EXACT``).
:func:`verify_group` verifies one group, for an engine's generic candidate stage, and
:func:`similarity_rows` gives documents' similarities to others (their kept documents). What the
two outputs are and why they give the same clusters: :mod:`neardup.methods.minhash.candidates`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .intrinsics import copy_into
from .measures import jaccard_sorted
from .unionfind import find, root_edges, union

SIGNATURE, EXACT = 0, 1


@nb.njit(inline="always", cache=True)
def similarity(i, j, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    """(is similar, similarity) of documents i and j under the verifier's rule."""
    if mode == SIGNATURE:
        k = sigs.shape[1]
        m = 0
        for q in range(k):
            if sigs[i, q] == sigs[j, q]:
                m += 1
        return m >= min_matches, m / k
    ri = set_row[i]
    rj = set_row[j]
    s = jaccard_sorted(
        set_values[set_offsets[ri] : set_offsets[ri + 1]], set_values[set_offsets[rj] : set_offsets[rj + 1]]
    )
    return s >= threshold, s


@nb.njit(cache=True, nogil=True)
def _grow(arr, size):
    out = np.empty(max(2 * arr.shape[0], size, 16), dtype=arr.dtype)
    copy_into(out, 0, arr, 0, arr.shape[0])
    return out


@nb.njit(cache=True, nogil=True)
def bucket_bounds(sorted_keys):
    """Start of every run of equal keys with length >= 2, and the end of each."""
    n = sorted_keys.shape[0]
    starts = np.empty(n // 2 + 1, dtype=np.int64)
    ends = np.empty(n // 2 + 1, dtype=np.int64)
    nb_ = 0
    s = 0
    for i in range(1, n + 1):
        if i == n or sorted_keys[i] != sorted_keys[s]:
            if i - s >= 2:
                starts[nb_] = s
                ends[nb_] = i
                nb_ += 1
            s = i
    return starts[:nb_], ends[:nb_]


@nb.njit(cache=True, nogil=True)
def connect_band(
    members_sorted, starts, ends, parent, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row
):
    """Clusters-only processing of one band's buckets; returns (checked, verified)."""
    checked = 0
    verified = 0
    for bkt in range(starts.shape[0]):
        s, e = starts[bkt], ends[bkt]
        r0 = find(parent, members_sorted[s])
        one = True
        for x in range(s + 1, e):
            if find(parent, members_sorted[x]) != r0:
                one = False
                break
        if one:
            continue
        for y in range(s + 1, e):
            j = members_sorted[y]
            for x in range(s, y):
                i = members_sorted[x]
                if find(parent, i) == find(parent, j):
                    continue
                ok, _ = similarity(i, j, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row)
                checked += 1
                if ok:
                    verified += 1
                    union(parent, i, j)
    return checked, verified


@nb.njit(cache=True, nogil=True)
def pairs_band(
    band,
    keys,
    members_sorted,
    starts,
    ends,
    parent,
    pa,
    pb,
    ps,
    npairs,
    mode,
    threshold,
    min_matches,
    sigs,
    set_values,
    set_offsets,
    set_row,
):
    """Complete-graph processing of one band: verify every pair not seen in an earlier band."""
    checked = 0
    for bkt in range(starts.shape[0]):
        s, e = starts[bkt], ends[bkt]
        for x in range(s, e):
            i = members_sorted[x]
            for y in range(x + 1, e):
                j = members_sorted[y]
                seen = False
                for earlier in range(band):
                    if keys[i, earlier] == keys[j, earlier]:
                        seen = True
                        break
                if seen:
                    continue
                ok, sim = similarity(i, j, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row)
                checked += 1
                if ok:
                    if npairs == pa.shape[0]:
                        pa = _grow(pa, npairs + 1)
                        pb = _grow(pb, npairs + 1)
                        ps = _grow(ps, npairs + 1)
                    lo, hi = (i, j) if i < j else (j, i)
                    pa[npairs] = lo
                    pb[npairs] = hi
                    ps[npairs] = sim
                    npairs += 1
                    union(parent, i, j)
    return pa, pb, ps, npairs, checked


@nb.njit(cache=True, nogil=True)
def similarity_rows(docs, others, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    out = np.empty(docs.shape[0], dtype=np.float64)
    for q in range(docs.shape[0]):
        if docs[q] == others[q]:
            out[q] = 1.0
        else:
            _, out[q] = similarity(
                docs[q], others[q], mode, threshold, min_matches, sigs, set_values, set_offsets, set_row
            )
    return out


@nb.njit(cache=True, nogil=True)
def verify_group(members, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    """Every pair of ``members`` that passes ``similarity``: (a, b, similarity), a < b, in the
    order of the members (the generic candidate stage: one group of one band)."""
    m = members.shape[0]
    cap = m * (m - 1) // 2
    pa = np.empty(cap, dtype=np.int64)
    pb = np.empty(cap, dtype=np.int64)
    ps = np.empty(cap, dtype=np.float64)
    q = 0
    for x in range(m):
        for y in range(x + 1, m):
            i = members[x]
            j = members[y]
            ok, sim = similarity(i, j, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row)
            if ok:
                pa[q] = min(i, j)
                pb[q] = max(i, j)
                ps[q] = sim
                q += 1
    return pa[:q], pb[:q], ps[:q]


@nb.njit(cache=True, nogil=True)
def verify_groups(members, bounds, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    """:func:`verify_group` of every group ``members[bounds[g]:bounds[g + 1]]`` in one call (the
    candidate stage of a whole shuffle bucket); a pair in several groups is listed each time."""
    cap = 16
    pa = np.empty(cap, dtype=np.int64)
    pb = np.empty(cap, dtype=np.int64)
    ps = np.empty(cap, dtype=np.float64)
    q = 0
    for g in range(bounds.shape[0] - 1):
        lo = bounds[g]
        hi = bounds[g + 1]
        for x in range(lo, hi):
            for y in range(x + 1, hi):
                i = members[x]
                j = members[y]
                ok, sim = similarity(i, j, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row)
                if ok:
                    if q == pa.shape[0]:
                        pa = _grow(pa, q + 1)
                        pb = _grow(pb, q + 1)
                        ps = _grow(ps, q + 1)
                    pa[q] = min(i, j)
                    pb[q] = max(i, j)
                    ps[q] = sim
                    q += 1
    return pa[:q], pb[:q], ps[:q]


@nb.njit(cache=True, nogil=True)
def connect_groups(members, bounds, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    """:func:`connect_band` over the groups ``members[bounds[g]:bounds[g + 1]]`` of one shuffle
    bucket, in a union-find of its own; returns edges (a, b), a < b, one from every document the
    groups joined to another to the root of its component (they span the components of every
    verified pair of the groups), and (checked, verified)."""
    size = 0
    for x in range(members.shape[0]):
        size = max(size, members[x] + 1)
    parent = np.arange(size)
    groups = max(bounds.shape[0] - 1, 0)
    starts = np.empty(groups, dtype=np.int64)
    ends = np.empty(groups, dtype=np.int64)
    for g in range(groups):
        starts[g] = bounds[g]
        ends[g] = bounds[g + 1]
    checked, verified = connect_band(
        members, starts, ends, parent, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row
    )
    pa, pb = root_edges(parent)
    return pa, pb, checked, verified
