r"""Locality-sensitive hashing (LSH) of MinHash signatures: the S-curve, its tuning, and an index.

Banding (Indyk & Motwani 1998; Broder 1997; Leskovec, Rajaraman & Ullman, *Mining of Massive
Datasets*, ch. 3). A signature of K slots is cut into ``b`` bands of ``r`` consecutive slots
(``b * r <= K``; slots past ``b * r`` are not banded). Two sets with Jaccard similarity ``s`` agree
on one slot with probability ``s``, so on a whole band with probability ``s^r``, and they become a
*candidate pair* when at least one of the ``b`` bands agrees::

    P(s) = 1 - (1 - s^r)^b                      (the S-curve)

The curve rises fastest around the *effective threshold* ``(1/b)^(1/r)``. For a target threshold
``t`` the two kinds of error are measured by areas under the curve:

- false positive area ``FP = integral_0^t P(s) ds`` (dissimilar pairs that become candidates);
- false negative area ``FN = integral_t^1 (1 - P(s)) ds`` (similar pairs that are missed).

``optimal_params`` picks, among all ``(b, r)`` with ``b * r <= K``, the one minimising
``fp_weight * FP + fn_weight * FN``. The areas are computed by Gauss-Legendre quadrature; ``P`` is a
polynomial of degree ``b * r``, so the rule is exact (to rounding) for ``K < 256`` and a composite
rule beyond.

Worked example (MMDS, b = 20, r = 5): one band of a 0.8-similar pair agrees with probability
``0.8^5 = 0.328``, all 20 bands miss with probability ``(1 - 0.328)^20 = 0.00035``; a 0.3-similar
pair becomes a candidate with probability ``1 - (1 - 0.3^5)^20 = 0.0474``.

>>> round(candidate_probability(0.8, 20, 5), 4)
0.9996
>>> p = optimal_params(0.8, 128)
>>> (p.bands, p.rows)
(17, 7)
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Iterator, Sequence

import numba as nb
import numpy as np

from ._sorting import merge_runs, radix_sort_with
from ._hash import P1, P2, SEED, fmix64, rotl64
from .errors import IncompatibleSketchError
from .minhash import EMPTY_VALUE, MinHashScheme, Signatures

__all__ = [
    "DEFAULT_FN_WEIGHT",
    "DEFAULT_FP_WEIGHT",
    "LSHIndex",
    "LSHParams",
    "band_keys",
    "candidate_probability",
    "effective_threshold",
    "false_negative_area",
    "false_positive_area",
    "optimal_params",
    "params_for",
]

#: Default weights of the error areas in ``optimal_params``: recall first (see its docstring).
DEFAULT_FP_WEIGHT = 0.02
DEFAULT_FN_WEIGHT = 0.98

_MAX_GL_NODES = 128
_PARALLEL_ROWS = 65536  # batches at least this large are sorted / hashed on threads


# --------------------------------------------------------------------------------------------
# argument checks


def _check_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a real number, got nan")
    return value


def _check_threshold(threshold: Any) -> float:
    t = _check_real("threshold", threshold)
    if not 0.0 < t < 1.0:
        raise ValueError(f"threshold must be in the open interval (0, 1), got {t}")
    return t


def _check_weights(fp_weight: Any, fn_weight: Any) -> tuple[float, float]:
    fp = _check_real("fp_weight", fp_weight)
    fn = _check_real("fn_weight", fn_weight)
    if not (0.0 <= fp < math.inf and 0.0 <= fn < math.inf):
        raise ValueError(f"fp_weight and fn_weight must be finite and >= 0, got {fp} and {fn}")
    if fp == 0.0 and fn == 0.0:
        raise ValueError("fp_weight and fn_weight cannot both be 0: at least one error must count")
    return fp, fn


def _check_similarity(name: str, s: Any) -> float:
    v = _check_real(name, s)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {v}")
    return v


# --------------------------------------------------------------------------------------------
# the S-curve


def _miss_probability(s: np.ndarray, bands, rows) -> np.ndarray:
    """``(1 - s^r)^b``, computed as ``exp(b * log1p(-s^r))`` (accurate when ``s^r`` is tiny)."""
    with np.errstate(divide="ignore"):
        return np.exp(bands * np.log1p(-np.power(s, rows)))


def _hit_probability(s: np.ndarray, bands, rows) -> np.ndarray:
    """``1 - (1 - s^r)^b`` without cancellation."""
    with np.errstate(divide="ignore"):
        return -np.expm1(bands * np.log1p(-np.power(s, rows))) + 0.0


def candidate_probability(s, bands: int, rows: int):
    """P(s) = 1 - (1 - s^r)^b: the probability that a pair of Jaccard similarity ``s`` shares a band.

    ``s`` may be a number (returns a float) or an array (returns an array of the same shape).

    >>> round(candidate_probability(0.5, 20, 5), 2)
    0.47
    >>> candidate_probability(np.array([0.0, 1.0]), 20, 5)
    array([0., 1.])
    """
    bands = _check_int("bands", bands)
    rows = _check_int("rows", rows)
    arr = np.asarray(s, dtype=np.float64)
    if np.isnan(arr).any() or (arr < 0).any() or (arr > 1).any():
        raise ValueError("similarity s must lie in [0, 1]")
    p = _hit_probability(arr, bands, rows)
    return float(p) if p.ndim == 0 else p


def effective_threshold(bands: int, rows: int) -> float:
    """(1/b)^(1/r): the similarity where the S-curve rises fastest (approximately where P = 1/2).

    >>> round(effective_threshold(20, 5), 3)
    0.549
    """
    bands = _check_int("bands", bands)
    rows = _check_int("rows", rows)
    return (1.0 / bands) ** (1.0 / rows)


@functools.lru_cache(maxsize=64)
def _unit_rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes in (0, 1) and weights summing to 1 for polynomials of ``degree``.

    One Gauss-Legendre panel of ``m >= (degree + 1) / 2`` nodes is exact for degree < 256; above,
    ``[0, 1]`` is split into equal panels of 128 nodes, one per 255 degrees (checked against the
    exact polynomial integrals up to K = 4096: error < 1e-14).
    """
    m = min(max(degree // 2 + 1, 8), _MAX_GL_NODES)
    panels = -(-degree // (2 * m - 1))
    x, w = np.polynomial.legendre.leggauss(m)
    edges = np.arange(panels, dtype=np.float64) / panels
    nodes = (edges[:, None] + (x[None, :] + 1.0) / (2.0 * panels)).ravel()
    weights = np.tile(w / (2.0 * panels), panels)
    return nodes, weights


def _areas(threshold: float, bands: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False positive and false negative areas for every ``(bands[i], rows[i])``."""
    bands = np.asarray(bands, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    nodes, weights = _unit_rule(int(np.max(bands * rows)))
    fp = np.empty(bands.shape[0])
    fn = np.empty(bands.shape[0])
    step = max(1, 2_000_000 // nodes.shape[0])  # bound the temporary (pairs x nodes) matrices
    below = threshold * nodes
    above = threshold + (1.0 - threshold) * nodes
    for lo in range(0, bands.shape[0], step):
        b = bands[lo : lo + step, None]
        r = rows[lo : lo + step, None]
        fp[lo : lo + step] = threshold * (_hit_probability(below, b, r) @ weights)
        fn[lo : lo + step] = (1.0 - threshold) * (_miss_probability(above, b, r) @ weights)
    return fp, fn


def false_positive_area(threshold: float, bands: int, rows: int) -> float:
    """integral_0^t P(s) ds: the weight of pairs below the threshold that still become candidates.

    >>> round(false_positive_area(0.8, 20, 5), 4)
    0.2987
    """
    t = _check_threshold(threshold)
    fp, _ = _areas(t, np.array([_check_int("bands", bands)]), np.array([_check_int("rows", rows)]))
    return float(fp[0])


def false_negative_area(threshold: float, bands: int, rows: int) -> float:
    """integral_t^1 (1 - P(s)) ds: the weight of pairs above the threshold that are missed.

    >>> false_negative_area(0.8, 20, 5) < 1e-4
    True
    """
    t = _check_threshold(threshold)
    _, fn = _areas(t, np.array([_check_int("bands", bands)]), np.array([_check_int("rows", rows)]))
    return float(fn[0])


@dataclass(frozen=True)
class LSHParams:
    """A banding of MinHash signatures and the goal it was chosen for.

    Attributes:
        bands: b, the number of bands.
        rows: r, the number of signature slots per band (``bands * rows <= num_perm``).
        threshold: the Jaccard similarity the banding targets.
        fp_weight: weight of the false positive area in the objective.
        fn_weight: weight of the false negative area in the objective.
    """

    bands: int
    rows: int
    threshold: float
    fp_weight: float = DEFAULT_FP_WEIGHT
    fn_weight: float = DEFAULT_FN_WEIGHT

    def __post_init__(self) -> None:
        _check_int("bands", self.bands)
        _check_int("rows", self.rows)
        _check_threshold(self.threshold)
        _check_weights(self.fp_weight, self.fn_weight)

    @property
    def effective_threshold(self) -> float:
        """(1/b)^(1/r), where the S-curve is steepest."""
        return effective_threshold(self.bands, self.rows)

    @property
    def false_positive_area(self) -> float:
        """integral_0^threshold P(s) ds."""
        return false_positive_area(self.threshold, self.bands, self.rows)

    @property
    def false_negative_area(self) -> float:
        """integral_threshold^1 (1 - P(s)) ds."""
        return false_negative_area(self.threshold, self.bands, self.rows)

    def candidate_probability(self, s):
        """P(s) for this banding (see the module function)."""
        return candidate_probability(s, self.bands, self.rows)


def _all_bandings(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (b, r) with b * r <= num_perm, ordered by b then r."""
    counts = [num_perm // b for b in range(1, num_perm + 1)]
    bands = np.repeat(np.arange(1, num_perm + 1), counts)
    rows = np.concatenate([np.arange(1, c + 1) for c in counts])
    return bands, rows


@functools.lru_cache(maxsize=512)
def _optimal_banding(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    bands, rows = _all_bandings(num_perm)
    fp, fn = _areas(threshold, bands, rows)
    i = int(np.argmin(fp_weight * fp + fn_weight * fn))  # ties: the smallest b, then r
    return int(bands[i]), int(rows[i])


def optimal_params(
    threshold: float,
    num_perm: int,
    *,
    fp_weight: float = DEFAULT_FP_WEIGHT,
    fn_weight: float = DEFAULT_FN_WEIGHT,
) -> LSHParams:
    """The banding (b, r), b * r <= num_perm, minimising ``fp_weight * FP + fn_weight * FN``.

    FP and FN are the areas of ``false_positive_area`` and ``false_negative_area``; every
    ``(b, r)`` is tried (about K ln K of them) and the result is cached.

    The default weights favour recall because candidates are verified afterwards: a missed pair
    (FN) counts 49 times as much as a spurious candidate (FP, 0.02 vs 0.98). A false positive
    costs one K-slot comparison in the verify stage (about 0.1 microsecond); a false negative is a
    duplicate that no later stage can recover. With the defaults, at K = 128:

    ===  ========  =========  ========  ======  ========  ======  ======  ======
    t    (b, r)    (1/b)^1/r  P(t+.05)  P(t)    P(t-.2)   P(0.5)  P(0.6)  P(0.7)
    ===  ========  =========  ========  ======  ========  ======  ======  ======
    0.5  (34, 3)   0.309      0.9979    0.9893  0.6057    0.9893  0.9997  1.0000
    0.7  (23, 5)   0.534      0.9980    0.9855  0.5182    0.5182  0.8446  0.9855
    0.8  (17, 7)   0.667      0.9986    0.9817  0.3829    0.1248  0.3829  0.7680
    0.9  (10, 12)  0.825      0.9996    0.9638  0.1301    0.0024  0.0216  0.1301
    ===  ========  =========  ========  ======  ========  ======  ======  ======

    At t = 0.8, pairs of similarity 0.4 become candidates with probability 0.027 and 0.3 with
    0.0037; real collections are dominated by low-similarity pairs, so candidates stay few.
    Equal weights (datasketch's default) give (9, 13) at t = 0.8, which misses 31% of
    0.85-similar pairs (P(0.85) = 0.686); 0.05 / 0.95 give (16, 8) with P(0.85) = 0.9938, just
    short of the 0.995 we want; 0.02 / 0.98 is the largest round fp_weight that reaches it.

    >>> optimal_params(0.8, 128)
    LSHParams(bands=17, rows=7, threshold=0.8, fp_weight=0.02, fn_weight=0.98)
    >>> p = optimal_params(0.8, 128, fp_weight=0.5, fn_weight=0.5)
    >>> (p.bands, p.rows)
    (9, 13)
    """
    t = _check_threshold(threshold)
    k = _check_int("num_perm", num_perm)
    fp, fn = _check_weights(fp_weight, fn_weight)
    bands, rows = _optimal_banding(t, k, fp, fn)
    return LSHParams(bands, rows, t, fp, fn)


def params_for(
    threshold: float,
    num_perm: int,
    bands: int | None = None,
    rows: int | None = None,
    *,
    fp_weight: float = DEFAULT_FP_WEIGHT,
    fn_weight: float = DEFAULT_FN_WEIGHT,
) -> LSHParams:
    """The banding to use: ``optimal_params`` unless ``bands`` and/or ``rows`` are given by hand.

    With only one of them given, the other is ``num_perm // given``.

    >>> params_for(0.8, 128, bands=20)
    LSHParams(bands=20, rows=6, threshold=0.8, fp_weight=0.02, fn_weight=0.98)
    """
    t = _check_threshold(threshold)
    k = _check_int("num_perm", num_perm)
    fp, fn = _check_weights(fp_weight, fn_weight)
    if bands is None and rows is None:
        return optimal_params(t, k, fp_weight=fp, fn_weight=fn)
    if bands is not None:
        bands = _check_int("bands", bands)
    if rows is not None:
        rows = _check_int("rows", rows)
    if rows is None:
        rows = k // bands
        if rows == 0:
            raise ValueError(f"bands={bands} is more than num_perm={k}: every band needs at least one slot")
    if bands is None:
        bands = k // rows
        if bands == 0:
            raise ValueError(f"rows={rows} is more than num_perm={k}: a band cannot be longer than the signature")
    if bands * rows > k:
        raise ValueError(f"bands * rows must be <= num_perm, got {bands} * {rows} = {bands * rows} > {k}")
    return LSHParams(bands, rows, t, fp, fn)


# --------------------------------------------------------------------------------------------
# band keys


@nb.njit(cache=True, nogil=True)
def _band_keys_kernel(values, bands, rows, out):
    n = values.shape[0]
    length = np.uint64(4 * rows)
    starts = np.empty(bands, dtype=np.uint64)
    for j in range(bands):
        starts[j] = fmix64(SEED ^ np.uint64(j))
    for i in range(n):
        for j in range(bands):
            h = starts[j]
            c = j * rows
            end = c + rows
            while c + 2 <= end:
                w = np.uint64(values[i, c]) | (np.uint64(values[i, c + 1]) << np.uint64(32))
                h = rotl64(h ^ (w * P1), 31) * P2
                c += 2
            if c < end:
                h = rotl64(h ^ (np.uint64(values[i, c]) * P1), 31) * P2
            out[i, j] = fmix64(h ^ length)
    return out


def band_keys(values: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The 64-bit key of every band of every signature: uint64 array of shape (n, bands).

    Key of band ``j`` (0-based) of row ``i`` -- part of the stable format, pinned by golden tests:
    the band's slots ``values[i, j*r:(j+1)*r]`` are read as ``4r`` little-endian bytes and hashed
    like ``_hash.hash_bytes`` but from the band's own start state::

        h = fmix64(SEED ^ j)
        for each 8-byte word w = v[2m] | v[2m+1] << 32 (an odd last slot: w = v[r-1]):
            h = rotl64(h ^ (w * P1), 31) * P2          (all arithmetic mod 2^64)
        key = fmix64(h ^ 4r)

    Equal tuples in the same band give equal keys; the start state makes the same tuple in another
    band give an unrelated key.

    >>> v = np.arange(8, dtype=np.uint32).reshape(1, 8)
    >>> band_keys(v, 2, 4).shape
    (1, 2)
    """
    bands = _check_int("bands", bands)
    rows = _check_int("rows", rows)
    values = np.asarray(values)
    if values.dtype != np.uint32 or values.ndim != 2:
        raise TypeError(f"values must be a 2-D uint32 array, got {values.dtype} of shape {values.shape}")
    if bands * rows > values.shape[1]:
        raise ValueError(f"bands * rows = {bands * rows} is more than the {values.shape[1]} slots of a signature")
    out = np.empty((values.shape[0], bands), dtype=np.uint64)
    return _band_keys_kernel(np.ascontiguousarray(values), bands, rows, out)


# --------------------------------------------------------------------------------------------
# index kernels
#
# The band tables hold one sorted run per batch of rows, kept in one (bands, capacity) array:
# run k occupies columns bounds[k]:bounds[k+1] of every band, sorted by key within each band.
# Runs are merged (log-structured, like an LSM tree) so there are O(log n) of them.


@nb.njit(cache=True, nogil=True)
def _compact_runs(keys, ids, bounds, remap):
    """Drop entries whose ``remap[id] < 0`` and renumber the rest; returns the new bounds."""
    new_bounds = np.zeros_like(bounds)
    for j in range(keys.shape[0]):
        o = 0
        for k in range(bounds.shape[0] - 1):
            for c in range(bounds[k], bounds[k + 1]):
                new_id = remap[ids[j, c]]
                if new_id >= 0:
                    keys[j, o] = keys[j, c]
                    ids[j, o] = np.uint32(new_id)
                    o += 1
            new_bounds[k + 1] = o
    return new_bounds


@nb.njit(inline="always")
def _grow(arr, used):
    if used < arr.shape[0]:
        return arr
    bigger = np.empty(2 * arr.shape[0], dtype=arr.dtype)
    bigger[:used] = arr[:used]
    return bigger


@nb.njit(cache=True, nogil=True)
def _query_kernel(qkeys, qvalues, keys, ids, bounds, sigs, alive, min_matches, limit):
    """Candidates of every query row with at least ``min_matches`` equal slots.

    Returns (offsets, ids, matches): query q's results are ``offsets[q]:offsets[q+1]``, sorted by
    matches descending then id ascending, at most ``limit`` of them (``limit < 0``: all).
    """
    nq = qkeys.shape[0]
    bands = qkeys.shape[1]
    k = qvalues.shape[1]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    out_ids = np.empty(64, dtype=np.int64)
    out_matches = np.empty(64, dtype=np.int64)
    hits = np.empty(64, dtype=np.int64)
    used = 0
    for q in range(nq):
        offsets[q + 1] = used
        empty = True
        for c in range(k):
            if qvalues[q, c] != EMPTY_VALUE:
                empty = False
                break
        if empty:
            continue
        nh = 0
        for j in range(bands):
            key = qkeys[q, j]
            for run in range(bounds.shape[0] - 1):
                lo = bounds[run]
                c = lo + np.searchsorted(keys[j, lo : bounds[run + 1]], key)
                while c < bounds[run + 1] and keys[j, c] == key:
                    hits = _grow(hits, nh)
                    hits[nh] = ids[j, c]
                    nh += 1
                    c += 1
        cand = np.unique(hits[:nh])
        start = used
        for row in cand:
            if not alive[row]:
                continue
            m = 0
            for c in range(k):
                if sigs[row, c] == qvalues[q, c]:
                    m += 1
            if m >= min_matches:
                out_ids = _grow(out_ids, used)
                out_matches = _grow(out_matches, used)
                out_ids[used] = row
                out_matches[used] = m
                used += 1
        # order by matches descending, then id (insertion order) ascending
        order = np.argsort((k - out_matches[start:used]) * (np.int64(1) << 32) + out_ids[start:used])
        if limit >= 0 and order.shape[0] > limit:
            order = order[:limit]
        sorted_ids = out_ids[start:used][order]
        sorted_matches = out_matches[start:used][order]
        used = start + order.shape[0]
        out_ids[start:used] = sorted_ids
        out_matches[start:used] = sorted_matches
        offsets[q + 1] = used
    return offsets, out_ids[:used], out_matches[:used]


# --------------------------------------------------------------------------------------------
# the index


def _run_each(fn, items, parallel: bool) -> None:
    """``fn(item)`` for every item; on a thread pool when ``parallel`` (the kernels release the GIL)."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1)
    if not parallel or workers <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(fn, items):
            pass


class _Removed:
    """Marks an internal row whose key was removed (``None`` is a valid user key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<removed>"


_REMOVED = _Removed()


class _BandTables:
    """Per band, sorted uint64 keys with the internal row id of each, in log-structured runs."""

    def __init__(self, bands: int) -> None:
        self.keys = np.empty((bands, 0), dtype=np.uint64)
        self.ids = np.empty((bands, 0), dtype=np.uint32)
        self.bounds = np.zeros(1, dtype=np.int64)  # run k is columns bounds[k]:bounds[k+1]

    @property
    def size(self) -> int:
        return int(self.bounds[-1])

    def append(self, row_keys: np.ndarray, row_ids: np.ndarray) -> None:
        """Add rows with their band keys (shape (n, bands)) as a new run, then merge runs."""
        n = row_keys.shape[0]
        if n == 0:
            return
        self._reserve(self.size + n)
        lo, hi = self.size, self.size + n

        def sort_band(j: int) -> None:
            self.keys[j, lo:hi] = row_keys[:, j]
            self.ids[j, lo:hi] = row_ids
            radix_sort_with(self.keys[j, lo:hi], self.ids[j, lo:hi])

        _run_each(sort_band, range(row_keys.shape[1]), parallel=n >= _PARALLEL_ROWS)
        self.bounds = np.append(self.bounds, hi)
        self._merge_tail()

    def compact(self, remap: np.ndarray) -> None:
        """Keep entries with ``remap[id] >= 0``, renamed to ``remap[id]``; merge into one run."""
        self.bounds = _compact_runs(self.keys, self.ids, self.bounds, remap)
        while self.bounds.shape[0] > 2:
            self._merge_last_two()
        self.keys = self.keys[:, : self.size].copy()  # give the removed rows' memory back
        self.ids = self.ids[:, : self.size].copy()

    def _reserve(self, needed: int) -> None:
        capacity = self.keys.shape[1]
        if needed <= capacity:
            return
        capacity = max(needed, capacity + capacity // 2, 1024)
        for name in ("keys", "ids"):
            old = getattr(self, name)
            new = np.empty((old.shape[0], capacity), dtype=old.dtype)
            new[:, : self.size] = old[:, : self.size]
            setattr(self, name, new)

    def _merge_tail(self) -> None:
        """Merge the last two runs while the older is less than twice the newer (O(log n) runs)."""
        b = self.bounds
        while b.shape[0] > 2 and b[-2] - b[-3] < 2 * (b[-1] - b[-2]):
            self._merge_last_two()
            b = self.bounds

    def _merge_last_two(self) -> None:
        lo, mid, hi = (int(x) for x in self.bounds[-3:])
        merge_runs(self.keys, self.ids, lo, mid, hi)
        self.bounds = np.delete(self.bounds, -2)


class LSHIndex:
    """An in-memory MinHash LSH index: "which stored sets are like this one?".

    Signatures are banded as chosen by ``params_for(threshold, num_perm, bands, rows, ...)``; a
    stored row is a *candidate* of a query when at least one band of the two is equal. ``query``
    returns the candidates whose estimated Jaccard similarity (equal slots / num_perm) is at least
    ``min_similarity``. An empty set (every slot ``EMPTY_VALUE``) is stored but is never a
    candidate, and querying with it returns nothing.

    Args:
        threshold: the Jaccard similarity the banding targets; the default ``min_similarity``.
        num_perm: K, the signature length; defaults to ``scheme.num_perm``, else 128.
        bands, rows: set the banding by hand (see ``params_for``).
        fp_weight, fn_weight: weights for ``optimal_params``.
        scheme: the ``MinHashScheme`` of the signatures; if ``None`` it is taken from the first
            ``Signatures`` added. Signatures of another scheme raise ``IncompatibleSketchError``.

    Memory: 4 * K bytes per row for the signatures plus 12 bytes per row and band for the tables.
    Not safe for concurrent ``add``/``remove``; concurrent queries are fine.

    >>> rng = np.random.default_rng(0)
    >>> sigs = rng.integers(0, 2**32 - 1, size=(3, 128), dtype=np.uint32)
    >>> index = LSHIndex(threshold=0.8, num_perm=128)
    >>> index.add(["a", "b", "c"], sigs)
    >>> near_b = sigs[1].copy(); near_b[:10] = 0
    >>> index.query(near_b)
    [('b', 0.921875)]
    """

    def __init__(
        self,
        threshold: float = 0.8,
        num_perm: int | None = None,
        *,
        bands: int | None = None,
        rows: int | None = None,
        fp_weight: float = DEFAULT_FP_WEIGHT,
        fn_weight: float = DEFAULT_FN_WEIGHT,
        scheme: MinHashScheme | None = None,
    ) -> None:
        if scheme is not None:
            if not isinstance(scheme, MinHashScheme):
                raise TypeError(f"scheme must be a MinHashScheme or None, got {type(scheme).__name__}")
            if num_perm is None:
                num_perm = scheme.num_perm
            elif num_perm != scheme.num_perm:
                raise ValueError(f"num_perm={num_perm} disagrees with scheme.num_perm={scheme.num_perm}")
        self._num_perm = _check_int("num_perm", 128 if num_perm is None else num_perm)
        self._params = params_for(threshold, self._num_perm, bands, rows, fp_weight=fp_weight, fn_weight=fn_weight)
        self._scheme = scheme
        self._sigs = np.empty((0, self._num_perm), dtype=np.uint32)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._keys: list[Hashable] = []  # internal row id -> user key (or _REMOVED)
        self._ids: dict[Hashable, int] = {}  # user key -> internal row id
        self._tables = _BandTables(self._params.bands)

    # -- properties ------------------------------------------------------------------------

    @property
    def params(self) -> LSHParams:
        """The banding in use."""
        return self._params

    @property
    def threshold(self) -> float:
        return self._params.threshold

    @property
    def num_perm(self) -> int:
        return self._num_perm

    @property
    def scheme(self) -> MinHashScheme | None:
        return self._scheme

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._ids

    def __iter__(self) -> Iterator[Hashable]:
        """The stored keys in insertion order."""
        return iter(list(self._ids))

    def __repr__(self) -> str:
        p = self._params
        return (
            f"LSHIndex(threshold={p.threshold}, num_perm={self._num_perm}, "
            f"bands={p.bands}, rows={p.rows}, size={len(self)})"
        )

    # -- mutation --------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable], signatures: Signatures | np.ndarray) -> None:
        """Add one row per key. Keys must be new and unique, else ``KeyError`` (nothing is added)."""
        values, scheme = self._matrix(signatures, "signatures")
        keys = list(keys)
        if len(keys) != values.shape[0]:
            raise ValueError(f"got {len(keys)} keys for {values.shape[0]} signatures")
        self._check_new_keys(keys)
        if scheme is not None and self._scheme is None:
            self._scheme = scheme
        first = len(self._keys)
        if first + len(keys) >= 2**32 - 1:
            raise OverflowError("an LSHIndex holds fewer than 2**32 - 1 rows")
        self._store_rows(values)
        self._keys.extend(keys)
        self._ids.update(zip(keys, range(first, first + len(keys))))
        row_keys = self._band_keys(values)
        row_ids = np.arange(first, first + len(keys), dtype=np.uint32)
        nonempty = (values != EMPTY_VALUE).any(axis=1)
        if not nonempty.all():  # empty sets are stored but never banded
            row_keys, row_ids = row_keys[nonempty], row_ids[nonempty]
        self._tables.append(row_keys, row_ids)

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the rows of ``keys``; a key not in the index raises ``KeyError`` (nothing is removed)."""
        keys = list(keys)
        missing = [k for k in keys if k not in self._ids]
        if missing:
            raise KeyError(f"key {missing[0]!r} is not in the index")
        if len(set(keys)) != len(keys):
            raise KeyError("a key is listed twice in remove()")
        for k in keys:
            row = self._ids.pop(k)
            self._keys[row] = _REMOVED
            self._alive[row] = False
        dead = len(self._keys) - len(self._ids)
        if dead >= 1024 and dead > len(self._ids):
            self._compact()

    # -- queries ---------------------------------------------------------------------------

    def query(
        self, signature: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[tuple[Hashable, float]]:
        """The stored keys that are candidates of ``signature`` with estimated Jaccard >= ``min_similarity``.

        ``min_similarity`` defaults to the index threshold; 0.0 returns every candidate. Results are
        ``(key, estimate)`` sorted by estimate descending, then insertion order; at most ``limit``.
        """
        values, _ = self._matrix(signature, "signature", single=True)
        return self._query_rows(values, min_similarity, limit)[0]

    def query_batch(
        self, signatures: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[tuple[Hashable, float]]]:
        """``query`` for every row of ``signatures``, in one pass."""
        values, _ = self._matrix(signatures, "signatures")
        return self._query_rows(values, min_similarity, limit)

    def _query_rows(self, values: np.ndarray, min_similarity: float | None, limit: int | None) -> list[list]:
        min_matches = self._min_matches(self.threshold if min_similarity is None else min_similarity)
        limit = -1 if limit is None else _check_int("limit", limit, minimum=0)
        qkeys = self._band_keys(values)
        t = self._tables
        offsets, rows, matches = _query_kernel(
            qkeys, values, t.keys, t.ids, t.bounds, self._sigs, self._alive, min_matches, limit
        )
        keys = self._keys
        k = float(self._num_perm)
        rows = rows.tolist()
        estimates = (matches / k).tolist()
        bounds = offsets.tolist()
        return [
            [(keys[rows[i]], estimates[i]) for i in range(bounds[q], bounds[q + 1])] for q in range(values.shape[0])
        ]

    # -- helpers ---------------------------------------------------------------------------

    def _min_matches(self, min_similarity: float) -> int:
        """The fewest equal slots m with m / K >= min_similarity (the same float comparison users make)."""
        s = _check_similarity("min_similarity", min_similarity)
        k = self._num_perm
        m = max(0, math.ceil(s * k) - 1)
        while m / k < s:
            m += 1
        return m

    def _matrix(self, signatures: Any, what: str, single: bool = False) -> tuple[np.ndarray, MinHashScheme | None]:
        """Validate ``signatures`` into a C-contiguous uint32 (n, K) matrix and its scheme."""
        scheme = None
        if isinstance(signatures, Signatures):
            scheme = signatures.scheme
            if self._scheme is not None:
                self._scheme.check_compatible(scheme)
            values = signatures.values
        else:
            values = np.asarray(signatures)
        if single and values.ndim == 1:
            values = values[None, :]
        if values.ndim != 2 or (single and values.shape[0] != 1):
            want = "a 1-D row" if single else "a 2-D (n, num_perm) array"
            raise ValueError(f"{what} must be {want}, got shape {values.shape}")
        if values.shape[1] != self._num_perm:
            raise ValueError(f"{what} have {values.shape[1]} slots, expected num_perm={self._num_perm}")
        if scheme is not None and scheme.num_perm != self._num_perm:
            raise IncompatibleSketchError(f"scheme has num_perm={scheme.num_perm}, the index {self._num_perm}")
        if values.dtype != np.uint32:
            raise TypeError(f"{what} must be uint32 MinHash values, got dtype {values.dtype}")
        return np.ascontiguousarray(values), scheme

    def _check_new_keys(self, keys: list) -> None:
        if self._ids.keys().isdisjoint(keys) and len(set(keys)) == len(keys):
            return
        seen: set = set()
        for k in keys:
            if k in self._ids:
                raise KeyError(f"key {k!r} is already in the index")
            if k in seen:
                raise KeyError(f"key {k!r} is given twice")
            seen.add(k)

    def _band_keys(self, values: np.ndarray) -> np.ndarray:
        """``band_keys`` of the rows, computed in chunks on threads for large batches."""
        bands, rows = self._params.bands, self._params.rows
        out = np.empty((values.shape[0], bands), dtype=np.uint64)
        if values.shape[0] < _PARALLEL_ROWS:
            return _band_keys_kernel(values, bands, rows, out)
        step = max(_PARALLEL_ROWS // 4, -(-values.shape[0] // (os.cpu_count() or 1)))

        def chunk(lo: int) -> None:
            _band_keys_kernel(values[lo : lo + step], bands, rows, out[lo : lo + step])

        _run_each(chunk, range(0, values.shape[0], step), parallel=values.shape[0] >= _PARALLEL_ROWS)
        return out

    def _store_rows(self, values: np.ndarray) -> None:
        n_old = len(self._keys)
        n_new = n_old + values.shape[0]
        if n_new > self._sigs.shape[0]:
            capacity = max(n_new, self._sigs.shape[0] + self._sigs.shape[0] // 2, 256)
            sigs = np.empty((capacity, self._num_perm), dtype=np.uint32)
            sigs[:n_old] = self._sigs[:n_old]
            alive = np.zeros(capacity, dtype=np.bool_)
            alive[:n_old] = self._alive[:n_old]
            self._sigs, self._alive = sigs, alive
        self._sigs[n_old:n_new] = values
        self._alive[n_old:n_new] = True

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order) everywhere."""
        n = len(self._keys)
        keep = self._alive[:n]
        remap = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        self._tables.compact(remap)
        live = int(keep.sum())
        capacity = max(live + live // 2, 256)
        sigs = np.empty((capacity, self._num_perm), dtype=np.uint32)
        sigs[:live] = self._sigs[:n][keep]
        self._sigs = sigs
        self._alive = np.zeros(capacity, dtype=np.bool_)
        self._alive[:live] = True
        self._keys = [k for k in self._keys if k is not _REMOVED]
        self._ids = {k: i for i, k in enumerate(self._keys)}
