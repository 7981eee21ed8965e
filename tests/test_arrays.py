"""Array helpers of neardup.core.arrays against NumPy's own answers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.arrays import sorted_unique

_INTS = st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3), max_size=300)


@settings(max_examples=200, deadline=None)
@given(_INTS)
def test_sorted_unique_is_numpys_unique(values):
    """Same values and dtype as ``np.unique`` for any int64 array: empty, one value, repeats,
    the extremes of the type."""
    a = np.array(values, dtype=np.int64)
    got = sorted_unique(a)
    assert got.dtype == a.dtype
    assert np.array_equal(got, np.unique(a))


def test_sorted_unique_leaves_its_input_alone_and_takes_other_integer_types():
    a = np.array([7, 3, 7, 0, 3], dtype=np.uint32)
    before = a.copy()
    assert sorted_unique(a).tolist() == [0, 3, 7]
    assert sorted_unique(a).dtype == np.uint32
    assert np.array_equal(a, before)
