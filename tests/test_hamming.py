"""Tests of Hamming search (neardup.hamming).

Properties checked:
- all_pairs equals brute-force all-pairs for every k from 0 to 8, at 64 and 128 bits, on random
  fingerprints with planted near pairs at every distance 0..10 and groups of exact copies,
  whatever the number of blocks m and the number of threads: each pair once, a < b, sorted;
- the permuted-table plan: C(m, k) tables of m - k kept blocks, block sizes, the documented
  choice of m, and the pigeonhole guarantee (a pair within k agrees on some table);
- HammingIndex add / query / remove / pairs agree with brute force, across plan changes and
  compaction;
- bit-banding gives exactly the pairs that agree on some band, a superset of the pairs within
  k when b * r = f and b > k;
- the radix sorts equal numpy's sorts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.sorting import SMALL_SORT, radix_argsort_rows, radix_sort_bits, radix_sort_with
from neardup.index.hamming import HammingIndex
from neardup.methods.simhash.search import (
    MAX_TABLES,
    PROBE_COST,
    _plan_cost,
    all_pairs,
    bit_band_pairs,
    block_plan,
    brute_force_pairs,
    choose_blocks,
    unique_pairs,
)
from neardup.methods.simhash.sketch import SimHasher


def planted(n: int, bits: int, seed: int, near: int = 300, copies: int = 20) -> np.ndarray:
    """Random fingerprints; ``near`` of them copy an earlier one with 0..10 bits flipped, and
    ``copies`` groups of 2-4 exact copies."""
    rng = np.random.default_rng(seed)
    w = bits // 64
    fps = rng.integers(0, 2**64, size=(n, w), dtype=np.uint64)
    for _ in range(near):
        i, j = rng.choice(n, 2, replace=False)
        fps[j] = fps[i]
        for b in rng.choice(bits, rng.integers(0, 11), replace=False):
            fps[j, b // 64] ^= np.uint64(1) << np.uint64(b % 64)
    for _ in range(copies):
        group = rng.choice(n, rng.integers(2, 5), replace=False)
        fps[group] = fps[group[0]]
    return fps[:, 0].copy() if w == 1 else fps


def as_set(a, b, d=None):
    if d is None:
        return set(zip(a.tolist(), b.tolist()))
    return set(zip(a.tolist(), b.tolist(), d.tolist()))


@pytest.mark.parametrize("bits", [64, 128])
def test_all_pairs_equals_brute_force_for_every_k(bits):
    fps = planted(1500, bits, seed=bits)
    for k in range(9):
        a, b, d = all_pairs(fps, k)
        ba, bb, bd = brute_force_pairs(fps, k)
        assert len(a) == len(ba) and as_set(a, b, d) == as_set(ba, bb, bd), k
        assert (a < b).all() and (np.lexsort((b, a)) == np.arange(len(a))).all()
        assert len(a) > 50 * (k + 1) // 2  # planted pairs are there to be found


@pytest.mark.parametrize("bits,k", [(64, 2), (64, 5), (128, 3), (128, 8)])
def test_all_pairs_any_blocks_and_threads(bits, k):
    fps = planted(700, bits, seed=k)
    want = as_set(*brute_force_pairs(fps, k))
    for m in sorted({k + 1, k + 2, k + 4, 32 if k < 3 else k + 1}):
        assert as_set(*all_pairs(fps, k, blocks=m)) == want
    assert as_set(*all_pairs(fps, k, workers=3)) == want


def test_all_pairs_small_inputs_and_fingerprints_objects():
    assert all(len(x) == 0 for x in all_pairs(np.zeros(0, dtype=np.uint64), 3))
    assert [x.tolist() for x in all_pairs(np.array([5], dtype=np.uint64), 3)] == [[], [], []]
    same = np.full(5, 7, dtype=np.uint64)
    a, b, d = all_pairs(same, 0)
    assert len(a) == 10 and set(d.tolist()) == {0}
    fps = SimHasher(bits=128).sign(["a b c d e", "a b c d e", "z y x"])
    assert as_set(*all_pairs(fps, 0)[:2]) == {(0, 1)}
    with pytest.raises(ValueError, match="max_distance"):
        all_pairs(same, 64)
    with pytest.raises(ValueError, match="shape"):
        all_pairs(np.zeros((3, 3), dtype=np.uint64), 1)


def test_unique_pairs_collapse_copies():
    fps = np.array([9, 9, 8, 9, 2**40], dtype=np.uint64)
    up = unique_pairs(fps, 1)
    assert len(up.firsts) == 3 and up.groups[0] == up.groups[1] == up.groups[3]
    assert as_set(*all_pairs(fps, 1)[:2]) == {(0, 1), (0, 3), (1, 3), (0, 2), (1, 2), (2, 3)}


# ---------------------------------------------------------------------------------------------
# plans


def test_block_plan_structure():
    p = block_plan(64, 3, 6)
    assert p.sizes == (11, 11, 11, 11, 10, 10) and p.starts == (0, 11, 22, 33, 44, 54)
    assert len(p.tables) == math.comb(6, 3) and all(len(t) == 3 for t in p.tables)
    assert p.tables == tuple(sorted(p.tables)) and p.key_bits == 31
    p128 = block_plan(128, 0, 1)
    assert p128.sizes == (128,) and p128.tables == ((0,),)
    with pytest.raises(ValueError, match="blocks"):
        block_plan(64, 3, 3)
    with pytest.raises(ValueError, match="blocks"):
        block_plan(64, 3, 65)


@pytest.mark.parametrize(
    "bits,k,n", [(64, 3, 2**20), (64, 3, 5000), (64, 8, 10**6), (128, 6, 10**5), (64, 0, 10), (128, 12, 10**7)]
)
def test_choose_blocks_minimises_the_documented_cost(bits, k, n):
    m = choose_blocks(bits, k, n)
    costs = {x: _plan_cost(bits, k, x, n, 64) for x in range(k + 1, bits + 1)}
    allowed = {x: c for x, (c, t) in costs.items() if t <= MAX_TABLES}
    assert m in allowed and costs[m][0] == min(c for c in allowed.values())
    assert all(costs[x][0] > costs[m][0] for x in allowed if x < m)  # smallest m on ties
    assert PROBE_COST > 0


@given(st.integers(0, 2**64 - 1), st.integers(0, 8), st.integers(0, 2**32), st.sampled_from([None, 9, 12]))
@settings(max_examples=150, deadline=None)
def test_pigeonhole_some_table_agrees(x, k, seed, m):
    rng = np.random.default_rng(seed)
    y = x
    for b in rng.choice(64, k, replace=False):
        y ^= 1 << int(b)
    plan = block_plan(64, k, m if m is not None and m > k else k + 1)
    diff = x ^ y
    differing = {b for b, (s, z) in enumerate(zip(plan.starts, plan.sizes)) if (diff >> s) & ((1 << z) - 1)}
    assert any(not differing & set(t) for t in plan.tables)


# ---------------------------------------------------------------------------------------------
# the index


def brute_query(fps, alive_rows, q, k):
    d = [
        (
            bin(int(fps[r]) ^ int(q)).count("1")
            if fps.ndim == 1
            else sum(bin(int(a) ^ int(b)).count("1") for a, b in zip(fps[r], q)),
            r,
        )
        for r in alive_rows
    ]
    return sorted((dd, r) for dd, r in d if dd <= k)


def distances(results, bits):
    """Index results (key, 1 - d / bits) as (d, key)."""
    return [(round((1 - s) * bits), key) for key, s in results]


@pytest.mark.parametrize("bits,k,blocks", [(64, 3, None), (64, 5, 7), (128, 4, None), (128, 8, 10)])
def test_index_add_query_remove_vs_brute_force(bits, k, blocks):
    fps = planted(1200, bits, seed=k + bits)
    index = HammingIndex(bits=bits, max_distance=k, blocks=blocks)
    for lo in range(0, 1200, 170):  # several runs, merged as they come
        index.add(range(lo, min(lo + 170, 1200)), fps[lo : lo + 170])
    assert len(index) == 1200 and 5 in index
    rng = np.random.default_rng(0)
    queries = rng.choice(1200, 60, replace=False)
    got = index.query_batch(fps[queries])
    for q, res in zip(queries, got):
        assert distances(res, bits) == brute_query(fps, range(1200), fps[q], k)
        assert all(s == 1 - d / bits for (_, s), (d, _) in zip(res, distances(res, bits)))
    removed = rng.choice(1200, 400, replace=False).tolist()
    index.remove(removed)
    alive = sorted(set(range(1200)) - set(removed))
    for q in queries[:30]:
        assert distances(index.query(fps[q]), bits) == brute_query(fps, alive, fps[q], k)
        small = index.query(fps[q], min_similarity=1 - 1 / bits)
        assert distances(small, bits) == brute_query(fps, alive, fps[q], 1)
    pairs = index.pairs()
    ba, bb, bd = brute_force_pairs(fps[alive], k)
    assert set(pairs) == {(alive[i], alive[j], 1 - d / bits) for i, j, d in zip(ba.tolist(), bb.tolist(), bd.tolist())}
    assert len(pairs) == len(ba)


def test_index_compaction_and_plan_growth():
    fps = planted(6000, 64, seed=3)
    index = HammingIndex(bits=64, max_distance=3)
    plans = set()
    for lo in range(0, 6000, 500):
        index.add([f"k{i}" for i in range(lo, lo + 500)], fps[lo : lo + 500])
        plans.add(index.plan.blocks)
    index.remove([f"k{i}" for i in range(3500)])  # more than half: compacts
    assert len(index) == 2500 and "k10" not in index
    q = fps[4000]
    want = [(f"k{r}", 1 - d / 64) for d, r in brute_query(fps, range(3500, 6000), q, 3)]
    assert index.query(q) == want
    index.add(["again"], fps[4000:4001])
    assert ("again", 1.0) in index.query(q)


def test_index_validation_and_keys():
    index = HammingIndex(bits=128, max_distance=2)
    fps = planted(10, 128, seed=1, near=0, copies=0)
    index.add(list("abcdefghij"), fps)
    with pytest.raises(KeyError):
        index.add(["a"], fps[:1])
    with pytest.raises(KeyError):
        index.add(["x", "x"], fps[:2])
    with pytest.raises(KeyError):
        index.remove(["zz"])
    with pytest.raises(ValueError, match="keys"):
        index.add(["y"], fps[:2])
    with pytest.raises(ValueError, match="128-bit"):
        index.add(["y"], np.array([1], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"min_similarity must be >= 0\.984375 for this index"):
        index.query(fps[0], min_similarity=1 - 3 / 128)
    assert index.query(fps[3])[0] == ("d", 1.0)
    assert list(index) == list("abcdefghij") and "HammingIndex" in repr(index)
    with pytest.raises(ValueError, match="max_distance"):
        HammingIndex(bits=64, max_distance=-1)


def test_index_scheme_checks():
    a = SimHasher(bits=64, seed=1).sign(["a b c", "d e f"])
    b = SimHasher(bits=64, seed=2).sign(["a b c"])
    index = HammingIndex(bits=64, max_distance=3)
    index.add([1, 2], a)
    from neardup.core.errors import IncompatibleSketchError

    with pytest.raises(IncompatibleSketchError):
        index.query(b)
    assert index.query(a[0])[0] == (1, 1.0)


# ---------------------------------------------------------------------------------------------
# bit-banding


@pytest.mark.parametrize("bits,bands,rows", [(64, 8, 8), (64, 4, 16), (64, 5, 10), (128, 8, 16), (128, 16, 8)])
def test_bit_band_pairs_exact_definition_and_superset(bits, bands, rows):
    fps = planted(900, bits, seed=bands * rows)
    a, b = bit_band_pairs(fps, bands, rows)
    words = fps.reshape(len(fps), -1)
    ints = [sum(int(x) << (64 * q) for q, x in enumerate(r)) for r in words.tolist()]
    mask = (1 << rows) - 1
    bandkeys = [[(v >> (t * rows)) & mask for t in range(bands)] for v in ints]
    want = set()
    for t in range(bands):
        buckets: dict = {}
        for i, ks in enumerate(bandkeys):
            buckets.setdefault(ks[t], []).append(i)
        for members in buckets.values():
            want.update((x, y) for i, x in enumerate(members) for y in members[i + 1 :])
    assert as_set(a, b) == want and len(a) == len(want)
    if bands * rows == bits:
        k = bands - 1
        ba, bb, _ = brute_force_pairs(fps, k)
        assert as_set(ba, bb) <= as_set(a, b)


def test_bit_band_validation():
    fps = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match="bands \\* rows"):
        bit_band_pairs(fps, 5, 16)
    with pytest.raises(ValueError, match="rows"):
        bit_band_pairs(fps, 2, 0)


# ---------------------------------------------------------------------------------------------
# sorting kernels


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(0, 48), st.integers(1, 64))
@settings(max_examples=80, deadline=None)
def test_radix_sorts(values, shift, nbits):
    nbits = min(nbits, 64 - shift)
    a = np.array(values, dtype=np.uint64)
    digits = (a >> np.uint64(shift)) & np.uint64((1 << nbits) - 1) if nbits < 64 else a
    got = a.copy()
    radix_sort_bits(got, shift, nbits)
    assert np.array_equal(got, a[np.argsort(digits, kind="stable")])
    keys, payload = a.copy(), np.arange(len(a))
    radix_sort_with(keys, payload)
    assert np.array_equal(payload, np.argsort(a, kind="stable"))
    rows = np.stack([a, a[::-1]], axis=1) if len(a) else np.empty((0, 2), dtype=np.uint64)
    assert np.array_equal(radix_argsort_rows(np.ascontiguousarray(rows)), np.lexsort((rows[:, 0], rows[:, 1])))


@pytest.mark.parametrize("n", [0, 1, 2, SMALL_SORT - 1, SMALL_SORT, 3 * SMALL_SORT])
def test_radix_sort_with_is_stable_by_insertion_and_by_radix(n):
    """Both sides of SMALL_SORT: few distinct keys (many ties), in 16-bit digits the radix passes
    must all handle, sorted as a stable argsort orders them."""
    rng = np.random.default_rng(n)
    keys = rng.choice(np.array([0, 1, 2**16 + 1, 2**40, 2**64 - 1], dtype=np.uint64), n)
    got, payload = keys.copy(), np.arange(n, dtype=np.uint32)
    radix_sort_with(got, payload)
    assert np.array_equal(payload, np.argsort(keys, kind="stable")) and np.array_equal(got, np.sort(keys))
