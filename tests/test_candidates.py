"""Tests of batch LSH candidates, verification and clustering (neardup.candidates).

Properties checked against brute force over all pairs:
- with ``want_pairs`` the reported pairs are exactly {pairs sharing a band key AND verified};
- clusters-only mode gives the roots of union-find over those brute-force pairs;
- exact verification never reports a pair below the threshold;
- documents left out of ``candidates`` (empty ones) never appear;
- on generated corpora with planted near-duplicates, recall of truly similar pairs is high.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.measures import jaccard_sorted
from neardup._kernels.minhash import EMPTY_VALUE
from neardup.core.components import components
from neardup.methods.minhash.candidates import Verifier, find_clusters, in_buckets, similarity_to
from neardup.methods.minhash.lsh import band_keys, params_for
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling, shingle_batch

# ---------------------------------------------------------------------------------------------
# brute-force references


def share_band(values: np.ndarray, i: int, j: int, bands: int, rows: int) -> bool:
    """Signatures i and j agree on every slot of at least one band (the definition, not the keys)."""
    return any(
        np.array_equal(values[i, b * rows : (b + 1) * rows], values[j, b * rows : (b + 1) * rows]) for b in range(bands)
    )


def banded_pairs(values: np.ndarray, candidates, bands: int, rows: int) -> set[tuple[int, int]]:
    """All pairs i < j of candidates whose signatures agree on a whole band, found by grouping
    the raw band tuples in a dict (no band keys, no sorting)."""
    out = set()
    for b in range(bands):
        groups: dict[bytes, list[int]] = {}
        for i in sorted(int(c) for c in candidates):
            groups.setdefault(values[i, b * rows : (b + 1) * rows].tobytes(), []).append(i)
        for members in groups.values():
            out.update(combinations(members, 2))
    return out


def brute_signature_pairs(values, candidates, bands, rows, threshold):
    """{(i, j): r/K} over candidate pairs that share a band and have r/K >= threshold (exact fractions)."""
    k = values.shape[1]
    t = Fraction(str(threshold))
    out = {}
    for i, j in banded_pairs(values, candidates, bands, rows):
        r = int(np.count_nonzero(values[i] == values[j]))
        if Fraction(r, k) >= t:
            out[(i, j)] = r / k
    return out


def brute_exact_pairs(values, candidates, bands, rows, threshold, sets, offsets):
    """{(i, j): J} over candidate pairs that share a band and have exact Jaccard >= threshold."""
    out = {}
    for i, j in banded_pairs(values, candidates, bands, rows):
        s = jaccard_sorted(sets[offsets[i] : offsets[i + 1]], sets[offsets[j] : offsets[j + 1]])
        if s >= threshold:
            out[(i, j)] = s
    return out


def reported(result) -> dict:
    return {(int(a), int(b)): float(s) for a, b, s in zip(result.pairs_a, result.pairs_b, result.pairs_similarity)}


def roots_of(n: int, pairs) -> list[int]:
    ab = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return components(n, ab[:, 0], ab[:, 1]).tolist()


def check_result(values, candidates, bands, rows, verifier, expected_pairs):
    """Run both modes and compare with the brute-force pairs; returns the pairs result."""
    keys = band_keys(values, bands, rows)
    res = find_clusters(keys, candidates, verifier, want_pairs=True)
    got = reported(res)
    assert set(got) == set(expected_pairs)
    for p, s in expected_pairs.items():
        assert got[p] == pytest.approx(s, abs=1e-12)
    # pairs are i < j and sorted
    pa, pb = res.pairs_a.tolist(), res.pairs_b.tolist()
    assert all(a < b for a, b in zip(pa, pb))
    assert list(zip(pa, pb)) == sorted(zip(pa, pb))
    assert res.stats.verified == len(got) <= res.stats.checked
    n = values.shape[0]
    expected_roots = roots_of(n, expected_pairs)
    assert res.root.tolist() == expected_roots
    only = find_clusters(keys, candidates, verifier, want_pairs=False)
    assert only.pairs_a is None and only.pairs_b is None and only.pairs_similarity is None
    assert only.root.tolist() == expected_roots
    assert only.stats.verified <= only.stats.checked
    return res


# ---------------------------------------------------------------------------------------------
# generated signatures


def planted_signatures(seed: int, groups: int, copies: int, k: int, singles: int, empties: int):
    """Random signature rows: groups of perturbed copies of a base row, unrelated rows, empty rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(groups):
        base = rng.integers(0, 2**32 - 1, size=k, dtype=np.uint32)
        rows.append(base)
        for _ in range(copies):
            q = rng.choice([0.0, 0.05, 0.15, 0.3, 0.5])
            c = base.copy()
            change = rng.random(k) < q
            c[change] = rng.integers(0, 2**32 - 1, size=int(change.sum()), dtype=np.uint32)
            rows.append(c)
    for _ in range(singles):
        rows.append(rng.integers(0, 2**32 - 1, size=k, dtype=np.uint32))
    for _ in range(empties):
        rows.append(np.full(k, EMPTY_VALUE, dtype=np.uint32))
    values = np.vstack(rows)
    perm = rng.permutation(len(values))
    return np.ascontiguousarray(values[perm])


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
def test_pairs_equal_brute_force_on_planted_signatures(threshold):
    """want_pairs=True reports exactly the brute-force set of banded, verified pairs (K = 64),
    and clusters-only mode gives the same roots; empty rows left out never appear."""
    k = 64
    values = planted_signatures(seed=int(threshold * 100), groups=25, copies=4, k=k, singles=40, empties=5)
    params = params_for(threshold, k)
    empty = (values == EMPTY_VALUE).all(axis=1)
    candidates = np.flatnonzero(~empty)
    expected = brute_signature_pairs(values, candidates, params.bands, params.rows, threshold)
    assert len(expected) > 20  # the data has real work in it
    res = check_result(values, candidates, params.bands, params.rows, Verifier.signature(values, threshold), expected)
    for e in np.flatnonzero(empty):
        assert e not in res.pairs_a and e not in res.pairs_b
        assert res.root[e] == e


def test_empty_rows_would_match_if_not_left_out():
    """Why the caller leaves empty documents out: their rows are identical, so they would pair."""
    k = 32
    values = planted_signatures(seed=3, groups=3, copies=2, k=k, singles=5, empties=3)
    params = params_for(0.8, k)
    keys = band_keys(values, params.bands, params.rows)
    everyone = find_clusters(keys, np.arange(len(values)), Verifier.signature(values, 0.8), want_pairs=True)
    empties = set(np.flatnonzero((values == EMPTY_VALUE).all(axis=1)).tolist())
    assert {(a, b) for a, b in combinations(sorted(empties), 2)} <= set(reported(everyone))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 25),
    st.sampled_from([(8, 1), (4, 2), (2, 4), (3, 2), (1, 8)]),
    st.sampled_from([0.25, 0.5, 0.75, 1.0]),
    st.integers(2, 4),
)
def test_pairs_equal_brute_force_small_alphabet(seed, n, banding, threshold, alphabet):
    """With K = 8 and slot values from a tiny alphabet (big buckets, pairs in many bands),
    both modes still equal brute force; candidates are a random subset of the documents."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, alphabet, size=(n, 8)).astype(np.uint32)
    candidates = np.flatnonzero(rng.random(n) < 0.8)
    bands, rows = banding
    expected = brute_signature_pairs(values, candidates, bands, rows, threshold)
    res = check_result(values, candidates, bands, rows, Verifier.signature(values, threshold), expected)
    outside = set(range(n)) - set(candidates.tolist())
    assert not outside & (set(res.pairs_a.tolist()) | set(res.pairs_b.tolist()))
    for i in outside:
        assert res.root[i] == i


def test_band_keys_equal_iff_band_slices_equal():
    """The brute force uses band tuples; band keys agree with them on generated data."""
    values = planted_signatures(seed=9, groups=10, copies=3, k=64, singles=10, empties=2)
    bands, rows = 8, 8
    keys = band_keys(values, bands, rows)
    for i, j in combinations(range(len(values)), 2):
        for b in range(bands):
            same = np.array_equal(values[i, b * rows : (b + 1) * rows], values[j, b * rows : (b + 1) * rows])
            assert (keys[i, b] == keys[j, b]) == same


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 20))
def test_in_buckets_brute_force(seed, n):
    """in_buckets marks exactly the candidates that share some band with another candidate."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 3, size=(n, 8)).astype(np.uint32)
    candidates = np.flatnonzero(rng.random(n) < 0.7)
    keys = band_keys(values, 4, 2)
    mask = in_buckets(keys, candidates)
    cset = set(candidates.tolist())
    expected = [i in cset and any(share_band(values, i, j, 4, 2) for j in cset if j != i) for i in range(n)]
    assert mask.tolist() == expected
    in_pairs = {i for p in banded_pairs(values, candidates, 4, 2) for i in p}
    assert set(np.flatnonzero(mask).tolist()) == in_pairs


# ---------------------------------------------------------------------------------------------
# generated text corpora with planted near-duplicates


def planted_corpus(seed: int, bases: int, copies: int, singles: int, empties: int):
    """Random-word documents, copies with k random word substitutions, unrelated docs, empties."""
    rng = np.random.default_rng(seed)
    vocab = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=int(rng.integers(3, 9)))) for _ in range(5000)]
    docs = []
    for _ in range(bases):
        words = list(rng.choice(vocab, size=int(rng.integers(150, 250))))
        docs.append(words)
        for _ in range(copies):
            c = list(words)
            subs = int(rng.choice([0, 1, 1, 2, 2, 3, 4, 6, 8, 10]))
            for pos in rng.choice(len(c), size=subs, replace=False):
                c[pos] = vocab[int(rng.integers(len(vocab)))]
            docs.append(c)
    for _ in range(singles):
        docs.append(list(rng.choice(vocab, size=int(rng.integers(150, 250)))))
    texts = [" ".join(d) for d in docs] + [""] * empties + ["  \n\t "]
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


@pytest.fixture(scope="module")
def corpus():
    """Texts, signatures, exact word-5 shingle sets and all-pairs exact Jaccard of a planted corpus."""
    texts = planted_corpus(seed=77, bases=70, copies=4, singles=50, empties=3)
    sh = Shingling("word", 5)
    mh = MinHasher(num_perm=128, seed=1, shingling=sh)
    values, counts = mh.sign_texts_with_counts(texts)
    sets, offsets = shingle_batch(texts, sh)
    n = len(texts)
    exact = {}
    for i, j in combinations(range(n), 2):
        if counts[i] and counts[j]:
            s = jaccard_sorted(sets[offsets[i] : offsets[i + 1]], sets[offsets[j] : offsets[j + 1]])
            if s > 0:
                exact[(i, j)] = s
    return dict(texts=texts, values=values, counts=counts, sets=sets, offsets=offsets, exact=exact)


T = 0.8


def test_corpus_exact_verify_equals_brute_force(corpus):
    """Exact verification: reported pairs == banded pairs with exact J >= t; none below t;
    empty documents (left out of candidates) never appear; clusters-only roots agree."""
    values, sets, offsets = corpus["values"], corpus["sets"], corpus["offsets"]
    n = len(values)
    params = params_for(T, 128)
    candidates = np.flatnonzero(corpus["counts"] > 0)
    assert len(candidates) < n  # there are empty documents
    verifier = Verifier.exact(values, T, sets, offsets, np.arange(n, dtype=np.int64))
    expected = brute_exact_pairs(values, candidates, params.bands, params.rows, T, sets, offsets)
    res = check_result(values, candidates, params.bands, params.rows, verifier, expected)
    assert (res.pairs_similarity >= T).all()
    for (a, b), s in reported(res).items():
        assert corpus["exact"][(a, b)] == s >= T
    empties = set(np.flatnonzero(corpus["counts"] == 0).tolist())
    assert not empties & (set(res.pairs_a.tolist()) | set(res.pairs_b.tolist()))


def test_corpus_recall_with_exact_verify(corpus):
    """Recall >= 0.98 of all pairs with exact word-5 Jaccard >= t + 0.05 (t = 0.8), found by
    brute force over all pairs; no reported pair is below t."""
    values, sets, offsets = corpus["values"], corpus["sets"], corpus["offsets"]
    n = len(values)
    params = params_for(T, 128)
    keys = band_keys(values, params.bands, params.rows)
    candidates = np.flatnonzero(corpus["counts"] > 0)
    res = find_clusters(keys, candidates, Verifier.exact(values, T, sets, offsets, np.arange(n)), want_pairs=True)
    got = reported(res)
    truly = {p for p, s in corpus["exact"].items() if s >= T + 0.05}
    assert len(truly) >= 100
    assert len(truly & set(got)) / len(truly) >= 0.98
    assert all(corpus["exact"][p] >= T for p in got)
    # every clustered pair of documents is connected through verified edges only
    root = res.root
    for a, b in got:
        assert root[a] == root[b]


def test_corpus_recall_with_signature_verify(corpus):
    """Signature verification (r/K >= t) finds >= 0.98 of pairs with exact J >= t + 0.1.

    At J = t + 0.05 = 0.85 the estimate from K = 128 falls below 0.8 in about 6% of pairs
    (binomial), so signature verification is held to the margin where it is reliable."""
    values = corpus["values"]
    params = params_for(T, 128)
    keys = band_keys(values, params.bands, params.rows)
    candidates = np.flatnonzero(corpus["counts"] > 0)
    res = find_clusters(keys, candidates, Verifier.signature(values, T), want_pairs=True)
    got = set(reported(res))
    truly = {p for p, s in corpus["exact"].items() if s >= T + 0.1}
    assert len(truly) >= 100
    assert len(truly & got) / len(truly) >= 0.98
    # no false pair far below the threshold gets through signature verification
    assert all(corpus["exact"].get(p, 0.0) >= T - 0.15 for p in got)


def test_similarity_to_matches_measures(corpus):
    """similarity_to reports r/K (signature) or exact Jaccard (exact), and 1.0 against itself."""
    values, sets, offsets = corpus["values"], corpus["sets"], corpus["offsets"]
    n = len(values)
    pairs = sorted(corpus["exact"])[:50]
    docs = np.array([p[0] for p in pairs] + [5], dtype=np.int64)
    others = np.array([p[1] for p in pairs] + [5], dtype=np.int64)
    sig = similarity_to(docs, others, Verifier.signature(values, T))
    exa = similarity_to(docs, others, Verifier.exact(values, T, sets, offsets, np.arange(n)))
    for q, (a, b) in enumerate(pairs):
        assert sig[q] == np.count_nonzero(values[a] == values[b]) / 128
        assert exa[q] == corpus["exact"][(a, b)]
    assert sig[-1] == 1.0 and exa[-1] == 1.0


def test_verifier_min_matches():
    """min_matches is the smallest r with r/K >= t, robust to float round-off (0.7 * 10 = 7.000000000000001)."""
    sigs = np.zeros((1, 10), dtype=np.uint32)
    assert Verifier.signature(sigs, 0.7).min_matches == 7
    assert Verifier.signature(sigs, 0.71).min_matches == 8
    assert Verifier.signature(np.zeros((1, 128), dtype=np.uint32), 0.8).min_matches == 103
    assert Verifier.signature(np.zeros((1, 100), dtype=np.uint32), 0.9).min_matches == 90


def test_next_bands_sorted_on_the_workers_give_the_same_result(monkeypatch):
    """Large inputs sort the next bands on the workers while band b is verified: same roots, pairs, stats."""
    import neardup.methods.minhash.candidates as cand

    k = 64
    values = planted_signatures(seed=8, groups=30, copies=3, k=k, singles=50, empties=0)
    params = params_for(0.8, k)
    keys = band_keys(values, params.bands, params.rows)
    candidates = np.arange(len(values))
    verifier = Verifier.signature(values, 0.8)
    plain = [find_clusters(keys, candidates, verifier, want_pairs=w) for w in (False, True)]
    monkeypatch.setattr(cand, "_PREFETCH_MIN", 0)
    for workers in (2, 3):  # bands sorted ahead on the workers, two and three at once
        threaded = [find_clusters(keys, candidates, verifier, want_pairs=w, threads=workers) for w in (False, True)]
        for a, b in zip(plain, threaded):
            assert np.array_equal(a.root, b.root)
            assert a.stats == b.stats
        assert np.array_equal(plain[1].pairs_a, threaded[1].pairs_a)
        assert np.array_equal(plain[1].pairs_b, threaded[1].pairs_b)
        assert np.array_equal(plain[1].pairs_similarity, threaded[1].pairs_similarity)


def test_band_step_on_the_workers_gives_the_same_keys():
    """The band step computes the keys in one part of rows per worker: the keys of band_keys."""
    from neardup.core.parallel import Threads
    from neardup.core.plan import StageContext
    from neardup.methods.minhash.config import MinHashConfig
    from neardup.methods.minhash.plan import band

    config = MinHashConfig()
    rng = np.random.default_rng(4)
    values = rng.integers(0, 2**32, size=(20_011, config.num_perm), dtype=np.uint32)
    counts = rng.integers(0, 3, size=20_011)
    expected = band_keys(values, config.lsh.bands, config.lsh.rows)
    for workers in (1, 2, 3):
        with Threads(workers) as threads:
            out = band(config, StageContext(threads, False, {}), values, counts)
        assert np.array_equal(out["keys"], expected)
        assert np.array_equal(out["candidates"], np.flatnonzero(counts > 0))
