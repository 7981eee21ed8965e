"""SimHash fingerprints: random-hyperplane LSH for cosine similarity, 64 or 128 bits.

**The math** (Charikar, "Similarity estimation techniques from rounding algorithms", STOC 2002).
For a vector x and a random hyperplane through the origin with normal r (spherically
symmetric), let h_r(x) = [r . x > 0]. Two vectors at angle theta fall on different sides of
the hyperplane with probability theta / pi, so

    Pr[h_r(a) = h_r(b)] = 1 - theta(a, b) / pi.

With f independent hyperplanes the fingerprint of x is the f bits h_r1(x) .. h_rf(x); the
Hamming distance d of two fingerprints is Binomial(f, theta / pi), d / f estimates theta / pi,
and cos(pi d / f) estimates the cosine similarity (:func:`estimated_cosine`). Manku, Jain and
Das Sarma ("Detecting near-duplicates for web crawling", WWW 2007) showed that 64-bit
fingerprints of weighted features with k = 3 find near-duplicate web pages among billions; the
search for all fingerprints within distance k is in :mod:`neardup.methods.simhash.search`.

**Documents** (hash family ``"nd64/fmix64-sign"``, format version 1). A document is the vector
of its feature weights: its shingles (:mod:`neardup.text.shingles`, one 64-bit hash x per
occurrence, in text order) with weight 1 per occurrence (``weighting="count"``: the shingle
counts) or an IDF weight per occurrence (``weighting="idf"``, :class:`IdfTable`). The
hyperplane coordinate of feature x for fingerprint word w is the sign pattern of

    r_w(x) = fmix64(x XOR s_w),   s_w = splitmix64(seed XOR SIMHASH_SALT + w * 0x9E3779B97F4A7C15)

(``fmix64`` and ``splitmix64`` from :mod:`neardup._kernels.hashing`): bit j of word w of the fingerprint
is 1 exactly when sum over occurrences of weight * (+1 if bit j of r_w(x) is set else -1) is
positive. Ties (including an empty document) give 0. Fingerprint bit i lies in word i // 64 at
position i % 64; 128-bit fingerprints use two salts (two independent hashes), and their first
64 bits equal the 64-bit fingerprint with the same seed. Count sums are exact integers; IDF
weights are integers (256 * idf, rounded), so fingerprints never depend on summation order.

**Dense vectors** (hash family ``"splitmix64/box-muller"``). Hyperplane j has Gaussian
coordinates G[i, j] made by Box-Muller from SplitMix64 counters, fully specified so they never
depend on numpy's random streams: with c = j * 2**32 + i, s = seed XOR HYPERPLANE_SALT,
z1 = splitmix64(s + 2c * gamma), z2 = splitmix64(s + (2c + 1) * gamma),
u1 = ((z1 >> 11) + 1) / 2**53, u2 = (z2 >> 11) / 2**53 and G[i, j] = sqrt(-2 ln u1) cos(2 pi u2).
Bit j of a vector's fingerprint is [x . G[:, j] > 0] (a zero vector gives 0). Column j is the
same for every dimension and width, so 64-bit fingerprints are prefixes of 128-bit ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..._kernels.hashing import MASK64
from ...core.errors import IncompatibleSketchError
from ...core.schemes import Scheme
from ...core.validation import Choice, Instance, Integer, Optional, check, conflict
from ...text.shingles import Shingling

__all__ = [
    "DEFAULT_SHINGLING",
    "FORMAT_VERSION",
    "HASH_FAMILY",
    "HYPERPLANE_SALT",
    "SIMHASH_SALT",
    "VECTOR_FAMILY",
    "Fingerprints",
    "SimHashScheme",
    "estimated_cosine",
    "hamming",
    "popcount_array",
]

FORMAT_VERSION = 2  # 2: letters of Thai, Lao, Khmer and Myanmar are tokens of their own (with their marks)


HASH_FAMILY = "nd64/fmix64-sign"


VECTOR_FAMILY = "splitmix64/box-muller"


SIMHASH_SALT = 0x53494D4841534821  # "SIMHASH!"


HYPERPLANE_SALT = 0x4859504552504C4E  # "HYPERPLN"


DEFAULT_SHINGLING = Shingling("word", 2)


BITS = Choice((64, 128))
"""The fingerprint widths."""

_WORD = Integer(0, MASK64)
_DIM = Integer(1, 2**32 - 1)


# ---------------------------------------------------------------------------------------------
# scheme and fingerprints
@dataclass(frozen=True)
class SimHashScheme(Scheme):
    """Everything that determines a SimHash fingerprint; fingerprints of different schemes never mix.

    Attributes:
        bits: f, the fingerprint width: 64 or 128.
        seed: seeds the per-feature hyperplanes (an integer in [0, 2**64)).
        shingling: how text becomes features; ``None`` for features given already hashed or
            for dense vectors.
        weighting: ``"count"`` (each shingle weighs its number of occurrences) or ``"idf"``
            (each occurrence weighs the shingle's inverse document frequency, see ``IdfTable``).
        idf_digest: for ``weighting="idf"``, the digest of the IDF table used (set by SimHasher);
            two IDF tables give incompatible fingerprints.
        dim: for dense vectors, their dimension; ``None`` otherwise.
        hash_family: ``HASH_FAMILY`` for features, ``VECTOR_FAMILY`` for dense vectors.
        format_version: bumped whenever the same inputs would give different values.

    >>> SimHashScheme(bits=128).to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'scheme': 'simhash', 'format_version': 2, 'bits': 128, 'seed': 1,
     'shingling': {'kind': 'word', 'n': 2, 'strip_punctuation': False, 'nfkc': True, 'casefold': True},
     'weighting': 'count', 'idf_digest': None, 'dim': None, 'hash_family': 'nd64/fmix64-sign'}
    """

    kind = "simhash"

    bits: int = 64
    seed: int = 1
    shingling: Shingling | None = field(default_factory=lambda: DEFAULT_SHINGLING)
    weighting: Literal["count", "idf"] = "count"
    idf_digest: int | None = None
    dim: int | None = None
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "bits", check("bits", self.bits, BITS))
        set_(self, "seed", check("seed", self.seed, _WORD))
        check("shingling", self.shingling, Optional(Instance(Shingling)))
        set_(self, "weighting", check("weighting", self.weighting, Choice(("count", "idf"))))
        set_(self, "idf_digest", check("idf_digest", self.idf_digest, Optional(_WORD)))
        set_(self, "dim", check("dim", self.dim, Optional(_DIM)))
        set_(self, "hash_family", check("hash_family", self.hash_family, Choice((HASH_FAMILY, VECTOR_FAMILY))))
        set_(self, "format_version", check("format_version", self.format_version, Integer(1, FORMAT_VERSION)))
        if self.idf_digest is not None and self.weighting != "idf":
            raise conflict("idf_digest is only meaningful with weighting='idf'")
        if self.hash_family == VECTOR_FAMILY:
            if self.dim is None:
                raise conflict("a dense-vector scheme needs dim")
            if self.shingling is not None or self.weighting != "count":
                raise conflict("a dense-vector scheme has no shingling or weighting")
        elif self.dim is not None:
            raise conflict("dim is only meaningful for dense vectors (hash_family=VECTOR_FAMILY)")

    @property
    def words(self) -> int:
        """W = bits / 64, uint64 words per fingerprint."""
        return self.bits // 64

    def check_compatible(self, other: SimHashScheme) -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
        if self != other:
            raise IncompatibleSketchError(f"fingerprints of different schemes cannot be compared: {self} vs {other}")

    def salts(self) -> np.ndarray:
        """s_w for w < W, uint64[W] (see the module docstring)."""
        from ..._kernels.simhash import simhash_salt_array  # kernels load when first used

        return simhash_salt_array(np.uint64(self.seed ^ SIMHASH_SALT), self.words)

    def hyperplanes(self, dim: int) -> np.ndarray:
        """G, float64[dim, bits]: the Gaussian hyperplane normals for vectors of ``dim`` coordinates."""
        dim = check("dim", dim, _DIM)
        from ..._kernels.simhash import hyperplanes

        return hyperplanes(np.uint64(self.seed ^ HYPERPLANE_SALT), dim, self.bits)


@dataclass(frozen=True, eq=False)
class Fingerprints:
    """A batch of SimHash fingerprints: ``values`` is uint64[n] (64 bits) or uint64[n, 2] (128 bits).

    Bit i of a 128-bit fingerprint is bit i % 64 of word i // 64.
    """

    values: np.ndarray
    scheme: SimHashScheme

    def __post_init__(self) -> None:
        v = self.values
        shape_ok = v.ndim == 1 if self.scheme.bits == 64 else (v.ndim == 2 and v.shape[1] == 2)
        if v.dtype != np.uint64 or not shape_ok:
            want = "(n,)" if self.scheme.bits == 64 else "(n, 2)"
            raise ValueError(
                f"{self.scheme.bits}-bit fingerprint values must be uint64 of shape {want}, got {v.dtype} {v.shape}"
            )

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, index) -> Fingerprints:
        rows = self.values[index]
        return Fingerprints(rows.reshape(-1) if self.scheme.bits == 64 else rows.reshape(-1, 2), self.scheme)

    @property
    def bits(self) -> int:
        return self.scheme.bits

    @property
    def words(self) -> np.ndarray:
        """The values as uint64[n, W]."""
        return self.values.reshape(len(self), -1)

    def to_ints(self) -> list[int]:
        """Each fingerprint as a Python int (word 0 in the low 64 bits)."""
        w = self.words
        return [sum(int(x) << (64 * q) for q, x in enumerate(row)) for row in w.tolist()]

    def hamming(self, i: int, other: Fingerprints | None = None, j: int = 0) -> int:
        """Hamming distance between row i and row j of ``other`` (default: this batch)."""
        other = self if other is None else other
        self.scheme.check_compatible(other.scheme)
        return int(popcount_array(self.words[i] ^ other.words[j]).sum())

    def cosine(self, i: int, other: Fingerprints | None = None, j: int = 0) -> float:
        """The estimated cosine cos(pi d / f) between row i and row j of ``other``."""
        return float(estimated_cosine(self.hamming(i, other, j), self.bits))


def hamming(a: Any, b: Any) -> np.ndarray | int:
    """Hamming distance(s) between fingerprints: Python ints, or arrays that broadcast.

    A 0-D or 1-D array holds 64-bit fingerprints (one distance each); a 2-D array holds one
    fingerprint per row, its W words summed (uint64[n, 2] for 128 bits). ``Fingerprints`` are
    accepted (their schemes must agree).

    >>> hamming(0b1011, 0b0110)
    3
    >>> hamming(np.array([1, 3], dtype=np.uint64), np.uint64(0)).tolist()
    [1, 2]
    """
    if isinstance(a, Fingerprints) and isinstance(b, Fingerprints):
        a.scheme.check_compatible(b.scheme)
    if isinstance(a, Fingerprints):
        a = a.values
    if isinstance(b, Fingerprints):
        b = b.values
    if isinstance(a, int) and isinstance(b, int):
        return bin(a ^ b).count("1")
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    counts = popcount_array(x)
    if counts.ndim == 2:
        counts = counts.sum(axis=1)
    elif counts.ndim > 2:
        raise ValueError(f"fingerprint arrays have at most 2 dimensions, got {counts.ndim}")
    return int(counts) if counts.ndim == 0 else counts


def popcount_array(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def estimated_cosine(d: Any, bits: int) -> Any:
    """cos(pi d / f): the cosine similarity estimated from Hamming distance d of f-bit fingerprints.

    d / f estimates theta / pi (Charikar 2002), so cos(pi d / f) estimates cos(theta).

    >>> round(estimated_cosine(3, 64), 4), estimated_cosine(0, 128)
    (0.9892, 1.0)
    """
    bits = check("bits", bits, BITS)
    r = np.cos(np.pi * np.asarray(d, dtype=np.float64) / bits)
    return float(r) if r.ndim == 0 else r
