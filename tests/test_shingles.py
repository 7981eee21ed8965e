"""Tests of shingling (neardup.shingles).

Properties checked:
- the seed examples (bigram Jaccard 3/8 and 0, the hobbit 5-grams, "modifying a word affects
  only k shingles");
- the numba kernel equals a slow pure-Python reference (tokenize / char_stream, join, hash_str)
  on generated text, for word and char shingles, set and multiset modes;
- edge cases: short documents give one shingle, empty ones none; a 5 MB document works;
- the fast paths (vectorized fixed-width and lockstep span hashing, ASCII lookup tables,
  lower-casing in the kernel for ``encode_for_sketch``) equal the general definitions.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.charclass import CHAR_CLASS, OTHER, SPACE, WORD
from neardup._kernels.hashing import hash_bytes, hash_spans, hash_str
from neardup._kernels.shingles import (
    _CHAR_LUT,
    _WORD_LUT,
    HASH_BLOCK,
    LOCKSTEP_WORDS,
    _hash_fixed,
    _hash_starts,
    lower_ascii,
)
from neardup.core.measures import jaccard
from neardup.text.normalize import char_stream, tokenize
from neardup.text.shingles import (
    Shingling,
    encode_for_sketch,
    encode_texts,
    shingle,
    shingle_batch,
    shingle_encoded,
)

# ---------------------------------------------------------------------------------------------
# reference


def ref_grams(text: str, sh: Shingling) -> list[str]:
    """The shingle strings of a text, written the slow, obvious way."""
    if sh.kind == "word":
        units = tokenize(text, nfkc=sh.nfkc, casefold=sh.casefold)
        sep = " "
    else:
        units = list(char_stream(text, strip_punctuation=sh.strip_punctuation, nfkc=sh.nfkc, casefold=sh.casefold))
        sep = ""
    if not units:
        return []
    if len(units) < sh.n:
        return [sep.join(units)]
    return [sep.join(units[i : i + sh.n]) for i in range(len(units) - sh.n + 1)]


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
    expected = {
        "in a hole in the",
        "a hole in the ground",
        "hole in the ground there",
        "in the ground there lived",
        "the ground there lived a",
        "ground there lived a hobbit",
    }
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
    st.sampled_from(
        list(
            "abc xyzAB  \t\n.,;!-'_0123\u00e9\u00df\ufb01\u00a0\u00ad\u200b\u0301"
            "\u0436\u03a3\u0915\u093f\u4e00\u4eac\u3042\u30a2\u0627\U0001f600\x00"
            "\u0e01\u0e48\u0e32\u0e40\u0e81\u0ec8\u1780\u17b6\u1000\u103b\u1039"  # Thai, Lao, Khmer, Myanmar
        )
    ),
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


def test_thai_lao_khmer_myanmar_letters_are_tokens_with_their_marks():
    """Scripts written without spaces: one token per letter, the marks after it joined to it."""
    assert tokenize("ที่นี่ภาษา") == ["ที่", "นี่", "ภ", "า", "ษ", "า"]
    assert tokenize("ສະບາຍດີ") == ["ສ", "ະ", "ບ", "າ", "ຍ", "ດີ"]
    assert tokenize("ខ្មែរ") == ["ខ្", "មែ", "រ"]
    assert tokenize("မြန်မာ") == ["မြ", "န်", "မာ"]
    assert tokenize("Thai ไทย 2024") == ["thai", "ไ", "ท", "ย", "2024"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_texts, max_size=6),
    st.sampled_from([Shingling("word", 3), Shingling("char", 4), Shingling("char", 2, strip_punctuation=True)]),
    st.booleans(),
)
def test_batch_equals_one_by_one(texts, sh, unique):
    """shingle_batch's CSR rows equal each text shingled alone (no state leaks between documents)."""
    values, offsets = shingle_batch(texts, sh, unique=unique)
    assert offsets.tolist()[0] == 0 and len(offsets) == len(texts) + 1
    assert np.all(np.diff(offsets) >= 0) and offsets[-1] == len(values)
    for i, t in enumerate(texts):
        assert values[offsets[i] : offsets[i + 1]].tolist() == ref_shingle(t, sh, unique)


@pytest.mark.parametrize("nfkc, casefold", [(False, False), (False, True), (True, False)])
def test_normalization_switches_reach_the_kernel(nfkc, casefold):
    """With NFKC or case folding off, the kernel still equals the reference with the same switches."""
    text = "\ufb01sh Ｆｕｌｌ STRA\u00dfE e\u0301t\u00e9 Caf\u00e9 \u4eac\u90fd"
    for sh in (Shingling("word", 2, nfkc=nfkc, casefold=casefold), Shingling("char", 3, nfkc=nfkc, casefold=casefold)):
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


@pytest.mark.parametrize(
    "text, sh, gram",
    [
        ("hello world", Shingling("word", 5), "hello world"),
        ("one", Shingling("word", 2), "one"),
        ("\u6771\u4eac", Shingling("word", 3), "\u6771 \u4eac"),
        ("abc", Shingling("char", 5), "abc"),
        ("  a  b ", Shingling("char", 8), "a b"),
    ],
)
def test_short_document_gives_one_shingle(text, sh, gram):
    """A document with fewer than n units (but at least one) is one shingle of all of them."""
    for unique in (True, False):
        assert shingle(text, sh, unique=unique).tolist() == [hash_str(gram)]


_EMPTY_CASES = [
    (text, sh)
    for sh in (
        Shingling("word", 1),
        Shingling("word", 5),
        Shingling("char", 1),
        Shingling("char", 5, strip_punctuation=True),
    )
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
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(2000)]
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
    grams = [" ".join(words[i : i + 5]) for i in range(len(words) - 4)]
    enc = [g.encode() for g in grams]
    offs = np.zeros(len(enc) + 1, dtype=np.int64)
    offs[1:] = np.cumsum([len(e) for e in enc])
    ref = hash_spans(np.frombuffer(b"".join(enc), dtype=np.uint8), offs)
    assert np.array_equal(multi, ref)
    uniq = shingle(text, sh)
    assert len(uniq) == len(set(grams))
    # char 8-grams over the same text: one per position
    assert len(shingle(text, Shingling("char", 8), unique=False)) == len(text) - 7


# ---------------------------------------------------------------------------------------------
# the fast paths equal the general ones


def _spans_ref(buf: np.ndarray, starts, ends) -> list[int]:
    return [hash_bytes(bytes(buf[s:e])) for s, e in zip(starts, ends)]


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(1, 24))
def test_hash_fixed_equals_hash_bytes(data, n):
    """``_hash_fixed`` (every n-byte window, vectorized; n = 1..24 crosses the one-word,
    two-word and lockstep paths) equals hash_bytes of each window, whatever lies past the end."""
    if len(data) < n:
        return
    m = len(data) - n + 1
    buf = np.frombuffer(data + bytes(range(200, 224)), dtype=np.uint8).copy()
    out = np.zeros(m + 3, dtype=np.uint64)
    _hash_fixed(buf, m, n, out, 3 if m > 3 else 0)
    at = 3 if m > 3 else 0
    assert out[at : at + m].tolist() == _spans_ref(buf, range(m), range(n, n + m))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=60), min_size=1, max_size=700), st.integers(1, 6), st.integers(0, 1))
def test_hash_starts_equals_hash_bytes(units, n, cut):
    """``_hash_starts`` (spans of n units hashed in lockstep, blocks of 256, spans over 40 bytes
    finished one by one) equals hash_bytes of each span ``buf[pos[s]:pos[s + n] - cut]``."""
    if cut:
        units = [u + b" " for u in units]
    if len(units) < n:
        return
    pos = np.zeros(len(units) + 1, dtype=np.int64)
    np.cumsum([len(u) for u in units], out=pos[1:])
    raw = b"".join(units)
    buf = np.zeros(((2 * len(raw) + 24) // 8 + 1) * 8, dtype=np.uint8)
    buf[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    buf[len(raw) :] = 0xA5
    m = len(units) - n + 1
    out = np.zeros(m, dtype=np.uint64)
    _hash_starts(
        buf, buf.view(np.uint64), pos, m, n, cut, out, 0, np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), np.uint64)
    )
    assert out.tolist() == _spans_ref(buf, pos[:m], pos[n : n + m] - cut)


def test_ascii_tables_agree_with_the_class_table():
    """The ASCII byte maps used by the first pass agree with CHAR_CLASS and with str.lower, and
    with the byte ranges the 64-byte steps test (separators <= 32 and DEL; words 0-9, A-Z, a-z)."""
    for c in range(128):
        cls = CHAR_CLASS[c]
        assert (_WORD_LUT[0, c] != 32) == (cls == WORD) == chr(c).isalnum()
        assert (_CHAR_LUT[0, c] == 32) == (cls in (SPACE, OTHER) or c == 32) == (c <= 32 or c == 127)
        for lut in (_WORD_LUT, _CHAR_LUT):
            if lut[0, c] != 32:
                assert lut[0, c] == c and lut[1, c] == ord(chr(c).lower())


_ascii_texts = st.text(alphabet=st.sampled_from(list("abcXYZ Q  \t\n\r.,;!-'_09\x00\x1f\x7f")), max_size=120)


@settings(max_examples=150, deadline=None)
@given(_ascii_texts, st.integers(1, 20), st.booleans(), st.booleans(), st.booleans())
def test_ascii_kernels_equal_reference(text, n, char, strip, casefold):
    """All-ASCII texts (the first pass's lookup-table paths, upper case lowered in the kernel,
    char n = 1..20) give the reference shingles."""
    sh = Shingling("char" if char else "word", n, strip_punctuation=strip, casefold=casefold)
    assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(_ascii_texts, _texts), max_size=8),
    st.sampled_from(
        [
            Shingling("word", 5),
            Shingling("char", 5),
            Shingling("char", 3, strip_punctuation=True),
            Shingling("word", 2, casefold=False),
            Shingling("char", 4, nfkc=False),
            Shingling("char", 9, casefold=False),
        ]
    ),
)
def test_encode_for_sketch_gives_the_same_shingles(texts, sh):
    """``encode_for_sketch`` (ASCII texts keep their case, the kernel lowers them) gives the same
    shingles, and so the same signatures, as ``encode_texts`` (bytes already lowered)."""
    lean = shingle_encoded(*encode_for_sketch(texts, sh), sh)
    full = shingle_encoded(*encode_texts(texts, sh), sh)
    assert lean[0].tolist() == full[0].tolist() and lean[1].tolist() == full[1].tolist()
    data, offsets = encode_for_sketch(texts, sh)
    raw, raw_offsets = encode_texts(texts, sh)
    assert offsets.tolist() == raw_offsets.tolist()
    assert (bytes(data).lower() if sh.casefold else bytes(data)) == bytes(raw)
    assert bytes(lower_ascii(data)) == bytes(data).lower()  # what the exact pre-pass hashes


@pytest.mark.parametrize(
    "text",
    [
        "\u00c9T\u00c9 caf\u00e9",
        "Stra\u00dfe STRASSE",
        "\u0130stanbul",
        "\u03a3\u039f\u03a3 \u03c3\u03bf\u03c2",
        "\ufb01sh \u212a \u017f",
        "ab\ud800CD",
        "\u00e9\u00fc \u2014 \u201cQ\u201d \u00a9",
        "\uff26\uff55\uff4c\uff4c",
        "\U00010400\U00010428 Deseret",
    ],
)
@pytest.mark.parametrize("nfkc, casefold", [(True, True), (False, True), (True, False), (False, False)])
def test_encode_for_sketch_differs_in_ascii_case_only(text, nfkc, casefold):
    """Non-ASCII texts: casefold is skipped only when every non-ASCII character folds to itself,
    so the bytes equal ``encode_texts``' up to ASCII case (which the kernels lower)."""
    sh = Shingling("word", 2, nfkc=nfkc, casefold=casefold)
    data, _ = encode_for_sketch([text, "ASCII Too"], sh)
    raw, _ = encode_texts([text, "ASCII Too"], sh)
    assert (bytes(data).lower() if casefold else bytes(data)) == bytes(raw)
    assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)


def test_long_word_shingles_and_many_per_document():
    """Word shingles longer than the lockstep words (40 bytes) and documents with more
    shingles than a hashing block (256) match the reference."""
    rng = random.Random(7)
    words = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.choice([1, 3, 7, 8, 9, 15, 16, 17, 30])))
        for _ in range(900)
    ]
    text = " ".join(words)
    for n in (1, 3, 5, 8):
        sh = Shingling("word", n)
        assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)
    text = "\u0436\u00e9 " + text  # non-ASCII: character spans of varying byte lengths
    for n in (5, 12):
        sh = Shingling("char", n)
        assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)


def _ref_chars64(doc: bytes, lower: bool):
    """The character stream rule on whole 64-byte steps, written byte by byte (no leading skip)."""
    out, prev = bytearray(), 0
    for c in doc:
        sep = c <= 32 or c == 127
        if not (sep and prev):
            out.append(32 if sep else (c | 32 if lower and 65 <= c <= 90 else c))
        prev = int(sep)
    return bytes(out), prev


def _ref_words64(doc: bytes, lower: bool):
    """Word tokens each followed by one space, and where each starts, byte by byte."""
    out, starts, prev = bytearray(), [], 0
    for c in doc:
        w = chr(c).isascii() and chr(c).isalnum()
        if w and not prev:
            starts.append(len(out))
        if w or prev:
            out.append((c | 32 if lower and 65 <= c <= 90 else c) if w else 32)
        prev = int(w)
    return bytes(out), starts, prev


_PACKS = {"vpcompressb": (True, False), "pshufb": (False, True), "generic": (False, False)}
"""How the 64-byte steps pack bytes: ``intrinsics.SIMD64`` and ``intrinsics.PACK8`` while they compile."""


@functools.cache
def _steps_runner(pack: str):
    """A function running ``chars64`` and ``words64`` over a document, compiled with the pack
    ``pack`` (numba's target must have its instructions: :func:`_compilable`)."""
    import numba as nb

    import neardup._kernels.intrinsics as intr

    @nb.njit
    def run(doc, buf, tok, lowbit):
        blen, prev, i = 0, 0, 0
        while i + 64 <= doc.shape[0]:
            blen, prev = intr.chars64(doc, i, buf, blen, prev, lowbit)
            i += 64
        wlen, nt, wprev, i = 0, 0, 0, 0
        wbuf = np.zeros(buf.shape[0], dtype=np.uint8)
        while i + 64 <= doc.shape[0]:
            wlen, nt, wprev = intr.words64(doc, i, wbuf, tok, wlen, nt, wprev, lowbit)
            i += 64
        return blen, prev, wbuf, wlen, nt, wprev

    old = intr.SIMD64, intr.PACK8
    intr.SIMD64, intr.PACK8 = _PACKS[pack]
    try:  # compile now, while the flags are set
        run(np.zeros(64, np.uint8), np.zeros(128, np.uint8), np.zeros(66, np.int64), np.uint8(0))
    finally:
        intr.SIMD64, intr.PACK8 = old
    return run


def _compilable(pack: str) -> bool:
    """Whether numba's target (host, or ``NUMBA_CPU_NAME``) has the instructions of ``pack``."""
    import neardup._kernels.intrinsics as intr

    return {"vpcompressb": intr.SIMD64, "pshufb": intr._target_has("avx2"), "generic": True}[pack]


def _check_steps(pack: str, doc: bytes, lower: bool) -> None:
    if not _compilable(pack):
        pytest.skip(f"numba's target has no {pack}")
    arr = np.frombuffer(doc, dtype=np.uint8)
    buf = np.zeros(len(doc) + 64, dtype=np.uint8)
    tok = np.zeros(len(doc) + 2, dtype=np.int64)
    blen, prev, wbuf, wlen, nt, wprev = _steps_runner(pack)(arr, buf, tok, np.uint8(32 if lower else 0))
    chars, cprev = _ref_chars64(doc, lower)
    assert (bytes(buf[:blen]), prev) == (chars, cprev)
    words, starts, pw = _ref_words64(doc, lower)
    assert (bytes(wbuf[:wlen]), tok[:nt].tolist(), wprev) == (words, starts, pw)


@pytest.mark.parametrize("pack", list(_PACKS))
@settings(max_examples=60, deadline=None)
@given(
    st.binary(min_size=64, max_size=256).map(lambda b: bytes(x & 0x7F for x in b[: len(b) // 64 * 64])), st.booleans()
)
def test_64_byte_steps_equal_the_byte_rules(pack, doc, lower):
    """``chars64`` and ``words64`` (64 ASCII bytes a step with vpcompressb, with pshufb 8 bytes
    at a time, or with LLVM's generic vector compress) follow the byte-by-byte rules."""
    _check_steps(pack, doc, lower)


def _edge_docs() -> list[bytes]:
    """64-byte multiples that stress the packs: all separators, all word bytes, runs of
    separators across the 8-, 16- and 32-byte group edges, alternating bytes (the most token
    starts), upper case."""
    docs = [b" " * 64, b"a" * 64, b"A" * 128, b"a " * 32, b" a" * 32, b"\x00\x7f" * 32, b"Ab.9" * 32]
    for edge in (7, 8, 9, 15, 16, 17, 31, 32, 33, 63):
        for run in (1, 2, 9):
            d = bytearray(b"Word" * 32)
            d[max(edge - run, 0) : edge + run] = b" " * len(d[max(edge - run, 0) : edge + run])
            docs.append(bytes(d))
    rng = random.Random(3)
    for _ in range(40):
        docs.append(bytes(rng.choice(b"aZ9 .\t\x7f-") for _ in range(64 * rng.randint(1, 3))))
    return docs


@pytest.mark.parametrize("pack", list(_PACKS))
@pytest.mark.parametrize("lower", [False, True])
def test_64_byte_steps_at_group_edges(pack, lower):
    """The steps on texts built to hit the packs' group edges follow the byte-by-byte rules."""
    for doc in _edge_docs():
        _check_steps(pack, doc, lower)


_long_ascii = st.text(alphabet=st.sampled_from(list("abX   \t\n.,-9")), min_size=60, max_size=200)
_mixed_texts = st.lists(
    st.one_of(
        _long_ascii,
        _texts,
        st.sampled_from(
            ["\u00e9", "\u4eac\u90fd", "\u00a0", "\u00ad", "\u200b", "\u0301", "\u3000", " \u00c9T\u00c9 "]
        ),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(_mixed_texts, st.integers(1, 8), st.booleans(), st.booleans(), st.booleans())
def test_long_mixed_texts_equal_reference(text, n, char, strip, casefold):
    """Texts with long ASCII stretches between non-ASCII characters (the 64-byte steps inside a
    text that is not all ASCII, resumed and left at any character class) give the reference shingles."""
    sh = Shingling("char" if char else "word", n, strip_punctuation=strip, casefold=casefold)
    assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)


def test_generated_mixed_documents_equal_reference():
    """Long generated documents: ASCII words, punctuation, case and runs of separators with
    non-ASCII characters of every class at random places, one every 20 to 400 characters."""
    rng = random.Random(11)
    pieces = ["word", "Other", "UPPER", "x9", "  ", "\n\n", ", ", "--", "\t", "a.b", "\x7f", "\x01"]
    rare = [
        "\u00e9",
        "\u00c9",
        "\u4eac",
        "\u00a0",
        "\u00ad",
        "\u200b",
        "\u0301",
        "\u3000",
        "\u00df",
        "\u2014",
        "\ufb01",
    ]
    for _ in range(30):
        out = []
        while sum(map(len, out)) < 3000:
            out.append(rng.choice(pieces) + " " * rng.randint(0, 1))
            if rng.random() < 0.04:
                out.append(rng.choice(rare))
        text = "".join(out)
        for sh in (
            Shingling("word", 5),
            Shingling("word", 1),
            Shingling("char", 5),
            Shingling("char", 2),
            Shingling("char", 5, strip_punctuation=True),
            Shingling("char", 11, casefold=False),
        ):
            assert shingle(text, sh, unique=False).tolist() == ref_shingle(text, sh, unique=False)
