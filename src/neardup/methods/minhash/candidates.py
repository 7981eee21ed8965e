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

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..._kernels.candidates import (
    EXACT,
    SIGNATURE,
    bucket_bounds,
    connect_band,
    pairs_band,
    similarity_rows,
    verify_group,
)
from ..._kernels.sorting import radix_sort_with
from ..._kernels.unionfind import roots, roots_in_place
from ...core.budget import Spill, current_spill
from ...core.components import new_forest
from ...core.parallel import Threads, as_threads


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
    def signature(cls, sigs: np.ndarray, threshold: float) -> Verifier:
        empty64 = np.empty(0, dtype=np.int64)
        return cls(SIGNATURE, threshold, sigs, np.empty(0, dtype=np.uint64), empty64, empty64)

    @classmethod
    def exact(cls, sigs: np.ndarray, threshold: float, set_values, set_offsets, set_row) -> Verifier:
        return cls(EXACT, threshold, sigs, set_values, set_offsets, set_row)

    @property
    def min_matches(self) -> int:
        """Smallest r with r/K >= threshold (with a guard against float round-off)."""
        return math.ceil(self.threshold * self.sigs.shape[1] - 1e-9)

    def args(self):
        return (self.mode, self.threshold, self.min_matches, self.sigs, self.set_values, self.set_offsets, self.set_row)


def bucket_members(keys: np.ndarray, band: int, candidates: np.ndarray):
    """Documents of ``candidates`` ordered by their key in ``band`` (ties by index), and the
    [start, end) bounds of every bucket with two or more of them."""
    band_keys = keys[candidates, band]
    members = np.array(candidates, dtype=np.int64)
    radix_sort_with(band_keys, members)
    starts, ends = bucket_bounds(band_keys)
    return members, starts, ends


_PREFETCH_MIN = 10_000  # candidates from which sorting bands ahead on the workers pays off


def _bands(keys: np.ndarray, candidates: np.ndarray, threads: Threads):
    """``bucket_members`` of every band in order; with two or more workers the next ``workers``
    bands are sorted on the workers (the sort releases the GIL), side by side, while the caller
    verifies the current one."""
    nbands = keys.shape[1]
    if len(candidates) < _PREFETCH_MIN or nbands < 2 or threads.workers < 2:
        for band in range(nbands):
            yield bucket_members(keys, band, candidates)
        return
    ahead = min(threads.workers, nbands)
    pending = deque(threads.submit(bucket_members, keys, band, candidates) for band in range(ahead))
    for band in range(nbands):
        current = pending.popleft().result()
        if band + ahead < nbands:
            pending.append(threads.submit(bucket_members, keys, band + ahead, candidates))
        yield current


_FAULT = 1 << 16  # what one random read of a spilled array may make resident (Linux's fault-around)


def _spilled_bands(keys: np.ndarray, candidates: np.ndarray, spill: Spill):
    """``(band, members, starts, ends)`` of every band in order, as :func:`_bands`, in the
    working memory of a job past its budget: a band whose sort would not fit in ``spill.work``
    is cut by the top bits of its keys into parts that do, written to spill files in one pass
    over the band (an external bucket sort) and sorted one part after the other. Equal keys
    fall in one part and the parts are taken in key order, so the buckets and their order are
    those of one sort of the whole band."""
    nbands = keys.shape[1]
    need = 32 * len(candidates)  # the band's keys and members, and the sort's buffers for both
    parts = 1
    while parts < 128 and need > parts * spill.work:
        parts *= 2
    shift = np.uint64(64 - parts.bit_length() + 1)
    step = max(spill.work // (16 * nbands), 64)
    for band in range(nbands):
        if parts == 1:  # the band's keys read a stretch at a time (of a spilled keys array: its pages released)
            band_keys = np.empty(len(candidates), dtype=np.uint64)
            for lo in range(0, len(candidates), step):
                band_keys[lo : lo + step] = keys[candidates[lo : lo + step], band]
                spill.relieve()
            members = np.array(candidates, dtype=np.int64)
            radix_sort_with(band_keys, members)
            yield (band, members, *bucket_bounds(band_keys))
            del band_keys, members
            spill.relieve()
            continue
        files = [(spill.rows((), np.uint64), spill.rows((), np.int64)) for _ in range(parts)]
        for lo in range(0, len(candidates), step):
            members = np.asarray(candidates[lo : lo + step], dtype=np.int64)
            band_keys = keys[members, band]
            part = band_keys >> shift
            order = np.argsort(part, kind="stable")
            bounds = np.searchsorted(part[order], np.arange(parts + 1, dtype=np.uint64))
            band_keys, members = band_keys[order], members[order]
            for p in np.flatnonzero(np.diff(bounds)).tolist():
                k, m = files[p]
                k.append(band_keys[bounds[p] : bounds[p + 1]])
                m.append(members[bounds[p] : bounds[p + 1]])
            spill.relieve()
        for p in range(parts):
            k, m = files[p]
            files[p] = None
            band_keys, members = np.array(k.finish()), np.array(m.finish())
            radix_sort_with(band_keys, members)
            yield (band, members, *bucket_bounds(band_keys))
            del band_keys, members
            spill.relieve()


def _slices(starts: np.ndarray, ends: np.ndarray, spill: Spill):
    """The buckets ``starts``/``ends`` in runs whose members' random reads of spilled arrays
    (signatures, parents) make at most ``spill.work`` bytes resident, released after each run."""
    most = max(spill.work // (4 * _FAULT), 16)
    lo = 0
    while lo < len(starts):
        hi = int(np.searchsorted(ends, starts[lo] + most, side="right"))
        hi = max(hi, lo + 1)
        yield starts[lo:hi], ends[lo:hi]
        spill.relieve()
        lo = hi


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


def find_clusters(
    keys: np.ndarray,
    candidates: np.ndarray,
    verifier: Verifier,
    *,
    want_pairs: bool = False,
    threads: Threads | int | None = None,
) -> ClusterResult:
    """Cluster documents from their band keys (uint64[n, b]).

    ``candidates`` lists the documents that take part (empty documents are left out by the
    caller). With ``want_pairs`` every verified candidate pair is returned (i < j, sorted).
    ``threads`` (:class:`~neardup.core.parallel.Threads` or a number of workers) may sort the
    next band while one is verified; the result does not depend on it.
    """
    threads, owned = as_threads(threads)
    try:
        return _find_clusters(keys, candidates, verifier, want_pairs, threads)
    finally:
        if owned:
            threads.close()


def _find_clusters(
    keys: np.ndarray, candidates: np.ndarray, verifier: Verifier, want_pairs: bool, threads: Threads
) -> ClusterResult:
    n = keys.shape[0]
    spill = current_spill()
    if spill is not None and (spill.spilled or not spill.fits(8 * n)):
        spill.external.add("minhash bands")
        parent = spill.array(n, np.int64)  # past the budget: the spilled form of each array
        for lo in range(0, n, 1 << 20):
            parent[lo : lo + (1 << 20)] = np.arange(lo, min(lo + (1 << 20), n), dtype=np.int64)
        spill.relieve()
        bands = _spilled_bands(keys, candidates, spill)
    else:
        spill = None
        parent = new_forest(n)
        bands = ((band, *found) for band, found in enumerate(_bands(keys, candidates, threads)))
    candidates = np.asarray(candidates, dtype=np.int64)
    checked = verified = buckets = 0
    pa = np.empty(0, dtype=np.int64)
    pb = np.empty(0, dtype=np.int64)
    ps = np.empty(0, dtype=np.float64)
    npairs = 0
    for band, members, all_starts, all_ends in bands:
        buckets += len(all_starts)
        runs = [(all_starts, all_ends)] if spill is None else _slices(all_starts, all_ends, spill)
        for starts, ends in runs:
            if want_pairs:
                pa, pb, ps, npairs, c = pairs_band(
                    band, keys, members, starts, ends, parent, pa, pb, ps, npairs, *verifier.args()
                )
                checked += c
            else:
                c, v = connect_band(members, starts, ends, parent, *verifier.args())
                checked += c
                verified += v
    if want_pairs:
        order = np.lexsort((pb[:npairs], pa[:npairs]))
        pa, pb, ps = pa[:npairs][order], pb[:npairs][order], ps[:npairs][order]
        verified = npairs
        result_pairs = (pa, pb, ps)
    else:
        result_pairs = (None, None, None)
    root = roots(parent) if spill is None else _roots_spilled(parent, spill)
    return ClusterResult(root, *result_pairs, CandidateStats(buckets, checked, verified))


def _roots_spilled(parent: np.ndarray, spill: Spill) -> np.ndarray:
    """``roots(parent)`` written over ``parent`` itself (the root of a smaller element is final
    when a larger one reads it: roots are the smallest members), so no second array is made."""
    roots_in_place(parent)
    spill.relieve()
    return parent


def similarity_to(docs: np.ndarray, others: np.ndarray, verifier: Verifier) -> np.ndarray:
    """Similarity of ``docs[q]`` to ``others[q]`` by the verifier's measure (1.0 for itself)."""
    return similarity_rows(np.asarray(docs, dtype=np.int64), np.asarray(others, dtype=np.int64), *verifier.args())


def verify_pairs(members: np.ndarray, verifier: Verifier) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of ``members`` that the verifier accepts: (a, b, similarity), a < b."""
    return verify_group(np.ascontiguousarray(members, dtype=np.int64), *verifier.args())
