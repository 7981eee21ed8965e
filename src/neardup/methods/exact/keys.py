"""Exact keys: one 128-bit key per document, equal keys = duplicates (and the pre-pass of every method).

Everything here is batch-first (arrays in, arrays out), numba for the per-byte loops, and fully
specified so that keys are the same on every process, platform and worker count. Golden tests
pin the values (``tests/test_exact.py``).

**nd128** (scheme ``"nd128"``, version 1), the 128-bit hash of a byte string ``x``
    Two 64-bit lanes over the same 8-byte little-endian words ``w`` of ``x`` (the last word
    zero-padded), with different seeds, multipliers and rotations::

        a = SEED;   for each w: a = rotl64(a ^ (w * P1), 31) * P2;   A = fmix64(a ^ len(x))
        b = SEED_B; for each w: b = rotl64(b ^ (w * Q1), 29) * Q2;   B = fmix64(b ^ len(x))

    The key is ``(A, B)`` as ``uint64[2]``. Lane A *is* nd64 (:func:`neardup._kernels.hashing.hash_bytes`),
    so ``key[0] == hash_bytes(x)``; lane B uses its own constants, so the lanes behave as two
    independent 64-bit hashes for non-adversarial input, and two different inputs share a key with
    probability about 2**-128. It is not a cryptographic hash: do not use it against an adversary.

**Exact key** of a text (:func:`exact_keys`)
    nd128 of the UTF-8 bytes of the text's *normalized form*, which is exactly
    ``neardup.text.normalize.char_stream(text, strip_punctuation=False)``: Unicode NFKC, case folding
    (``str.casefold``), then per character with the class table of :mod:`neardup._kernels.charclass`: format
    characters (class IGNORE: soft hyphen, zero-width space, ...) are dropped, every run of
    whitespace and other separators (classes SPACE and OTHER) becomes one space, and there is no
    space at either end. Letters, digits, ideographs, punctuation and symbols are kept as they are.
    With ``raw=True`` the key is nd128 of the text's UTF-8 bytes, untouched.

    Every shingle set neardup computes (word or character n-grams) is a function of this
    normalized form, so equal exact keys imply equal shingle sets, MinHash signatures and
    similarities: that is what makes the exact pre-pass (:func:`exact_duplicate_groups`,
    :class:`ExactPrepass`) a pure optimisation for the near-duplicate methods.

    A text whose normalized form is empty has the key :data:`EMPTY_KEY` (nd128 of ``b""``); the
    jobs treat such documents as empty: they never match anything.

I-Match signatures, also nd128 keys, are defined in :mod:`neardup.methods.imatch.signatures`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._kernels.charclass import CHAR_CLASS
from ..._kernels.exact import keys_kernel
from ...text.normalize import normalize
from ...text.shingles import Shingling, encode_texts

EXACT_SCHEME = "nd128"


EXACT_VERSION = 1


def _pack(encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def hash128(data: bytes) -> tuple[int, int]:
    """nd128 of a byte string as two Python ints (lane A, lane B).

    >>> from neardup._kernels.hashing import hash_bytes
    >>> hash128(b"hello")[0] == hash_bytes(b"hello")
    True
    """
    arr, offsets = _pack([bytes(data)])
    out = np.empty((1, 2), dtype=np.uint64)
    keys_kernel(arr, offsets, CHAR_CLASS, True, out)
    return int(out[0, 0]), int(out[0, 1])


def hash128_str(s: str) -> tuple[int, int]:
    """nd128 of a string's UTF-8 bytes (lone surrogates pass through, as everywhere in neardup)."""
    return hash128(s.encode("utf-8", "surrogatepass"))


def keys_from_encoded(data: np.ndarray, offsets: np.ndarray, raw: bool = False) -> np.ndarray:
    """Exact keys of documents already packed as UTF-8 ``(data, offsets)``.

    For a caller that has run NFKC and case folding itself (e.g. :func:`neardup.text.shingles.encode_texts`):
    ``raw=False`` applies only the per-character step of the normalization.
    """
    out = np.empty((len(offsets) - 1, 2), dtype=np.uint64)
    keys_kernel(np.asarray(data, dtype=np.uint8), np.asarray(offsets, dtype=np.int64), CHAR_CLASS, raw, out)
    return out


def exact_keys(texts: Sequence[str], raw: bool = False, *, nfkc: bool = True, casefold: bool = True) -> np.ndarray:
    """Exact keys ``uint64[n, 2]`` of texts: nd128 of the normalized text, or of the raw UTF-8 bytes.

    ``nfkc`` and ``casefold`` switch off those two normalization steps (use the values of the
    ``Shingling`` of the method the keys serve); ``raw=True`` ignores them.

    >>> k = exact_keys(["Hello,  WORLD\\n", "hello, world", "hello world"])
    >>> bool((k[0] == k[1]).all()), bool((k[1] == k[2]).all())
    (True, False)
    """
    if raw:
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    else:
        encoded = [normalize(t, nfkc=nfkc, casefold=casefold).encode("utf-8", "surrogatepass") for t in texts]
    data, offsets = _pack(encoded)
    return keys_from_encoded(data, offsets, raw)


def prepass_keys(texts: Sequence[str], *, nfkc: bool = True, casefold: bool = True) -> np.ndarray:
    """Cheaper keys for the exact pre-pass: nd128 of the UTF-8 bytes after NFKC and case folding
    only (no per-character pass), i.e. ``keys_from_encoded(*shingles.encode_texts(texts, sh), raw=True)``.

    Equal pre-pass keys imply equal exact keys, hence equal shingle sets, so grouping by them is
    as safe as grouping by :func:`exact_keys`; it catches byte-identical, case and compatibility
    variants, not whitespace-only ones (those are still found by the method itself, at similarity
    1.0). About 3x cheaper than :func:`exact_keys` (see docs/exact.md).

    >>> k = prepass_keys(["Hello World", "HELLO WORLD", "hello  world"])
    >>> bool((k[0] == k[1]).all()), bool((k[0] == k[2]).all())
    (True, False)
    """
    return keys_from_encoded(*encode_texts(texts, Shingling("word", 1, nfkc=nfkc, casefold=casefold)), raw=True)


# hash128(b"") written out, so that importing the module does not run a kernel (a test pins it)
EMPTY_KEY: np.ndarray = np.array([0x9353DFC8A195F3E2, 0x898CCD7541E68504], dtype=np.uint64)
"""The key of every text whose normalized form is empty (nd128 of ``b""``)."""


def nonempty(keys: np.ndarray) -> np.ndarray:
    """bool[n]: the keys that are not :data:`EMPTY_KEY`."""
    keys = np.asarray(keys, dtype=np.uint64)
    return (keys != EMPTY_KEY).any(axis=1)
