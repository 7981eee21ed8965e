"""Batch all-pairs by LSH banding: group band keys by sorting, verify candidates, join clusters.

Two documents are a candidate pair when their signatures agree on every row of at least one of
the b bands (Indyk & Motwani 1998; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*,
ch. 3). For each band the keys are sorted and runs of equal keys are the buckets; no hash table
is built.

A candidate is *verified* when its similarity reaches the threshold: the signature estimate r/K
(``verify="signature"``) or the exact Jaccard of the shingle sets (``verify="exact"``).

Two outputs, the same clusters:

- **clusters only** (no pair list asked for): inside a bucket, a member is compared only with
  earlier members that are not yet in its component, and a bucket whose members already form
  one component is skipped. A bucket of m near-copies costs O(m) verifications, not O(m^2),
  and the components equal those of the full verified candidate graph.
- **complete pairs**: every candidate pair is verified once (a pair that also shares an earlier
  band is skipped there) and every verified pair is reported, as the literature defines the
  result; union-find over them gives the same components.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import math

import numba as nb
import numpy as np

from ._sorting import radix_sort_with
from .cluster import find, new_forest, roots, union
from .measures import jaccard_sorted

SIGNATURE, EXACT = 0, 1


@dataclass(frozen=True)
class CandidateStats:
    """Counters of the candidate and verification stage."""

    buckets: int
    """Buckets (band key runs) with two or more documents."""
    checked: int
    """Candidate pairs whose similarity was computed."""
    verified: int
    """Checked pairs at or above the threshold."""


@dataclass(frozen=True, eq=False)
class ClusterResult:
    """Roots of the verified-pair components, and the verified pairs when asked for."""

    root: np.ndarray
    pairs_a: np.ndarray | None
    pairs_b: np.ndarray | None
    pairs_similarity: np.ndarray | None
    stats: CandidateStats


@dataclass(frozen=True, eq=False)
class Verifier:
    """What "similar enough" means for a candidate pair.

    ``signature``: r/K >= threshold on the signature matrix ``sigs``.
    ``exact``: exact Jaccard >= threshold on sorted shingle sets given as CSR
    (``set_values``, ``set_offsets``) with ``set_row[doc]`` the CSR row of a document (-1: none).
    """

    mode: int
    threshold: float
    sigs: np.ndarray
    set_values: np.ndarray
    set_offsets: np.ndarray
    set_row: np.ndarray

    @classmethod
    def signature(cls, sigs: np.ndarray, threshold: float) -> "Verifier":
        empty64 = np.empty(0, dtype=np.int64)
        return cls(SIGNATURE, threshold, sigs, np.empty(0, dtype=np.uint64), empty64, empty64)

    @classmethod
    def exact(cls, sigs: np.ndarray, threshold: float, set_values, set_offsets, set_row) -> "Verifier":
        return cls(EXACT, threshold, sigs, set_values, set_offsets, set_row)

    @property
    def min_matches(self) -> int:
        """Smallest r with r/K >= threshold (with a guard against float round-off)."""
        return int(math.ceil(self.threshold * self.sigs.shape[1] - 1e-9))

    def args(self):
        return (self.mode, self.threshold, self.min_matches, self.sigs,
                self.set_values, self.set_offsets, self.set_row)


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
    s = jaccard_sorted(set_values[set_offsets[ri]:set_offsets[ri + 1]],
                       set_values[set_offsets[rj]:set_offsets[rj + 1]])
    return s >= threshold, s


@nb.njit(cache=True, nogil=True)
def _grow(arr, size):
    out = np.empty(max(2 * arr.shape[0], size, 16), dtype=arr.dtype)
    out[:arr.shape[0]] = arr
    return out


@nb.njit(cache=True, nogil=True)
def _bucket_bounds(sorted_keys):
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
def _connect_band(members_sorted, starts, ends, parent,
                  mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
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
def _pairs_band(band, keys, members_sorted, starts, ends, parent, pa, pb, ps, npairs,
                mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
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


def bucket_members(keys: np.ndarray, band: int, candidates: np.ndarray):
    """Documents of ``candidates`` ordered by their key in ``band`` (ties by index), and the
    [start, end) bounds of every bucket with two or more of them."""
    band_keys = keys[candidates, band]
    members = np.array(candidates, dtype=np.int64)
    radix_sort_with(band_keys, members)
    starts, ends = _bucket_bounds(band_keys)
    return members, starts, ends


_PREFETCH_MIN = 100_000  # candidates from which sorting the next band on a thread pays off


def _bands(keys: np.ndarray, candidates: np.ndarray):
    """``bucket_members`` of every band in order; for large inputs the next band is sorted on a
    thread (the sort releases the GIL) while the caller verifies the current one."""
    nbands = keys.shape[1]
    if len(candidates) < _PREFETCH_MIN or nbands < 2:
        for band in range(nbands):
            yield bucket_members(keys, band, candidates)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(bucket_members, keys, 0, candidates)
        for band in range(nbands):
            current = pending.result()
            if band + 1 < nbands:
                pending = pool.submit(bucket_members, keys, band + 1, candidates)
            yield current


def in_buckets(keys: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """bool mask over all documents: in a bucket of two or more in some band."""
    mask = np.zeros(keys.shape[0], dtype=bool)
    for band in range(keys.shape[1]):
        members, starts, ends = bucket_members(keys, band, candidates)
        cover = np.zeros(len(members) + 1, dtype=np.int64)
        cover[starts] += 1
        cover[ends] -= 1
        mask[members[np.cumsum(cover[:-1]) > 0]] = True
    return mask


def find_clusters(keys: np.ndarray, candidates: np.ndarray, verifier: Verifier, *,
                  want_pairs: bool = False) -> ClusterResult:
    """Cluster documents from their band keys (uint64[n, b]).

    ``candidates`` lists the documents that take part (empty documents are left out by the
    caller). With ``want_pairs`` every verified candidate pair is returned (i < j, sorted).
    """
    n = keys.shape[0]
    parent = new_forest(n)
    candidates = np.asarray(candidates, dtype=np.int64)
    checked = verified = buckets = 0
    pa = np.empty(0, dtype=np.int64)
    pb = np.empty(0, dtype=np.int64)
    ps = np.empty(0, dtype=np.float64)
    npairs = 0
    for band, (members, starts, ends) in enumerate(_bands(keys, candidates)):
        buckets += len(starts)
        if want_pairs:
            pa, pb, ps, npairs, c = _pairs_band(band, keys, members, starts, ends, parent, pa, pb, ps, npairs,
                                                *verifier.args())
            checked += c
        else:
            c, v = _connect_band(members, starts, ends, parent, *verifier.args())
            checked += c
            verified += v
    if want_pairs:
        order = np.lexsort((pb[:npairs], pa[:npairs]))
        pa, pb, ps = pa[:npairs][order], pb[:npairs][order], ps[:npairs][order]
        verified = npairs
        result_pairs = (pa, pb, ps)
    else:
        result_pairs = (None, None, None)
    return ClusterResult(roots(parent), *result_pairs, CandidateStats(buckets, checked, verified))


@nb.njit(cache=True, nogil=True)
def _similarity_to(docs, others, mode, threshold, min_matches, sigs, set_values, set_offsets, set_row):
    out = np.empty(docs.shape[0], dtype=np.float64)
    for q in range(docs.shape[0]):
        if docs[q] == others[q]:
            out[q] = 1.0
        else:
            _, out[q] = similarity(docs[q], others[q], mode, threshold, min_matches, sigs,
                                   set_values, set_offsets, set_row)
    return out


def similarity_to(docs: np.ndarray, others: np.ndarray, verifier: Verifier) -> np.ndarray:
    """Similarity of ``docs[q]`` to ``others[q]`` by the verifier's measure (1.0 for itself)."""
    return _similarity_to(np.asarray(docs, dtype=np.int64), np.asarray(others, dtype=np.int64), *verifier.args())
