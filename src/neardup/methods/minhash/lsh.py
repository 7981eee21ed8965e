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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._kernels.lsh import band_keys_kernel
from ...core.validation import Integer, ParameterError, ParameterTypeError, Real, check, conflict
from .scheme import MAX_NUM_PERM, NUM_PERM

#: Default weights of the error areas in ``optimal_params``: recall first (see its docstring).
DEFAULT_FP_WEIGHT = 0.02


DEFAULT_FN_WEIGHT = 0.98


_MAX_GL_NODES = 128


# --------------------------------------------------------------------------------------------
# argument checks (:mod:`neardup.core.validation`)
THRESHOLD = Real(0, 1, low_open=True, high_open=True)
"""A banding's target similarity: the S-curve needs 0 < t < 1."""

SIMILARITY = Real(0, 1)

WEIGHT = Real(0, None, finite=True)
"""The weight of an error area in the objective."""

BAND = Integer(1, MAX_NUM_PERM)
"""Bands b and rows r of a banding (b * r <= K <= MAX_NUM_PERM)."""

_COUNT = Integer(1)


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or a parameter error (kept for :mod:`neardup.index.lsh`;
    new code calls :func:`neardup.core.validation.check` with a constraint)."""
    return check(name, value, Integer(minimum))


def check_similarity(name: str, s: Any) -> float:
    """``s`` as a float in [0, 1], or a parameter error (kept for :mod:`neardup.index.lsh`)."""
    return check(name, s, SIMILARITY)


def _check_weights(fp_weight: Any, fn_weight: Any) -> tuple[float, float]:
    fp = check("fp_weight", fp_weight, WEIGHT)
    fn = check("fn_weight", fn_weight, WEIGHT)
    if fp == 0.0 and fn == 0.0:
        raise conflict("fp_weight and fn_weight cannot both be 0: at least one error must count")
    return fp, fn


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
    bands = check("bands", bands, _COUNT)
    rows = check("rows", rows, _COUNT)
    if np.ndim(s) == 0:
        arr = np.float64(check("s", s, SIMILARITY))
    else:
        arr = np.asarray(s)
        if arr.dtype.kind not in "fiu":
            raise ParameterTypeError(f"s must be {SIMILARITY.describe()} or an array of them, got {arr.dtype} values")
        arr = arr.astype(np.float64)
        bad = arr[~((arr >= 0) & (arr <= 1))]  # NaN included
        if bad.size:
            raise ParameterError(f"s must be {SIMILARITY.describe()}, got {float(bad[0])!r}")
    p = _hit_probability(arr, bands, rows)
    return float(p) if p.ndim == 0 else p


def effective_threshold(bands: int, rows: int) -> float:
    """(1/b)^(1/r): the similarity where the S-curve rises fastest (approximately where P = 1/2).

    >>> round(effective_threshold(20, 5), 3)
    0.549
    """
    bands = check("bands", bands, _COUNT)
    rows = check("rows", rows, _COUNT)
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
    t = check("threshold", threshold, THRESHOLD)
    fp, _ = _areas(t, np.array([check("bands", bands, BAND)]), np.array([check("rows", rows, BAND)]))
    return float(fp[0])


def false_negative_area(threshold: float, bands: int, rows: int) -> float:
    """integral_t^1 (1 - P(s)) ds: the weight of pairs above the threshold that are missed.

    >>> false_negative_area(0.8, 20, 5) < 1e-4
    True
    """
    t = check("threshold", threshold, THRESHOLD)
    _, fn = _areas(t, np.array([check("bands", bands, BAND)]), np.array([check("rows", rows, BAND)]))
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
        set_ = object.__setattr__
        set_(self, "bands", check("bands", self.bands, BAND))
        set_(self, "rows", check("rows", self.rows, BAND))
        if self.bands * self.rows > MAX_NUM_PERM:
            raise conflict(
                f"bands * rows must be <= {MAX_NUM_PERM} (the largest num_perm), "
                f"got {self.bands} * {self.rows} = {self.bands * self.rows}"
            )
        set_(self, "threshold", check("threshold", self.threshold, THRESHOLD))
        fp, fn = _check_weights(self.fp_weight, self.fn_weight)
        set_(self, "fp_weight", fp)
        set_(self, "fn_weight", fn)

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
    t = check("threshold", threshold, THRESHOLD)
    k = check("num_perm", num_perm, NUM_PERM)
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
    t = check("threshold", threshold, THRESHOLD)
    k = check("num_perm", num_perm, NUM_PERM)
    fp, fn = _check_weights(fp_weight, fn_weight)
    if bands is None and rows is None:
        return optimal_params(t, k, fp_weight=fp, fn_weight=fn)
    if bands is not None:
        bands = check("bands", bands, BAND)
    if rows is not None:
        rows = check("rows", rows, BAND)
    if rows is None:
        rows = k // bands
        if rows == 0:
            raise conflict(f"bands={bands} is more than num_perm={k}: every band needs at least one slot")
    if bands is None:
        bands = k // rows
        if bands == 0:
            raise conflict(f"rows={rows} is more than num_perm={k}: a band cannot be longer than the signature")
    if bands * rows > k:
        raise conflict(f"bands * rows must be <= num_perm, got {bands} * {rows} = {bands * rows} > {k}")
    return LSHParams(bands, rows, t, fp, fn)


def band_keys(values: np.ndarray, bands: int, rows: int, out: np.ndarray | None = None) -> np.ndarray:
    """The 64-bit key of every band of every signature: uint64 array of shape (n, bands)
    (written into ``out``, a C-contiguous array of that shape, when given).

    Key of band ``j`` (0-based) of row ``i`` -- part of the stable format, pinned by golden tests:
    the band's slots ``values[i, j*r:(j+1)*r]`` are read as ``4r`` little-endian bytes and hashed
    like :func:`neardup._kernels.hashing.hash_bytes` but from the band's own start state::

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
    bands = check("bands", bands, _COUNT)
    rows = check("rows", rows, _COUNT)
    values = np.asarray(values)
    if values.dtype != np.uint32 or values.ndim != 2:
        raise TypeError(f"values must be a 2-D uint32 array, got {values.dtype} of shape {values.shape}")
    if bands * rows > values.shape[1]:
        raise ValueError(f"bands * rows = {bands * rows} is more than the {values.shape[1]} slots of a signature")
    shape = (values.shape[0], bands)
    if out is None:
        out = np.empty(shape, dtype=np.uint64)
    elif out.shape != shape or out.dtype != np.uint64 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out must be a writeable C-contiguous uint64 array of shape {shape}")
    return band_keys_kernel(np.ascontiguousarray(values), bands, rows, out)
