"""Tests of the exact similarity measures (neardup.measures).

Properties checked: hand-computed values (the seed examples), the sorted-array kernels equal
the Python set versions, weighted Jaccard generalizes Jaccard and obeys the SpotSigs upper
bound, and the empty-set conventions (0.0, never "similar").
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.measures import containment_sorted, intersection_size, jaccard_sorted
from neardup.core.measures import containment, jaccard, weighted_jaccard

# ---------------------------------------------------------------------------------------------
# hand examples


def test_seed_bigram_example_strings():
    """Seed 000: the bigram sets of d1, d2, d3 have J(d1,d2) = 3/8, J(d1,d3) = J(d2,d3) = 0."""
    s1 = {"jack london", "london traveled", "traveled to", "to oakland"}
    s2 = {"jack london", "london traveled", "traveled to", "to the", "the city", "city of", "of oakland"}
    s3 = {"jack traveled", "traveled from", "from oakland", "oakland to", "to london"}
    assert jaccard(s1, s2) == 0.375
    assert jaccard(s1, s3) == jaccard(s2, s3) == 0.0
    # containment is asymmetric: 3 of d1's 4 bigrams lie in d2, 3 of d2's 7 in d1
    assert containment(s1, s2) == 0.75
    assert containment(s2, s1) == 3 / 7


def test_jaccard_and_containment_small_cases():
    """J(A, A) = 1, disjoint sets give 0, A inside B has containment 1."""
    assert jaccard({1, 2, 3}, {1, 2, 3}) == 1.0
    assert jaccard({1, 2}, {3, 4}) == 0.0
    assert jaccard({1, 2, 3, 4}, {3, 4, 5}) == 2 / 5
    assert containment({1, 2}, {1, 2, 3, 4}) == 1.0
    assert containment({1, 2, 3, 4}, {1, 2}) == 0.5
    assert jaccard([1, 1, 2], (2, 2, 1)) == 1.0  # iterables are taken as sets


# SpotSigs deduplication example (seed 003): signature frequencies of three documents
SPOT_D1 = {"s1": 5, "s2": 4, "s3": 4}
SPOT_D2 = {"s1": 8, "s2": 4}
SPOT_D3 = {"s2": 5, "s3": 5}


def test_spotsigs_weighted_jaccard_by_hand():
    """Seed 003 weighted Jaccard = sum min / sum max, computed by hand:

    d1 vs d2: min (5, 4, 0) = 9,  max (8, 4, 4) = 16 -> 9/16 = 0.5625
    d1 vs d3: min (0, 4, 4) = 8,  max (5, 5, 5) = 15 -> 8/15 = 0.5333...
    d2 vs d3: min (0, 4, 0) = 4,  max (8, 5, 5) = 18 -> 4/18 = 0.2222...

    The slide writes sim(d1, d3) = 0.8 next to its threshold tau = 0.8; by the definition on
    its own "Multi-set Generalization" slide the value is 8/15, which is what we assert.
    """
    assert weighted_jaccard(SPOT_D1, SPOT_D2) == pytest.approx(9 / 16)
    assert weighted_jaccard(SPOT_D1, SPOT_D3) == pytest.approx(8 / 15)
    assert weighted_jaccard(SPOT_D2, SPOT_D3) == pytest.approx(4 / 18)
    # document lengths: the slide prints |d1| = 13, |d2| = 12, |d3| = 13, but d3's weights
    # 5 + 5 sum to 10; we assert the true sums
    assert [sum(d.values()) for d in (SPOT_D1, SPOT_D2, SPOT_D3)] == [13, 12, 10]


def test_spotsigs_upper_bound_on_example():
    """Seed 003 upper bound: wsim(A, B) <= min(|A|, |B|) / max(|A|, |B|)."""
    for a, b in [(SPOT_D1, SPOT_D2), (SPOT_D1, SPOT_D3), (SPOT_D2, SPOT_D3)]:
        la, lb = sum(a.values()), sum(b.values())
        assert weighted_jaccard(a, b) <= min(la, lb) / max(la, lb)


def test_weighted_jaccard_iterables_with_repeats():
    """Iterables with repeats are counted into multisets."""
    a = ["s1"] * 5 + ["s2"] * 4 + ["s3"] * 4
    b = ["s2"] * 5 + ["s3"] * 5
    assert weighted_jaccard(a, b) == pytest.approx(8 / 15)
    assert weighted_jaccard(a, SPOT_D3) == pytest.approx(8 / 15)  # mixed forms
    assert weighted_jaccard(["x", "y", "z"], ["x", "y"]) == pytest.approx(2 / 3)


def test_empty_set_conventions():
    """Two empty sets (or multisets) have similarity 0.0, as does anything against the empty set."""
    assert jaccard(set(), set()) == 0.0
    assert jaccard(set(), {1}) == 0.0
    assert containment(set(), {1}) == 0.0
    assert containment({1}, set()) == 0.0
    assert weighted_jaccard({}, {}) == 0.0
    assert weighted_jaccard([], ["a"]) == 0.0
    e = np.empty(0, dtype=np.uint64)
    one = np.array([7], dtype=np.uint64)
    assert jaccard_sorted(e, e) == 0.0
    assert jaccard_sorted(e, one) == 0.0
    assert containment_sorted(e, one) == 0.0
    assert containment_sorted(one, e) == 0.0
    assert intersection_size(e, e) == 0


# ---------------------------------------------------------------------------------------------
# properties

_sets = st.sets(st.integers(0, 60), max_size=40)
_u64_sets = st.sets(st.integers(0, 2**64 - 1), max_size=30)


def _arr(s) -> np.ndarray:
    return np.array(sorted(s), dtype=np.uint64)


@settings(max_examples=200, deadline=None)
@given(_sets, _sets)
def test_sorted_kernels_equal_set_versions(a, b):
    """jaccard_sorted / containment_sorted / intersection_size equal the Python set computations."""
    x, y = _arr(a), _arr(b)
    assert intersection_size(x, y) == len(a & b)
    assert jaccard_sorted(x, y) == jaccard(a, b)
    assert containment_sorted(x, y) == containment(a, b)


@settings(max_examples=100, deadline=None)
@given(_u64_sets, _u64_sets, st.sets(st.integers(0, 2**64 - 1), max_size=10))
def test_sorted_kernels_full_uint64_range(a, b, shared):
    """The merge is right for values across the whole uint64 range (no signed comparisons)."""
    a, b = a | shared, b | shared
    assert jaccard_sorted(_arr(a), _arr(b)) == jaccard(a, b)
    assert intersection_size(_arr(a), _arr(b)) == len(a & b)


@settings(max_examples=200, deadline=None)
@given(_sets, _sets)
def test_jaccard_exact_fraction_and_bounds(a, b):
    """jaccard equals |A n B| / |A u B| as a fraction, is symmetric, in [0, 1], and 1 iff A = B != {}."""
    j = jaccard(a, b)
    if a | b:
        assert j == pytest.approx(float(Fraction(len(a & b), len(a | b))), abs=0)
    assert j == jaccard(b, a)
    assert 0.0 <= j <= 1.0
    assert (j == 1.0) == (a == b and bool(a))
    # containment bounds Jaccard from above: J <= C(A, B) when A is non-empty
    if a:
        assert j <= containment(a, b)


_multisets = st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 9), max_size=8)


@settings(max_examples=200, deadline=None)
@given(_multisets, _multisets)
def test_weighted_jaccard_properties(a, b):
    """Weighted Jaccard: symmetric, in [0, 1], mapping == expanded iterable, SpotSigs upper bound,
    and sum-min / sum-max computed directly."""
    w = weighted_jaccard(a, b)
    assert w == pytest.approx(weighted_jaccard(b, a))
    assert 0.0 <= w <= 1.0
    expand = lambda d: [k for k, c in d.items() for _ in range(c)]
    assert w == pytest.approx(weighted_jaccard(expand(a), expand(b)))
    assert w == pytest.approx(weighted_jaccard(Counter(a), Counter(b)))
    keys = set(a) | set(b)
    mx = sum(max(a.get(k, 0), b.get(k, 0)) for k in keys)
    mn = sum(min(a.get(k, 0), b.get(k, 0)) for k in keys)
    assert w == pytest.approx(mn / mx if mx else 0.0)
    la, lb = sum(a.values()), sum(b.values())
    if la and lb:
        assert w <= min(la, lb) / max(la, lb) + 1e-12


@settings(max_examples=100, deadline=None)
@given(_sets, _sets)
def test_weighted_jaccard_with_unit_weights_is_jaccard(a, b):
    """With every weight 1 the weighted form is plain Jaccard."""
    assert weighted_jaccard(dict.fromkeys(a, 1), dict.fromkeys(b, 1)) == pytest.approx(jaccard(a, b))
    assert weighted_jaccard(list(a), list(b)) == pytest.approx(jaccard(a, b))
