"""Tests of neardup.spotsigs: signature extraction, the IDF filter, partitions, exact all pairs.

Properties checked:

- extraction: the numba kernel gives the multiset of ``hash_str`` of the keys a pure-Python
  reference writes, on random texts (Unicode, ideographs, format characters, every d, c, key
  mode); the talk's worked example; the meaning of d, c and the key modes;
- IDF filter: the normalised IDF definition, inclusive band ends, lengths follow, streaming
  document frequencies equal one-shot ones;
- partitions: the seed rule, and that it puts every length-compatible pair at most one
  partition apart (the slide's own tau = 0.7 sequence does not: see below);
- all pairs: exactly the pairs of brute-force weighted Jaccard, bit-identical similarities,
  for many thresholds, with and without partitions/pruning, any thread count; the counters
  show the similarity computations pruning avoided.

The seed slides contain errors, noted where a test pins the true value.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import hash_str
from neardup.core.errors import IncompatibleSketchError, InputError
from neardup.core.measures import weighted_jaccard
from neardup.methods.spotsigs.pairs import (
    all_pairs,
    all_pairs_bruteforce,
    all_pairs_unpruned,
    partition_bounds,
    weighted_jaccard_rows,
)
from neardup.methods.spotsigs.scheme import SpotSigsScheme, load_words
from neardup.methods.spotsigs.signatures import (
    DocumentFrequencies,
    SpotSignatures,
    extract,
    idf_filter,
    normalized_idf,
    signature_keys,
)
from neardup.text.stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS

OBAMA = (
    "At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to "
    "set the record straight from an attack circulating widely on the Internet that is designed "
    "to play into prejudices against Muslims and fears of terrorism."
)


def kernel_counter(texts, scheme):
    s = extract(texts, scheme)
    return [Counter(s.doc(i)) for i in range(len(s))]


def reference_counter(text, scheme):
    return Counter(hash_str(k) for k in signature_keys(text, scheme))


# ---------------------------------------------------------------------------------------------
# extraction


def test_talk_example_signatures():
    """The talk's example: antecedents {a, an, the, is}, d = 1, c = 2.

    The slide lists "an:attack:circulating", so "an" must be an antecedent although the slide's
    set says {a, the, is}, and it prints "g:weeklong:campaign" for "a:weeklong:campaign".
    """
    scheme = SpotSigsScheme(antecedents=["a", "an", "the", "is"], spot_distance=1, chain=2)
    expected = [
        "a:rally:kick",
        "a:weeklong:campaign",
        "the:south:carolina",
        "the:record:straight",
        "an:attack:circulating",
        "the:internet:designed",
        "is:designed:play",
    ]
    assert signature_keys(OBAMA, scheme) == expected
    assert kernel_counter([OBAMA], scheme) == [Counter(hash_str(k) for k in expected)]
    # the default antecedents also start at "that": "that is designed to play" -> that:designed:play
    assert signature_keys(OBAMA) == expected[:6] + ["that:designed:play", "is:designed:play"]


def test_key_modes_and_chain_length():
    text = "The south Carolina primary; a south Carolina town."
    ante = SpotSigsScheme(antecedents=["the", "a"], stopwords=[], chain=2)
    chain = SpotSigsScheme(antecedents=["the", "a"], stopwords=[], chain=2, key="chain")
    assert signature_keys(text, ante) == ["the:south:carolina", "a:south:carolina"]
    assert signature_keys(text, chain) == ["south:carolina", "south:carolina"]
    # chain mode: one signature counted twice (a multiset)
    assert kernel_counter([text], chain) == [Counter({hash_str("south:carolina"): 2})]
    one = SpotSigsScheme(antecedents=["the", "a"], stopwords=[], chain=1)
    assert signature_keys(text, one) == ["the:south", "a:south"]


def test_spot_distance_counts_non_stopwords_only():
    """d counts non-stopwords: inserting or deleting function words never changes a chain."""
    s = SpotSigsScheme(antecedents=["the"], stopwords=["of", "and"], spot_distance=2, chain=2)
    assert signature_keys("the cat of dog and bird of fish eel", s) == ["the:dog:fish"]
    assert signature_keys("the cat dog bird fish eel", s) == ["the:dog:fish"]
    assert signature_keys("the of and cat and dog of of bird and fish", s) == ["the:dog:fish"]


def test_incomplete_chains_and_antecedents_as_stopwords():
    s = SpotSigsScheme(antecedents=["the", "a"], stopwords=["to"], chain=2)
    # the second "the" has only one non-stopword after it: no signature
    assert signature_keys("the big house near the sea", s) == ["the:big:house"]
    # antecedents are skipped inside chains even if not listed as stopwords
    assert signature_keys("the a big a red house", s) == ["the:big:red", "a:big:red", "a:red:house"]
    assert signature_keys("", s) == [] and kernel_counter(["", "the"], s) == [Counter(), Counter()]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    content = [
        "Rally",
        "kick",
        "campaign",
        "South",
        "carolina",
        "STRASSE",
        "straße",
        "ﬁsh",
        "naïve",
        "cafe\u0301",
        "2024",
        "x1",
        "東",
        "京",
        "été",
        "москва",
        "Ｆｕｌｌ",
        "co\u00adop",
        "ünï",
    ]
    glue = [" ", "  ", ", ", ". ", "\n", " - ", "'", "\u200b", "!", " (", ") "]
    words = list(ENGLISH_ANTECEDENTS) + ["The", "A", "IS"] + list(ENGLISH_STOPWORDS)[:40] + content * 3
    texts = []
    for _ in range(n):
        k = rng.choice([0, 1, 2, 5, 20, 80])
        texts.append("".join(rng.choice(words) + rng.choice(glue) for _ in range(k)))
    return texts


@pytest.mark.parametrize(
    "d,c,key", [(1, 1, "antecedent"), (1, 2, "antecedent"), (2, 3, "antecedent"), (3, 2, "chain"), (1, 3, "chain")]
)
def test_kernel_equals_python_reference(d, c, key):
    """Kernel multiset == Counter(hash_str(key) for key in signature_keys(text)), in one batch."""
    scheme = SpotSigsScheme(spot_distance=d, chain=c, key=key)
    texts = _random_texts(seed=d * 10 + c, n=150)
    got = kernel_counter(texts, scheme)
    assert got == [reference_counter(t, scheme) for t in texts]
    assert sum(map(len, got)) > 50  # the texts do produce signatures


def test_signatures_are_sorted_csr():
    s = extract(_random_texts(3, 60))
    assert s.offsets[0] == 0 and s.offsets[-1] == len(s.values) == len(s.counts)
    for i in range(len(s)):
        row = s.values[s.offsets[i] : s.offsets[i + 1]]
        assert np.all(row[1:] > row[:-1])
    assert np.all(s.counts >= 1)
    assert s.lengths.tolist() == [sum(s.doc(i).values()) for i in range(len(s))]


def test_concat_keeps_documents_and_refuses_mixed_schemes():
    a = extract(["the big house", "", "a red door is a red door"])
    c = SpotSignatures.concat([a, a])
    assert len(c) == 6 and c.scheme == a.scheme
    assert [c.doc(i) for i in range(6)] == [a.doc(i) for i in range(3)] * 2
    with pytest.raises(IncompatibleSketchError):
        SpotSignatures.concat([a, extract(["the big house"], SpotSigsScheme(chain=3))])


def test_golden_signature_values():
    """Pinned values: a change to tokenization, hashing or key format must bump FORMAT_VERSION."""
    s = extract(["The record was straight."], SpotSigsScheme())
    assert s.doc(0) == {hash_str("the:record:straight"): 1}
    assert hash_str("the:record:straight") == 0xF45E51ABD2DF0750


# ---------------------------------------------------------------------------------------------
# scheme and word lists


def test_scheme_validation_and_canonical_form():
    with pytest.raises(ValueError, match="spot_distance"):
        SpotSigsScheme(spot_distance=0)
    with pytest.raises(ValueError, match="chain"):
        SpotSigsScheme(chain=True)
    with pytest.raises(ValueError, match="key"):
        SpotSigsScheme(key="prefix")
    with pytest.raises(ValueError, match="non-empty"):
        SpotSigsScheme(antecedents=())
    with pytest.raises(ValueError, match="single word token"):
        SpotSigsScheme(stopwords=["don't"])
    with pytest.raises(TypeError, match="load_words"):
        SpotSigsScheme(antecedents="the")
    a = SpotSigsScheme(antecedents=["The", "a", "the"], stopwords=["Of", "to"])
    b = SpotSigsScheme(antecedents=("a", "the"), stopwords=("to", "of"))
    assert a == b and a.antecedents == ("a", "the") and a.skipped == ("a", "of", "the", "to")
    a.check_compatible(b)
    with pytest.raises(IncompatibleSketchError):
        a.check_compatible(SpotSigsScheme(antecedents=("a", "the"), stopwords=("to", "of"), chain=3))


def test_default_lists():
    assert set(ENGLISH_ANTECEDENTS) <= set(ENGLISH_STOPWORDS)
    assert {"the", "a", "an", "is", "that", "was", "has"} <= set(ENGLISH_ANTECEDENTS)
    assert SpotSigsScheme().antecedents == tuple(sorted(ENGLISH_ANTECEDENTS))  # all single tokens


def test_load_words(tmp_path):
    p = tmp_path / "words.txt"
    p.write_text("# my antecedents\nthe\n  A  # article\n\nIst\n", encoding="utf-8")
    assert load_words(p) == ("the", "A", "Ist")
    assert SpotSigsScheme(antecedents=load_words(p)).antecedents == ("a", "ist", "the")
    bad = tmp_path / "bad.txt"
    bad.write_text("the\nnew york\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.txt:2: expected one word per line"):
        load_words(bad)
    with pytest.raises(InputError, match="cannot read"):
        load_words(tmp_path / "missing.txt")


# ---------------------------------------------------------------------------------------------
# IDF filter


def test_normalized_idf_definition():
    assert normalized_idf(np.array([1, 4, 16]), 16).tolist() == [1.0, 0.5, 0.0]
    assert normalized_idf(np.array([1]), 1).tolist() == [0.0]


def test_idf_filter_band_is_inclusive_and_lengths_follow():
    # 16 documents: signature 1 in all (idf 0), 2 in four (idf 0.5), 3 in one (idf 1)
    docs = [{1: 1} for _ in range(16)]
    for i in range(4):
        docs[i][2] = 3
    docs[5][3] = 2
    s = SpotSignatures.from_multisets(docs)
    assert idf_filter(s, (0.5, 0.5)).lengths.tolist() == [3] * 4 + [0] * 12
    assert idf_filter(s, (0.0, 0.5)).lengths.tolist() == [4] * 4 + [1] * 12
    assert idf_filter(s, (0.6, 1.0)).lengths.tolist() == [0] * 5 + [2] + [0] * 10
    assert idf_filter(s, (0.0, 1.0)).lengths.tolist() == s.lengths.tolist()
    with pytest.raises(ValueError, match="idf_band"):
        idf_filter(s, (0.7, 0.2))


def test_document_frequencies_streaming_equals_whole():
    texts = _random_texts(11, 300)
    whole = extract(texts)
    f = DocumentFrequencies()
    for i in range(0, 300, 17):
        f.add(extract(texts[i : i + 17]))
    g = DocumentFrequencies.of(whole)
    assert f.n_docs == g.n_docs == 300
    for x, y in zip(f.table(), g.table()):
        assert np.array_equal(x, y)
    truth = Counter(h for i in range(len(whole)) for h in whole.doc(i))
    keys, df = g.table()
    assert dict(zip(keys.tolist(), df.tolist())) == dict(truth)
    band = (0.2, 0.8)
    assert np.array_equal(
        idf_filter(extract(texts[:50]), band, f).values,
        idf_filter(whole, band).values[: idf_filter(whole, band).offsets[50]],
    )


# ---------------------------------------------------------------------------------------------
# partitions


def _part(bounds, length):
    return int(np.searchsorted(bounds, length, side="right") - 1)


def test_partition_bounds_follow_the_seed_rule():
    """p_{k+1} = smallest integer > p_k with p_{k+1} - p_k > (1 - tau) p_{k+1}.

    For tau = 0.7 that rule gives 1, 2, 3, 5, 8, 12, 18, 26, 38, 55, ... The slide prints
    "p0=1, p1=3, p2=6, p3=10, ..., p7=43, p8=59", which no tau satisfies with this rule (p1 = 3
    needs 1/3 < tau <= 1/2, p2 = 6 needs 1/2 < tau <= 3/5), and which breaks the property the
    partitions exist for: lengths 42 and 59 have ratio 0.712 >= 0.7 (a pair that may be similar)
    yet lie two partitions apart ([31, 43) and [59, ...), assuming the slide's elided bounds).
    """
    assert partition_bounds(0.7, 60).tolist() == [1, 2, 3, 5, 8, 12, 18, 26, 38, 55, 79]
    p = partition_bounds(0.7, 60)
    assert all(p[k + 1] - p[k] > 0.3 * p[k + 1] for k in range(len(p) - 1))
    assert all(
        not (p[k + 1] - 1 - p[k] > 0.3 * (p[k + 1] - 1)) or p[k + 1] - 1 == p[k] for k in range(len(p) - 1)
    )  # smallest such integer
    slide = np.array([1, 3, 6, 10, 15, 22, 31, 43, 59, 80])  # the elided ones filled in any way
    assert 42 / 59 >= 0.7 and _part(slide, 59) - _part(slide, 42) == 2
    assert partition_bounds(1.0, 5).tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="threshold"):
        partition_bounds(0.0, 10)


@pytest.mark.parametrize("tau", [0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.97, 1.0])
def test_partitions_keep_compatible_lengths_adjacent(tau):
    """Every pair of lengths a <= b with a / b >= tau is in the same or the next partition, and
    every length of a partition is compatible with the partition's first length."""
    max_len = 300
    p = partition_bounds(tau, max_len)
    assert p[0] == 1 and p[-1] > max_len and p[-2] <= max_len
    parts = np.searchsorted(p, np.arange(max_len + 1), side="right") - 1
    for a in range(1, max_len + 1):
        for b in range(a, max_len + 1):
            if a / b >= tau:
                assert parts[b] - parts[a] <= 1, (a, b)
            else:
                break
    for k in range(len(p) - 1):
        assert p[k] / (p[k + 1] - 1) >= tau


# ---------------------------------------------------------------------------------------------
# all pairs


def test_talk_dedup_example():
    """The talk's deduplication example, with true values.

    d1 = {s1:5, s2:4, s3:4} (|d1| = 13), d2 = {s1:8, s2:4} (12), d3 = {s2:5, s3:5}: |d3| = 10, not
    13 as the slide says, and sim(d1, d3) = (4 + 4) / (5 + 5 + 5) = 8/15, not 0.8. At tau = 0.8
    no pair qualifies. The length bound alone rules out (d1, d3): 10 / 13 < 0.8. Only (d2, d1)
    passes it (12 / 13 >= 0.8) and is computed (9/16); after d2's rarest list (s1, weight 8)
    (12 - 8) / (12 + 8) < 0.8, so d2 opens no other list, and d3's only candidate in its rarest
    list is d1, cut by the bound.
    """
    s = SpotSignatures.from_multisets([{1: 5, 2: 4, 3: 4}, {1: 8, 2: 4}, {2: 5, 3: 5}])
    assert s.lengths.tolist() == [13, 12, 10]
    r = all_pairs(s, 0.8)
    assert len(r.a) == 0
    assert r.counters.computed == 1 and r.counters.pruned == 1
    r = all_pairs(s, 0.5)
    assert list(zip(r.a.tolist(), r.b.tolist())) == [(0, 1), (0, 2)]
    assert r.similarity.tolist() == [9 / 16, 8 / 15]
    assert all_pairs_unpruned(s, 0.8).counters.computed == 3


def planted_multisets(n: int, seed: int, vocab: int = 3000) -> SpotSignatures:
    """Random multisets over a Zipf-like vocabulary; a third are edited copies of earlier ones
    (counts changed, signatures added and dropped), so similarities cover the whole range."""
    rng = random.Random(seed)
    weights = [1 / (r + 1) ** 0.9 for r in range(vocab)]
    docs: list[Counter] = []
    for _ in range(n):
        if docs and rng.random() < 0.35:
            d = Counter(rng.choice(docs))
            for _ in range(rng.randint(0, 6)):
                op = rng.random()
                key = rng.choice(list(d)) if d else 0
                if op < 0.3:
                    d[key] += 1
                elif op < 0.6 and d[key] > 0:
                    d[key] -= 1
                else:
                    d[rng.choices(range(vocab), weights)[0]] += rng.randint(1, 2)
            d = +d
        else:
            size = rng.choice([0, 1, 2, 3, 5, 10, 30, 60, 150])
            d = Counter(rng.choices(range(vocab), weights, k=size))
        docs.append(d)
    return SpotSignatures.from_multisets(docs)


def pair_set(r):
    return set(zip(r.a.tolist(), r.b.tolist()))


@pytest.fixture(scope="module")
def planted():
    return planted_multisets(700, seed=5)


@pytest.mark.parametrize("tau", [0.2, 0.45, 0.6, 0.75, 0.8, 0.85, 0.9, 0.97, 1.0])
def test_all_pairs_equals_bruteforce(planted, tau):
    """The complete pair set of brute-force weighted Jaccard, no more, no less, and the same
    float similarities, with and without partitions and pruning."""
    brute = all_pairs_bruteforce(planted, tau)
    assert len(brute.a) > 0
    for r in (
        all_pairs(planted, tau),
        all_pairs(planted, tau, workers=3),
        all_pairs(planted, tau, partitions=False),
        all_pairs(planted, tau, pruning=False),
        all_pairs_unpruned(planted, tau),
    ):
        assert np.array_equal(r.a, brute.a) and np.array_equal(r.b, brute.b)
        assert np.array_equal(r.similarity, brute.similarity)
        assert np.all(r.a < r.b) and r.counters.pairs == len(brute.a)


@pytest.mark.parametrize("tau", [0.3, 0.6, 0.85, 1.0])
def test_sharded_groups_of_neighbouring_partitions_find_every_pair_once(planted, tau):
    """The sharded form's group-by (two tables of neighbouring length partitions, each group's
    all-pairs probing its lower partition): every pair of the whole search with its similarity,
    and each once unless both groups that hold its partition hold it alone."""
    from neardup.methods.spotsigs.config import SpotSigsConfig
    from neardup.methods.spotsigs.plan import shard_keys, shard_verify

    config = SpotSigsConfig(threshold=tau)
    rows = {"signatures": planted, "signature_lengths": planted.lengths}
    keys, member = shard_keys(config, rows, len(planted))
    members, bounds = [], [0]
    for t in range(keys.shape[1]):
        for key in np.unique(keys[member[:, t], t]):
            group = np.flatnonzero(member[:, t] & (keys[:, t] == key))
            if len(group) >= 2:
                members.append(group)
                bounds.append(bounds[-1] + len(group))
    a, b, sim = shard_verify(config, np.concatenate(members), np.array(bounds), rows)
    assert len(bounds) > 4, "several groups"
    order = np.lexsort((b, a))
    a, b, sim = a[order], b[order], sim[order]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    expected = all_pairs(planted, tau)
    assert np.array_equal(a[first], expected.a) and np.array_equal(b[first], expected.b)
    assert np.array_equal(sim[first], expected.similarity)
    # found twice: only pairs inside one partition, from the two groups that hold it alone
    again = ~first
    assert np.array_equal(a[again], a[np.flatnonzero(again) - 1]) and not (again[1:] & again[:-1]).any()
    part = np.searchsorted(partition_bounds(tau, int(planted.lengths.max())), planted.lengths, side="right") - 1
    assert np.array_equal(part[a[again]], part[b[again]])


def test_bruteforce_agrees_with_python_weighted_jaccard(planted):
    docs = [planted.doc(i) for i in range(120)]
    small = SpotSignatures.from_multisets(docs)
    r = all_pairs_bruteforce(small, 0.3)
    expected = {
        (i, j): weighted_jaccard(docs[i], docs[j])
        for i, j in combinations(range(120), 2)
        if docs[i] and docs[j] and weighted_jaccard(docs[i], docs[j]) >= 0.3
    }
    assert dict(zip(zip(r.a.tolist(), r.b.tolist()), r.similarity.tolist())) == expected
    a, b = np.array(list(expected), dtype=np.int64).T
    assert weighted_jaccard_rows(small, a, b).tolist() == list(expected.values())


def test_threshold_ties_are_included():
    """Pairs exactly at tau count: 4/5 and 2/4 are computed in float64 like the threshold."""
    s = SpotSignatures.from_multisets([{1: 4}, {1: 5}, {1: 2}, {1: 4, 9: 1}])
    # sims: (0,1) 4/5, (0,2) 2/4, (0,3) 4/5, (1,2) 2/5, (1,3) 4/6, (2,3) 2/5
    assert pair_set(all_pairs(s, 0.8)) == pair_set(all_pairs_bruteforce(s, 0.8)) == {(0, 1), (0, 3)}
    assert pair_set(all_pairs(s, 0.5)) == {(0, 1), (0, 2), (0, 3), (1, 3)}


def test_counters_show_what_pruning_avoided(planted):
    """The baseline compares every pair sharing a signature once; partitions + pruning compare
    far fewer, find the same pairs, and the counters account for the difference."""
    tau = 0.85
    fast = all_pairs(planted, tau)
    slow = all_pairs_unpruned(planted, tau)
    sharing = sum(1 for i, j in combinations(range(len(planted)), 2) if set(planted.doc(i)) & set(planted.doc(j)))
    assert slow.counters.computed == sharing
    assert slow.counters.pruned == slow.counters.lists_cut == slow.counters.lists_skipped == 0
    c = fast.counters
    assert c.pairs == slow.counters.pairs <= c.computed
    assert c.computed * 10 < slow.counters.computed
    assert c.pruned > 0 and c.lists_cut > 0 and c.lists_skipped > 0 and c.partitions > 1
    # every list of every non-empty document is either opened or skipped
    distinct = sum(len(planted.doc(i)) for i in range(len(planted)))
    assert c.lists_opened + c.lists_skipped == distinct


def test_deterministic_over_threads(planted):
    runs = [all_pairs(planted, 0.6, workers=w) for w in (1, 2, 5)]
    for r in runs[1:]:
        assert r.counters == runs[0].counters
        assert np.array_equal(r.a, runs[0].a) and np.array_equal(r.similarity, runs[0].similarity)


def test_empty_documents_are_never_paired():
    s = SpotSignatures.from_multisets([{}, {}, {1: 1}, {}, {1: 1}])
    r = all_pairs(s, 1.0)
    assert pair_set(r) == {(2, 4)} and r.counters.documents == 2
    assert len(all_pairs(SpotSignatures.from_multisets([{}, {}]), 0.5).a) == 0
    assert len(all_pairs(SpotSignatures.from_multisets([]), 0.5).a) == 0
    assert len(all_pairs_bruteforce(s, 0.1).a) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 12), st.integers(1, 4), max_size=8), max_size=25), st.floats(0.05, 1.0))
def test_all_pairs_property(docs, tau):
    s = SpotSignatures.from_multisets(docs)
    brute = all_pairs_bruteforce(s, tau)
    r = all_pairs(s, tau, workers=2)
    assert pair_set(r) == pair_set(brute)
    assert np.array_equal(r.similarity, brute.similarity)
