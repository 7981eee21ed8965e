"""A counting Bloom filter for units seen at least ``min_count`` times, in bounded memory.

The filter has ``m`` one-byte counters (saturating at 255) and ``k`` cell choices per unit,
``(hi + j * (lo | 1)) mod m`` for ``j = 0..k-1`` from the unit's 128-bit hash (double hashing,
Kirsch and Mitzenmacher 2006). Adding a unit increments its ``k`` counters; its estimated
count is their minimum, never below its true count (a count-min estimate).

**False positives.** A unit seen ``c < t`` times (``t = min_count``) is reported as seen ``>= t``
times only when every one of its ``k`` counters was also incremented by other units. With
``n`` distinct units in the filter, a given counter is touched by no other unit with
probability ``(1 - 1/m)^(k n) ~ e^(-k n / m)``, so

    P(false positive) <= (1 - e^(-k n / m))^k,

the false-positive rate of a plain Bloom filter with the same ``m``, ``k`` and ``n``. For a
target rate ``p`` at ``n`` items, ``m = ceil(-n ln p / (ln 2)^2)`` and ``k = round(m / n ln 2)``
(at least 1) reach it. A false positive removes a line seen fewer than ``t`` times; a repeated
unit is never missed (no false negatives).

**Keeping the first occurrence.** A second, plain Bloom filter of ``m`` bits remembers the
repeated units already written; a unit found in it is removed. It holds at most the repeated
units (at most ``n``), so a first occurrence is wrongly removed with at most the same rate.
Memory: ``m`` bytes + ``m / 8`` bytes, whatever the input's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernels.repeats import bloom_add, bloom_count, bloom_seen_many, bloom_test_and_set


def bloom_size(items: int, fpr: float) -> tuple[int, int]:
    """``(m, k)``: counters and cell choices for ``fpr`` at ``items`` distinct units.

    >>> bloom_size(1_000_000, 0.01)
    (9585059, 7)
    """
    m = max(64, math.ceil(-items * math.log(fpr) / math.log(2) ** 2))
    k = max(1, round(m / items * math.log(2)))
    return m, k


def false_positive_rate(m: int, k: int, items: int) -> float:
    """The bound ``(1 - e^(-k n / m))^k`` for ``n = items`` distinct units.

    >>> round(false_positive_rate(9585059, 7, 1_000_000), 4)
    0.01
    """
    return (1.0 - math.exp(-k * items / m)) ** k


@dataclass
class CountingBloom:
    """The counters (``m`` bytes) and the written-units filter (``m`` bits) of one job."""

    m: int
    k: int

    def __post_init__(self) -> None:
        self.counters = np.zeros(self.m, dtype=np.uint8)
        self.written = np.zeros((self.m + 63) // 64, dtype=np.uint64)

    @classmethod
    def sized(cls, items: int, fpr: float) -> CountingBloom:
        return cls(*bloom_size(items, fpr))

    @property
    def nbytes(self) -> int:
        return self.counters.nbytes + self.written.nbytes

    def add(self, hi: np.ndarray, lo: np.ndarray, skip: np.ndarray) -> None:
        """Count the units not ``skip``-ped (order does not matter: counts only add up)."""
        bloom_add(self.counters, hi, lo, skip, self.k)

    def counts(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """The estimated count of every unit (>= its true count; at most 255)."""
        return bloom_count(self.counters, hi, lo, self.k)

    def seen_before(self, hi: int, lo: int) -> bool:
        """Whether the unit was marked written already (then it is marked)."""
        return bool(bloom_test_and_set(self.written, np.uint64(hi), np.uint64(lo), self.k))

    def seen_many(self, hi: np.ndarray, lo: np.ndarray, query: np.ndarray) -> np.ndarray:
        """:meth:`seen_before` of every unit ``query`` marks, in order (False elsewhere)."""
        return bloom_seen_many(self.written, hi, lo, self.k, query)
