"""Tests of MinHash sketches and estimates (neardup.minhash).

Properties checked:
- golden signature values (a change to any part of the scheme shows up here);
- the permutation parameters follow the documented SplitMix64 recipe;
- every slot equals a brute-force min over the set computed with Python ints;
- text and generic-set signing agree; batching and processes do not change values;
- r/K is unbiased for J with variance J(1-J)/K; the intervals cover at their nominal level;
- Broder's "90 of 100" acceptance curve; scheme compatibility; empty sets.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import MASK64, hash_int, hash_str
from neardup._kernels.minhash import EMPTY_VALUE
from neardup.core.errors import IncompatibleSketchError
from neardup.core.measures import jaccard
from neardup.methods.minhash import estimate as mh_mod
from neardup.methods.minhash.estimate import confidence_interval, estimate_from_rows
from neardup.methods.minhash.oph import OPH_FAMILY
from neardup.methods.minhash.scheme import MinHashScheme, Signatures
from neardup.methods.minhash.sketch import MinHasher, hash_items
from neardup.text.shingles import Shingling, shingle_batch

GAMMA = 0x9E3779B97F4A7C15


def ref_splitmix64(state: int) -> int:
    """Vigna's SplitMix64 output for ``state`` (it adds the golden gamma first), Python ints."""
    z = (state + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def ref_permutations(seed: int, k: int) -> tuple[list[int], list[int]]:
    """a_k = z_{2k} | 1, b_k = z_{2k+1}, z_j = splitmix64(seed + j * gamma), all mod 2**64."""
    z = [ref_splitmix64((seed + j * GAMMA) & MASK64) for j in range(2 * k)]
    return [z[2 * i] | 1 for i in range(k)], [z[2 * i + 1] for i in range(k)]


def ref_signature(hashes: list[int], a: list[int], b: list[int]) -> list[int]:
    """Brute force: slot k = min over x of ((a_k * x + b_k) mod 2**64) >> 32; empty -> 0xFFFFFFFF."""
    return [min((((ak * x + bk) & MASK64) >> 32 for x in hashes), default=0xFFFFFFFF) for ak, bk in zip(a, b)]


# ---------------------------------------------------------------------------------------------
# golden values

GOLDEN_TEXTS = [
    "In a hole in the ground there lived a hobbit",
    "Four score and seven years ago our fathers brought forth on this continent a new nation",
    "Jack London traveled to the city of Oakland",
]
GOLDEN_TEXT_SIGS = [
    [0x409D4900, 0x1E47A7B1, 0x191C3A28, 0x157995A1, 0x027F0708, 0x0380F3C7, 0x065C613B, 0x338CD4EB],
    [0x00A2F0F1, 0x108622A6, 0x1F23CCA7, 0x1525E2B4, 0x0907F1FF, 0x13A98738, 0x2311173E, 0x3CB8342C],
    [0x21FA3C43, 0x55C2F55B, 0x1F0539C0, 0x752DD9F7, 0x23B6AEAC, 0x1DA4DBD9, 0x1092CBB0, 0x1DCB9E15],
]
GOLDEN_SETS = [[1, 2, 3], [1, 2, 3, 4], ["a", "b"], [-1, 2**64 - 1, 0]]
GOLDEN_SET_SIGS = [
    [0x04B33CE4, 0x264758A6, 0x501F1AAC, 0x13E617D0, 0x5A856ADF, 0x64247942, 0x54CF7C55, 0x9B37EECD],
    [0x04B33CE4, 0x264758A6, 0x501F1AAC, 0x13E617D0, 0x5A856ADF, 0x366C3CCD, 0x54CF7C55, 0x9B37EECD],
    [0x3F6332BE, 0x7F244CC1, 0xCD0A47F8, 0x361DDF06, 0x1347FD7F, 0x2A7A0EC4, 0x25397154, 0x2DD35068],
    [0x91B3EA34, 0xA37521EF, 0x1FF2D99C, 0x2152228F, 0x89386CE6, 0x125235C1, 0x3EB0077D, 0x254C5EF6],
]


def test_golden_text_signatures():
    """First 8 slots of K=128, seed=1, word-5 signatures of fixed texts are pinned."""
    sigs = MinHasher(num_perm=128, seed=1, shingling=Shingling("word", 5)).sign(GOLDEN_TEXTS)
    assert sigs.values.dtype == np.uint32 and sigs.values.shape == (3, 128)
    assert sigs.values[:, :8].tolist() == GOLDEN_TEXT_SIGS


def test_golden_set_signatures():
    """First 8 slots of K=128, seed=1 signatures of fixed generic sets (ints, strings) are pinned."""
    sigs = MinHasher.for_sets(128, 1).sign_sets(GOLDEN_SETS)
    assert sigs.values[:, :8].tolist() == GOLDEN_SET_SIGS


def test_goldens_match_brute_force():
    """The pinned literals are the documented construction, recomputed with Python ints."""
    a, b = ref_permutations(1, 8)
    for s, expected in zip(GOLDEN_SETS, GOLDEN_SET_SIGS):
        hashes = [hash_str(x) if isinstance(x, str) else hash_int(x) for x in s]
        assert ref_signature(hashes, a, b) == expected


def test_scheme_constants():
    """The hash family name and format version are part of the scheme and pinned."""
    scheme = MinHashScheme()
    assert scheme.hash_family == "nd64/multiply-shift-32"
    assert scheme.format_version == 2
    assert (scheme.num_perm, scheme.seed, scheme.shingling) == (128, 1, Shingling("word", 5))


# ---------------------------------------------------------------------------------------------
# permutation parameters and brute force


@pytest.mark.parametrize("seed", [0, 1, 42, 2**63, 2**64 - 1])
def test_permutations_follow_splitmix_recipe(seed):
    """(a, b) equal the documented SplitMix64 derivation; every a_k is odd."""
    a, b = MinHashScheme(num_perm=64, seed=seed, shingling=None).permutations()
    ra, rb = ref_permutations(seed, 64)
    assert a.dtype == np.uint64 and b.dtype == np.uint64
    assert a.tolist() == ra and b.tolist() == rb
    assert all(x & 1 for x in ra)


def test_permutations_pinned_values():
    """A few permutation parameters for seed=1 pinned as literals."""
    a, b = MinHashScheme(seed=1).permutations()
    assert (int(a[0]), int(b[0])) == (0x910A2DEC89025CC1, 0xBEEB8DA1658EEC67)
    assert (int(a[127]), int(b[127])) == (0xD9960DBB250501F7, 0x20933F9B9211242A)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=12), min_size=1, max_size=4),
    st.integers(0, 2**64 - 1),
    st.integers(1, 20),
)
def test_slots_equal_brute_force_min(sets, seed, k):
    """Every slot of sign_sets equals min_x ((a_k x + b_k) mod 2**64) >> 32 over the hashed items."""
    sigs = MinHasher.for_sets(k, seed).sign_sets(sets)
    a, b = ref_permutations(seed, k)
    for row, s in zip(sigs.values.tolist(), sets):
        assert row == ref_signature([hash_int(x) for x in s], a, b)


# ---------------------------------------------------------------------------------------------
# the seed's slot algorithm (000: two hash functions over a 5-row matrix)


def test_seed_two_hash_slot_example():
    """Seed 000: h1(x) = x mod 5, h2(x) = (2x+1) mod 5 over rows 0..4, with
    slot_i(d) = min{ r : M(h_i(r), d) = 1 }, give sketches (0, 1) and (0, 2), estimate 1/2.

    The slide states J(d1, d2) = 2/5, but its matrix columns are d1 = {0, 2, 3} and
    d2 = {0, 2, 4}: intersection {0, 2}, union {0, 2, 3, 4}, so J = 2/4 = 0.5. We assert the
    true value; here the estimate happens to equal it.
    """
    m = {0: (1, 1), 1: (0, 0), 2: (1, 1), 3: (1, 0), 4: (0, 1)}  # row -> (d1, d2)
    hs = [lambda x: x % 5, lambda x: (2 * x + 1) % 5]

    def sketch(col: int) -> tuple[int, ...]:
        return tuple(min(r for r in range(5) if m[h(r)][col] == 1) for h in hs)

    s1, s2 = sketch(0), sketch(1)
    assert (s1, s2) == ((0, 1), (0, 2))
    est = estimate_from_rows(np.array(s1, dtype=np.uint32), np.array(s2, dtype=np.uint32))
    assert est.value == 0.5 and est.matches == 1 and est.num_perm == 2
    d1 = {r for r in m if m[r][0]}
    d2 = {r for r in m if m[r][1]}
    assert (d1, d2) == ({0, 2, 3}, {0, 2, 4})
    assert jaccard(d1, d2) == 0.5  # not 2/5 as the slide says


# ---------------------------------------------------------------------------------------------
# text vs sets, batching, processes

D1 = "Jack London traveled to Oakland"
BIGRAMS_D1 = ["jack london", "london traveled", "traveled to", "to oakland"]


def test_sign_text_equals_sign_sets_of_shingle_strings():
    """sign(text) == sign_sets(hand-written shingle strings) under the same scheme."""
    mh = MinHasher(num_perm=64, seed=7, shingling=Shingling("word", 2))
    assert np.array_equal(mh.sign([D1]).values, mh.sign_sets([BIGRAMS_D1]).values)
    # order and repeats of the items do not matter: it is a set
    assert np.array_equal(mh.sign([D1]).values, mh.sign_sets([BIGRAMS_D1[::-1] + BIGRAMS_D1]).values)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("abc de.\u00e9\u4e00\n")), max_size=40), min_size=1, max_size=5),
    st.sampled_from(
        [Shingling("word", 1), Shingling("word", 3), Shingling("char", 4), Shingling("char", 3, strip_punctuation=True)]
    ),
)
def test_sign_equals_sign_hashed_of_shingles(texts, sh):
    """The fused text kernel equals signing the CSR shingle sets from shingle_batch."""
    mh = MinHasher(num_perm=32, seed=3, shingling=sh)
    values, counts = mh.sign_texts_with_counts(texts)
    hashes, offsets = shingle_batch(texts, sh, unique=False)
    assert np.array_equal(values, mh.sign_hashed(hashes, offsets).values)
    assert counts.tolist() == np.diff(offsets).tolist()


def test_sign_sets_numpy_and_list_agree():
    """Integer numpy arrays are hashed like the equal Python ints (int64 and uint64)."""
    mh = MinHasher.for_sets(32, 5)
    xs = [3, -7, 2**40, 0]
    a = mh.sign_sets([xs]).values
    assert np.array_equal(a, mh.sign_sets([np.array(xs, dtype=np.int64)]).values)
    assert np.array_equal(
        mh.sign_sets([[1, 2**64 - 1]]).values, mh.sign_sets([np.array([1, 2**64 - 1], dtype=np.uint64)]).values
    )


def test_batch_split_invariance():
    """Signing texts one by one equals signing them all at once (and any split in between)."""
    rng = np.random.default_rng(11)
    vocab = [f"w{i}" for i in range(50)]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 60)))) for _ in range(25)]
    texts[3] = ""
    mh = MinHasher(num_perm=64, seed=9, shingling=Shingling("word", 3))
    whole = mh.sign(texts).values
    assert np.array_equal(np.vstack([mh.sign_one(t) for t in texts]), whole)
    assert np.array_equal(np.vstack([mh.sign(texts[:7]).values, mh.sign(texts[7:]).values]), whole)


def test_deterministic_across_processes():
    """A fresh interpreter computes the same signatures (no per-process salt anywhere)."""
    code = (
        "import json; from neardup.methods.minhash.sketch import MinHasher; from neardup.text.shingles import Shingling; "
        f"t = {GOLDEN_TEXTS!r}; "
        "v = MinHasher(num_perm=128, seed=1, shingling=Shingling('word', 5)).sign(t).values; "
        "s = MinHasher.for_sets(16, 3).sign_sets([['a', 1, b'x']]).values; "
        "print(json.dumps([v.tolist(), s.tolist()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "random"},
    )
    here = MinHasher(num_perm=128, seed=1, shingling=Shingling("word", 5)).sign(GOLDEN_TEXTS).values
    sets = MinHasher.for_sets(16, 3).sign_sets([["a", 1, b"x"]]).values
    assert json.loads(out.stdout) == [here.tolist(), sets.tolist()]


# ---------------------------------------------------------------------------------------------
# hash_items


def test_hash_items_types():
    """str and bytes hash alike (UTF-8), ints by hash_int."""
    assert hash_items(["a", b"a", bytearray(b"a"), 7]).tolist() == [hash_str("a")] * 3 + [hash_int(7)]


@pytest.mark.parametrize("bad", [1.5, float("nan"), None, True, (1, 2)])
def test_hash_items_rejects_non_items(bad):
    """Floats, None, bools and tuples are not set items: TypeError."""
    with pytest.raises(TypeError):
        hash_items(["ok", bad])


def test_hash_items_rejects_float_arrays_and_big_ints():
    """A float numpy array raises TypeError; an int outside 64 bits raises ValueError."""
    with pytest.raises(TypeError):
        hash_items(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        hash_items([2**64])


# ---------------------------------------------------------------------------------------------
# statistics of the estimator

K_STAT = 128
LEVELS = [0.1, 0.3, 0.5, 0.8, 0.95]
UNION = 100
PAIRS = 2000


def _pairs_with_jaccard(j: float, pairs: int, seed: int):
    """``pairs`` pairs of random 64-bit-item sets with |A u B| = 100 and J(A, B) = j exactly."""
    rng = np.random.default_rng(seed)
    common = round(j * UNION)
    only_a = (UNION - common) // 2
    only_b = UNION - common - only_a
    size_a, size_b = common + only_a, common + only_b
    items = rng.integers(-(2**63), 2**63 - 1, size=(pairs, UNION), dtype=np.int64)
    a_sets = items[:, :size_a]
    b_sets = np.concatenate([items[:, :common], items[:, size_a:]], axis=1)
    assert b_sets.shape[1] == size_b
    return a_sets, b_sets


@pytest.fixture(scope="module")
def matches_by_level():
    """r (equal slots) of every generated pair, per Jaccard level; fixed seeds."""
    mh = MinHasher.for_sets(K_STAT, seed=2024)
    out = {}
    for li, j in enumerate(LEVELS):
        a_sets, b_sets = _pairs_with_jaccard(j, PAIRS, seed=100 + li)
        assert len(set(a_sets[0].tolist()) | set(b_sets[0].tolist())) == UNION
        assert jaccard(set(a_sets[0].tolist()), set(b_sets[0].tolist())) == pytest.approx(j)

        def sign(m):
            offsets = np.arange(0, m.size + 1, m.shape[1], dtype=np.int64)
            return mh.sign_hashed(hash_items(m.ravel()), offsets).values

        sa, sb = sign(a_sets), sign(b_sets)
        out[j] = np.count_nonzero(sa == sb, axis=1)
    return out


@pytest.mark.parametrize("j", LEVELS)
def test_estimator_is_unbiased(matches_by_level, j):
    """Mean of r/K over 2000 pairs with exact Jaccard j is within 4 standard errors of j."""
    est = matches_by_level[j] / K_STAT
    se = math.sqrt(j * (1 - j) / K_STAT / len(est))
    assert abs(est.mean() - j) < 4 * se


@pytest.mark.parametrize("j", LEVELS)
def test_estimator_variance_is_binomial(matches_by_level, j):
    """Variance of r/K is J(1-J)/K (slots behave as independent trials): ratio within 15%."""
    est = matches_by_level[j] / K_STAT
    ratio = est.var(ddof=1) / (j * (1 - j) / K_STAT)
    assert 0.85 < ratio < 1.15


def _exact_coverage(j: float, k: int, level: float, method: str) -> float:
    """P(J in interval) under r ~ Binomial(k, j), summed exactly."""
    total = 0.0
    for r in range(k + 1):
        lo, hi = confidence_interval(r, k, level, method)
        if lo <= j <= hi:
            total += math.comb(k, r) * j**r * (1 - j) ** (k - r)
    return total


@pytest.mark.parametrize("j", [0.3, 0.5])
def test_wilson_coverage(matches_by_level, j):
    """Wilson 95% intervals cover the true J in [93%, 97%] of 2000 pairs at mid J, matching the
    exact binomial coverage within 4 standard errors."""
    hits = [
        lo <= j <= hi for lo, hi in (confidence_interval(int(r), K_STAT, 0.95, "wilson") for r in matches_by_level[j])
    ]
    cov = float(np.mean(hits))
    assert 0.93 <= cov <= 0.97
    exact = _exact_coverage(j, K_STAT, 0.95, "wilson")
    assert 0.93 <= exact <= 0.97
    assert abs(cov - exact) < 4 * math.sqrt(exact * (1 - exact) / len(hits))


def test_wald_coverage_near_nominal_at_half(matches_by_level):
    """Wald 95% intervals at J = 0.5 cover close to 95% (within [92%, 97%])."""
    hits = [
        lo <= 0.5 <= hi for lo, hi in (confidence_interval(int(r), K_STAT, 0.95, "wald") for r in matches_by_level[0.5])
    ]
    assert 0.92 <= float(np.mean(hits)) <= 0.97
    assert 0.92 <= _exact_coverage(0.5, K_STAT, 0.95, "wald") <= 0.97


# ---------------------------------------------------------------------------------------------
# confidence_interval and Estimate


def test_confidence_interval_hand_computed():
    """Wald and Wilson intervals equal hand-computed values.

    r = 90, K = 100, z = 1.959964: Wald 0.9 -/+ z * 0.03 = (0.841201, 0.958799);
    Wilson centre (0.9 + z^2/200) / (1 + z^2/100) = 0.885188, half-width
    z * sqrt(0.0009 + z^2/40000) / (1 + z^2/100) = 0.059569 -> (0.825634, 0.944771).
    r = 64, K = 128, 90%: z = 1.644854 -> Wilson (0.428063, 0.571937).
    """
    assert confidence_interval(90, 100, 0.95, "wald") == pytest.approx((0.841201, 0.958799), abs=1e-6)
    assert confidence_interval(90, 100, 0.95, "wilson") == pytest.approx((0.825634, 0.944771), abs=1e-6)
    assert confidence_interval(64, 128, 0.90, "wilson") == pytest.approx((0.428063, 0.571937), abs=1e-6)
    assert confidence_interval(90, 100) == confidence_interval(90, 100, 0.95, "wilson")  # defaults


def test_confidence_interval_edges():
    """At r = 0 Wilson is (0, z^2/K / (1 + z^2/K)) while Wald collapses to (0, 0); r = K mirrors it."""
    z2k = 1.959963984540054**2 / 100
    assert confidence_interval(0, 100) == pytest.approx((0.0, z2k / (1 + z2k)), abs=1e-12)
    assert confidence_interval(100, 100) == pytest.approx((1 - z2k / (1 + z2k), 1.0), abs=1e-12)
    assert confidence_interval(0, 100, method="wald") == (0.0, 0.0)
    for r in range(0, 101, 7):
        for method in ("wald", "wilson"):
            lo, hi = confidence_interval(r, 100, 0.95, method)
            assert 0.0 <= lo <= r / 100 <= hi <= 1.0


@pytest.mark.parametrize("args", [(5, 10, 0.0), (5, 10, 1.0), (11, 10, 0.95), (-1, 10, 0.95)])
def test_confidence_interval_rejects_bad_arguments(args):
    """Level outside (0, 1) or matches outside [0, K] raise ValueError."""
    with pytest.raises(ValueError):
        confidence_interval(*args)


def test_confidence_interval_rejects_unknown_method():
    with pytest.raises(ValueError):
        confidence_interval(5, 10, 0.95, "exact")


def test_estimate_fields():
    """estimate_from_rows reports r, K, r/K, the plug-in standard error and the interval."""
    a = np.arange(100, dtype=np.uint32)
    b = a.copy()
    b[90:] += 1000
    e = estimate_from_rows(a, b, level=0.95, method="wald")
    assert (e.matches, e.num_perm, e.value) == (90, 100, 0.9)
    assert e.stderr == pytest.approx(0.03)
    assert (e.low, e.high) == pytest.approx((0.841201, 0.958799), abs=1e-6)
    assert (e.level, e.method) == (0.95, "wald")
    with pytest.raises(ValueError):
        estimate_from_rows(a, b[:50])


# ---------------------------------------------------------------------------------------------
# Broder's acceptance curve (seed 004)


def broder_tail(s: float, k: int = 100, need: int = 90) -> float:
    """P(at least ``need`` of ``k`` slots match | resemblance s), the binomial tail."""
    return sum(math.comb(k, r) * s**r * (1 - s) ** (k - r) for r in range(need, k + 1))


def test_broder_ninety_of_hundred_curve():
    """Seed 004: with 90-of-100 matching, s = 0.8 is accepted with probability < 0.006,
    s = 0.5 with about 1.5e-17 ("almost 10^-18" in the text), s = 0.96 with > 0.997.

    The text also claims "if the resemblance is 0.9 ... greater than .988"; that is false: the
    tail at s = 0.9 is 0.583 (the mean of r is exactly 90). The .988 figure holds at s = 0.95.
    """
    assert broder_tail(0.8) < 0.006
    assert 1.5e-17 < broder_tail(0.5) < 1.6e-17
    assert broder_tail(0.96) > 0.997
    assert broder_tail(0.9) == pytest.approx(0.58316, abs=1e-5)  # not > .988
    assert 0.988 < broder_tail(0.95) < 0.989


@pytest.mark.parametrize("s", [0.0, 0.3, 0.5, 0.8, 0.9, 0.95, 0.96, 1.0])
def test_acceptance_probability_matches_binomial_tail(s):
    """acceptance_probability(s, 100, 0.9) equals the exact binomial tail (relative 1e-9)."""
    got = mh_mod.acceptance_probability(s, 100, 0.9)
    assert got == pytest.approx(broder_tail(s), rel=1e-9, abs=1e-300)


def test_acceptance_probability_edges():
    """Threshold 0 accepts everything; s outside [0, 1] is an error; K = 128, t = 0.5 is the tail at 64."""
    ap = mh_mod.acceptance_probability
    assert ap(0.0, 100, 0.0) == 1.0
    assert ap(0.3, 50, 0.0) == pytest.approx(1.0)
    assert ap(0.4, 128, 0.5) == pytest.approx(broder_tail(0.4, 128, 64), rel=1e-9)
    with pytest.raises(ValueError):
        ap(1.5, 100, 0.9)


# ---------------------------------------------------------------------------------------------
# schemes and empty sets


@pytest.mark.parametrize(
    "other",
    [
        MinHashScheme(num_perm=128, seed=2),
        MinHashScheme(num_perm=64, seed=1),
        MinHashScheme(shingling=Shingling("word", 3)),
        MinHashScheme(shingling=Shingling("char", 5)),
        MinHashScheme(shingling=None),
        MinHashScheme(hash_family=OPH_FAMILY),
    ],
)
def test_incompatible_schemes_raise(other):
    """Different seed, K, shingling or hash family: check_compatible and Signatures.jaccard raise
    (a newer format version cannot be made: test_scheme_validation)."""
    base = MinHashScheme()
    base.check_compatible(MinHashScheme())  # equal schemes are fine
    with pytest.raises(IncompatibleSketchError):
        base.check_compatible(other)
    assert issubclass(IncompatibleSketchError, ValueError)
    mine = Signatures(np.zeros((1, 128), dtype=np.uint32), base)
    theirs = Signatures(np.zeros((1, other.num_perm), dtype=np.uint32), other)
    with pytest.raises(IncompatibleSketchError):
        mine.jaccard(0, theirs, 0)


def test_compatible_signatures_estimate():
    """Signatures.jaccard between two batches of one scheme is r/K."""
    mh = MinHasher(num_perm=128, seed=1, shingling=Shingling("word", 2))
    a = mh.sign([D1])
    b = mh.sign([D1, "Jack London traveled to the city of Oakland"])
    assert a.jaccard(0, b, 0) == 1.0
    r = int(np.count_nonzero(a.values[0] == b.values[1]))
    assert a.jaccard(0, b, 1) == r / 128


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_perm=0),
        dict(num_perm=True),
        dict(num_perm=2049),
        dict(seed=-1),
        dict(seed=2**64),
        dict(format_version=0),
        dict(format_version=3),
    ],
)
def test_scheme_validation(kwargs):
    with pytest.raises(ValueError):
        MinHashScheme(**kwargs)


def test_signatures_shape_validated():
    """Signatures must be uint32 of shape (n, K)."""
    with pytest.raises(ValueError):
        Signatures(np.zeros((2, 64), dtype=np.uint32), MinHashScheme())
    with pytest.raises(ValueError):
        Signatures(np.zeros((2, 128), dtype=np.uint64), MinHashScheme())


def test_empty_documents():
    """Empty texts and sets give all-0xFFFFFFFF signatures and estimate 0 against anything."""
    mh = MinHasher(num_perm=64, seed=1, shingling=Shingling("word", 5))
    sigs = mh.sign(["", "   \n", "some actual words here", ""])
    assert (sigs.values[[0, 1, 3]] == EMPTY_VALUE).all()
    assert sigs.empty.tolist() == [True, True, False, True]
    assert sigs.jaccard(0, j=2) == 0.0
    assert sigs.jaccard(0, j=3) == 0.0  # two empty documents are not near-duplicates
    assert sigs.jaccard(2, j=2) == 1.0
    sets = MinHasher.for_sets(64, 1).sign_sets([[], [1]])
    assert (sets.values[0] == EMPTY_VALUE).all() and not sets.empty[1]
    _, counts = mh.sign_texts_with_counts(["", "a b"])
    assert counts.tolist() == [0, 1]


def test_empty_batches():
    """No texts / no sets give a (0, K) signature matrix."""
    assert MinHasher(num_perm=16).sign([]).values.shape == (0, 16)
    assert MinHasher.for_sets(16).sign_sets([]).values.shape == (0, 16)


def test_text_scheme_required_for_sign():
    """A generic-set scheme refuses texts (ValueError)."""
    with pytest.raises(ValueError):
        MinHasher.for_sets(16).sign(["text"])


def test_fold_through_32_bit_lanes_equals_the_64_bit_fold():
    """The AVX2 fold (32-bit lanes, blocks of 64, 16 and 8 permutations, the rest one by one,
    the hashes in chunks) and the AVX-512 permutation-major fold (blocks of 64 and 8) give the
    64-bit fold's values bit for bit, whichever the kernels use on this CPU (LLVM emulates what
    the target lacks); edge hashes (0, all ones, carries), K not a multiple of 8, sets that start inside
    the array and sets longer than a chunk included."""
    from neardup._kernels.minhash import (
        FOLD_CHUNK,
        fold_minhash,
        fold_minhash32,
        fold_minhash_blocks,
        permutations,
        split_permutations,
    )

    rng = np.random.default_rng(19)
    for k in (1, 7, 8, 15, 16, 24, 64, 128, 131):
        a, b = permutations(np.uint64(rng.integers(0, 2**63)), k)
        halves = split_permutations(a, b)
        assert (halves[0].astype(np.uint64) | (halves[1].astype(np.uint64) << np.uint64(32)) == a).all()
        for n in (0, 1, 2, 3, 50, 1001, 2 * FOLD_CHUNK + 3):
            hs = rng.integers(0, 2**64, n + 5, dtype=np.uint64, endpoint=False)
            if n >= 3:
                hs[5:8] = [0, 2**64 - 1, 2**32 - 1]
            wide, narrow, blocks = np.empty(k, np.uint32), np.empty(k, np.uint32), np.empty(k, np.uint32)
            fold_minhash(hs, 5, n + 5, a, b, np.empty(k, np.uint64), wide)
            fold_minhash32(hs, 5, n + 5, halves, b, np.empty(k, np.uint32), narrow)
            assert (wide == narrow).all(), (k, n)
            fold_minhash_blocks(hs, 5, n + 5, a, b, np.empty(k, np.uint64), blocks)
            assert (wide == blocks).all(), (k, n)
            if n == 0:
                assert (wide == 0xFFFFFFFF).all()


def test_drop_repeats_keeps_every_first_occurrence_in_order():
    """``drop_repeats`` drops only hashes seen before: the first occurrence of every value
    stays, in order; 0, 1 and all ones (the table's start values and their slots) included;
    in place too."""
    from neardup._kernels.minhash import SEEN_BITS, drop_repeats, seen_table

    rng = np.random.default_rng(5)
    seen = seen_table()
    for n, distinct in ((0, 1), (1, 1), (10, 3), (500, 50), (3000, 2900), (1 << (SEEN_BITS + 1), 9000)):
        pool = rng.integers(0, 2**64, distinct, dtype=np.uint64, endpoint=False)
        pool[: min(3, distinct)] = [0, 1, 2**64 - 1][: min(3, distinct)]
        hs = pool[rng.integers(0, distinct, n)]
        out = np.empty(n, np.uint64)
        m = drop_repeats(hs, 0, n, seen, out)
        firsts = np.sort(np.unique(hs, return_index=True)[1])
        kept = out[:m]
        assert set(kept.tolist()) == set(hs.tolist())
        # kept is a subsequence of hs that contains each first occurrence
        it = iter(hs.tolist())
        assert all(any(v == w for w in it) for v in kept.tolist())
        assert set(hs[firsts].tolist()) <= set(kept.tolist())
        assert m <= n and (n < 100 or m < n or distinct == n)
        again = hs.copy()
        assert drop_repeats(again, 0, n, seen, again) == m
        assert np.array_equal(again[:m], kept)


def test_sets_with_repeats_sign_as_their_distinct_elements():
    """Repeated hashes (dropped before the fold, or not when rare) change no signature: the
    CSR path and the text path give the signature of the distinct elements, whatever mix of
    sets with many and with few repeats comes first."""
    rng = np.random.default_rng(8)
    mh = MinHasher.for_sets(128, seed=4)
    sets, distinct = [], []
    for i in range(60):
        pool = rng.integers(0, 2**64, rng.integers(1, 400), dtype=np.uint64, endpoint=False)
        reps = 20 if (i // 7) % 2 else 1
        sets.append(np.concatenate([pool] * reps)[rng.permutation(len(pool) * reps)])
        distinct.append(np.unique(pool))
    sets.append(np.empty(0, np.uint64))
    distinct.append(np.empty(0, np.uint64))

    def csr(parts):
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        return np.concatenate(parts), offsets

    assert np.array_equal(mh.sign_hashed(*csr(sets)).values, mh.sign_hashed(*csr(distinct)).values)
    texts = ["abcab" * 200, "the cat the cat the cat", "", "x" * 5000, "Ünïcode ünïcode " * 40]
    char = MinHasher(num_perm=64, seed=2, shingling=Shingling("char", 5))
    hs, off = shingle_batch(texts, Shingling("char", 5), unique=True)
    assert np.array_equal(char.sign(texts).values, char.sign_hashed(hs, off).values)


@pytest.mark.parametrize("sketch", ["classic", "oph"])
@pytest.mark.parametrize(
    "offsets",
    [[0, 3], [0, 1], [1, 2], [0, 2, 1, 2], [], [[0, 2]]],
    ids=["past the end", "short of the end", "not from 0", "decreasing", "none", "two dimensions"],
)
def test_sign_hashed_refuses_offsets_that_are_not_csr(sketch, offsets):
    """Offsets past the hashes used to make the kernel read past the array (a crash); every
    malformed CSR is now a ValueError naming the offsets."""
    mh = MinHasher.for_sets(16, seed=1, sketch=sketch)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        mh.sign_hashed(np.array([1, 2], dtype=np.uint64), np.array(offsets, dtype=np.int64))
    assert mh.sign_hashed(np.array([1, 2], dtype=np.uint64), np.array([0, 1, 2])).values.shape == (2, 16)
