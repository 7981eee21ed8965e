"""Tests of shingling (neardup.shingles).

Properties checked:
- the seed examples (bigram Jaccard 3/8 and 0, the hobbit 5-grams, "modifying a word affects
  only k shingles");
- the numba kernel equals a slow pure-Python reference (tokenize / char_stream, join, hash_str)
  on generated text, for word and char shingles, set and multiset modes;
- edge cases: short documents give one shingle, empty ones none; a 5 MB document works.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._hash import hash_spans, hash_str
from neardup.measures import jaccard
from neardup.shingles import Shingling, shingle, shingle_batch
from neardup.text import char_stream, tokenize

# ---------------------------------------------------------------------------------------------
# reference


def ref_grams(text: str, sh: Shingling) -> list[str]:
    """The shingle strings of a text, written the slow, obvious way."""
    if sh.kind == "word":
        units = tokenize(text, nfkc=sh.nfkc, casefold=sh.casefold)
        sep = " "
    else:
        units = list(char_stream(text, strip_punctuation=sh.strip_punctuation, nfkc=sh.nfkc,
                                 casefold=sh.casefold))
        sep = ""
    if not units:
        return []
    if len(units) < sh.n:
        return [sep.join(units)]
    return [sep.join(units[i:i + sh.n]) for i in range(len(units) - sh.n + 1)]


def ref_shingle(text: str, sh: Shingling, unique: bool = True) -> list[int]:
    hashes = [hash_str(g) for g in ref_grams(text, sh)]
    return sorted(set(hashes)) if unique else hashes


def as_set(text: str, sh: Shingling) -> set[int]:
    return set(shingle(text, sh).tolist())


# ---------------------------------------------------------------------------------------------
# the seed's examples

D1 = "Jack London traveled to Oakland"
D2 = "Jack London traveled to the city of Oakland"
D3 = "Jack traveled from Oakland to London"
HOBBIT = "In a hole in the ground there lived a hobbit"


def test_seed_bigram_jaccard():
    """Seed 000: with word bigrams J(d1, d2) = 3/8 and J(d1, d3) = J(d2, d3) = 0."""
    bi = Shingling("word", 2)
    s1, s2, s3 = as_set(D1, bi), as_set(D2, bi), as_set(D3, bi)
    assert (len(s1), len(s2), len(s3)) == (4, 7, 5)
    assert jaccard(s1, s2) == 3 / 8
    assert jaccard(s1, s3) == 0.0
    assert jaccard(s2, s3) == 0.0


def test_seed_bigram_sets_are_the_hand_written_strings():
    """Seed 000: s(d1) hashes exactly the slide's (lower-cased) bigram strings."""
    expected = {"jack london", "london traveled", "traveled to", "to oakland"}
    assert as_set(D1, Shingling("word", 2)) == {hash_str(s) for s in expected}


def test_seed_hobbit_five_grams():
    """Seed 000: 'In a hole in the ground there lived a hobbit' has exactly 6 word 5-grams."""
    got = shingle(HOBBIT, Shingling("word", 5))
    assert len(got) == 6
    expected = {"in a hole in the", "a hole in the ground", "hole in the ground there",
                "in the ground there lived", "the ground there lived a", "ground there lived a hobbit"}
    assert set(got.tolist()) == {hash_str(s) for s in expected}


def test_seed_modifying_a_word_changes_k_shingles():
    """Seed 000: for n = 3, 'lived' -> 'was' changes only the 3 shingles that contain the word."""
    tri = Shingling("word", 3)
    before = as_set(HOBBIT, tri)
    after = as_set(HOBBIT.replace("lived", "was"), tri)
    assert before - after == {hash_str(s) for s in ("ground there lived", "there lived a", "lived a hobbit")}
    assert after - before == {hash_str(s) for s in ("ground there was", "there was a", "was a hobbit")}
    assert len(before & after) == len(before) - 3


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_modifying_one_middle_word_changes_at_most_n(n):
    """Substituting one word (far from the ends, no repeats) removes exactly n shingles."""
    words = [f"w{i}" for i in range(30)]
    changed = list(words)
    changed[15] = "zzz"
    sh = Shingling("word", n)
    a, b = as_set(" ".join(words), sh), as_set(" ".join(changed), sh)
    assert len(a - b) == n and len(b - a) == n


# ---------------------------------------------------------------------------------------------
# kernel == reference

_alphabet = st.one_of(
    st.sampled_from(list("abc xyzAB  \t\n.,;!-'_0123\u00e9\u00df\ufb01\u00a0\u00ad\u200b\u0301"
                         "\u0436\u03a3\u0915\u093f\u4e00\u4eac\u3042\u30a2\u0627\U0001F600\x00")),
    st.characters(),
)
_texts = st.text(alphabet=_alphabet, max_size=60)


@settings(max_examples=150, deadline=None)
@given(_texts, st.integers(1, 6), st.booleans())
def test_word_kernel_equals_reference(text, n, unique):
    """Word n-gram kernel (n in 1..6) == tokenize + ' '.join + hash_str, as a set or a multiset in order."""
    sh = Shingling("word", n)
    assert shingle(text, sh, unique=unique).tolist() == ref_shingle(text, sh, unique)


@settings(max_examples=150, deadline=None)
@given(_texts, st.integers(1, 8), st.booleans(), st.booleans())
def test_char_kernel_equals_reference(text, n, strip, unique):
    """Char n-gram kernel (n in 1..8, with/without strip_punctuation) == char_stream slices + hash_str."""
    sh = Shingling("char", n, strip_punctuation=strip)
    assert shingle(text, sh, unique=unique).tolist() == ref_shingle(text, sh, unique)


@settings(max_examples=40, deadline=None)
@given(st.lists(_texts, max_size=6), st.sampled_from([Shingling("word", 3), Shingling("char", 4),
                                                      Shingling("char", 2, strip_punctuation=True)]),
       st.booleans())
def test_batch_equals_one_by_one(texts, sh, unique):
    """shingle_batch's CSR rows equal each text shingled alone (no state leaks between documents)."""
    values, offsets = shingle_batch(texts, sh, unique=unique)
    assert offsets.tolist()[0] == 0 and len(offsets) == len(texts) + 1
    assert np.all(np.diff(offsets) >= 0) and offsets[-1] == len(values)
    for i, t in enumerate(texts):
        assert values[offsets[i]:offsets[i + 1]].tolist() == ref_shingle(t, sh, unique)


@pytest.mark.parametrize("nfkc, casefold", [(False, False), (False, True), (True, False)])
def test_normalization_switches_reach_the_kernel(nfkc, casefold):
    """With NFKC or case folding off, the kernel still equals the reference with the same switches."""
    text = "\ufb01sh Ｆｕｌｌ STRA\u00dfE e\u0301t\u00e9 Caf\u00e9 \u4eac\u90fd"
    for sh in (Shingling("word", 2, nfkc=nfkc, casefold=casefold),
               Shingling("char", 3, nfkc=nfkc, casefold=casefold)):
        assert shingle(text, sh).tolist() == ref_shingle(text, sh)


def test_lone_surrogates_match_reference():
    """Lone surrogates (encoded with surrogatepass) are separators in both kernel and reference."""
    text = "ab\ud800cd ef"
    for sh in (Shingling("word", 1), Shingling("char", 2)):
        assert shingle(text, sh).tolist() == ref_shingle(text, sh)


def test_multiset_keeps_repeats_in_order():
    """unique=False returns shingles in text order with repeats (for weighted Jaccard)."""
    ab, ba = hash_str("a b"), hash_str("b a")
    assert shingle("a b a b a b", Shingling("word", 2), unique=False).tolist() == [ab, ba, ab, ba, ab]
    assert shingle("a b a b a b", Shingling("word", 2)).tolist() == sorted({ab, ba})


# ---------------------------------------------------------------------------------------------
# edge cases


@pytest.mark.parametrize("text, sh, gram", [
    ("hello world", Shingling("word", 5), "hello world"),
    ("one", Shingling("word", 2), "one"),
    ("\u6771\u4eac", Shingling("word", 3), "\u6771 \u4eac"),
    ("abc", Shingling("char", 5), "abc"),
    ("  a  b ", Shingling("char", 8), "a b"),
])
def test_short_document_gives_one_shingle(text, sh, gram):
    """A document with fewer than n units (but at least one) is one shingle of all of them."""
    for unique in (True, False):
        assert shingle(text, sh, unique=unique).tolist() == [hash_str(gram)]


_EMPTY_CASES = [
    (text, sh)
    for sh in (Shingling("word", 1), Shingling("word", 5), Shingling("char", 1),
               Shingling("char", 5, strip_punctuation=True))
    for text in ("", " ", "\t\n  \u00a0\u3000", "\u200b\u00ad")
] + [("!?.,", Shingling("word", 1)), ("!?.,", Shingling("char", 2, strip_punctuation=True))]


@pytest.mark.parametrize("text, sh", _EMPTY_CASES)
def test_empty_document_gives_no_shingles(text, sh):
    """Empty, whitespace-only, invisible-only (and, where stripped, punctuation-only) documents
    have the empty shingle set."""
    for unique in (True, False):
        got = shingle(text, sh, unique=unique)
        assert got.dtype == np.uint64 and len(got) == 0


def test_punctuation_is_content_for_unstripped_char_shingles():
    """Without strip_punctuation, a punctuation-only text is not empty for char shingles."""
    assert shingle("!?.,", Shingling("char", 2)).tolist() == sorted({hash_str(g) for g in ("!?", "?.", ".,")})


def test_empty_batch():
    """No texts: no hashes and offsets [0]."""
    values, offsets = shingle_batch([], Shingling("word", 3))
    assert len(values) == 0 and offsets.tolist() == [0]


def test_batch_with_empty_documents_keeps_rows():
    """Empty documents still own an (empty) CSR row, so row i is document i."""
    values, offsets = shingle_batch(["", "a b c", "", "c d"], Shingling("word", 2))
    assert np.diff(offsets).tolist() == [0, 2, 0, 1]


def test_word_strip_punctuation_is_normalized_away():
    """strip_punctuation changes nothing for word shingles, so the setting is folded to False."""
    assert Shingling("word", 3, strip_punctuation=True) == Shingling("word", 3)


@pytest.mark.parametrize("kwargs", [dict(kind="line"), dict(n=0), dict(n=-1), dict(n=2.0), dict(n=True)])
def test_invalid_shingling_rejected(kwargs):
    """Shingling validates kind and n with ValueError."""
    with pytest.raises(ValueError):
        Shingling(**kwargs)


def test_five_megabyte_document():
    """A 5 MB document is shingled and agrees with the reference on counts and on the set."""
    rng = random.Random(5)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(2000)]
    words = []
    size = 0
    while size < 5_000_000:
        w = rng.choice(vocab)
        words.append(w)
        size += len(w) + 1
    text = " ".join(words)
    assert len(text) >= 5_000_000
    # word 5-grams: the text is already normalized and tokenized by construction
    sh = Shingling("word", 5)
    multi = shingle(text, sh, unique=False)
    assert len(multi) == len(words) - 4
    grams = [" ".join(words[i:i + 5]) for i in range(len(words) - 4)]
    enc = [g.encode() for g in grams]
    offs = np.zeros(len(enc) + 1, dtype=np.int64)
    offs[1:] = np.cumsum([len(e) for e in enc])
    ref = hash_spans(np.frombuffer(b"".join(enc), dtype=np.uint8), offs)
    assert np.array_equal(multi, ref)
    uniq = shingle(text, sh)
    assert len(uniq) == len(set(grams))
    # char 8-grams over the same text: one per position
    assert len(shingle(text, Shingling("char", 8), unique=False)) == len(text) - 7
