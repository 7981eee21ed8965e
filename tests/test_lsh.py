"""Tests of neardup.lsh: the S-curve against worked numbers and exact integrals, the optimiser
against brute force, band keys against a pure-Python reference and golden values, and LSHIndex
against a brute-force model of banding."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.minhash import EMPTY_VALUE
from neardup.core.errors import IncompatibleSketchError
from neardup.index.lsh import LSHIndex
from neardup.methods.minhash.lsh import (
    DEFAULT_FN_WEIGHT,
    DEFAULT_FP_WEIGHT,
    LSHParams,
    _optimal_banding,
    band_keys,
    candidate_probability,
    effective_threshold,
    false_negative_area,
    false_positive_area,
    optimal_params,
    params_for,
)
from neardup.methods.minhash.scheme import MinHashScheme, Signatures

MASK = (1 << 64) - 1
EMPTY = int(EMPTY_VALUE)

# ---------------------------------------------------------------------------------------------
# S-curve: the worked numbers of Leskovec, Rajaraman & Ullman (MMDS ch. 3), b = 20, r = 5


@pytest.mark.parametrize(
    "s, printed",
    [(0.2, "0.006"), (0.3, "0.047"), (0.4, "0.186"), (0.5, "0.47"), (0.6, "0.802"), (0.7, "0.975"), (0.8, "0.9996")],
)
def test_s_curve_matches_the_printed_table(s, printed):
    digits = len(printed.split(".")[1])
    assert round(candidate_probability(s, 20, 5), digits) == float(printed)


def test_worked_false_negative_and_false_positive():
    one_band = candidate_probability(0.8, 1, 5)
    assert round(one_band, 3) == 0.328
    miss_all_bands = 1.0 - candidate_probability(0.8, 20, 5)
    assert miss_all_bands == pytest.approx((1 - 0.8**5) ** 20)
    assert abs(miss_all_bands - 0.00035) < 1e-5  # "a chance of 1 over about 3000"
    assert round(candidate_probability(0.3, 1, 5), 5) == 0.00243
    assert 0.0474 <= candidate_probability(0.3, 20, 5) < 0.0475  # printed truncated: 0.047494


def test_candidate_probability_vectorised_and_endpoints():
    s = np.linspace(0, 1, 11)
    p = candidate_probability(s, 20, 5)
    assert isinstance(p, np.ndarray) and p.shape == s.shape
    np.testing.assert_allclose(p, 1 - (1 - s**5) ** 20, rtol=1e-12, atol=1e-15)
    assert p[0] == 0.0 and p[-1] == 1.0
    assert isinstance(candidate_probability(0.5, 20, 5), float)
    # accurate where 1 - (1 - x)^b would cancel: P ~ b * s^r for tiny s^r
    assert candidate_probability(1e-3, 10, 5) == pytest.approx(10 * 1e-15, rel=1e-9)


def test_candidate_probability_is_monotone_in_s_b_and_r():
    s = np.linspace(0.01, 0.99, 99)
    for b, r in [(1, 1), (20, 5), (17, 7), (4, 30)]:
        p = candidate_probability(s, b, r)
        step = np.diff(p)
        assert np.all(step >= 0), (b, r)
        assert np.all(step[p[1:] < 1 - 1e-9] > 0), (b, r)  # strictly, until P rounds to 1
    for r in (1, 3, 8):
        by_b = np.array([candidate_probability(s, b, r) for b in range(1, 30)])
        assert np.all(np.diff(by_b, axis=0) >= 0)
        assert np.all(np.diff(by_b, axis=0)[by_b[1:] < 1 - 1e-9] > 0)
    for b in (1, 5, 20):
        by_r = np.array([candidate_probability(s, b, r) for r in range(1, 20)])
        assert np.all(np.diff(by_r, axis=0) <= 0)
        assert np.all(np.diff(by_r, axis=0)[by_r[:-1] < 1 - 1e-9] < 0)


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_candidate_probability_rejects_similarity_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        candidate_probability(bad, 20, 5)


def test_effective_threshold():
    assert effective_threshold(20, 5) == pytest.approx((1 / 20) ** (1 / 5))
    assert round(effective_threshold(20, 5), 3) == 0.549
    assert effective_threshold(1, 7) == 1.0


def _exact_antiderivative(x: Fraction, b: int, r: int) -> Fraction:
    """integral_0^x (1 - s^r)^b ds by the binomial expansion, in exact arithmetic."""
    return sum(math.comb(b, k) * (-1) ** k * x ** (k * r + 1) / (k * r + 1) for k in range(b + 1))


@pytest.mark.parametrize(
    "t, b, r",
    [
        (0.8, 20, 5),
        (0.5, 1, 1),
        (0.3, 128, 1),
        (0.9, 1, 128),
        (0.75, 17, 7),
        (0.6, 11, 11),
        (0.95, 3, 300),
        (0.8, 32, 32),
        (0.5, 512, 2),
    ],
)
def test_areas_match_exact_integrals(t, b, r):
    tf = Fraction(t)
    fp = tf - _exact_antiderivative(tf, b, r)
    fn = _exact_antiderivative(Fraction(1), b, r) - _exact_antiderivative(tf, b, r)
    assert abs(false_positive_area(t, b, r) - float(fp)) < 1e-12
    assert abs(false_negative_area(t, b, r) - float(fn)) < 1e-12


def test_lshparams_properties():
    p = LSHParams(20, 5, 0.8, 0.5, 0.5)
    assert p.effective_threshold == effective_threshold(20, 5)
    assert p.false_positive_area == false_positive_area(0.8, 20, 5)
    assert p.false_negative_area == false_negative_area(0.8, 20, 5)
    assert p.candidate_probability(0.5) == candidate_probability(0.5, 20, 5)
    with pytest.raises(ValueError):
        LSHParams(0, 5, 0.8)


# ---------------------------------------------------------------------------------------------
# the optimiser


def _objective(t: float, b: int, r: int, fpw: float, fnw: float) -> float:
    tf = Fraction(t)
    fp = tf - _exact_antiderivative(tf, b, r)
    fn = _exact_antiderivative(Fraction(1), b, r) - _exact_antiderivative(tf, b, r)
    return fpw * float(fp) + fnw * float(fn)


@pytest.mark.parametrize("num_perm", [1, 2, 5, 12, 24])
@pytest.mark.parametrize("t", [0.2, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (DEFAULT_FP_WEIGHT, DEFAULT_FN_WEIGHT), (1.0, 0.0), (0.0, 1.0)])
def test_optimiser_beats_every_banding_by_brute_force(num_perm, t, weights):
    fpw, fnw = weights
    p = optimal_params(t, num_perm, fp_weight=fpw, fn_weight=fnw)
    assert p.bands >= 1 and p.rows >= 1 and p.bands * p.rows <= num_perm
    best = _objective(t, p.bands, p.rows, fpw, fnw)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            assert best <= _objective(t, b, r, fpw, fnw) + 1e-12, (b, r)


def test_default_weights_favour_recall():
    p = optimal_params(0.8, 128)
    assert (p.bands, p.rows) == (17, 7)
    assert (p.fp_weight, p.fn_weight) == (DEFAULT_FP_WEIGHT, DEFAULT_FN_WEIGHT)
    assert p.candidate_probability(0.85) >= 0.995
    assert p.candidate_probability(0.8) >= 0.98
    assert p.candidate_probability(0.5) < 0.15  # few candidates among dissimilar pairs
    assert p.candidate_probability(0.3) < 0.005
    # the numbers stated in the DEFAULT_FP_WEIGHT comment
    table = {0.5: (34, 3), 0.7: (23, 5), 0.8: (17, 7), 0.9: (10, 12)}
    for t, banding in table.items():
        q = optimal_params(t, 128)
        assert (q.bands, q.rows) == banding
        assert q.candidate_probability(t + 0.05) >= 0.995
    balanced = optimal_params(0.8, 128, fp_weight=0.5, fn_weight=0.5)
    assert (balanced.bands, balanced.rows) == (9, 13)


def test_documented_default_table_is_true():
    """The table in optimal_params' docstring is recomputed here, so it cannot go stale."""
    rows = ("0.5 ", "0.7 ", "0.8 ", "0.9 ")
    lines = [ln.split() for ln in optimal_params.__doc__.splitlines() if ln.strip().startswith(rows)]
    assert len(lines) == 4
    for cells in lines:
        t, b, r = float(cells[0]), int(cells[1].strip("(,")), int(cells[2].strip(")"))
        p = optimal_params(t, 128)
        assert (p.bands, p.rows) == (b, r)
        assert float(cells[3]) == round(p.effective_threshold, 3)
        probs = [p.candidate_probability(s) for s in (t + 0.05, t, t - 0.2, 0.5, 0.6, 0.7)]
        assert [float(c) for c in cells[4:]] == [round(x, 4) for x in probs]


def test_optimiser_is_cached():
    optimal_params(0.63, 96)
    hits = _optimal_banding.cache_info().hits
    assert optimal_params(0.63, 96) == optimal_params(0.63, 96)
    assert _optimal_banding.cache_info().hits == hits + 2


@settings(max_examples=40, deadline=None)
@given(t=st.floats(0.01, 0.99), k=st.integers(1, 64), fpw=st.floats(0, 10), fnw=st.floats(0.01, 10))
def test_optimiser_result_is_a_valid_banding(t, k, fpw, fnw):
    p = optimal_params(t, k, fp_weight=fpw, fn_weight=fnw)
    assert p.bands >= 1 and p.rows >= 1 and p.bands * p.rows <= k
    assert p.threshold == t


@given(t=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(float("nan"))))
def test_threshold_outside_open_unit_interval_is_rejected(t):
    with pytest.raises(ValueError, match="threshold"):
        optimal_params(t, 128)


@given(k=st.integers(max_value=0))
def test_num_perm_below_one_is_rejected(k):
    with pytest.raises(ValueError, match=r"num_perm must be an integer in \[1, 2048\]"):
        optimal_params(0.5, k)


@given(w=st.floats(max_value=-1e-9, allow_infinity=False))
def test_negative_weights_are_rejected(w):
    with pytest.raises(ValueError, match=">= 0"):
        optimal_params(0.5, 16, fp_weight=w)
    with pytest.raises(ValueError, match=">= 0"):
        optimal_params(0.5, 16, fn_weight=w)


def test_bad_argument_types_and_zero_weights():
    with pytest.raises(ValueError, match="both be 0"):
        optimal_params(0.5, 16, fp_weight=0, fn_weight=0)
    with pytest.raises(TypeError, match="num_perm"):
        optimal_params(0.5, 16.0)
    with pytest.raises(TypeError, match="threshold"):
        optimal_params(True, 16)
    with pytest.raises(ValueError, match="finite"):
        optimal_params(0.5, 16, fn_weight=math.inf)


def test_params_for_overrides():
    assert params_for(0.8, 128) == optimal_params(0.8, 128)
    p = params_for(0.8, 128, bands=20)
    assert (p.bands, p.rows) == (20, 6)
    p = params_for(0.8, 128, rows=5)
    assert (p.bands, p.rows) == (25, 5)
    p = params_for(0.8, 128, bands=16, rows=8)
    assert (p.bands, p.rows, p.threshold) == (16, 8, 0.8)
    with pytest.raises(ValueError, match=r"bands \* rows must be <= num_perm, got 20 \* 7 = 140 > 128"):
        params_for(0.8, 128, bands=20, rows=7)
    with pytest.raises(ValueError, match="bands=200 is more than num_perm=128"):
        params_for(0.8, 128, bands=200)
    with pytest.raises(ValueError, match="rows=129"):
        params_for(0.8, 128, rows=129)
    with pytest.raises(ValueError, match="bands must be an integer in"):
        params_for(0.8, 128, bands=0)


# ---------------------------------------------------------------------------------------------
# band keys


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _reference_band_key(band: list[int], j: int) -> int:
    """The band key as the docstring of band_keys defines it, in plain Python."""
    p1, p2, seed = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x27D4EB2F165667C5
    h = _fmix64(seed ^ j)
    words = [band[m] | (band[m + 1] << 32) for m in range(0, len(band) - 1, 2)]
    if len(band) % 2:
        words.append(band[-1])
    for w in words:
        h = (_rotl64(h ^ ((w * p1) & MASK), 31) * p2) & MASK
    return _fmix64(h ^ (4 * len(band)))


GOLDEN_ROWS = np.array([list(range(1, 9)), [0xFFFFFFFF, 0, 0xDEADBEEF, 7, 1, 2, 3, 0x80000000]], dtype=np.uint32)


def test_band_keys_golden_values():
    """Pinned: band keys are part of the stable format (a change breaks stored indexes)."""
    assert band_keys(GOLDEN_ROWS, 2, 4).tolist() == [
        [0xE935BBCA2F2CB7ED, 0x7435BC14DD2CE3BD],
        [0x25F6CDBB6C8EB176, 0xDD92E66446723F5E],
    ]
    assert band_keys(GOLDEN_ROWS, 2, 3).tolist() == [
        [0xFA267C9D288C1A71, 0x74D160DFB9593D01],
        [0x459F5C3F9EDAFAE2, 0x451AF6FD81EFFD1F],
    ]
    assert band_keys(GOLDEN_ROWS, 8, 1)[0, :3].tolist() == [0x2288632073B7E1E6, 0xFD05222DF5C99688, 0x3D0886F5F9AA1EDC]


@pytest.mark.parametrize("bands, rows", [(2, 4), (2, 3), (8, 1), (1, 8), (3, 2)])
def test_band_keys_follow_the_documented_definition(bands, rows):
    rng = np.random.default_rng(bands * 10 + rows)
    values = np.vstack([GOLDEN_ROWS, rng.integers(0, 2**32, size=(5, 8), dtype=np.uint32)])
    keys = band_keys(values, bands, rows)
    assert keys.dtype == np.uint64 and keys.shape == (values.shape[0], bands)
    for i in range(values.shape[0]):
        for j in range(bands):
            band = [int(v) for v in values[i, j * rows : (j + 1) * rows]]
            assert int(keys[i, j]) == _reference_band_key(band, j)


def test_band_keys_equal_tuples_and_distinct_bands():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2**32, size=(200, 24), dtype=np.uint32)
    values[1, 6:12] = values[0, 6:12]  # band 1 (r = 6) equal in rows 0 and 1
    values[2] = np.tile(values[0, :6], 4)  # the same tuple in every band
    keys = band_keys(values, 4, 6)
    assert keys[0, 1] == keys[1, 1]
    assert keys[0, 0] != keys[1, 0] and keys[0, 2] != keys[1, 2]
    assert len(set(keys[2].tolist())) == 4  # same tuple, different bands -> different keys
    assert keys[2, 0] == keys[0, 0]
    assert len(set(keys.ravel().tolist())) == keys.size - 2  # otherwise no collisions
    # a strided view hashes like its contiguous copy
    np.testing.assert_array_equal(band_keys(values[::2], 4, 6), keys[::2])


def test_band_keys_argument_checks():
    with pytest.raises(TypeError, match="uint32"):
        band_keys(np.zeros((2, 8), dtype=np.int64), 2, 4)
    with pytest.raises(ValueError, match="bands \\* rows = 12 is more than the 8 slots"):
        band_keys(np.zeros((2, 8), dtype=np.uint32), 3, 4)
    values = np.zeros((4, 8), dtype=np.uint32)
    read_only = np.empty((4, 2), np.uint64)
    read_only.flags.writeable = False
    bad = [
        np.empty((4, 3), np.uint64),  # shape
        np.empty((4, 2), np.int64),  # dtype
        np.empty((2, 4), np.uint64).T,  # not C-contiguous
        np.empty((4, 2), np.uint64)[::-1],  # not C-contiguous
        read_only,
    ]
    for out in bad:
        with pytest.raises(ValueError, match="out must be a writeable C-contiguous uint64 array of shape \\(4, 2\\)"):
            band_keys(values, 2, 4, out)


def test_band_keys_into_rows_of_one_array_on_workers():
    """Keys written part by part into ``out`` (as the batch job's band stage does, one part per
    worker, from 20,000 signatures) equal the keys of one call."""
    from neardup.core.parallel import Threads
    from neardup.methods.minhash.plan import _band_keys_on

    rng = np.random.default_rng(8)
    values = rng.integers(0, 2**32, size=(20_003, 16), dtype=np.uint32)
    whole = band_keys(values, 3, 5)
    out = np.full((100, 3), 7, dtype=np.uint64)
    assert np.shares_memory(band_keys(values[:40], 3, 5, out[10:50]), out)
    np.testing.assert_array_equal(out[10:50], whole[:40])
    assert (out[:10] == 7).all() and (out[50:] == 7).all()
    for workers in (1, 2, 3):
        with Threads(workers) as threads:
            np.testing.assert_array_equal(_band_keys_on(threads, values, 3, 5), whole)


# ---------------------------------------------------------------------------------------------
# LSHIndex against a brute-force model

K, B, R = 32, 8, 4  # 8 bands of 4 slots


def _near_copies(rng, base: np.ndarray, count: int, replace: float, alphabet: int) -> np.ndarray:
    """Rows copied from random rows of ``base`` with a fraction ``replace`` of slots redrawn."""
    rows = base[rng.integers(0, base.shape[0], count)].copy()
    mask = rng.random(rows.shape) < replace
    rows[mask] = rng.integers(0, alphabet, size=int(mask.sum()), dtype=np.uint32)
    return rows


def _dataset(seed: int, n: int = 300, alphabet: int = 4) -> np.ndarray:
    """Random rows over a small alphabet (chance band collisions), planted near-duplicates, empties."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, alphabet, size=(n, K), dtype=np.uint32)
    near = _near_copies(rng, base, n // 2, rng.choice([0.05, 0.2, 0.4]), alphabet)
    empty = np.full((3, K), EMPTY_VALUE, dtype=np.uint32)
    rows = np.vstack([base, near, empty])
    return rows[rng.permutation(rows.shape[0])]


def _is_empty(row: np.ndarray) -> bool:
    return bool((row == EMPTY_VALUE).all())


def _brute_query(model: dict, q: np.ndarray, min_similarity: float, bands=B, rows=R) -> list:
    """Keys sharing a band with q (tuple comparison, no hashing) and estimate >= min_similarity,
    sorted by estimate descending then insertion order (the model dict keeps insertion order)."""
    if _is_empty(q) or not model:
        return []
    keys = list(model)
    stored = np.array([model[k] for k in keys])
    equal = stored == q
    shares_band = equal[:, : bands * rows].reshape(len(keys), bands, rows).all(axis=2).any(axis=1)
    nonempty = ~(stored == EMPTY_VALUE).all(axis=1)
    estimates = equal.sum(axis=1) / K
    out = [
        (-estimates[i], i, keys[i], float(estimates[i]))
        for i in np.flatnonzero(shares_band & nonempty & (estimates >= min_similarity))
    ]
    return [(key, est) for _, _, key, est in sorted(out, key=lambda t: (t[0], t[1]))]


def _queries(rng, rows: np.ndarray, count: int = 60) -> np.ndarray:
    return np.vstack([_near_copies(rng, rows, count, 0.15, 4), rows[:5], np.full((1, K), EMPTY_VALUE, np.uint32)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_query_equals_brute_force_banding(seed):
    rows = _dataset(seed)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    keys = [f"doc{i}" for i in range(rows.shape[0])]
    index.add(keys, rows)
    model = dict(zip(keys, rows))
    rng = np.random.default_rng(100 + seed)
    total = 0
    for q in _queries(rng, rows):
        every = index.query(q, min_similarity=0.0)
        assert every == _brute_query(model, q, 0.0)
        assert index.query(q) == _brute_query(model, q, 0.6)
        assert index.query(q, min_similarity=0.75) == _brute_query(model, q, 0.75)
        total += len(every)
    assert total > 100  # the data really produces candidates


def test_many_small_adds_merge_runs_correctly():
    rows = _dataset(7, n=400)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    model = {}
    rng = np.random.default_rng(7)
    i = 0
    while i < rows.shape[0]:
        step = int(rng.integers(1, 9))
        keys = list(range(i, min(i + step, rows.shape[0])))
        index.add(keys, rows[keys[0] : keys[-1] + 1])
        model.update((k, rows[k]) for k in keys)
        i += step
    assert index._tables.bounds.shape[0] - 1 <= 2 * math.log2(rows.shape[0])  # O(log n) runs
    for q in _queries(rng, rows, 40):
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)


def test_remove_and_readd_follow_the_model():
    rows = _dataset(11)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    model = {}
    rng = np.random.default_rng(11)
    index.add(range(rows.shape[0]), rows)
    model.update(zip(range(rows.shape[0]), rows))
    gone = rng.choice(rows.shape[0], size=120, replace=False).tolist()
    index.remove(gone)
    for k in gone:
        del model[k]
    back = gone[:40]
    index.add(back, rows[back])  # re-added keys count as inserted now
    model.update((k, rows[k]) for k in back)
    assert len(index) == len(model)
    assert all(k in index for k in back) and all(k not in index for k in gone[40:])
    for q in _queries(rng, rows):
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)


def test_compaction_keeps_results_and_order():
    rng = np.random.default_rng(5)
    rows = np.vstack([_dataset(5, n=1200), _dataset(6, n=1200)])
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add([("k", i) for i in range(rows.shape[0])], rows)
    model = {("k", i): rows[i] for i in range(rows.shape[0])}
    gone = [("k", i) for i in rng.choice(rows.shape[0], size=2500, replace=False).tolist()]
    index.remove(gone)
    for k in gone:
        del model[k]
    assert index._rows.n == len(model)  # compacted: removed rows are gone from storage
    assert list(index) == list(model)
    for q in _queries(rng, rows, 30):
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)
    index.add([("new", 0)], rows[:1])
    assert index.query(rows[0], min_similarity=1.0)[-1] == (("new", 0), 1.0)


def test_empty_rows_are_stored_but_never_candidates():
    rows = np.full((3, K), EMPTY_VALUE, dtype=np.uint32)
    rows[0] = np.arange(K)
    index = LSHIndex(0.5, K, bands=B, rows=R)
    index.add(["a", "empty1", "empty2"], rows)
    assert len(index) == 3 and "empty1" in index
    assert index.query(rows[1], min_similarity=0.0) == []
    assert index.query(rows[0], min_similarity=0.0) == [("a", 1.0)]
    mostly_empty = rows[1].copy()
    mostly_empty[:R] = rows[0, :R]  # shares band 0 with "a", 28 slots equal to the empties
    assert index.query(mostly_empty, min_similarity=0.0) == [("a", R / K)]
    index.remove(["empty1"])
    assert "empty1" not in index and len(index) == 2


def test_query_batch_equals_repeated_query_and_limit():
    rows = _dataset(3)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add(range(rows.shape[0]), rows)
    queries = _queries(np.random.default_rng(3), rows)
    for kwargs in ({}, {"min_similarity": 0.0}, {"min_similarity": 0.0, "limit": 2}, {"limit": 0}):
        assert index.query_batch(queries, **kwargs) == [index.query(q, **kwargs) for q in queries]
    full = index.query(queries[0], min_similarity=0.0)
    assert index.query(queries[0], min_similarity=0.0, limit=3) == full[:3]
    assert index.query_batch(queries[:0]) == []
    # batches of every length around the kernel's group of queries, with empty signatures and
    # exact copies (many results) in between
    mixed = np.vstack([queries[:13], np.full((2, K), 0xFFFFFFFF, dtype=np.uint32), rows[:6], queries[13:20]])
    for n in (1, 7, 8, 9, 16, 17, len(mixed)):
        assert index.query_batch(mixed[:n], min_similarity=0.0) == [
            index.query(q, min_similarity=0.0) for q in mixed[:n]
        ]


def test_estimates_and_threshold_boundary():
    base = np.arange(K, dtype=np.uint32)
    index = LSHIndex(0.75, K, bands=B, rows=R)
    copies = np.tile(base, (K + 1, 1))
    for m in range(K + 1):  # row m differs from base in its last m slots
        copies[m, K - m :] += 1000
    index.add(range(K + 1), copies)
    got = index.query(base)
    assert [est for _, est in got] == [(K - m) / K for m in range(K + 1) if (K - m) / K >= 0.75]
    assert got[0] == (0, 1.0)


def test_duplicate_keys_raise_and_add_nothing():
    rows = _dataset(4, n=20)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add(["a", "b"], rows[:2])
    with pytest.raises(KeyError, match="'b' is already in the index"):
        index.add(["c", "b"], rows[2:4])
    with pytest.raises(KeyError, match="'d' is given twice"):
        index.add(["d", "d"], rows[2:4])
    assert len(index) == 2 and "c" not in index and "d" not in index
    with pytest.raises(KeyError, match="'zz' is not in the index"):
        index.remove(["a", "zz"])
    assert "a" in index
    with pytest.raises(ValueError, match="2 keys for 3 signatures"):
        index.add(["x", "y"], rows[:3])


def test_scheme_is_checked():
    scheme = MinHashScheme(num_perm=K, seed=1)
    other = MinHashScheme(num_perm=K, seed=2)
    rows = _dataset(8, n=10)
    index = LSHIndex(0.6, bands=B, rows=R, scheme=scheme)
    assert index.num_perm == K
    index.add(range(4), Signatures(rows[:4], scheme))
    with pytest.raises(IncompatibleSketchError):
        index.add([9], Signatures(rows[4:5], other))
    with pytest.raises(IncompatibleSketchError):
        index.query(Signatures(rows[:1], other))
    assert index.query(Signatures(rows[:1], scheme), min_similarity=1.0)[0][0] == 0
    # an index built without a scheme adopts the first one it sees
    adopt = LSHIndex(0.6, K, bands=B, rows=R)
    adopt.add(range(4), rows[:4])
    assert adopt.scheme is None
    adopt.add([4], Signatures(rows[4:5], scheme))
    assert adopt.scheme == scheme
    with pytest.raises(IncompatibleSketchError):
        adopt.add([5], Signatures(rows[5:6], other))
    with pytest.raises(ValueError, match=r"disagrees with scheme\.num_perm"):
        LSHIndex(0.6, 64, scheme=scheme)


def test_shape_and_dtype_errors():
    index = LSHIndex(0.6, K, bands=B, rows=R)
    with pytest.raises(ValueError, match="have 16 slots, expected num_perm=32"):
        index.add([1], np.zeros((1, 16), dtype=np.uint32))
    with pytest.raises(ValueError, match="have 64 slots, expected num_perm=32"):
        index.query(np.zeros(64, dtype=np.uint32))
    with pytest.raises(ValueError, match="1-D row"):
        index.query(np.zeros((2, K), dtype=np.uint32))
    with pytest.raises(TypeError, match="uint32"):
        index.add([1], np.zeros((1, K), dtype=np.float64))
    with pytest.raises(ValueError, match="min_similarity must be a number in \\[0, 1\\]"):
        index.query(np.zeros(K, dtype=np.uint32), min_similarity=1.5)
    with pytest.raises(ValueError, match="limit"):
        index.query(np.zeros(K, dtype=np.uint32), limit=-1)


def test_empty_index_and_all_removed():
    index = LSHIndex(0.6, K, bands=B, rows=R)
    q = np.arange(K, dtype=np.uint32)
    assert index.query(q, min_similarity=0.0) == [] and len(index) == 0
    index.add(["a"], q[None, :])
    index.remove(["a"])
    assert index.query(q, min_similarity=0.0) == [] and list(index) == []


def test_default_index_params_and_repr():
    index = LSHIndex()
    assert index.num_perm == 128 and index.params == optimal_params(0.8, 128)
    assert "bands=17" in repr(index)
    assert LSHIndex(0.8, 128, bands=20).params.rows == 6


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_operation_sequences_match_the_model(data):
    """Hypothesis: any interleaving of add / remove / query agrees with the brute-force model."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pool = np.vstack([_dataset(seed % 1000, n=40, alphabet=3), np.full((1, K), EMPTY_VALUE, np.uint32)])
    index = LSHIndex(0.5, K, bands=B, rows=R)
    model: dict = {}
    for _ in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(["add", "add", "remove", "query"]))
        if op == "add":
            free = [k for k in range(pool.shape[0]) if k not in model]
            keys = random.Random(int(rng.integers(1 << 30))).sample(free, min(len(free), int(rng.integers(1, 10))))
            index.add(keys, pool[keys])
            model.update((k, pool[k]) for k in keys)
        elif op == "remove" and model:
            keys = [k for k in model if rng.random() < 0.3]
            index.remove(keys)
            for k in keys:
                del model[k]
        q = pool[int(rng.integers(pool.shape[0]))]
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)
        assert len(index) == len(model)


# ---------------------------------------------------------------------------------------------
# LSHIndex internals: the bucket directory of each run, the single-query fast paths

from neardup._kernels.runs import fill_directory  # noqa: E402
from neardup.index.runs import SortedRuns  # noqa: E402


def _directory_reference(keys: np.ndarray, bits: int) -> np.ndarray:
    """dir[t] = the first position whose top ``bits`` bits are >= t, for t = 0..2^bits."""
    top = keys >> np.uint64(64 - bits)
    return np.searchsorted(top, np.arange(2**bits + 1, dtype=np.uint64), side="left")


@pytest.mark.parametrize(
    "keys",
    [
        [],
        [0],
        [MASK],
        [0, MASK],
        [0, 0, 0, MASK, MASK],
        [7] * 100,  # all equal: one bucket holds everything
        [MASK] * 50,
        sorted(random.Random(3).getrandbits(64) for _ in range(1000)),
        sorted([0] * 20 + [1 << 63] * 20 + [MASK] * 20 + [random.Random(4).getrandbits(64) for _ in range(40)]),
    ],
)
@pytest.mark.parametrize("bits", [1, 2, 5, 10])
def test_directory_matches_its_definition(keys, bits):
    keys = np.array(keys, dtype=np.uint64)
    out = np.full(2**bits + 1, 12345, dtype=np.uint32)
    fill_directory(keys, 64 - bits, out)
    np.testing.assert_array_equal(out, _directory_reference(keys, bits))


def _check_tables(t: SortedRuns) -> None:
    """Every run is sorted per band and its directory matches the definition."""
    assert t.runs.shape[0] == t.bounds.shape[0] - 1
    start = 0
    for k, (lo, hi, s, shift) in enumerate(t.runs.tolist()):
        assert (lo, hi) == (t.bounds[k], t.bounds[k + 1]) and s == start
        bits = 64 - shift
        assert bits == max(1, (hi - lo).bit_length() - 1)
        for j in range(t.keys.shape[0]):
            run = t.keys[j, lo:hi]
            assert (run[:-1] <= run[1:]).all()
            np.testing.assert_array_equal(t.dirs[j, s : s + 2**bits + 1], _directory_reference(run, bits))
        start = s + 2**bits + 1


def test_sorted_runs_directories_after_appends_merges_and_compaction():
    rng = np.random.default_rng(0)
    t = SortedRuns(3)
    _check_tables(t)
    extremes = np.array([[0, MASK, 0], [MASK, 0, MASK], [0, 0, 0]], dtype=np.uint64)
    n = 0
    for size in [1, 2, 3, 50, 7, 1, 400, 5, 5, 5]:
        keys = rng.integers(0, 2**64 - 1, size=(size, 3), dtype=np.uint64, endpoint=True)
        keys[: min(size, 3)] = extremes[: min(size, 3)]
        t.append(keys.T, np.arange(n, n + size, dtype=np.uint32))
        n += size
        _check_tables(t)
    remap = np.where(rng.random(n) < 0.5, 1, -1)
    remap[remap >= 0] = np.arange((remap >= 0).sum())
    t.compact(remap.astype(np.int64))
    _check_tables(t)
    assert t.runs.shape[0] == 1
    t.compact(np.full(n, -1, dtype=np.int64))  # everything removed: one empty run
    _check_tables(t)
    assert t.size == 0


def test_equal_keys_fill_one_bucket_and_neighbours_are_still_found():
    """1000 identical rows share every band key (one bucket of > 16 keys: a binary search in the
    bucket); about 8 of the 1000 random rows put a band key in that same bucket."""
    rng = np.random.default_rng(21)
    same = np.tile(rng.integers(0, 2**32 - 1, size=K, dtype=np.uint32), (1000, 1))
    other = rng.integers(0, 2**32 - 1, size=(1000, K), dtype=np.uint32)
    rows = np.vstack([same[:500], other, same[500:]])
    index = LSHIndex(0.5, K, bands=B, rows=R)
    index.add(range(rows.shape[0]), rows)
    model = dict(zip(range(rows.shape[0]), rows))
    assert index.query(same[0], min_similarity=0.0) == _brute_query(model, same[0], 0.0)
    assert len(index.query(same[0], min_similarity=0.0)) == 1000  # more than one result buffer
    assert index.query(same[0], limit=300) == _brute_query(model, same[0], 0.5)[:300]
    for q in other:
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)


def _brute_multi(models: list[dict], q, min_similarity):
    return _brute_query({k: v for m in models for k, v in m.items()}, q, min_similarity)


@pytest.mark.parametrize("keys_kind", ["int", "str", "mixed", "bigint", "bool", "numpy"])
def test_keys_of_every_kind_over_runs_removals_and_compaction(keys_kind):
    """Single queries return the very keys given (type included), whatever the key kinds, while
    rows are added in several runs, removed, compacted and re-added."""
    rows = np.vstack([_dataset(31, n=900), _dataset(32, n=900)])
    n = rows.shape[0]

    def key(i):
        if keys_kind == "str" or (keys_kind == "mixed" and i >= n // 2):
            return f"k{i}"
        if keys_kind == "bigint":
            return i + (2**70 if i % 3 == 0 else -(2**62))
        if keys_kind == "bool":
            return (i, True) if i > 1 else bool(i)
        if keys_kind == "numpy":
            return np.int64(i)
        return i * 7 - 5000

    keys = [key(i) for i in range(n)]
    index = LSHIndex(0.6, K, bands=B, rows=R)
    model: dict = {}
    rng = np.random.default_rng(8)
    for lo, hi in [(0, 100), (100, 101), (101, n // 2), (n // 2, n // 2 + 300), (n // 2 + 300, n)]:
        index.add(keys[lo:hi], rows[lo:hi])
        model.update(zip(keys[lo:hi], rows[lo:hi]))
    queries = _queries(rng, rows, 40)
    for q in queries:
        got = index.query(q, min_similarity=0.0)
        assert got == _brute_query(model, q, 0.0)
        assert [type(k) for k, _ in got] == [type(k) for k, _ in _brute_query(model, q, 0.0)]
    gone = [keys[i] for i in rng.choice(n, size=n - 300, replace=False)]
    index.remove(gone)  # more than half: compacts
    for k in gone:
        del model[k]
    assert index._rows.n == len(model)  # compacted: no removed rows left
    back = gone[:50]
    index.add(back, np.array([rows[keys.index(k)] for k in back]))
    model.update((k, rows[keys.index(k)]) for k in back)
    for q in queries:
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)
        assert index.query(q) == _brute_query(model, q, 0.6)
    assert index.query_batch(queries, min_similarity=0.0) == [index.query(q, min_similarity=0.0) for q in queries]


def test_query_accepts_every_form_of_one_signature():
    rows = _dataset(41)
    scheme = MinHashScheme(num_perm=K, seed=1)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add(range(rows.shape[0]), Signatures(rows, scheme))
    model = dict(zip(range(rows.shape[0]), rows))
    for q in _queries(np.random.default_rng(41), rows, 20):
        want = _brute_query(model, q, 0.0)
        strided = np.repeat(q, 2)[::2]
        readonly = q.copy()
        readonly.flags.writeable = False
        reversed_twice = q[::-1].copy()[::-1]  # negative strides
        unaligned = np.frombuffer(b"\0" + q.tobytes(), dtype=np.uint32, count=K, offset=1)
        forms = [
            q,
            q.copy(),
            strided,
            readonly,
            reversed_twice,
            unaligned,
            q[None, :],
            np.asfortranarray(q[None, :]),
            Signatures(q[None, :].copy(), scheme),
            Signatures(q[None, :].copy(), MinHashScheme(num_perm=K, seed=1)),  # equal, not identical
            Signatures(readonly[None, :], scheme),
        ]
        for form in forms:
            assert index.query(form, min_similarity=0.0) == want
    with pytest.raises(ValueError, match="1-D row"):
        index.query(Signatures(rows[:2], scheme))
    with pytest.raises(ValueError, match="1-D row"):
        index.query(rows[:2, : K // 2])  # K values in all, but not one row of them
    with pytest.raises(ValueError, match="expected num_perm"):
        index.query(rows[0, : K // 2])
    with pytest.raises(ValueError, match="1-D row"):
        index.query(rows[0][None, None, :])
    with pytest.raises(TypeError, match="uint32"):
        index.query(rows[0].astype(">u4"))
    with pytest.raises(TypeError, match="uint32"):
        index.query(rows[0].astype(np.int64))
    with pytest.raises(TypeError, match="min_similarity"):
        index.query(rows[0], min_similarity=True)
    with pytest.raises(ValueError, match="min_similarity"):
        index.query(rows[0], min_similarity=float("nan"))
    assert index.query(rows[0], min_similarity=0) == index.query(rows[0], min_similarity=0.0)
    assert index.query(rows[0], min_similarity=Fraction(3, 5)) == index.query(rows[0], min_similarity=0.6)


def test_int_keys_live_in_an_array_until_another_key_comes():
    """Int keys are kept in an array only (no list of n objects for the garbage collector to
    walk); the first other key turns them into a list, removed rows included."""
    import gc

    rows = _dataset(81, n=300)[:300]
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add(range(200), rows[:200])
    assert index._rows.keys is None and not gc.is_tracked(index._rows.ids)
    index.remove(range(0, 200, 3))
    model = {i: rows[i] for i in range(200) if i % 3}
    index.add([f"s{i}" for i in range(200, 300)], rows[200:])
    model.update((f"s{i}", rows[i]) for i in range(200, 300))
    assert len(index._rows.keys) == 300 and list(index) == list(model)
    for q in _queries(np.random.default_rng(81), rows, 30):
        assert index.query(q, min_similarity=0.0) == _brute_query(model, q, 0.0)
    assert 0 not in index and 1 in index and "s250" in index


def test_a_query_with_hundreds_of_results():
    row = np.random.default_rng(71).integers(0, 2**32 - 1, size=K, dtype=np.uint32)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add([f"copy{i}" for i in range(700)], np.tile(row, (700, 1)))
    found = index.query(row)
    assert found == [(f"copy{i}", 1.0) for i in range(700)]
    assert index.query(row, limit=300) == found[:300]
    ints = LSHIndex(0.6, K, bands=B, rows=R)
    ints.add(range(10, 710), np.tile(row, (700, 1)))  # integer keys: returned from the key array
    assert ints.query(row) == [(i, 1.0) for i in range(10, 710)]


def test_concurrent_single_queries_agree_with_sequential_ones():
    from concurrent.futures import ThreadPoolExecutor

    rows = _dataset(51, n=400)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add([f"d{i}" for i in range(rows.shape[0])], rows)
    queries = list(_queries(np.random.default_rng(51), rows, 200)) * 5
    want = [index.query(q, min_similarity=0.0) for q in queries]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: index.query(q, min_similarity=0.0), queries))
    assert got == want


def test_queries_after_everything_is_compacted_away():
    rows = _dataset(61, n=800)
    index = LSHIndex(0.6, K, bands=B, rows=R)
    index.add(range(rows.shape[0]), rows)
    index.remove(range(rows.shape[0]))  # >= 1024 dead, none alive: compacted to one empty run
    assert index._tables.runs.tolist() == [[0, 0, 0, 63]] and len(index) == 0
    for q in rows[:20]:
        assert index.query(q, min_similarity=0.0) == []
    assert index.query_batch(rows[:20], min_similarity=0.0) == [[]] * 20
    index.add(["again"], rows[:1])
    assert index.query(rows[0], min_similarity=1.0) == [("again", 1.0)]
