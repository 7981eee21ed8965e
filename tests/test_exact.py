"""Tests of neardup.exact and neardup.dedup_exact: nd128 against a pure-Python reference of its
definition, exact grouping against a dict of normalized strings, I-Match against a pure-Python
reference, the multi-lexicon recall property, the exact pre-pass as a pure optimisation of the
MinHash job, and the two dedup jobs end to end."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import hash_bytes, hash_str
from neardup.api import dedup
from neardup.methods.exact.config import ExactConfig
from neardup.methods.exact.groups import ExactPrepass, exact_duplicate_groups, group_equal, group_pairs
from neardup.methods.exact.keys import EMPTY_KEY, exact_keys, hash128, hash128_str, prepass_keys
from neardup.methods.imatch.config import IMatchConfig
from neardup.methods.imatch.signatures import (
    DocumentFrequencies,
    df_bounds,
    imatch_signatures,
    match_pairs,
    match_roots,
    match_similarity,
    term_sets,
)
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.normalize import char_stream, normalize, tokenize
from neardup.text.shingles import Shingling

from conftest import make_corpus

# --------------------------------------------------------------------------------------------
# pure-Python references of the documented definitions (constants written out on purpose)

M64 = (1 << 64) - 1


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def fmix(h):
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def splitmix(state):
    z = (state + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def nd128_ref(data: bytes) -> tuple[int, int]:
    a, b = 0x27D4EB2F165667C5, 0x8EBC6AF09C88C6E3
    for i in range(0, len(data), 8):
        w = int.from_bytes(data[i : i + 8].ljust(8, b"\0"), "little")
        a = (rotl(a ^ ((w * 0x9E3779B185EBCA87) & M64), 31) * 0xC2B2AE3D27D4EB4F) & M64
        b = (rotl(b ^ ((w * 0xA0761D6478BD642F) & M64), 29) * 0xE7037ED1A0B428DB) & M64
    return fmix(a ^ len(data)), fmix(b ^ len(data))


def imatch_ref(texts, band, lexicons=1, fraction=1.0, seed=1, min_terms=1):
    """Signatures per document: list of L (key or None), straight from the module docstring."""
    termsets = [sorted({hash_str(t) for t in tokenize(text)}) for text in texts]
    n = len(texts)
    df = Counter(t for ts in termsets for t in ts)
    lo, hi = band

    def in_band(t):
        if n <= 1:
            return True
        idf = math.log(n / df[t]) / math.log(n)
        return lo - 1e-12 <= idf <= hi + 1e-12

    salts = [splitmix((seed + j * 0x9E3779B97F4A7C15) & M64) for j in range(lexicons)]
    limit = int(fraction * 2**64)
    out = []
    for ts in termsets:
        kept = [t for t in ts if in_band(t)]
        sigs = []
        for j in range(lexicons):
            sub = kept if j == 0 or fraction >= 1 else [t for t in kept if fmix(t ^ salts[j]) < limit]
            if len(sub) >= max(min_terms, 1):
                sigs.append(nd128_ref(b"".join(t.to_bytes(8, "little") for t in sub)))
            else:
                sigs.append(None)
        out.append(sigs)
    return out


def first_index_roots(values):
    """Reference grouping: every item's root is the first index with an equal value (None: alone)."""
    first = {}
    return [i if v is None else first.setdefault(v, i) for i, v in enumerate(values)]


def union_roots(n, groupings):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for g in groupings:
        for i, r in enumerate(g):
            a, b = find(i), find(r)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]


# --------------------------------------------------------------------------------------------
# nd128


def test_nd128_golden_values():
    """Pinned values: changing them breaks every stored key (bump EXACT_VERSION instead)."""
    assert hash128(b"") == (0x9353DFC8A195F3E2, 0x898CCD7541E68504)
    assert hash128(b"a") == (0xC53E0A87B0EFBAA7, 0xDBB906A39F1A286D)
    assert hash128_str("the quick brown fox") == (0x88D2C45890CC0731, 0xFEE3F9A5C3CE92AC)
    assert tuple(int(x) for x in EMPTY_KEY) == hash128(b"")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_nd128_matches_reference_and_lane_a_is_nd64(data):
    """Property: the kernel computes the documented definition; lane A is nd64 (hash_bytes)."""
    assert hash128(data) == nd128_ref(data)
    assert hash128(data)[0] == hash_bytes(data)


def test_nd128_lanes_are_not_related():
    """The lanes disagree and each bit of each lane, and of their XOR, is balanced (20,000 keys)."""
    keys = exact_keys([f"document number {i}" for i in range(20_000)], raw=True)
    assert not np.any(keys[:, 0] == keys[:, 1])
    for values in (keys[:, 0], keys[:, 1], keys[:, 0] ^ keys[:, 1]):  # each lane, and how they differ
        bits = np.unpackbits(np.ascontiguousarray(values).view(np.uint8)).reshape(-1, 64).mean(axis=0)
        assert np.all(np.abs(bits - 0.5) < 0.03)
    assert len(np.unique(keys, axis=0)) == 20_000


# --------------------------------------------------------------------------------------------
# exact keys


def test_exact_keys_golden_values():
    keys = exact_keys(["Hello,  World!", "hello, world!", "Straße\u00ad", ""])
    assert [tuple(map(int, k)) for k in keys] == [
        (0x83C2EBF2DAF42A03, 0x269AA35C3F3C5167),
        (0x83C2EBF2DAF42A03, 0x269AA35C3F3C5167),
        (0xE2294D8B04C9C5E5, 0xE291DAA21EBD2E6E),
        (0x9353DFC8A195F3E2, 0x898CCD7541E68504),
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_exact_key_is_nd128_of_the_documented_normal_form(text):
    """Property: key = nd128(char_stream(text)), raw key = nd128(UTF-8 bytes)."""
    keys = exact_keys([text, text])
    assert tuple(map(int, keys[0])) == nd128_ref(char_stream(text).encode("utf-8", "surrogatepass"))
    raw = exact_keys([text], raw=True)
    assert tuple(map(int, raw[0])) == nd128_ref(text.encode("utf-8", "surrogatepass"))


def test_normalization_equivalences():
    same = ["Ｆｕｌｌ  ﬁsh\tSTRASSE", "full fish straße", " full\u00a0fish\n\nstrasse ", "full fi\u00adsh strasse"]
    keys = exact_keys(same)
    assert (keys == keys[0]).all()
    different = ["full fish strasse.", "fullfish strasse", "full fish strass"]
    assert not (exact_keys(different) == keys[0]).all(axis=1).any()
    assert not (exact_keys(same, raw=True) == exact_keys(same, raw=True)[0]).all(axis=1)[1:].any()
    # nfkc / casefold switches
    assert (exact_keys(["ABC"], casefold=False) != exact_keys(["abc"], casefold=False)).any()
    assert (exact_keys(["Ａ"], nfkc=False) != exact_keys(["a"], nfkc=False)).any()
    assert (exact_keys(["Ａ"]) == exact_keys(["a"])).all()


def random_texts(n, seed):
    """Texts with planted exact duplicates, normalization variants and empty ones."""
    rng = random.Random(seed)
    words = ["alpha", "Beta", "gamma", "δέλτα", "東京", "x1", "fish", "ﬁsh", "a-b", "!"]
    base = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))) for _ in range(n // 3 + 1)]
    out = []
    for _ in range(n):
        t = rng.choice(base)
        r = rng.random()
        if r < 0.2:
            t = t.upper()
        elif r < 0.3:
            t = "  " + t.replace(" ", " \n\t ") + " "
        elif r < 0.35:
            t = t + " extra"
        out.append(t)
    return out


@pytest.mark.parametrize("raw", [False, True])
def test_group_equal_matches_dict_of_normalized_strings(raw):
    texts = random_texts(3000, 5)
    keys = exact_keys(texts, raw=raw)
    norm = texts if raw else [char_stream(t) for t in texts]
    valid = [s != "" for s in norm]
    root = group_equal(keys, np.array(valid))
    assert root.tolist() == first_index_roots([s if ok else None for s, ok in zip(norm, valid)])
    assert root.tolist() == group_equal(keys, (keys != EMPTY_KEY).any(axis=1)).tolist()


def test_group_pairs_against_brute_force():
    rng = np.random.default_rng(3)
    root = group_equal(rng.integers(0, 40, size=(300, 2)).astype(np.uint64) % 7)
    a, b = group_pairs(root)
    expected = [(i, j) for i in range(300) for j in range(i + 1, 300) if root[i] == root[j]]
    assert list(zip(a.tolist(), b.tolist())) == expected
    assert [x.tolist() for x in group_pairs(np.empty(0, dtype=np.int64))] == [[], []]


def test_group_equal_edge_cases():
    assert group_equal(np.empty((0, 2), dtype=np.uint64)).tolist() == []
    assert group_equal(np.zeros((3, 2), dtype=np.uint64), np.array([True, False, True])).tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="shape"):
        group_equal(np.zeros(3, dtype=np.uint64))


# --------------------------------------------------------------------------------------------
# the exact pre-pass


def test_prepass_streaming_equals_batch():
    texts = random_texts(1000, 9)
    keys = exact_keys(texts)
    g = exact_duplicate_groups(keys)
    p = ExactPrepass()
    masks = [p.admit(keys[i : i + 128]) for i in range(0, len(keys), 128)]
    assert np.array_equal(np.concatenate(masks), g.sketch)
    assert np.array_equal(p.groups().rep, g.rep)
    assert g.n_duplicates == len(texts) - g.sketch.sum() > 0
    # representatives are first occurrences and empty documents are never grouped
    norm = [char_stream(t) for t in texts]
    assert g.rep.tolist() == first_index_roots([s or None for s in norm])
    sub = g.to_sketched(np.arange(len(texts)))
    assert np.array_equal(g.index[sub], g.rep)


def near_dup_texts(n=500, seed=11):
    """A MinHash test corpus: near-duplicates, exact copies (also case/space variants), empties."""
    c = make_corpus(n, seed=seed, copy_rate=0.3, max_edits=3)
    rng = random.Random(seed)
    texts = []
    for t in c.texts:
        texts.append(t)
        r = rng.random()
        if r < 0.15:
            texts.append(t.upper())
        elif r < 0.25:
            texts.append("  " + t.replace(" ", "\n") + "\n")
        elif r < 0.3:
            texts.append(rng.choice(["", "   ", "!!!", "?"]))
    return texts


@pytest.mark.parametrize("want_pairs, verify", [(False, "signature"), (True, "signature"), (True, "exact")])
def test_prepass_is_a_pure_optimisation_of_minhash(tmp_path, want_pairs, verify):
    """The MinHash job with the exact pre-pass (sketching only the first of each group of equal
    normalized texts) finds exactly the clusters, pairs and similarities it finds without it."""
    texts = near_dup_texts()
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps({"text": t}) + b"\n" for t in texts))
    results = []
    for prepass in (True, False):
        config = MinHashConfig(
            threshold=0.6, shingling=Shingling("word", 3), num_perm=64, verify=verify, exact_prepass=prepass
        )
        results.append(dedup([str(src)], config, want_pairs=want_pairs, batch_size=100))
    on, off = results
    assert int(on.summary["exact duplicates (pre-pass)"].replace(",", "")) > 0
    assert off.summary["exact duplicates (pre-pass)"] == "off"
    assert np.array_equal(on.root, off.root)
    assert np.array_equal(on.kept, off.kept)
    assert np.array_equal(on.similarity, off.similarity)
    assert on.empty == off.empty
    if want_pairs:
        for x, y in zip(on.pairs, off.pairs):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("want_pairs", [False, True])
def test_expand_spanning_pairs_give_the_same_components(want_pairs):
    """ExactGroups: the spanning expansion (members linked to their representative) has the
    components of the complete expansion."""
    texts = near_dup_texts()
    config = MinHashConfig(threshold=0.6, shingling=Shingling("word", 3), num_perm=64)
    hasher = MinHasher(scheme=config.scheme)
    g = exact_duplicate_groups(prepass_keys(texts))
    sub = [texts[i] for i in g.index]
    v, c = hasher.sign_texts_with_counts(sub)
    from neardup.methods.minhash.candidates import Verifier, find_clusters
    from neardup.methods.minhash.lsh import band_keys

    lsh = config.lsh
    res = find_clusters(
        band_keys(v, lsh.bands, lsh.rows), np.flatnonzero(c > 0), Verifier.signature(v, 0.6), want_pairs=True
    )
    pa, pb, _ = g.expand_pairs(res.pairs_a, res.pairs_b, res.pairs_similarity, sub_empty=c == 0)
    sa, sb, _ = g.expand_pairs(res.pairs_a, res.pairs_b, res.pairs_similarity, sub_empty=c == 0, complete=False)
    assert len(sa) < len(pa)
    from neardup.core.components import components

    assert np.array_equal(components(len(texts), sa, sb), components(len(texts), pa, pb))
    assert np.array_equal(g.expand_root(res.root, sub_empty=c == 0), components(len(texts), pa, pb))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "A", "ﬁ", "fi", " ", "\n", "b", "\u00ad", "!"]), max_size=8).map("".join),
    st.lists(st.sampled_from(["a", "A", "ﬁ", "fi", " ", "\n", "b", "\u00ad", "!"]), max_size=8).map("".join),
)
def test_equal_prepass_keys_imply_equal_exact_keys(x, y):
    """Property: grouping by prepass_keys never merges texts that exact_keys tells apart."""
    p = prepass_keys([x, y])
    e = exact_keys([x, y])
    if (p[0] == p[1]).all():
        assert (e[0] == e[1]).all()
    assert (p[0] == p[1]).all() == (normalize(x) == normalize(y))


def test_expand_root_checks_length():
    g = exact_duplicate_groups(exact_keys(["a", "a", "b"]))
    with pytest.raises(ValueError, match="one per representative"):
        g.expand_root(np.array([0, 1, 2]))
    assert g.expand_root(np.array([0, 0])).tolist() == [0, 0, 0]


# --------------------------------------------------------------------------------------------
# I-Match


def signatures_of(texts, band, **kw):
    values, offsets = term_sets(texts)
    dfs = DocumentFrequencies()
    for s in range(0, len(texts), 37):  # batch by batch, as the job counts
        v, o = term_sets(texts[s : s + 37])
        dfs.add(v, o)
    terms, df = dfs.finish()
    return imatch_signatures(values, offsets, terms, df, df_bounds(len(texts), band), **kw)


@pytest.mark.parametrize(
    "band, lexicons, fraction, min_terms",
    [
        ((0.4, 0.75), 1, 1.0, 1),
        ((0.2, 0.9), 3, 0.6, 1),
        ((0.0, 1.0), 4, 0.5, 3),
        ((0.5, 0.5), 2, 1.0, 1),
    ],
)
def test_imatch_matches_reference(band, lexicons, fraction, min_terms):
    c = make_corpus(250, seed=3, copy_rate=0.4, max_edits=4, vocab=800)
    texts = c.texts + ["", "!!!", "Jack London, jack LONDON."]
    ref = imatch_ref(texts, band, lexicons, fraction, seed=7, min_terms=min_terms)
    sigs, has = signatures_of(texts, band, lexicons=lexicons, fraction=fraction, seed=7, min_terms=min_terms)
    got = [[tuple(map(int, sigs[d, j])) if has[d, j] else None for j in range(lexicons)] for d in range(len(texts))]
    assert got == ref
    groupings = [first_index_roots([r[j] for r in ref]) for j in range(lexicons)]
    assert match_roots(sigs, has).tolist() == union_roots(len(texts), groupings)


def test_df_counting_compacts_correctly(monkeypatch):
    monkeypatch.setattr(DocumentFrequencies, "_COMPACT", 50)
    texts = make_corpus(300, seed=1, vocab=500).texts
    dfs = DocumentFrequencies()
    for s in range(0, 300, 10):
        dfs.add(*term_sets(texts[s : s + 10]))
    terms, df = dfs.finish()
    expected = Counter(hash_str(t) for text in texts for t in set(tokenize(text)))
    assert dict(zip(terms.tolist(), df.tolist())) == expected
    assert np.all(np.diff(terms.astype(np.float64)) >= 0) and dfs.n_documents == 300


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 5000), st.floats(0, 1), st.floats(0, 1))
def test_df_bounds_are_the_idf_band(n, x, y):
    """Property: df_lo <= df <= df_hi exactly when lo <= ln(N/df)/ln(N) <= hi (away from ties)."""
    lo, hi = min(x, y), max(x, y)
    df_lo, df_hi = df_bounds(n, (lo, hi))
    for df in sorted({1, 2, 3, n // 3 + 1, n // 2 + 1, n - 1, n, df_lo - 1, df_lo, df_hi, df_hi + 1}):
        if not 1 <= df <= n:
            continue
        idf = math.log(n / df) / math.log(n)
        if min(abs(idf - lo), abs(idf - hi)) < 1e-9:
            continue
        assert (df_lo <= df <= df_hi) == (lo <= idf <= hi), (df, idf)


def test_imatch_golden_signature():
    texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "the cat sat"]
    sigs, has = signatures_of(texts, (0.0, 1.0), lexicons=2, fraction=0.5, seed=1)
    assert has.tolist() == [[True, True], [True, True], [True, True], [True, True]]
    assert tuple(map(int, sigs[3, 0])) == (0xE03A5FCEB3FAFAB3, 0xBD0FCB7AE0D92944)
    assert tuple(map(int, sigs[3, 1])) == (0x6F3F8C0415F28856, 0xB65A164B41953F94)


def pair_recall(root, source):
    by = defaultdict(list)
    for i, s in enumerate(source):
        by[s].append(i)
    total = found = 0
    for members in by.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                total += 1
                found += root[members[x]] == root[members[y]]
    return found / total


def test_multi_lexicon_recall_at_least_single_lexicon():
    """Property: more lexicons never lose a match (signature 0 is the full lexicon), and on
    lightly edited copies they find clearly more of them; precision stays high."""
    c = make_corpus(1500, seed=21, copy_rate=0.3, max_edits=2, vocab=3000)
    band = (0.3, 0.95)
    recalls = {}
    for lexicons in (1, 3, 8):
        sigs, has = signatures_of(c.texts, band, lexicons=lexicons, fraction=0.6)
        root = match_roots(sigs, has)
        recalls[lexicons] = pair_recall(root, c.source)
        wrong = sum(1 for i, r in enumerate(root) if c.source[i] != c.source[r])
        assert wrong <= 0.01 * len(root)
        if lexicons > 1:
            root1 = match_roots(sigs[:, :1], has[:, :1])
            assert np.all(root[root1] == root)  # every single-lexicon match is kept
    assert recalls[1] <= recalls[3] <= recalls[8]
    assert recalls[8] > recalls[1] + 0.1, recalls


def test_match_pairs_and_similarity():
    sigs = np.zeros((5, 2, 2), dtype=np.uint64)
    sigs[:, 0, 0] = [1, 1, 2, 2, 3]
    sigs[:, 1, 0] = [5, 5, 5, 6, 7]
    has = np.ones((5, 2), dtype=bool)
    has[4, :] = False
    a, b, s = match_pairs(sigs, has)
    assert list(zip(a.tolist(), b.tolist(), s.tolist())) == [(0, 1, 1.0), (0, 2, 0.5), (1, 2, 0.5), (2, 3, 0.5)]
    assert match_roots(sigs, has).tolist() == [0, 0, 0, 0, 4]
    assert match_similarity(sigs, has, np.array([0, 3, 4, 4]), np.array([1, 0, 4, 0])).tolist() == [1, 0, 1, 0]


# --------------------------------------------------------------------------------------------
# the jobs


def write_jsonl(path, texts):
    path.write_bytes(b"".join(orjson.dumps({"id": f"d{i}", "text": t}) + b"\n" for i, t in enumerate(texts)))
    return str(path)


def test_exact_job_end_to_end(tmp_path):
    texts = random_texts(600, 2)
    path = write_jsonl(tmp_path / "in.jsonl", texts)
    r1 = dedup([path], ExactConfig(), workers=1, batch_size=64, want_pairs=True)
    r4 = dedup([path], ExactConfig(), workers=4, batch_size=50, want_pairs=True)
    norm = [char_stream(t) or None for t in texts]
    assert r1.root.tolist() == r4.root.tolist() == first_index_roots(norm)
    assert r1.empty == sum(s is None for s in norm)
    a, b, s = r1.pairs
    assert list(zip(a.tolist(), b.tolist())) == [
        (i, j) for i in range(600) for j in range(i + 1, 600) if norm[i] is not None and norm[i] == norm[j]
    ]
    assert np.all(s == 1.0) and np.all(r1.similarity == 1.0)
    assert r1.n_removed == 600 - len(set(norm) - {None}) - sum(s is None for s in norm)
    assert "duplicates" in r1.summary["exact groups"]
    raw = dedup([path], ExactConfig(raw=True), workers=2, batch_size=64)
    assert raw.root.tolist() == first_index_roots([t or None for t in texts])
    assert raw.n_removed < r1.n_removed


def test_imatch_job_end_to_end(tmp_path):
    c = make_corpus(400, seed=5, copy_rate=0.3, max_edits=2, vocab=2000)
    texts = c.texts + ["", "zzz"]
    path = write_jsonl(tmp_path / "in.jsonl", texts)
    cfg = IMatchConfig(idf_band=(0.3, 0.95), lexicons=4, lexicon_fraction=0.6, seed=3)
    r1 = dedup([path], cfg, workers=1, batch_size=64, want_pairs=True)
    r3 = dedup([path], cfg, workers=3, batch_size=33, want_pairs=True)
    sigs, has = signatures_of(texts, cfg.idf_band, lexicons=4, fraction=0.6, seed=3)
    assert r1.root.tolist() == r3.root.tolist() == match_roots(sigs, has).tolist()
    assert all(np.array_equal(x, y) for x, y in zip(r1.pairs, r3.pairs))
    assert all(np.array_equal(x, y) for x, y in zip(r1.pairs, match_pairs(sigs, has)))
    assert r1.empty == int((~has[:, 0]).sum()) >= 1
    assert r1.n_removed > 50
    job_lines = {"verified pairs", "below threshold"}  # every method's job reports these
    assert set(r1.summary) == {"I-Match lexicon", "I-Match signatures", "I-Match groups"} | job_lines
    kept_sim = r1.similarity[~r1.keep_mask]
    assert np.all((kept_sim >= 0) & (kept_sim <= 1))


def test_config_validation():
    for bad in [
        dict(idf_band=(0.8, 0.2)),
        dict(idf_band=(-0.1, 0.5)),
        dict(idf_band=(0.1,)),
        dict(idf_band="x"),
        dict(lexicons=0),
        dict(lexicons=1.5),
        dict(lexicon_fraction=0),
        dict(lexicon_fraction=1.5),
        dict(min_terms=0),
        dict(seed=-1),
        dict(seed=2**64),
    ]:
        with pytest.raises(ValueError):
            IMatchConfig(**bad)
    assert IMatchConfig(idf_band=[0, 1]).idf_band == (0.0, 1.0)
    with pytest.raises(ValueError, match="raw"):
        ExactConfig(raw="yes")
    assert "normalized" in str(ExactConfig().scheme) and "raw" in str(ExactConfig(raw=True).scheme)


def test_prepass_table_matches_a_dict_reference_with_colliding_slots():
    """Keys that share their first half (same table slot) or their low bits, repeated across
    batches of uneven sizes, invalid rows never grouped, the table grown several times."""
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**64, size=(3000, 2), dtype=np.uint64)
    base[:500, 0] = base[0, 0]  # one slot, many different keys
    base[500:1000, 0] = np.arange(500, dtype=np.uint64) << np.uint64(40)  # equal low bits
    keys = base[rng.integers(0, len(base), size=20000)]
    valid = rng.random(len(keys)) > 0.05
    p = ExactPrepass()
    first: dict = {}
    want = []
    for i, (k, ok) in enumerate(zip(map(tuple, keys.tolist()), valid)):
        want.append(first.setdefault(k, i) if ok else i)
    got, lo = [], 0
    for size in [1, 7, 300, 4096, 2, 9000] * 10:
        if lo >= len(keys):
            break
        got.append(p.admit(keys[lo : lo + size], valid[lo : lo + size]))
        lo += size
    assert np.array_equal(p.groups().rep, np.array(want))
    assert np.array_equal(np.concatenate(got), np.array(want) == np.arange(len(keys)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=6), st.booleans(), st.booleans())
def test_prepass_keys_hash_the_normalized_utf8(texts, nfkc, casefold):
    """prepass_keys is nd128 of ``normalize(text)``'s UTF-8 bytes, whichever encoding path is taken."""
    want = [hash128(normalize(t, nfkc=nfkc, casefold=casefold).encode("utf-8", "surrogatepass")) for t in texts]
    got = prepass_keys(texts, nfkc=nfkc, casefold=casefold)
    assert [tuple(k) for k in got.tolist()] == want
