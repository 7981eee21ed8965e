"""Tests of the stable 64-bit hash scheme "nd64" (neardup._hash).

Properties checked:
- golden values: the hash of fixed inputs never changes (it is part of every sketch's scheme);
- an independent pure-Python implementation of the documented algorithm agrees with the kernel;
- no per-process salt: another interpreter computes the same values;
- ``hash_int`` accepts exactly the integers in [-2**63, 2**64).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import MASK64, hash_bytes, hash_int, hash_ints, hash_spans, hash_str

# ---------------------------------------------------------------------------------------------
# pure-Python reference, written from the module docstring (Python ints reduced mod 2**64)

REF_P1 = 0x9E3779B185EBCA87
REF_P2 = 0xC2B2AE3D27D4EB4F
REF_SEED = 0x27D4EB2F165667C5
REF_INT_SALT = 0x165667B19E3779F9


def ref_rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK64


def ref_fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    h ^= h >> 33
    return h


def ref_hash_bytes(b: bytes) -> int:
    """nd64 v1: 8-byte little-endian words (last one zero-padded), rotl-multiply rounds, fmix64(h ^ len)."""
    h = REF_SEED
    for i in range(0, len(b), 8):
        w = int.from_bytes(b[i : i + 8].ljust(8, b"\x00"), "little")
        h = (ref_rotl64(h ^ ((w * REF_P1) & MASK64), 31) * REF_P2) & MASK64
    return ref_fmix64(h ^ len(b))


def ref_hash_int(x: int) -> int:
    return ref_fmix64((x & MASK64) ^ REF_INT_SALT)


# ---------------------------------------------------------------------------------------------
# golden values, computed once and pinned: a change here changes every signature ever stored

GOLDEN_BYTES = [
    (b"", 0x9353DFC8A195F3E2),
    (b"a", 0xC53E0A87B0EFBAA7),
    (b"ab", 0xF29E64E8B64EF91B),
    (b"abcdefg", 0x1D94A00E769DED57),
    (b"abcdefgh", 0x874FD48B2DFC2EF7),  # exactly one word
    (b"abcdefghi", 0xB6998B7B8F04DC5C),  # one word + one padded byte
    (b"abcdefghijklmnop", 0xACD5729BB51B1172),  # two words
    (b"abcdefghijklmnopq", 0xA9F8B5467B3F65EC),  # two words + one padded byte
    (b"\x00", 0x386CBEEF17A5935E),
    (b"\x00\x00", 0x384764221E5568E1),
]

GOLDEN_STR = [
    ("", 0x9353DFC8A195F3E2),
    ("hello", 0xB4A0B1D470DA989A),
    ("Straße", 0xE63189D727D8CC79),
    ("東京", 0x39EEE6E63DEBE9AF),
    ("naïve café", 0x9B2C9986D73689D6),
    ("😀", 0xB79FEC541FC440F8),
]

GOLDEN_INT = [
    (0, 0xF490368ABA8BFEAC),
    (1, 0xA5B964E412570A04),
    (-1, 0x940A46006555DDBE),
    (42, 0x565CA29BCA656736),
    (2**63 - 1, 0xEAC4DBEB1EC10522),
    (-(2**63), 0x0B63E710EACB2DC6),
    (2**64 - 1, 0x940A46006555DDBE),
]


@pytest.mark.parametrize("data, expected", GOLDEN_BYTES, ids=[repr(d) for d, _ in GOLDEN_BYTES])
def test_hash_bytes_golden(data, expected):
    """hash_bytes of fixed inputs (crossing the 8-byte word boundary) equals its pinned value."""
    assert hash_bytes(data) == expected


@pytest.mark.parametrize("text, expected", GOLDEN_STR, ids=[ascii(t) for t, _ in GOLDEN_STR])
def test_hash_str_golden(text, expected):
    """hash_str (UTF-8, incl. non-ASCII and astral code points) equals its pinned value."""
    assert hash_str(text) == expected
    assert hash_str(text) == hash_bytes(text.encode("utf-8"))


@pytest.mark.parametrize("x, expected", GOLDEN_INT)
def test_hash_int_golden(x, expected):
    """hash_int of fixed integers (incl. negative, 2**63-1, -2**63, 2**64-1) equals its pinned value."""
    assert hash_int(x) == expected


def test_goldens_match_reference():
    """The pinned literals are the documented algorithm, not just whatever the kernel returned."""
    for data, expected in GOLDEN_BYTES:
        assert ref_hash_bytes(data) == expected
    for x, expected in GOLDEN_INT:
        assert ref_hash_int(x) == expected


def test_negative_int_is_twos_complement():
    """-1 and 2**64-1 share a 64-bit pattern, so they hash alike (documented two's complement)."""
    assert hash_int(-1) == hash_int(2**64 - 1)
    assert hash_int(-(2**63)) == hash_int(2**63)


def test_trailing_zero_bytes_are_told_apart():
    """Inputs differing only in trailing zero bytes (same padded words) hash differently (length in finaliser)."""
    values = {hash_bytes(b"x" + b"\x00" * k) for k in range(9)}
    assert len(values) == 9
    assert hash_bytes(b"") != hash_bytes(b"\x00")


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=80))
def test_hash_bytes_equals_reference(data):
    """The numba kernel equals the pure-Python nd64 reference on arbitrary bytes."""
    assert hash_bytes(data) == ref_hash_bytes(data)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_hash_str_equals_reference_on_utf8(text):
    """hash_str is the reference hash of the string's UTF-8 bytes."""
    assert hash_str(text) == ref_hash_bytes(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**64 - 1))
def test_hash_int_equals_reference(x):
    """hash_int equals fmix64((x mod 2**64) ^ INT_SALT) computed with Python ints."""
    assert hash_int(x) == ref_hash_int(x)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=30), max_size=10))
def test_hash_spans_equals_per_item_hash(blobs):
    """Batch hashing of concatenated spans equals hashing each span alone (no cross-span leakage)."""
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in blobs])
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    out = hash_spans(data, offsets)
    assert out.dtype == np.uint64
    assert out.tolist() == [ref_hash_bytes(b) for b in blobs]


def test_hash_ints_batch_equals_scalar():
    """hash_ints over an int64 array equals hash_int element by element."""
    xs = np.array([0, 1, -1, 42, 2**63 - 1, -(2**63)], dtype=np.int64)
    assert hash_ints(xs).tolist() == [hash_int(int(x)) for x in xs]


def test_stable_across_processes():
    """A fresh interpreter computes identical hashes: there is no per-process salt (unlike hash())."""
    code = (
        "import json; from neardup._kernels.hashing import hash_bytes, hash_str, hash_int; "
        "print(json.dumps([hash_bytes(b'abcdefghi'), hash_str('Straße'), hash_int(-1), hash_str('')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert json.loads(out.stdout) == [hash_bytes(b"abcdefghi"), hash_str("Straße"), hash_int(-1), hash_str("")]


@pytest.mark.parametrize("bad", [2**64, 2**64 + 5, -(2**63) - 1, -(2**100)])
def test_hash_int_range_errors(bad):
    """hash_int rejects integers outside [-2**63, 2**64) with ValueError."""
    with pytest.raises(ValueError):
        hash_int(bad)


def test_hash_int_range_boundaries_accepted():
    """The range ends -2**63 and 2**64-1 are accepted."""
    assert isinstance(hash_int(-(2**63)), int)
    assert isinstance(hash_int(2**64 - 1), int)
    assert 0 <= hash_int(2**64 - 1) <= MASK64
