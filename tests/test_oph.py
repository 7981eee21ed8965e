"""Tests of the one-permutation sketch with optimal densification (neardup.oph, sketch="oph").

Properties checked:
- golden signature values (texts and generic sets), and the seeded constants;
- every slot equals a slow pure-Python implementation of the documented definition (binning,
  minimum per bin, densification attempt sequence, the fallback);
- densification fills every bin, from bins that were non-empty, the same way every time;
  one non-empty bin fills all; the empty set stays all 0xFFFFFFFF;
- text and generic-set signing agree; batching does not change values;
- r/K is unbiased for J, and its variance over seeds is within 10% of classic MinHash's on the
  same pairs when the union has at least K elements (measured lower there), and at most 1.5x
  classic's for sets with fewer elements than bins (measured 1.15x-1.4x: densified bins repeat
  values);
- OPH and classic signatures never mix (IncompatibleSketchError), also in an LSH index.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import MASK64, hash_int, hash_ints, hash_str
from neardup._kernels.minhash import EMPTY_VALUE
from neardup._kernels.oph import densify
from neardup.core.errors import IncompatibleSketchError
from neardup.index.lsh import LSHIndex
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.oph import OPH_FAMILY, oph_params, oph_sequence
from neardup.methods.minhash.scheme import HASH_FAMILY, SKETCHES, MinHashScheme
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling, shingle_batch

GAMMA = 0x9E3779B97F4A7C15
EMPTY = 0xFFFFFFFF

# ---------------------------------------------------------------------------------------------
# a slow reference of the documented definition, with Python ints


def ref_splitmix64(state: int) -> int:
    z = (state + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def ref_fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    return h ^ (h >> 33)


def ref_params(seed: int) -> tuple[int, int, int]:
    z = [ref_splitmix64((seed + j * GAMMA) & MASK64) for j in range(3)]
    return z[0], z[1] | 1, z[2]


def ref_bins(hashes: list[int], seed: int, k: int) -> list[int]:
    """Before densification: slot b = least low-32-bit value of the elements in bin b."""
    salt, _, _ = ref_params(seed)
    sig = [EMPTY] * k
    for x in hashes:
        y = ref_fmix64(x ^ salt)
        b = ((y >> 32) * k) >> 32
        sig[b] = min(sig[b], y & 0xFFFFFFFF)
    return sig


def ref_densify(sig: list[int], seed: int, attempts: int | None = None) -> list[int]:
    _, c, d = ref_params(seed)
    k = len(sig)
    nonempty = [i for i in range(k) if sig[i] != EMPTY]
    if not nonempty:
        return list(sig)
    out = list(sig)
    for i in range(k):
        if sig[i] != EMPTY:
            continue
        for t in range(32 * k if attempts is None else attempts):
            u = ref_fmix64((c * ((i << 32) | t) + d) & MASK64) >> 32
            j = (u * k) >> 32
            if sig[j] != EMPTY:
                out[i] = sig[j]
                break
        else:  # the documented fallback: next non-empty bin to the right, cyclically
            j = (i + 1) % k
            while sig[j] == EMPTY:
                j = (j + 1) % k
            out[i] = sig[j]
    return out


def ref_signature(hashes: list[int], seed: int, k: int) -> list[int]:
    return ref_densify(ref_bins(hashes, seed, k), seed)


# ---------------------------------------------------------------------------------------------
# golden values

GOLDEN_TEXTS = [
    "In a hole in the ground there lived a hobbit",
    "Four score and seven years ago our fathers brought forth on this continent a new nation",
    "Jack London traveled to the city of Oakland",
]
GOLDEN_TEXT_SIGS = [
    [0x97C41545, 0x319B3F16, 0xECF9730C, 0x319B3F16, 0x4467F981, 0x97C41545, 0x72DA65DE, 0xC8254D2A],
    [0x78989D8E, 0x4B77EC1D, 0xD4CAB255, 0x0F0FC070, 0xC789E584, 0x0F0FC070, 0x4B77EC1D, 0x4B77EC1D],
    [0xFE46E453, 0x75D6063C, 0xFE46E453, 0xCD606632, 0xCD606632, 0x75D6063C, 0x8A4709B0, 0xCD606632],
]
GOLDEN_SETS = [[1, 2, 3], [1, 2, 3, 4], ["a", "b"], [-1, 2**64 - 1, 0]]
GOLDEN_SET_SIGS = [
    [0x5FD09406, 0x53FCC6EB, 0xD5D0259D, 0xD5D0259D, 0x5FD09406, 0x5FD09406, 0xD5D0259D, 0x53FCC6EB],
    [0x5FD09406, 0x70F20681, 0xD5D0259D, 0xD5D0259D, 0x5FD09406, 0x5FD09406, 0x70F20681, 0x53FCC6EB],
    [0xB23C8FD7, 0xD2C3819D, 0xB23C8FD7, 0xB23C8FD7, 0xD2C3819D, 0xB23C8FD7, 0xB23C8FD7, 0xD2C3819D],
    [0x13A6FC3F, 0x13A6FC3F, 0xBCE48875, 0xBCE48875, 0xBCE48875, 0x13A6FC3F, 0x13A6FC3F, 0xBCE48875],
]


def oph(num_perm: int = 128, seed: int = 1, shingling: Shingling | None = Shingling("word", 5)) -> MinHasher:
    return MinHasher(num_perm=num_perm, seed=seed, shingling=shingling, sketch="oph")


def test_family_name_and_params_pinned():
    """The family name, the sketch name, and the seeded constants (salt, c, d) for seed 1."""
    assert OPH_FAMILY == "nd64/oph-dens-32" and SKETCHES == {"classic": HASH_FAMILY, "oph": OPH_FAMILY}
    scheme = oph().scheme
    assert (scheme.hash_family, scheme.sketch, scheme.format_version) == (OPH_FAMILY, "oph", 2)
    assert [int(x) for x in oph_params(1)] == [0x910A2DEC89025CC1, 0xBEEB8DA1658EEC67, 0xF893A2EEFB32555E]
    assert [int(x) for x in oph_params(2**64 - 1)] == list(ref_params(2**64 - 1))


def test_golden_text_signatures():
    """First 8 slots of K=128, seed=1, word-5 OPH signatures of fixed texts are pinned."""
    sigs = oph().sign(GOLDEN_TEXTS)
    assert sigs.values.dtype == np.uint32 and sigs.values.shape == (3, 128)
    assert sigs.values[:, :8].tolist() == GOLDEN_TEXT_SIGS


def test_golden_set_signatures():
    """First 8 slots of K=128, seed=1 OPH signatures of fixed generic sets are pinned."""
    sigs = MinHasher.for_sets(128, 1, sketch="oph").sign_sets(GOLDEN_SETS)
    assert sigs.values[:, :8].tolist() == GOLDEN_SET_SIGS


def test_goldens_match_reference():
    """The pinned literals are the documented construction, recomputed with Python ints."""
    for s, expected in zip(GOLDEN_SETS, GOLDEN_SET_SIGS):
        hashes = [hash_str(x) if isinstance(x, str) else hash_int(x) for x in s]
        assert ref_signature(hashes, 1, 128)[:8] == expected
    hashes, offsets = shingle_batch(GOLDEN_TEXTS, Shingling("word", 5))
    for i, expected in enumerate(GOLDEN_TEXT_SIGS):
        assert ref_signature(hashes[offsets[i] : offsets[i + 1]].tolist(), 1, 128)[:8] == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=40), min_size=1, max_size=4),
    st.integers(0, 2**64 - 1),
    st.sampled_from([1, 2, 3, 7, 16, 50, 64, 128]),
)
def test_slots_equal_reference(sets, seed, k):
    """Every slot equals the reference, for any K (powers of two or not) and seed."""
    sigs = MinHasher.for_sets(k, seed, sketch="oph").sign_sets(sets)
    for row, s in zip(sigs.values.tolist(), sets):
        assert row == ref_signature([hash_int(x) for x in s], seed, k)


def test_large_set_against_reference():
    """A set with more elements than bins: few empty bins, values are true per-bin minima."""
    hashes = hash_ints(np.arange(3000, dtype=np.int64)).tolist()
    row = (
        MinHasher.for_sets(256, 5, sketch="oph")
        .sign_hashed(np.array(hashes, dtype=np.uint64), np.array([0, 3000]))
        .values[0]
    )
    assert row.tolist() == ref_signature(hashes, 5, 256)


# ---------------------------------------------------------------------------------------------
# densification


def test_densification_fills_every_bin_from_nonempty_bins():
    """Small sets leave most bins empty; afterwards no bin is empty, every value comes from a
    bin that held an element, and signing again (or in another batch) gives the same row."""
    rng = np.random.default_rng(3)
    mh = MinHasher.for_sets(128, 9, sketch="oph")
    for size in (2, 3, 5, 10, 40):
        x = hash_ints(rng.integers(0, 2**62, size=size))
        row = mh.sign_hashed(x, np.array([0, size])).values[0]
        before = ref_bins(x.tolist(), 9, 128)
        filled = {v for v in before if v != EMPTY}
        assert len(filled) < 128 and (row != EMPTY_VALUE).all()
        assert set(row.tolist()) <= filled
        assert all(row[i] == before[i] for i in range(128) if before[i] != EMPTY)
        again = mh.sign_hashed(np.concatenate([x, x[::-1]]), np.array([0, size, 2 * size])).values
        assert (again == row).all()


def test_one_nonempty_bin_fills_all():
    """A single element lands in one bin; every slot takes its value."""
    row = MinHasher.for_sets(64, 1, sketch="oph").sign_sets([["only"]]).values[0]
    assert len(set(row.tolist())) == 1 and row[0] != EMPTY_VALUE


def test_densify_fallback_is_next_nonempty_to_the_right():
    """With no attempts allowed, each empty bin takes the next non-empty bin cyclically, as the
    definition states for the (practically unreachable) case of 32 K misses."""
    sig = np.full(8, EMPTY_VALUE)
    sig[2], sig[5] = 7, 9
    params = oph_params(4)
    densify(sig, params[1], params[2], oph_sequence(params, 8), np.empty(8, dtype=np.uint32), 0)
    assert sig.tolist() == [7, 7, 7, 9, 9, 9, 7, 7]
    assert sig.tolist() == ref_densify([EMPTY, EMPTY, 7, EMPTY, EMPTY, 9, EMPTY, EMPTY], 4, attempts=0)


def test_empty_set_and_empty_documents():
    """The empty set keeps every slot 0xFFFFFFFF (no densification), like classic MinHash."""
    sets = MinHasher.for_sets(64, 1, sketch="oph").sign_sets([[], [1]])
    assert (sets.values[0] == EMPTY_VALUE).all() and not sets.empty[1]
    mh = oph(num_perm=64)
    sigs = mh.sign(["", "  \n", "some actual words here", ""])
    assert sigs.empty.tolist() == [True, True, False, True]
    assert sigs.jaccard(0, j=3) == 0.0 and sigs.jaccard(2, j=2) == 1.0
    _, counts = mh.sign_texts_with_counts(["", "a b"])
    assert counts.tolist() == [0, 1]


# ---------------------------------------------------------------------------------------------
# text path, batching


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("abc de.\u00e9\u4e00\n")), max_size=40), min_size=1, max_size=5),
    st.sampled_from(
        [Shingling("word", 1), Shingling("word", 3), Shingling("char", 4), Shingling("char", 3, strip_punctuation=True)]
    ),
)
def test_text_kernel_equals_sets_path(texts, sh):
    """The fused OPH text kernel equals OPH over the CSR shingle hashes of the same texts."""
    mh = oph(num_perm=32, seed=3, shingling=sh)
    values, counts = mh.sign_texts_with_counts(texts)
    hashes, offsets = shingle_batch(texts, sh, unique=False)
    assert np.array_equal(values, mh.sign_hashed(hashes, offsets).values)
    assert counts.tolist() == np.diff(offsets).tolist()


def test_sign_text_equals_sign_sets_of_shingle_strings():
    """As for classic MinHash: a text signs like the set of its hand-written shingle strings."""
    mh = oph(num_perm=64, seed=7, shingling=Shingling("word", 2))
    grams = ["jack london", "london traveled", "traveled to", "to oakland"]
    assert np.array_equal(mh.sign(["Jack London traveled to Oakland"]).values, mh.sign_sets([grams]).values)


def test_batch_split_invariance():
    rng = np.random.default_rng(11)
    vocab = [f"w{i}" for i in range(50)]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 300)))) for _ in range(25)]
    mh = oph(num_perm=64, seed=9, shingling=Shingling("word", 3))
    whole = mh.sign(texts).values
    assert np.array_equal(np.vstack([mh.sign_one(t) for t in texts]), whole)
    assert np.array_equal(np.vstack([mh.sign(texts[:7]).values, mh.sign(texts[7:]).values]), whole)


# ---------------------------------------------------------------------------------------------
# the estimator: unbiased, and its variance against classic MinHash on the same pairs

K = 128
SEEDS = 3000


def _pair(union: int, j: float, rng) -> tuple[np.ndarray, np.ndarray, float]:
    """Two sets of element hashes with |A u B| = union and |A n B| = round(j * union)."""
    inter = round(j * union)
    a_only = (union - inter) // 2
    x = hash_ints(rng.choice(2**40, size=union, replace=False).astype(np.int64))
    return np.concatenate([x[: inter + a_only]]), np.concatenate([x[:inter], x[inter + a_only :]]), inter / union


def _estimates(a: np.ndarray, b: np.ndarray, sketch: str) -> np.ndarray:
    """r/K of the pair under seeds 1..SEEDS."""
    hashes, offsets = np.concatenate([a, b]), np.array([0, len(a), len(a) + len(b)])
    out = np.empty(SEEDS)
    for s in range(SEEDS):
        v = MinHasher.for_sets(K, seed=s + 1, sketch=sketch).sign_hashed(hashes, offsets).values
        out[s] = np.count_nonzero(v[0] == v[1]) / K
    return out


@pytest.fixture(scope="module")
def variance_table():
    rng = np.random.default_rng(2024)
    table = {}
    for union in (32, 64, 128, 1000):
        for j in (0.2, 0.5, 0.8, 0.95):
            a, b, jt = _pair(union, j, rng)
            table[union, j] = (jt, _estimates(a, b, "classic"), _estimates(a, b, "oph"))
    return table


@pytest.mark.parametrize("union", [32, 64, 128, 1000])
@pytest.mark.parametrize("j", [0.2, 0.5, 0.8, 0.95])
def test_oph_estimate_is_unbiased(variance_table, union, j):
    """Mean of r/K over 3000 seeds is within 4 standard errors of the true J (also for classic)."""
    jt, classic, fast = variance_table[union, j]
    for est in (classic, fast):
        se = est.std(ddof=1) / np.sqrt(len(est))
        assert abs(est.mean() - jt) < 4 * se + 1e-12


@pytest.mark.parametrize("union", [128, 1000])
@pytest.mark.parametrize("j", [0.2, 0.5, 0.8, 0.95])
def test_oph_variance_within_10_percent_of_classic(variance_table, union, j):
    """When the union has at least K elements, Var(OPH) <= 1.1 Var(classic) on the same pair
    (measured 0.75-1.02: bins sample without replacement, which lowers the variance)."""
    _, classic, fast = variance_table[union, j]
    assert fast.var(ddof=1) <= 1.10 * classic.var(ddof=1)


@pytest.mark.parametrize("union", [32, 64])
@pytest.mark.parametrize("j", [0.2, 0.5, 0.8, 0.95])
def test_oph_variance_for_sets_smaller_than_k(variance_table, union, j):
    """Fewer elements than bins: most bins are densified copies, so OPH's variance is higher,
    measured 1.15x-1.4x classic's; asserted below 1.5x (and above 1.0x, so a change shows)."""
    _, classic, fast = variance_table[union, j]
    ratio = fast.var(ddof=1) / classic.var(ddof=1)
    assert 1.0 < ratio < 1.5


# ---------------------------------------------------------------------------------------------
# schemes


def test_oph_and_classic_never_mix():
    """Comparing or indexing OPH with classic signatures raises IncompatibleSketchError."""
    text = ["the cat sat on the mat and looked out of the window at the rain"]
    fast = oph().sign(text)
    classic = MinHasher(num_perm=128, seed=1, shingling=Shingling("word", 5)).sign(text)
    assert fast.scheme != classic.scheme
    with pytest.raises(IncompatibleSketchError):
        fast.jaccard(0, classic, 0)
    with pytest.raises(IncompatibleSketchError):
        classic.estimate(0, fast, 0)
    index = LSHIndex(threshold=0.8, num_perm=128)
    index.add(["a"], fast)
    assert index.query(fast) == [("a", 1.0)]
    with pytest.raises(IncompatibleSketchError):
        index.query(classic)
    with pytest.raises(IncompatibleSketchError):
        index.add(["b"], classic)


def test_sketch_selection_and_validation():
    """sketch= picks the family everywhere; unknown names and families are refused."""
    assert MinHashConfig(sketch="oph").scheme.hash_family == OPH_FAMILY
    assert MinHashConfig().scheme.hash_family == HASH_FAMILY
    assert MinHasher(scheme=MinHashScheme(hash_family=OPH_FAMILY)).scheme.sketch == "oph"
    with pytest.raises(ValueError):
        MinHashConfig(sketch="cminhash")
    with pytest.raises(ValueError):
        MinHasher(sketch="fast")
    with pytest.raises(ValueError):
        MinHasher.for_sets(64, sketch="fast")
    with pytest.raises(ValueError):
        MinHashScheme(hash_family="md5")
    with pytest.raises(ValueError):
        MinHasher(scheme=MinHashScheme(), sketch="oph")
    with pytest.raises(ValueError):
        MinHashScheme(hash_family=OPH_FAMILY).permutations()


def test_dedup_job_with_oph_finds_the_copies(corpus):
    """The batch job runs on OPH signatures: copies with Jaccard >= 0.9 to their source are
    removed, documents below 0.7 to every other one are kept (pairs in between are borderline
    for any sketch)."""
    import json
    import tempfile
    from pathlib import Path

    from neardup.api import dedup
    from neardup.core.measures import jaccard

    path = Path(tempfile.mkdtemp()) / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(corpus.ids, corpus.texts)))
    result = dedup([str(path)], MinHashConfig(sketch="oph"), workers=1)
    assert "one-permutation" in result.summary["LSH"]
    removed = set(np.flatnonzero(~result.keep_mask).tolist())
    hashes, offsets = shingle_batch(corpus.texts, Shingling("word", 5))
    sets = [set(hashes[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(corpus.texts))]
    clear = {i for i, src in enumerate(corpus.source) if src != i and jaccard(sets[i], sets[src]) >= 0.9}
    assert clear and clear <= removed
    for i in removed:
        assert max(jaccard(sets[i], sets[j]) for j in range(i)) >= 0.7
