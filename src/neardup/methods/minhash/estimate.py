"""Jaccard estimates from MinHash signatures: r/K, its standard error and confidence intervals.

Two signatures of K slots agreeing in r of them estimate the Jaccard similarity J by r/K, and r
is Binomial(K, J) (:mod:`neardup.methods.minhash.scheme`). This module holds the
:class:`Estimate` of a pair (:func:`estimate_from_rows`), the Wald and Wilson intervals of
:func:`confidence_interval`, and :func:`acceptance_probability`, the chance that a pair of a given
similarity passes signature verification at a threshold (the binomial tail).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from ..._kernels.minhash import EMPTY_VALUE
from ...core.validation import Choice, Integer, Real, check

__all__ = ["Estimate", "acceptance_probability", "confidence_interval", "estimate_from_rows"]

_LEVEL = Real(0, 1, low_open=True, high_open=True)
_METHOD = Choice(("wilson", "wald"))
_SIMILARITY = Real(0, 1)
_COUNT = Integer(1)


@dataclass(frozen=True)
class Estimate:
    """A Jaccard estimate from two signatures, with its uncertainty.

    Attributes:
        value: r / K, the fraction of equal slots (unbiased for J).
        matches: r.
        num_perm: K.
        stderr: sqrt(p (1 - p) / K) with p = value, the plug-in standard error.
        low, high: the confidence interval at ``level``.
        level: the confidence level, e.g. 0.95.
        method: ``"wilson"`` (default; keeps its coverage near 0 and 1) or ``"wald"``
            (p -/+ z * stderr, the textbook interval, clipped to [0, 1]).
    """

    value: float
    matches: int
    num_perm: int
    stderr: float
    low: float
    high: float
    level: float
    method: str


def confidence_interval(
    matches: int, num_perm: int, level: float = 0.95, method: Literal["wilson", "wald"] = "wilson"
) -> tuple[float, float]:
    """Confidence interval for J from r = ``matches`` equal slots out of K = ``num_perm``.

    ``wald``: p +/- z sqrt(p(1-p)/K). ``wilson`` (Wilson 1927): centre (p + z^2/2K) / (1 + z^2/K),
    half-width z sqrt(p(1-p)/K + z^2/4K^2) / (1 + z^2/K). z is the normal quantile at (1+level)/2.

    >>> confidence_interval(90, 100, 0.95, "wald")
    (0.8412..., 0.9587...)
    """
    num_perm = check("num_perm", num_perm, _COUNT)
    matches = check("matches", matches, Integer(0, num_perm))
    level = check("level", level, _LEVEL)
    method = check("method", method, _METHOD)
    p = matches / num_perm
    z = NormalDist().inv_cdf((1 + level) / 2)
    if method == "wald":
        half = z * math.sqrt(p * (1 - p) / num_perm)
        return max(0.0, p - half), min(1.0, p + half)
    z2k = z * z / num_perm  # wilson
    centre = (p + z2k / 2) / (1 + z2k)
    half = z * math.sqrt(p * (1 - p) / num_perm + z2k / (4 * num_perm)) / (1 + z2k)
    return max(0.0, centre - half), min(1.0, centre + half)


def acceptance_probability(s: float, num_perm: int, threshold: float) -> float:
    """Probability that two sets of Jaccard ``s`` have an estimate r/K >= ``threshold``.

    r ~ Binomial(K, s), so this is the binomial tail sum_{r >= ceil(tK)} C(K, r) s^r (1-s)^(K-r):
    the chance that signature verification accepts a pair. Broder's example (K = 100, 90 slots):

    >>> round(acceptance_probability(0.8, 100, 0.9), 4)
    0.0057
    """
    s = check("s", s, _SIMILARITY)
    num_perm = check("num_perm", num_perm, _COUNT)
    threshold = check("threshold", threshold, _SIMILARITY)
    need = math.ceil(threshold * num_perm - 1e-9)
    if s in (0.0, 1.0):
        return float(s >= threshold) if need > 0 else 1.0
    # sum in log space so that tiny tails (1e-17) stay accurate
    log_s, log_q = math.log(s), math.log1p(-s)
    return float(
        sum(
            math.exp(
                math.lgamma(num_perm + 1)
                - math.lgamma(r + 1)
                - math.lgamma(num_perm - r + 1)
                + r * log_s
                + (num_perm - r) * log_q
            )
            for r in range(max(need, 0), num_perm + 1)
        )
    )


def estimate_from_rows(
    sig_a: np.ndarray, sig_b: np.ndarray, *, level: float = 0.95, method: Literal["wilson", "wald"] = "wilson"
) -> Estimate:
    """The Jaccard estimate between two raw signature rows (uint32[K]) with its interval."""
    if sig_a.shape != sig_b.shape:
        raise ValueError(f"signatures have different lengths: {sig_a.shape} vs {sig_b.shape}")
    k = sig_a.shape[0]
    if (sig_a == EMPTY_VALUE).all() or (sig_b == EMPTY_VALUE).all():
        r = 0
    else:
        r = int(np.count_nonzero(sig_a == sig_b))
    p = r / k
    low, high = confidence_interval(r, k, level, method)
    return Estimate(p, r, k, math.sqrt(p * (1 - p) / k), low, high, level, method)
