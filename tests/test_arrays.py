"""Array helpers of neardup.core.arrays against NumPy's own answers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.arrays import CsrRows, sorted_unique

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


_ROWS = st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=6), max_size=20)


def _csr(rows: list[list[int]]) -> CsrRows:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    return CsrRows(np.array([v for r in rows for v in r], dtype=np.uint64), offsets)


@settings(max_examples=200, deadline=None)
@given(_ROWS, _ROWS, st.data())
def test_csr_rows_take_and_concat_are_list_indexing_and_joining(first, second, data):
    """``take`` picks rows in the order asked (repeats included) and ``concat`` joins pieces, as
    indexing and joining lists of rows do; ``of`` fills the rows not named with empty ones."""
    a, b = _csr(first), _csr(second)
    joined = CsrRows.concat([a, b])
    assert [r.tolist() for r in joined.split()] == first + second
    assert len(joined) == len(first) + len(second)
    assert joined.nbytes == joined.values.nbytes + joined.offsets.nbytes
    positions = data.draw(st.lists(st.integers(0, max(len(joined) - 1, 0)), max_size=30)) if len(joined) else []
    taken = joined.take(np.array(positions, dtype=np.int64))
    assert [r.tolist() for r in taken.split()] == [(first + second)[p] for p in positions]
    n = len(first) + 3
    docs = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=len(first)))), dtype=np.int64)
    some = _csr(first[: len(docs)])
    full = CsrRows.of(docs, some.values, some.offsets, n)
    expected = [[] for _ in range(n)]
    for d, row in zip(docs.tolist(), first):
        expected[d] = row
    assert [r.tolist() for r in full.split()] == expected
