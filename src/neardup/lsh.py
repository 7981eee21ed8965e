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
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.experimental import structref
from numba.extending import intrinsic

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
_SCAN = 8  # keys compared at once in a bucket (see _scan)
_UINT32 = np.dtype(np.uint32)
_NO_KEY_VALUES = np.empty(0, dtype=np.int64)
_UNRESOLVED = object()  # an entry point that LSHIndex._resolve_entry_point has not looked up yet
_ENTRY_POINTS: dict = {}  # compiled _query_one by argument types (see LSHIndex._resolve_entry_point)


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


@nb.njit(inline="always")
def _band_key(row, j, rows, start):
    """The key of band ``j`` of one signature ``row``, from the band's start state (see ``band_keys``)."""
    h = start
    c = j * rows
    end = c + rows
    while c + 2 <= end:
        w = np.uint64(row[c]) | (np.uint64(row[c + 1]) << np.uint64(32))
        h = rotl64(h ^ (w * P1), 31) * P2
        c += 2
    if c < end:
        h = rotl64(h ^ (np.uint64(row[c]) * P1), 31) * P2
    return fmix64(h ^ np.uint64(4 * rows))


@nb.njit(cache=True, nogil=True)
def _band_keys_kernel(values, bands, rows, out):
    starts = np.empty(bands, dtype=np.uint64)
    for j in range(bands):
        starts[j] = fmix64(SEED ^ np.uint64(j))
    for i in range(values.shape[0]):
        for j in range(bands):
            out[i, j] = _band_key(values[i], j, rows, starts[j])
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
#
# Every run also has, per band, a bucket directory on the top d bits of the keys (see
# ``_BandTables``), so finding a key costs two memory reads instead of a binary search's log2(n).


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


@nb.njit(cache=True, nogil=True)
def _fill_directory(keys, shift, out):
    """``out[t]`` = the first position p in the sorted ``keys`` with ``keys[p] >> shift >= t``."""
    sh = np.uint64(shift)
    n = keys.shape[0]
    p = 0
    for t in range(out.shape[0]):
        while p < n and (keys[p] >> sh) < np.uint64(t):
            p += 1
        out[t] = p


@intrinsic
def _prefetch(typingctx, arr, index):
    """Start loading the cache line of ``arr[index]`` (``index`` a tuple) without waiting for it;
    an index out of bounds is harmless (a prefetch never faults)."""

    def codegen(context, builder, signature, args):
        aryty, indexty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = cgutils.unpack_tuple(builder, args[1], len(indexty))
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, index, wraparound=False)
        i8p = llvm_ir.IntType(8).as_pointer()
        i32 = llvm_ir.IntType(32)
        fnty = llvm_ir.FunctionType(llvm_ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch." + i8p.intrinsic_name)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.void(arr, index), codegen


@nb.njit(inline="always")
def _insertion_sort(a, n):
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@nb.njit(inline="always")
def _sort_prefix(a, n):
    if n <= 32:
        _insertion_sort(a, n)
    else:
        a[:n] = np.sort(a[:n])


@nb.njit(inline="always")
def _grown(a, need):
    """A copy of ``a`` with room for at least ``need`` items (at least twice as many)."""
    bigger = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    bigger[: a.shape[0]] = a
    return bigger


@nb.njit(inline="always")
def _is_empty(q):
    for c in range(q.shape[0]):
        if q[c] != EMPTY_VALUE:
            return False
    return True


@nb.njit(inline="always")
def _locate(q, rows, keys, dirs, ids, runs, qk, span):
    """Phase 1 of a query: the band keys of ``q`` into ``qk`` and, for every (run, band) pair,
    the bucket that can hold the key into ``span`` (``span[2i]:span[2i+1]``, ``i = run * bands +
    band``), with a prefetch of the bucket's keys and first id.

    Every directory read here is independent of the others, so their cache misses overlap; so
    do the prefetches, which the scan of phase 2 then finds on their way.
    """
    bands = keys.shape[0]
    for j in range(bands):
        qk[j] = _band_key(q, j, rows, fmix64(SEED ^ np.uint64(j)))
    for r in range(runs.shape[0]):
        lo = runs[r, 0]
        last = runs[r, 1] - 1
        d0 = runs[r, 2]
        sh = np.uint64(runs[r, 3])
        if last < lo:  # an empty run (everything compacted away)
            span[2 * r * bands : 2 * (r + 1) * bands] = lo
            continue
        for j in range(bands):
            t = d0 + np.int64(qk[j] >> sh)
            a = lo + np.int64(dirs[j, t])
            i = r * bands + j
            span[2 * i] = a
            span[2 * i + 1] = lo + np.int64(dirs[j, t + 1])
            c = min(a, last)
            _prefetch(keys, (j, c))
            _prefetch(keys, (j, max(c, min(span[2 * i + 1], last + 1) - 1)))  # a bucket may span two lines
            _prefetch(ids, (j, c))


@nb.njit(inline="always")
def _room(span, hits):
    """``hits``, grown if needed to hold every key of the buckets in ``span``."""
    need = 0
    for i in range(span.shape[0] // 2):
        need += span[2 * i + 1] - span[2 * i]
    return hits if need <= hits.shape[0] else _grown(hits, need)


@nb.njit(inline="always")
def _scan(qk, span, keys, ids, hits):
    """Phase 2: write to ``hits`` (which must have room for every key of the buckets, see
    ``_room``) the row of every key equal to the query's in its bucket. Returns how many."""
    nh = 0
    bands = keys.shape[0]
    width = keys.shape[1]
    for r in range(span.shape[0] // (2 * bands)):
        for j in range(bands):
            i = r * bands + j
            a = span[2 * i]
            b = span[2 * i + 1]
            key = qk[j]
            if b - a <= _SCAN:
                # The usual bucket (1-2 keys): compare a fixed _SCAN keys without branching and
                # mask off those past the bucket (a scan that stops at the first larger key
                # mispredicts its exit in almost every bucket). Reads stay inside the bucket's
                # (prefetched) lines: past its end, the last key is read again.
                top = min(max(a, b - 1), width - 1)  # an empty bucket may start at the very end
                row = keys[j]
                m = 0
                for t in range(_SCAN):  # unsigned indices into one row: no wraparound code (~0.05 us a query)
                    m |= np.int64(row[np.uint64(min(a + t, top))] == key) << t
                m &= (np.int64(1) << (b - a)) - 1
                t = 0
                while m != 0:
                    if m & 1:
                        hits[nh] = ids[j, a + t]
                        nh += 1
                    m >>= 1
                    t += 1
                continue
            a += np.searchsorted(keys[j, a:b], key)  # a long bucket: many equal keys
            while a < b and keys[j, a] == key:
                hits[nh] = ids[j, a]
                nh += 1
                a += 1
    return nh


@nb.njit(inline="always")
def _distinct(hits, nh, sigs):
    """Phase 3: sort the rows ``hits[:nh]`` and drop repeats, prefetching each row's signature.
    Returns how many rows: they are ``hits[:end]``."""
    _sort_prefix(hits, nh)
    end = 0
    prev = -1
    for i in range(nh):
        row = hits[i]
        if row != prev:
            prev = row
            hits[end] = row
            end += 1
            _prefetch(sigs, (row, 0))
    return end


@nb.njit(inline="always")
def _verify(q, rows_found, sigs, alive, key_values, min_matches, limit, codes):
    """Phase 4: the results among the distinct candidate rows ``rows_found`` into ``codes``
    (at least as long), as in ``_candidates``; returns how many."""
    k = q.shape[0]
    mapped = key_values.shape[0] > 0
    n = 0
    for i in range(rows_found.shape[0]):
        row = rows_found[i]
        if mapped:
            _prefetch(key_values, (row,))
        if not alive[row]:
            continue
        m = 0
        for c in range(k):
            m += sigs[row, c] == q[c]
        if m >= min_matches:
            codes[n] = ((k - m) << 32) | row
            n += 1
    _sort_prefix(codes, n)
    if limit >= 0 and n > limit:
        n = limit
    return n


@nb.njit(cache=True, nogil=True)
def _candidates(q, rows, keys, ids, dirs, runs, sigs, alive, key_values, min_matches, limit):
    """The results of one query row ``q``, as ``(codes, n)``: ``codes[:n]`` ascending, one per result.

    A result is a live row sharing at least one band key with ``q`` and having ``m >= min_matches``
    slots equal to it; its code is ``(K - m) << 32 | row``, so ascending codes are matches
    descending, then row (insertion order) ascending; at most ``limit`` of them (``limit < 0``: all).
    ``key_values`` (possibly empty) is only prefetched for the candidates.

    The lookups go in phases over all (run, band) pairs (``_locate``, ``_scan``, ``_distinct``,
    ``_verify``) so that the cache misses of a phase (about one per pair, each ~0.1-0.25 us)
    are independent and overlap instead of adding up.
    """
    bands = keys.shape[0]
    nruns = runs.shape[0]
    if nruns == 0 or _is_empty(q):
        return np.empty(0, dtype=np.int64), 0
    qk = np.empty(bands, dtype=np.uint64)
    span = np.empty(2 * bands * nruns, dtype=np.int64)
    _locate(q, rows, keys, dirs, ids, runs, qk, span)
    hits = _room(span, np.empty(max(32, bands), dtype=np.int64))
    nh = _scan(qk, span, keys, ids, hits)
    end = _distinct(hits, nh, sigs)
    n = _verify(q, hits[:end], sigs, alive, key_values, min_matches, limit, hits)
    return hits, n


@structref.register
class _QueryStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _QueryState(structref.StructRefProxy):
    """What a single query reads -- the banding's ``rows`` and the index arrays -- as one numba
    object: unboxing one argument instead of eight saves ~0.2 us a call."""


structref.define_proxy(
    _QueryState, _QueryStateType, ["rows", "keys", "ids", "dirs", "runs", "sigs", "alive", "key_values"]
)


@nb.njit(cache=True)
def _query_state(rows, keys, ids, dirs, runs, sigs, alive, key_values):
    """A ``_QueryState`` (built by a cached kernel: no compilation at run time)."""
    return _QueryState(rows, keys, ids, dirs, runs, sigs, alive, key_values)


@nb.njit(cache=True, nogil=True)
def _query_one(q, state, min_matches, limit):
    """``_candidates`` of one signature ``q`` as ``(n, key0, matches0, pairs)``.

    ``q`` must be one aligned row of K contiguous slots, of shape (K,) or (1, K); anything else
    gives ``n = -1`` (the caller then validates it properly). Results are (row, matches), or
    (key_values[row], matches) when ``state.key_values`` is not empty: the first in ``key0`` and
    ``matches0``, all of them as the (n, 2) array ``pairs`` when ``n > 1``. With one result or
    none, ``pairs`` is None: boxing an array costs ~0.45 us, more than the rest of the call.
    """
    k = state.sigs.shape[1]
    last = q.ndim - 1
    if q.shape[last] != k or q.size != k or q.strides[last] != q.itemsize or q.ctypes.data % q.itemsize:
        return -1, 0, 0, None
    row = q.reshape(k)
    key_values = state.key_values
    codes, n = _candidates(
        row, state.rows, state.keys, state.ids, state.dirs, state.runs, state.sigs, state.alive, key_values,
        min_matches, limit,
    )
    if n == 0:
        return 0, 0, 0, None
    mapped = key_values.shape[0] > 0
    if n == 1:
        r = codes[0] & 0xFFFFFFFF
        return 1, key_values[r] if mapped else r, k - (codes[0] >> 32), None
    pairs = np.empty((n, 2), dtype=np.int64)
    for i in range(n):
        r = codes[i] & 0xFFFFFFFF
        pairs[i, 0] = key_values[r] if mapped else r
        pairs[i, 1] = k - (codes[i] >> 32)
    return n, pairs[0, 0], pairs[0, 1], pairs


@nb.njit(cache=True, nogil=True)
def _query_kernel(qvalues, rows, keys, ids, dirs, runs, sigs, alive, min_matches, limit):
    """``_candidates`` of every query row. Returns (offsets, ids, matches): query q's results are
    ``offsets[q]:offsets[q+1]``, in the order of ``_candidates``."""
    nq = qvalues.shape[0]
    k = qvalues.shape[1]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    no_keys = np.empty(0, dtype=np.int64)
    out_ids = np.empty(max(64, nq), dtype=np.int64)
    out_matches = np.empty(max(64, nq), dtype=np.int64)
    used = 0
    for q in range(nq):
        codes, n = _candidates(qvalues[q], rows, keys, ids, dirs, runs, sigs, alive, no_keys, min_matches, limit)
        if used + n > out_ids.shape[0]:
            cap = max(2 * out_ids.shape[0], used + n)
            bigger_ids = np.empty(cap, dtype=np.int64)
            bigger_ids[:used] = out_ids[:used]
            bigger_matches = np.empty(cap, dtype=np.int64)
            bigger_matches[:used] = out_matches[:used]
            out_ids, out_matches = bigger_ids, bigger_matches
        for i in range(n):
            out_ids[used + i] = codes[i] & 0xFFFFFFFF
            out_matches[used + i] = k - (codes[i] >> 32)
        used += n
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
    """Per band, sorted uint64 keys with the internal row id of each, in log-structured runs.

    Each run has, per band, a *bucket directory*: band keys are 64-bit hash outputs, so their top
    ``d`` bits are uniform and split a run of ``n`` keys into ``2^d`` buckets of 1 to 2 keys on
    average (``d = max(1, floor(log2 n))``). ``dirs[j, s + t]`` is the offset in the run of the
    first key of band ``j`` whose top ``d`` bits are ``>= t`` (``t = 0..2^d``, so bucket ``t`` is
    ``dirs[j, s + t]:dirs[j, s + t + 1]``), where ``s`` is the start of the run's directory.
    Finding a key is then one directory read and a short scan of its bucket (a binary search in
    it if it is long, e.g. many equal keys): two dependent cache misses instead of the ~20 of a
    binary search over a run of 1M keys, for 2 to 4 bytes per key (a uint32 per bucket).
    Equal keys always share a bucket, so nothing else changes: the runs stay sorted and merge
    as before, and a run's directory is built when the run is made (``_index_last_run``).

    ``runs[k] = (lo, hi, s, 64 - d)`` describes run ``k``: its columns ``lo:hi`` in ``keys`` and
    ``ids``, its directory start in ``dirs`` and the shift that gives a key's bucket.
    """

    def __init__(self, bands: int) -> None:
        self.keys = np.empty((bands, 0), dtype=np.uint64)
        self.ids = np.empty((bands, 0), dtype=np.uint32)
        self.bounds = np.zeros(1, dtype=np.int64)  # run k is columns bounds[k]:bounds[k+1]
        self.dirs = np.empty((bands, 0), dtype=np.uint32)
        self.runs = np.empty((0, 4), dtype=np.int64)

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
        self._index_last_run()

    def compact(self, remap: np.ndarray) -> None:
        """Keep entries with ``remap[id] >= 0``, renamed to ``remap[id]``; merge into one run."""
        self.bounds = _compact_runs(self.keys, self.ids, self.bounds, remap)
        while self.bounds.shape[0] > 2:
            self._merge_last_two()
        self.keys = self.keys[:, : self.size].copy()  # give the removed rows' memory back
        self.ids = self.ids[:, : self.size].copy()
        self.runs = self.runs[:0]
        self.dirs = self.dirs[:, :0].copy()
        if self.bounds.shape[0] == 2:
            self._index_last_run()

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

    def _index_last_run(self) -> None:
        """Build the directory of the last run; the runs before it are unchanged since theirs was built."""
        last = self.bounds.shape[0] - 2
        lo, hi = int(self.bounds[last]), int(self.bounds[last + 1])
        bits = max(1, (hi - lo).bit_length() - 1)
        runs = self.runs[:last]
        start = 0 if last == 0 else int(runs[-1, 2]) + (1 << (64 - int(runs[-1, 3]))) + 1
        end = start + (1 << bits) + 1
        if end > self.dirs.shape[1]:
            dirs = np.empty((self.dirs.shape[0], max(end, self.dirs.shape[1] + self.dirs.shape[1] // 2)), np.uint32)
            dirs[:, :start] = self.dirs[:, :start]
            self.dirs = dirs

        def fill(j: int) -> None:
            _fill_directory(self.keys[j, lo:hi], 64 - bits, self.dirs[j, start:end])

        _run_each(fill, range(self.keys.shape[0]), parallel=hi - lo >= _PARALLEL_ROWS)
        self.runs = np.vstack([runs, np.array([[lo, hi, start, 64 - bits]], dtype=np.int64)])


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

    Memory: 4 * K bytes per row for the signatures, 14 to 16 bytes per row and band for the tables
    (12 for the sorted keys and row ids, 2 to 4 for their bucket directories) and, while every
    key is an ``int``, 8 bytes per row for a copy of the keys. Not safe for concurrent
    ``add``/``remove``; concurrent queries are fine.

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
        self._n = 0  # internal rows, removed ones included
        self._ids: dict[Hashable, int] = {}  # user key -> internal row id
        # While every key is a Python int of 64 bits, the keys are kept in an array only
        # (``_key_values``, row -> key): queries then return keys without reading key objects
        # (two more cache misses), and the garbage collector has no list of n keys to walk
        # (~28 ms a full collection at 1M keys; a dict of ints is not tracked). Otherwise
        # ``_keys`` is the list row -> user key (or _REMOVED).
        self._int_keys = True
        self._key_values = _NO_KEY_VALUES
        self._keys: list[Hashable] | None = None
        self._tables = _BandTables(self._params.bands)
        self._default_min_matches = self._min_matches(self._params.threshold)
        self._min_match_cache: dict[float, int] = {}
        self._num_perm_float = float(self._num_perm)
        self._refresh_kernel_args()

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
        first = self._n
        if first + len(keys) >= 2**32 - 1:
            raise OverflowError("an LSHIndex holds fewer than 2**32 - 1 rows")
        self._store_rows(values, self._int_key_values(keys))
        if self._keys is not None:
            self._keys.extend(keys)
        self._n = first + len(keys)
        self._ids.update(zip(keys, range(first, first + len(keys))))
        row_keys = self._band_keys(values)
        row_ids = np.arange(first, first + len(keys), dtype=np.uint32)
        nonempty = (values != EMPTY_VALUE).any(axis=1)
        if not nonempty.all():  # empty sets are stored but never banded
            row_keys, row_ids = row_keys[nonempty], row_ids[nonempty]
        self._tables.append(row_keys, row_ids)
        self._refresh_kernel_args()

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
            if self._keys is not None:
                self._keys[row] = _REMOVED
            self._alive[row] = False
        dead = self._n - len(self._ids)
        if dead >= 1024 and dead > len(self._ids):
            self._compact()
        self._refresh_kernel_args()

    # -- queries ---------------------------------------------------------------------------

    def query(
        self, signature: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[tuple[Hashable, float]]:
        """The stored keys that are candidates of ``signature`` with estimated Jaccard >= ``min_similarity``.

        ``min_similarity`` defaults to the index threshold; 0.0 returns every candidate. Results are
        ``(key, estimate)`` sorted by estimate descending, then insertion order; at most ``limit``.

        A uint32 row (shape (K,) or (1, K)), or a one-row ``Signatures`` of the index's own scheme
        object, goes straight to the compiled kernel (a few microseconds at 1M rows); anything else
        is validated and converted first.
        """
        cls = type(signature)
        fn = None
        if cls is Signatures:
            q = signature.values  # uint32 of shape (n, K), checked when the Signatures was made
            if signature.scheme is self._scheme and q.ndim == 2:
                fn = self._query_matrix_fn
        elif cls is np.ndarray and signature.dtype is _UINT32:
            q = signature
            ndim = q.ndim
            fn = self._query_row_fn if ndim == 1 else self._query_matrix_fn if ndim == 2 else None
        if fn is _UNRESOLVED:
            fn = self._resolve_entry_point(q.ndim)
        if min_similarity is None:
            min_matches = self._default_min_matches
        else:
            cacheable = type(min_similarity) is float  # not bool, Decimal, ... which compare equal to floats
            min_matches = self._min_match_cache.get(min_similarity) if cacheable else None
            if min_matches is None:
                min_matches = self._min_matches(min_similarity)
                if cacheable and len(self._min_match_cache) < 256:
                    self._min_match_cache[min_similarity] = min_matches
        limit = -1 if limit is None else _check_int("limit", limit, minimum=0)
        if fn is not None:  # the kernel checks the shape and layout of q itself (n = -1: it cannot take q)
            n, first, matches, pairs = fn(q, self._query_state, min_matches, limit)
        if fn is None or n < 0:
            q = self._matrix(signature, "signature", single=True)[0]
            n, first, matches, pairs = _query_one(q, self._query_state, min_matches, limit)
        if n <= 1:
            if n == 0:
                return []
            return [(first if self._keys_mapped else self._keys[first], matches / self._num_perm_float)]
        k = self._num_perm_float
        if self._keys_mapped:
            return [(key, m / k) for key, m in pairs.tolist()]
        keys = self._keys
        return [(keys[r], m / k) for r, m in pairs.tolist()]

    def query_batch(
        self, signatures: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[tuple[Hashable, float]]]:
        """``query`` for every row of ``signatures``, in one pass."""
        values, _ = self._matrix(signatures, "signatures")
        min_matches = self._min_matches(self.threshold if min_similarity is None else min_similarity)
        limit = -1 if limit is None else _check_int("limit", limit, minimum=0)
        offsets, rows, matches = _query_kernel(values, *self._kernel_args, min_matches, limit)
        estimates = (matches / float(self._num_perm)).tolist()
        if self._keys_mapped:
            found = list(zip(self._key_values[rows].tolist(), estimates))
        else:
            keys = self._keys
            found = [(keys[r], e) for r, e in zip(rows.tolist(), estimates)]
        bounds = offsets.tolist()
        return [found[a:b] for a, b in zip(bounds, bounds[1:])]

    # -- helpers ---------------------------------------------------------------------------

    def _refresh_kernel_args(self) -> None:
        """The arguments of the query kernels -- the arrays for ``query_batch``, the same in one
        ``_QueryState`` for ``query`` -- gathered once per change instead of once per query."""
        t = self._tables
        self._kernel_args = (self._params.rows, t.keys, t.ids, t.dirs, t.runs, self._sigs, self._alive)
        self._query_state = _query_state(*self._kernel_args, self._key_values)
        self._keys_mapped = self._key_values.shape[0] > 0
        arrays = (*self._kernel_args[1:], self._key_values)
        if all(a.flags.carray for a in arrays):
            self._array_types = tuple((a.dtype, a.ndim) for a in arrays)
            self._query_row_fn = self._query_matrix_fn = _UNRESOLVED
        else:
            self._query_row_fn = self._query_matrix_fn = None

    def _resolve_entry_point(self, ndim: int):
        """``_query_one`` compiled for a C-contiguous uint32 query of ``ndim`` dimensions and for the
        types of the index arrays, to be called without numba's per-call type dispatch (~0.3 us).

        The caller guarantees the query is a uint32 ndarray of that ndim; its shape, strides and
        alignment are checked by ``_query_one``. The index arrays keep their types (every one is
        C-contiguous, aligned and writeable, checked in ``_refresh_kernel_args``; the key of
        ``_ENTRY_POINTS`` holds their dtypes and ndims) until the next ``_refresh_kernel_args``.
        """
        key = (ndim, self._array_types)
        fn = _ENTRY_POINTS.get(key)
        if fn is None:
            query_type = types.Array(types.uint32, ndim, "C")
            try:
                fn = _query_one.compile((query_type, nb.typeof(self._query_state), types.int64, types.int64))
            except Exception:  # pragma: no cover - a numba whose Dispatcher.compile returns no function
                fn = _query_one
            _ENTRY_POINTS[key] = fn
        if ndim == 1:
            self._query_row_fn = fn
        else:
            self._query_matrix_fn = fn
        return fn

    def _min_matches(self, min_similarity: float) -> int:
        """The fewest equal slots m with m / K >= min_similarity (the same float comparison users make)."""
        s = _check_similarity("min_similarity", min_similarity)
        k = self._num_perm
        m = max(0, math.ceil(s * k) - 1)
        while m / k < s:
            m += 1
        return m

    def _matrix(self, signatures: Any, what: str, single: bool = False) -> tuple[np.ndarray, MinHashScheme | None]:
        """Validate ``signatures`` into a C-contiguous, aligned uint32 (n, K) matrix and its scheme."""
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
        return np.require(values, requirements=("C", "A")), scheme  # C-contiguous and aligned

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

    def _int_key_values(self, keys: list) -> np.ndarray | None:
        """``keys`` as int64 while every key added so far is a Python int that fits, else None."""
        if self._int_keys and set(map(type, keys)) <= {int}:
            try:
                return np.array(keys, dtype=np.int64)
            except OverflowError:
                pass
        if self._int_keys:  # from now on the keys live in a list
            n = self._n
            self._keys = self._key_values[:n].tolist()
            for row in np.flatnonzero(~self._alive[:n]).tolist():
                self._keys[row] = _REMOVED
        self._int_keys = False
        self._key_values = _NO_KEY_VALUES
        return None

    def _store_rows(self, values: np.ndarray, key_values: np.ndarray | None) -> None:
        n_old = self._n
        n_new = n_old + values.shape[0]
        if n_new > self._sigs.shape[0]:
            capacity = max(n_new, self._sigs.shape[0] + self._sigs.shape[0] // 2, 256)
            sigs = np.empty((capacity, self._num_perm), dtype=np.uint32)
            sigs[:n_old] = self._sigs[:n_old]
            alive = np.zeros(capacity, dtype=np.bool_)
            alive[:n_old] = self._alive[:n_old]
            self._sigs, self._alive = sigs, alive
        if key_values is not None and self._key_values.shape[0] < self._sigs.shape[0]:
            grown = np.empty(self._sigs.shape[0], dtype=np.int64)
            grown[:n_old] = self._key_values[:n_old]
            self._key_values = grown
        self._sigs[n_old:n_new] = values
        self._alive[n_old:n_new] = True
        if key_values is not None:
            self._key_values[n_old:n_new] = key_values

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order) everywhere."""
        n = self._n
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
        self._n = live
        if self._int_keys:
            key_values = np.empty(capacity, dtype=np.int64)
            key_values[:live] = self._key_values[:n][keep]
            self._key_values = key_values
            self._ids = dict(zip(key_values[:live].tolist(), range(live)))
        else:
            self._keys = [k for k in self._keys if k is not _REMOVED]
            self._ids = {k: i for i, k in enumerate(self._keys)}
