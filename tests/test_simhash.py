"""Tests of SimHash fingerprints (neardup.simhash).

Properties checked:
- golden fingerprint and hyperplane values (a change to any part of the scheme shows up here);
- salts and hyperplanes follow the documented SplitMix64 / Box-Muller recipe;
- the kernels equal a pure-Python reference fold (per bit, +w or -w by a bit of fmix64(x ^ s_w));
- text, hashed-CSR, integer-weight and float-weight paths agree; 128-bit fingerprints extend
  the 64-bit ones; batching and processes do not change values;
- IDF tables count document frequencies exactly and change fingerprints only through weights;
- dense vectors: cos(pi d / f) tracks the exact cosine, better with more bits, and d / f is
  unbiased for theta / pi; Parquet list columns load as float matrices;
- schemes validate their arguments and incompatible fingerprints do not mix.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import MASK64, hash_str
from neardup.core.errors import IncompatibleSketchError, InputError
from neardup.methods.simhash.scheme import (
    HYPERPLANE_SALT,
    SIMHASH_SALT,
    Fingerprints,
    SimHashScheme,
    estimated_cosine,
    hamming,
)
from neardup.methods.simhash.sketch import (
    DocumentFrequencies,
    IdfTable,
    SimHasher,
    fit_idf,
    idf_weight,
    vectors_from_parquet,
)
from neardup.text.normalize import tokenize
from neardup.text.shingles import Shingling, shingle_batch

GAMMA = 0x9E3779B97F4A7C15


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


def ref_salts(seed: int, words: int) -> list[int]:
    return [ref_splitmix64(((seed ^ SIMHASH_SALT) + w * GAMMA) & MASK64) for w in range(words)]


def ref_fingerprint(hashes: list[int], weights: list[float] | None, seed: int, bits: int) -> int:
    """Brute force: bit j of word w is 1 iff sum_i w_i * (+1 if bit j of fmix64(x_i ^ s_w) else -1) > 0."""
    weights = [1] * len(hashes) if weights is None else weights
    out = 0
    for w, salt in enumerate(ref_salts(seed, bits // 64)):
        sums = [0] * 64
        for x, wt in zip(hashes, weights):
            r = ref_fmix64(x ^ salt)
            for j in range(64):
                sums[j] += wt if (r >> j) & 1 else -wt
        out |= sum(1 << j for j in range(64) if sums[j] > 0) << (64 * w)
    return out


def ref_word_shingles(text: str, n: int) -> list[int]:
    toks = tokenize(text)
    if not toks:
        return []
    if len(toks) < n:
        return [hash_str(" ".join(toks))]
    return [hash_str(" ".join(toks[i : i + n])) for i in range(len(toks) - n + 1)]


def ref_gaussian(seed: int, i: int, j: int) -> float:
    s = seed ^ HYPERPLANE_SALT
    c = (j << 32) | i
    z1 = ref_splitmix64((s + 2 * c * GAMMA) & MASK64)
    z2 = ref_splitmix64((s + (2 * c + 1) * GAMMA) & MASK64)
    u1 = ((z1 >> 11) + 1) / 2**53
    u2 = (z2 >> 11) / 2**53
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


# ---------------------------------------------------------------------------------------------
# golden values

GOLDEN_TEXTS = [
    "In a hole in the ground there lived a hobbit",
    "Four score and seven years ago our fathers brought forth on this continent a new nation",
    "Jack London traveled to the city of Oakland",
    "",
]
GOLDEN = {
    (64, "word"): [0x95D8724AE5E49FCC, 0xEB3643763173C066, 0x20F67E019BDFAE79, 0],
    (64, "char"): [0x97688AACF99298C7, 0x6650D2219477F99B, 0x753A30ADD18986AC, 0],
    (128, "word"): [
        0x4FF33CB84C8DE88295D8724AE5E49FCC,
        0xB177C195B4D5A082EB3643763173C066,
        0xBC0B6A8B5A101AFF20F67E019BDFAE79,
        0,
    ],
    (128, "char"): [
        0xE38C60DF081CA40F97688AACF99298C7,
        0x66A018BCFF62BC7C6650D2219477F99B,
        0x5348AA13BF225B25753A30ADD18986AC,
        0,
    ],
}
GOLDEN_SHINGLING = {"word": Shingling("word", 2), "char": Shingling("char", 4)}


@pytest.mark.parametrize("bits,kind", sorted(GOLDEN))
def test_golden_text_fingerprints(bits, kind):
    fps = SimHasher(bits=bits, seed=1, shingling=GOLDEN_SHINGLING[kind]).sign(GOLDEN_TEXTS)
    assert fps.to_ints() == GOLDEN[(bits, kind)]


def test_golden_hashed_and_weighted():
    h = SimHasher(bits=64, seed=1)
    fps = h.sign_hashed(np.array([1, 2, 3, MASK64], dtype=np.uint64), np.array([0, 1, 4]))
    assert fps.to_ints() == [0xA7F463504D88C9F4, 0xD9AB18572B83E984]
    assert SimHasher(bits=128, seed=MASK64).sign(GOLDEN_TEXTS[:1]).to_ints() == [0x083BE80014F8BADF86CF9FE0A8F57B43]


def test_golden_hyperplanes_and_vectors():
    g = SimHashScheme(seed=1).hyperplanes(3)
    expected = [
        [0.00771556, 2.57708003, 0.49094018],
        [-0.1302092, 1.58774827, 1.10236286],
        [-0.37697298, 1.45851438, -1.66507778],
    ]
    np.testing.assert_allclose(g[:3, :3], expected, atol=1e-8)
    x = np.array([[1.0, 0, 0], [0, 1, 0], [0.5, -2, 3]])
    assert SimHasher(bits=128, seed=1).sign_vectors(x).to_ints() == [
        0x286E2E8D49D7F3BC2AA7ED6F3145AFF7,
        0x491930B94574AC320E83DBA67A3CD136,
        0xAFF6A54CAC8357EDC17D0CD38342F6E2,
    ]


# ---------------------------------------------------------------------------------------------
# the documented recipe


@pytest.mark.parametrize("seed", [0, 1, 12345, MASK64])
def test_salts_follow_the_recipe(seed):
    assert SimHashScheme(bits=128, seed=seed).salts().tolist() == ref_salts(seed, 2)


@pytest.mark.parametrize("seed", [1, 2**63 + 5])
def test_hyperplanes_follow_box_muller_recipe(seed):
    g = SimHashScheme(seed=seed, bits=128).hyperplanes(5)
    for i, j in [(0, 0), (4, 0), (0, 127), (3, 64), (2, 17)]:
        assert g[i, j] == pytest.approx(ref_gaussian(seed, i, j), rel=1e-12, abs=1e-12)


def test_hyperplanes_are_standard_normal():
    g = SimHashScheme(seed=3, bits=128).hyperplanes(400).ravel()
    assert abs(g.mean()) < 0.02 and abs(g.std() - 1) < 0.02  # 51,200 draws: 4+ standard errors


def test_hyperplanes_are_prefix_stable_in_dim_and_bits():
    big = SimHashScheme(seed=9, bits=128).hyperplanes(20)
    small = SimHashScheme(seed=9, bits=64).hyperplanes(7)
    assert np.array_equal(big[:7, :64], small)


@given(st.lists(st.integers(0, MASK64), max_size=40), st.sampled_from([64, 128]), st.integers(0, MASK64))
@settings(max_examples=60, deadline=None)
def test_count_kernel_equals_reference(hashes, bits, seed):
    h = SimHasher(bits=bits, seed=seed)
    fps = h.sign_hashed(np.array(hashes, dtype=np.uint64), np.array([0, len(hashes)]))
    assert fps.to_ints() == [ref_fingerprint(hashes, None, seed, bits)]


@given(st.lists(st.tuples(st.integers(0, MASK64), st.integers(-1000, 1000)), max_size=30), st.integers(0, 2**32))
@settings(max_examples=60, deadline=None)
def test_weighted_kernels_equal_reference(items, seed):
    hashes = [x for x, _ in items]
    weights = [w for _, w in items]
    h = SimHasher(bits=128, seed=seed)
    off = np.array([0, len(items)])
    ints = h.sign_hashed(np.array(hashes, dtype=np.uint64), off, weights=np.array(weights, dtype=np.int64))
    floats = h.sign_hashed(np.array(hashes, dtype=np.uint64), off, weights=np.array(weights, dtype=np.float64) / 4)
    ref = ref_fingerprint(hashes, weights, seed, 128)
    assert ints.to_ints() == [ref] == floats.to_ints()


def test_text_fingerprint_equals_reference_from_shingle_strings():
    for text in GOLDEN_TEXTS + ["Straße  STRASSE straße!", "one", "東京は2024年に"]:
        ref = ref_fingerprint(ref_word_shingles(text, 2), None, 1, 128)
        assert SimHasher(bits=128, shingling=Shingling("word", 2)).sign([text]).to_ints() == [ref]


def test_counts_past_the_byte_lanes():
    """The count kernel flushes byte counters every 255 hashes: long, repetitive documents."""
    rng = np.random.default_rng(0)
    for n in [254, 255, 256, 511, 70_000]:
        hashes = rng.choice(rng.integers(0, 2**63, 5, dtype=np.uint64), size=n)
        off = np.array([0, n])
        h = SimHasher(bits=128, seed=4)
        assert np.array_equal(
            h.sign_hashed(hashes, off).values, h.sign_hashed(hashes, off, weights=np.ones(n, dtype=np.int64)).values
        )


# ---------------------------------------------------------------------------------------------
# paths agree


def test_text_equals_hashed_csr_and_128_extends_64(corpus):
    texts = corpus.texts[:80] + ["", "   ", "a"]
    sh = Shingling("word", 3)
    h64, h128 = SimHasher(bits=64, shingling=sh), SimHasher(bits=128, shingling=sh)
    f64, f128 = h64.sign(texts), h128.sign(texts)
    hashes, off = shingle_batch(texts, sh, unique=False)
    assert np.array_equal(h64.sign_hashed(hashes, off).values, f64.values)
    assert np.array_equal(f128.values[:, 0], f64.values)
    assert f64.values[80] == 0 and f64.values[81] == 0
    _, counts = h64.sign_texts_with_counts(texts)
    assert counts.tolist() == np.diff(off).tolist()


def test_batches_do_not_change_values(corpus):
    h = SimHasher(bits=128)
    whole = h.sign(corpus.texts[:100]).values
    parts = np.concatenate([h.sign(corpus.texts[i : min(i + 7, 100)]).values for i in range(0, 100, 7)])
    assert np.array_equal(whole, parts)
    assert np.array_equal(h.sign_one(corpus.texts[5]), whole[5])


def test_same_values_in_another_process(corpus):
    texts = corpus.texts[:20]
    here = SimHasher(bits=128, seed=77).sign(texts).to_ints()
    code = (
        "import json, sys; from neardup.methods.simhash.sketch import SimHasher; "
        "t = json.load(sys.stdin); print(json.dumps(SimHasher(bits=128, seed=77).sign(t).to_ints()))"
    )
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(texts), capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == here


def test_near_texts_are_nearer_than_unrelated(corpus):
    h = SimHasher(bits=64)
    fps = h.sign(corpus.texts).values
    src = np.array(corpus.source)
    copies = [i for i in range(len(src)) if src[i] != i]
    near = hamming(fps[copies], fps[src[copies]])
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, len(fps), 2000), rng.integers(0, len(fps), 2000)
    far = hamming(fps[a], fps[b])[src[a] != src[b]]
    assert near.mean() < 8 < 24 < far.mean()


# ---------------------------------------------------------------------------------------------
# IDF


def test_fit_idf_counts_documents_exactly(corpus):
    texts = corpus.texts[:60]
    sh = Shingling("word", 1)
    table = fit_idf(texts, sh, min_df=1)
    want: dict[int, int] = {}
    for t in texts:
        for x in set(ref_word_shingles(t, 1)):
            want[x] = want.get(x, 0) + 1
    assert table.n_docs == 60
    assert dict(zip(table.hashes.tolist(), table.df.tolist())) == want
    pruned = fit_idf(texts, sh, min_df=3)
    assert dict(zip(pruned.hashes.tolist(), pruned.df.tolist())) == {x: c for x, c in want.items() if c >= 3}


def test_document_frequencies_stream_equals_one_shot(corpus):
    sh = Shingling("word", 2)
    one = fit_idf(corpus.texts, sh)
    counter = DocumentFrequencies(sh)
    for i in range(0, len(corpus.texts), 37):
        counter.add_texts(corpus.texts[i : i + 37])
    streamed = counter.table()
    assert streamed.digest == one.digest
    hashes, off = shingle_batch(corpus.texts, sh, unique=False)
    assert fit_idf((hashes, off), sh).digest == one.digest


def test_idf_weights_and_fingerprints(corpus):
    sh = Shingling("word", 2)
    table = fit_idf(corpus.texts, sh)
    assert table.default_weight == idf_weight(1, table.n_docs)
    assert (table.weights == np.rint(256 * (np.log((1 + table.n_docs) / (1 + table.df)) + 1))).all()
    h = SimHasher(shingling=sh, weighting="idf", idf=table)
    assert h.scheme.idf_digest == table.digest
    texts = corpus.texts[:50]
    hashes, off = shingle_batch(texts, sh, unique=False)
    weights = table.weights_of(hashes)
    lookup = dict(zip(table.hashes.tolist(), table.weights.tolist()))
    assert weights.tolist() == [lookup.get(x, table.default_weight) for x in hashes.tolist()]
    via_weights = SimHasher(shingling=sh).sign_hashed(hashes, off, weights=weights)
    assert np.array_equal(h.sign(texts).values, via_weights.values)
    assert np.array_equal(h.sign_hashed(hashes, off).values, via_weights.values)
    assert not np.array_equal(h.sign(texts).values, SimHasher(shingling=sh).sign(texts).values)


def test_idf_table_validation():
    with pytest.raises(ValueError, match="sorted"):
        IdfTable(np.array([3, 1], dtype=np.uint64), np.array([1, 1]), 2)
    with pytest.raises(ValueError, match="document frequencies"):
        IdfTable(np.array([1], dtype=np.uint64), np.array([5]), 2)
    with pytest.raises(ValueError, match="needs an IdfTable"):
        SimHasher(weighting="idf")
    with pytest.raises(ValueError, match="weighting is 'count'"):
        SimHasher(idf=fit_idf(["a b"], Shingling("word", 1)))


# ---------------------------------------------------------------------------------------------
# dense vectors


def _pairs_with_cosines(rng, n, dim):
    """Pairs (a, b) with cosines spread over [-1, 1]."""
    a = rng.normal(size=(n, dim))
    noise = rng.normal(size=(n, dim))
    mix = rng.uniform(-1, 1, size=(n, 1))
    b = mix * a + np.sqrt(1 - mix**2) * noise
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return a, b, cos


def test_vectors_estimate_cosine():
    rng = np.random.default_rng(5)
    a, b, cos = _pairs_with_cosines(rng, 3000, 48)
    errors = {}
    for bits in (64, 128):
        h = SimHasher(bits=bits, seed=11)
        d = hamming(h.sign_vectors(a).values, h.sign_vectors(b).values)
        errors[bits] = np.abs(estimated_cosine(d, bits) - cos).mean()
        # d / f is unbiased for theta / pi: mean residual within 5 standard errors
        p = np.arccos(np.clip(cos, -1, 1)) / np.pi
        resid = d / bits - p
        assert abs(resid.mean()) < 5 * np.sqrt((p * (1 - p) / bits).mean() / len(p))
    assert errors[64] < 0.12 and errors[128] < 0.085
    assert errors[128] < errors[64]


def test_vector_fingerprint_bits_are_signs_of_projections():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 9)).astype(np.float32)
    h = SimHasher(bits=128, seed=3)
    fps = h.sign_vectors(x)
    proj = x.astype(np.float64) @ SimHashScheme(bits=128, seed=3).hyperplanes(9)
    want = [sum(1 << j for j in range(128) if proj[i, j] > 0) for i in range(50)]
    assert fps.to_ints() == want
    assert fps.scheme.dim == 9 and fps.scheme.shingling is None
    # chunks and scaling do not change fingerprints; 64 bits are a prefix of 128
    assert np.array_equal(h.sign_vectors(x, chunk=7).values, fps.values)
    assert np.array_equal(h.sign_vectors(3 * x).values, fps.values)
    assert np.array_equal(SimHasher(bits=64, seed=3).sign_vectors(x).values, fps.values[:, 0])


def test_vector_edge_cases():
    h = SimHasher()
    assert h.sign_vectors(np.zeros((2, 4))).values.tolist() == [0, 0]
    with pytest.raises(ValueError, match="vector 1"):
        h.sign_vectors(np.array([[1.0, 2.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="2-D"):
        h.sign_vectors(np.zeros(4))
    text_fp = h.sign(["a b c"])
    vec_fp = h.sign_vectors(np.ones((1, 3)))
    with pytest.raises(IncompatibleSketchError):
        text_fp.hamming(0, vec_fp)


def test_vectors_from_parquet(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 6))
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"emb": pa.array(list(x), type=pa.list_(pa.float32())), "id": range(20)}), path)
    got = vectors_from_parquet(str(path), "emb")
    assert got.shape == (20, 6) and np.allclose(got, x.astype(np.float32))
    fixed = tmp_path / "f.parquet"
    pq.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 6)}), fixed)
    assert np.array_equal(vectors_from_parquet(str(fixed), "emb"), x)
    h = SimHasher(bits=128)
    assert np.array_equal(h.sign_vectors(vectors_from_parquet(str(fixed), "emb")).values, h.sign_vectors(x).values)
    ragged = tmp_path / "r.parquet"
    pq.write_table(pa.table({"emb": [[1.0, 2.0], [1.0], [3.0, 4.0]]}), ragged)
    with pytest.raises(InputError, match=r"r.parquet:2"):
        vectors_from_parquet(str(ragged), "emb")
    nulls = tmp_path / "n.parquet"
    pq.write_table(pa.table({"emb": [[1.0, 2.0], None]}), nulls)
    with pytest.raises(InputError, match=r"n.parquet:2"):
        vectors_from_parquet(str(nulls), "emb")
    with pytest.raises(InputError, match="list of numbers"):
        vectors_from_parquet(str(path), "id")


# ---------------------------------------------------------------------------------------------
# helpers, schemes, validation


def test_hamming_and_estimated_cosine():
    assert hamming(0b1011, 0b0110) == 3
    a = np.array([[1, 0], [3, MASK64]], dtype=np.uint64)
    assert hamming(a, np.zeros((2, 2), dtype=np.uint64)).tolist() == [1, 66]
    assert estimated_cosine(0, 64) == 1.0
    assert estimated_cosine(64, 64) == pytest.approx(-1.0)
    assert estimated_cosine(32, 64) == pytest.approx(0.0, abs=1e-12)
    assert estimated_cosine(np.array([3, 6]), 128).tolist() == pytest.approx(
        [math.cos(math.pi * 3 / 128), math.cos(math.pi * 6 / 128)]
    )


def test_fingerprints_container():
    h = SimHasher(bits=128)
    fps = h.sign(["a b c d", "a b c e", "x y z"])
    assert len(fps) == 3 and fps.bits == 128 and fps.values.shape == (3, 2)
    assert fps[1:].to_ints() == fps.to_ints()[1:]
    assert fps.hamming(0, j=1) == bin(fps.to_ints()[0] ^ fps.to_ints()[1]).count("1")
    assert fps.cosine(0, j=0) == 1.0
    with pytest.raises(ValueError, match="uint64 of shape"):
        Fingerprints(np.zeros(3, dtype=np.uint64), h.scheme)
    other = SimHasher(bits=128, seed=2).sign(["a b c d"])
    with pytest.raises(IncompatibleSketchError):
        fps.hamming(0, other)
    with pytest.raises(IncompatibleSketchError):
        hamming(fps[:1], other)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"bits": 32}, "bits must be one of 64 or 128"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"weighting": "tf"}, "weighting"),
        ({"idf_digest": 5}, "only meaningful"),
        ({"dim": 3}, "dim is only meaningful"),
        ({"hash_family": "md5"}, "hash_family"),
        ({"hash_family": "splitmix64/box-muller", "shingling": None}, "needs dim"),
    ],
)
def test_scheme_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SimHashScheme(**kwargs)


def test_sign_hashed_validation():
    h = SimHasher()
    with pytest.raises(ValueError, match="offsets"):
        h.sign_hashed(np.array([1, 2], dtype=np.uint64), np.array([0, 3]))
    with pytest.raises(ValueError, match="one weight per hash"):
        h.sign_hashed(np.array([1, 2], dtype=np.uint64), np.array([0, 2]), weights=np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        h.sign_hashed(np.array([1], dtype=np.uint64), np.array([0, 1]), weights=np.array([np.inf]))


def test_document_frequencies_refuse_offsets_that_are_not_csr():
    counter = DocumentFrequencies()
    with pytest.raises(ValueError, match="offsets must start at 0"):
        counter.add_hashed(np.array([1, 2], dtype=np.uint64), np.array([0, 5]))
    counter.add_hashed(np.array([1, 2, 2], dtype=np.uint64), np.array([0, 1, 3]))
    assert counter.n_docs == 2
