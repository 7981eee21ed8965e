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
search for all fingerprints within distance k is in :mod:`neardup.hamming`.

**Documents** (hash family ``"nd64/fmix64-sign"``, format version 1). A document is the vector
of its feature weights: its shingles (:mod:`neardup.shingles`, one 64-bit hash x per
occurrence, in text order) with weight 1 per occurrence (``weighting="count"``: the shingle
counts) or an IDF weight per occurrence (``weighting="idf"``, :class:`IdfTable`). The
hyperplane coordinate of feature x for fingerprint word w is the sign pattern of

    r_w(x) = fmix64(x XOR s_w),   s_w = splitmix64(seed XOR SIMHASH_SALT + w * 0x9E3779B97F4A7C15)

(``fmix64`` and ``splitmix64`` from :mod:`neardup._hash`): bit j of word w of the fingerprint
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

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Sequence

import numba as nb
import numpy as np

from ._hash import MASK64, fmix64, hash_spans, splitmix64
from .errors import IncompatibleSketchError
from .hamming import radix_sort_with
from .shingles import (_HASH_BLOCK, _LOCKSTEP_WORDS, Shingling, _doc_hashes, _kind_code, _scratch, encode_texts,
                       shingle_texts_kernel)
from .text import CHAR_CLASS

FORMAT_VERSION = 1
HASH_FAMILY = "nd64/fmix64-sign"
VECTOR_FAMILY = "splitmix64/box-muller"
SIMHASH_SALT = 0x53494D4841534821  # "SIMHASH!"
HYPERPLANE_SALT = 0x4859504552504C4E  # "HYPERPLN"
IDF_SCALE = 256
_GAMMA = 0x9E3779B97F4A7C15
DEFAULT_SHINGLING = Shingling("word", 2)


# ---------------------------------------------------------------------------------------------
# scheme and fingerprints


def _check_int(name: str, v: Any, lo: int, hi: int) -> None:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")


@dataclass(frozen=True)
class SimHashScheme:
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
    """

    bits: int = 64
    seed: int = 1
    shingling: Shingling | None = field(default_factory=lambda: DEFAULT_SHINGLING)
    weighting: Literal["count", "idf"] = "count"
    idf_digest: int | None = None
    dim: int | None = None
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.bits not in (64, 128) or isinstance(self.bits, bool):
            raise ValueError(f"bits must be 64 or 128, got {self.bits!r}")
        _check_int("seed", self.seed, 0, MASK64)
        if self.shingling is not None and not isinstance(self.shingling, Shingling):
            raise TypeError(f"shingling must be a Shingling or None, got {type(self.shingling).__name__}")
        if self.weighting not in ("count", "idf"):
            raise ValueError(f"weighting must be 'count' or 'idf', got {self.weighting!r}")
        if self.idf_digest is not None:
            _check_int("idf_digest", self.idf_digest, 0, MASK64)
            if self.weighting != "idf":
                raise ValueError("idf_digest is only meaningful with weighting='idf'")
        if self.hash_family not in (HASH_FAMILY, VECTOR_FAMILY):
            raise ValueError(f"hash_family must be {HASH_FAMILY!r} or {VECTOR_FAMILY!r}, got {self.hash_family!r}")
        if self.hash_family == VECTOR_FAMILY:
            if self.dim is None:
                raise ValueError("a dense-vector scheme needs dim")
            _check_int("dim", self.dim, 1, 2**32 - 1)
            if self.shingling is not None or self.weighting != "count":
                raise ValueError("a dense-vector scheme has no shingling or weighting")
        elif self.dim is not None:
            raise ValueError("dim is only meaningful for dense vectors (hash_family=VECTOR_FAMILY)")

    @property
    def words(self) -> int:
        """W = bits / 64, uint64 words per fingerprint."""
        return self.bits // 64

    def check_compatible(self, other: "SimHashScheme") -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
        if self != other:
            raise IncompatibleSketchError(
                f"fingerprints of different schemes cannot be compared: {self} vs {other}")

    def salts(self) -> np.ndarray:
        """s_w for w < W, uint64[W] (see the module docstring)."""
        return _salts(np.uint64(self.seed ^ SIMHASH_SALT), self.words)

    def hyperplanes(self, dim: int) -> np.ndarray:
        """G, float64[dim, bits]: the Gaussian hyperplane normals for vectors of ``dim`` coordinates."""
        _check_int("dim", dim, 1, 2**32 - 1)
        return _hyperplanes(np.uint64(self.seed ^ HYPERPLANE_SALT), dim, self.bits)


@nb.njit(cache=True)
def _salts(seed, w):
    out = np.empty(w, dtype=np.uint64)
    for i in range(w):
        out[i] = splitmix64(seed + np.uint64(i) * np.uint64(_GAMMA))
    return out


@nb.njit(cache=True)
def _hyperplanes(seed, dim, bits):
    g = np.empty((dim, bits), dtype=np.float64)
    gamma = np.uint64(_GAMMA)
    scale = 1.0 / 9007199254740992.0  # 2**-53
    for j in range(bits):
        for i in range(dim):
            c = (np.uint64(j) << np.uint64(32)) | np.uint64(i)
            z1 = splitmix64(seed + (c << np.uint64(1)) * gamma)
            z2 = splitmix64(seed + ((c << np.uint64(1)) | np.uint64(1)) * gamma)
            u1 = (np.float64(z1 >> np.uint64(11)) + 1.0) * scale
            u2 = np.float64(z2 >> np.uint64(11)) * scale
            g[i, j] = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return g


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
            raise ValueError(f"{self.scheme.bits}-bit fingerprint values must be uint64 of shape {want}, "
                             f"got {v.dtype} {v.shape}")

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, index) -> "Fingerprints":
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

    def hamming(self, i: int, other: "Fingerprints | None" = None, j: int = 0) -> int:
        """Hamming distance between row i and row j of ``other`` (default: this batch)."""
        other = self if other is None else other
        self.scheme.check_compatible(other.scheme)
        return int(_popcount_array(self.words[i] ^ other.words[j]).sum())

    def cosine(self, i: int, other: "Fingerprints | None" = None, j: int = 0) -> float:
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
    counts = _popcount_array(x)
    if counts.ndim == 2:
        counts = counts.sum(axis=1)
    elif counts.ndim > 2:
        raise ValueError(f"fingerprint arrays have at most 2 dimensions, got {counts.ndim}")
    return int(counts) if counts.ndim == 0 else counts


def _popcount_array(x: np.ndarray) -> np.ndarray:
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
    if bits not in (64, 128):
        raise ValueError(f"bits must be 64 or 128, got {bits!r}")
    r = np.cos(np.pi * np.asarray(d, dtype=np.float64) / bits)
    return float(r) if r.ndim == 0 else r


# ---------------------------------------------------------------------------------------------
# kernels: weighted sign sums


@nb.njit(inline="always", cache=True)
def _fold_count(hashes, lo, hi, salt, cnt):
    """One 64-bit word of the count-weighted fingerprint of hashes[lo:hi] (weight 1 each).

    Eight uint64 accumulators hold 64 byte-wide counters (bit j of r is counted in byte j // 8
    of accumulator j % 8) and are flushed into ``cnt`` (int64[64]) every 255 hashes.
    """
    lanes = np.uint64(0x0101010101010101)
    cnt[:] = 0
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.uint64(0)
    pending = 0
    for i in range(lo, hi):
        r = fmix64(hashes[i] ^ salt)
        a0 += r & lanes
        a1 += (r >> np.uint64(1)) & lanes
        a2 += (r >> np.uint64(2)) & lanes
        a3 += (r >> np.uint64(3)) & lanes
        a4 += (r >> np.uint64(4)) & lanes
        a5 += (r >> np.uint64(5)) & lanes
        a6 += (r >> np.uint64(6)) & lanes
        a7 += (r >> np.uint64(7)) & lanes
        pending += 1
        if pending == 255 or i == hi - 1:
            for b in range(8):
                sh = np.uint64(8 * b)
                cnt[8 * b + 0] += np.int64((a0 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 1] += np.int64((a1 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 2] += np.int64((a2 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 3] += np.int64((a3 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 4] += np.int64((a4 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 5] += np.int64((a5 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 6] += np.int64((a6 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 7] += np.int64((a7 >> sh) & np.uint64(0xFF))
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.uint64(0)
            pending = 0
    total = hi - lo
    word = np.uint64(0)
    for j in range(64):
        if 2 * cnt[j] > total:
            word |= np.uint64(1) << np.uint64(j)
    return word


@nb.njit(inline="always", cache=True)
def _fold_weighted(hashes, weights, lo, hi, salt, acc):
    """One 64-bit word of the fingerprint of hashes[lo:hi] with weights[lo:hi].

    ``acc`` (length 65, the weights' dtype) ends with acc[j] = sum of the weights whose bit j is
    set and acc[64] = sum of all weights; bit j is set when 2 * acc[j] > acc[64].
    """
    acc[:] = 0
    for i in range(lo, hi):
        r = fmix64(hashes[i] ^ salt)
        w = weights[i]
        acc[64] += w
        for j in range(64):
            acc[j] += w * np.int64((r >> np.uint64(j)) & np.uint64(1))
    word = np.uint64(0)
    for j in range(64):
        if 2 * acc[j] > acc[64]:
            word |= np.uint64(1) << np.uint64(j)
    return word


@nb.njit(cache=True, nogil=True)
def _simhash_csr(hashes, offsets, salts, out):
    cnt = np.empty(64, dtype=np.int64)
    for d in range(offsets.shape[0] - 1):
        for w in range(salts.shape[0]):
            out[d, w] = _fold_count(hashes, offsets[d], offsets[d + 1], salts[w], cnt)


@nb.njit(cache=True, nogil=True)
def _simhash_csr_weighted(hashes, weights, offsets, salts, out):
    acc = np.empty(65, dtype=weights.dtype)
    for d in range(offsets.shape[0] - 1):
        for w in range(salts.shape[0]):
            out[d, w] = _fold_weighted(hashes, weights, offsets[d], offsets[d + 1], salts[w], acc)


@nb.njit(inline="always", cache=True)
def _idf_lookup(table_hashes, table_weights, directory, dir_shift, default, x):
    p = x >> np.uint64(dir_shift) if dir_shift < 64 else np.uint64(0)
    lo, hi = directory[p], directory[p + np.uint64(1)]
    while lo < hi:
        mid = (lo + hi) >> 1
        if table_hashes[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < directory[p + np.uint64(1)] and table_hashes[lo] == x:
        return table_weights[lo]
    return default


@nb.njit(cache=True, nogil=True)
def _idf_weights(hashes, table_hashes, table_weights, directory, dir_shift, default):
    out = np.empty(hashes.shape[0], dtype=np.int64)
    for i in range(hashes.shape[0]):
        out[i] = _idf_lookup(table_hashes, table_weights, directory, dir_shift, default, hashes[i])
    return out


@nb.njit(cache=True, nogil=True)
def simhash_texts_kernel(data, offsets, table, kind, n, strip, salts, use_idf, idf_hashes, idf_weights,
                         idf_dir, idf_shift, idf_default, out, counts):
    """Fingerprint every document of the packed UTF-8 ``data``: its shingles are streamed by the
    shingling kernels into a per-document buffer and folded at once (no batch-wide CSR)."""
    buf, words, pos = _scratch(offsets[:-1], offsets[1:])
    scratch = np.empty((_LOCKSTEP_WORDS + 1, _HASH_BLOCK), dtype=np.uint64)
    hbuf = np.empty(pos.shape[0], dtype=np.uint64)
    wbuf = np.empty(pos.shape[0] if use_idf else 0, dtype=np.int64)
    cnt = np.empty(64, dtype=np.int64)
    acc = np.empty(65, dtype=np.int64)
    for d in range(offsets.shape[0] - 1):
        c = _doc_hashes(data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, pos, hbuf, 0, scratch)
        counts[d] = c
        if use_idf:
            for i in range(c):
                wbuf[i] = _idf_lookup(idf_hashes, idf_weights, idf_dir, idf_shift, idf_default, hbuf[i])
            for w in range(salts.shape[0]):
                out[d, w] = _fold_weighted(hbuf, wbuf, 0, c, salts[w], acc)
        else:
            for w in range(salts.shape[0]):
                out[d, w] = _fold_count(hbuf, 0, c, salts[w], cnt)


# ---------------------------------------------------------------------------------------------
# IDF


def idf_weight(df: Any, n_docs: int) -> np.ndarray:
    """The integer weight of a shingle in ``df`` of ``n_docs`` documents:
    round(IDF_SCALE * (ln((1 + N) / (1 + df)) + 1)), at least IDF_SCALE for df <= N.

    >>> idf_weight([1, 10, 100], 100).tolist()
    [1260, 824, 256]
    """
    df = np.asarray(df, dtype=np.float64)
    return np.rint(IDF_SCALE * (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class IdfTable:
    """Document frequencies of the shingles seen in at least ``min_df`` documents of a collection.

    The weight of a shingle is :func:`idf_weight` of its document frequency; a shingle not in the
    table counts as seen in one document (so with ``min_df = 2`` the table stays small: the
    many shingles of a single document all share the largest weight). ``digest`` identifies the
    table in the scheme of the fingerprints made with it.

    Attributes:
        hashes: uint64[m] sorted shingle hashes.
        df: int64[m] the number of documents each occurs in.
        n_docs: N, documents counted.
        min_df: shingles in fewer documents were left out.
    """

    hashes: np.ndarray
    df: np.ndarray
    n_docs: int
    min_df: int = 2
    weights: np.ndarray = field(init=False, repr=False)
    default_weight: int = field(init=False)
    digest: int = field(init=False)
    directory: np.ndarray = field(init=False, repr=False)
    """int64[2^B + 1]: hashes with top B bits p lie at [directory[p], directory[p + 1])."""
    dir_shift: int = field(init=False)
    """64 - B."""

    def __post_init__(self) -> None:
        h = np.ascontiguousarray(self.hashes, dtype=np.uint64)
        df = np.ascontiguousarray(self.df, dtype=np.int64)
        if h.ndim != 1 or h.shape != df.shape:
            raise ValueError(f"hashes and df must be 1-D of one length, got {h.shape} and {df.shape}")
        if len(h) > 1 and not (h[1:] > h[:-1]).all():
            raise ValueError("IDF table hashes must be sorted and distinct")
        _check_int("n_docs", self.n_docs, 0, 2**62)
        _check_int("min_df", self.min_df, 1, 2**62)
        if len(df) and (df.min() < 1 or df.max() > self.n_docs):
            raise ValueError("document frequencies must be in [1, n_docs]")
        object.__setattr__(self, "hashes", h)
        object.__setattr__(self, "df", df)
        object.__setattr__(self, "weights", idf_weight(df, self.n_docs))
        object.__setattr__(self, "default_weight", int(idf_weight(1, self.n_docs)))
        b = max(0, min(24, len(h).bit_length() - 1))
        starts = np.arange(1 << b, dtype=np.uint64) << np.uint64(64 - b) if b else np.zeros(1, dtype=np.uint64)
        directory = np.append(np.searchsorted(h, starts), len(h)).astype(np.int64)
        object.__setattr__(self, "directory", directory)
        object.__setattr__(self, "dir_shift", 64 - b)
        blob = np.concatenate([np.array([self.n_docs, self.min_df], dtype=np.uint64), h,
                               df.astype(np.uint64)]).view(np.uint8)
        object.__setattr__(self, "digest", int(hash_spans(blob, np.array([0, len(blob)], dtype=np.int64))[0]))

    def __len__(self) -> int:
        return len(self.hashes)

    def weights_of(self, hashes: np.ndarray) -> np.ndarray:
        """int64 weight of every hash (``default_weight`` for hashes not in the table)."""
        return _idf_weights(np.ascontiguousarray(hashes, dtype=np.uint64), self.hashes, self.weights,
                            self.directory, self.dir_shift, self.default_weight)


@nb.njit(cache=True, nogil=True)
def _df_batch(hashes, offsets):
    """(distinct hashes, number of documents holding each) of a CSR batch."""
    n = hashes.shape[0]
    keys = hashes.copy()
    doc = np.empty(n, dtype=np.int64)
    for d in range(offsets.shape[0] - 1):
        doc[offsets[d]:offsets[d + 1]] = d
    radix_sort_with(keys, doc)  # stable: documents ascend inside a run of equal hashes
    oh = np.empty(n, dtype=np.uint64)
    oc = np.empty(n, dtype=np.int64)
    q = -1
    for i in range(n):
        if q >= 0 and oh[q] == keys[i]:
            if doc[i] != doc[i - 1]:
                oc[q] += 1
        else:
            q += 1
            oh[q] = keys[i]
            oc[q] = 1
    return oh[:q + 1].copy(), oc[:q + 1].copy()


@nb.njit(cache=True, nogil=True)
def _merge_counts(hashes, counts):
    """Sort (hash, count) entries by hash and add up the counts of equal hashes."""
    keys = hashes.copy()
    c = counts.copy()
    radix_sort_with(keys, c)
    n = keys.shape[0]
    q = -1
    for i in range(n):
        if q >= 0 and keys[q] == keys[i]:
            c[q] += c[i]
        else:
            q += 1
            keys[q] = keys[i]
            c[q] = c[i]
    return keys[:q + 1].copy(), c[:q + 1].copy()


class DocumentFrequencies:
    """Streaming document-frequency counter (the first pass of IDF weighting).

    Memory: 16 bytes per distinct shingle seen, until :meth:`table` prunes to ``min_df``.

    >>> dfs = DocumentFrequencies(Shingling("word", 1))
    >>> dfs.add_texts(["a b a", "b c"])
    >>> t = dfs.table(min_df=1)
    >>> t.n_docs, sorted(t.df.tolist())
    (2, [1, 1, 2])
    """

    def __init__(self, shingling: Shingling | None = DEFAULT_SHINGLING):
        self.shingling = shingling
        self.n_docs = 0
        self._hashes = np.empty(0, dtype=np.uint64)
        self._counts = np.empty(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_size = 0

    @staticmethod
    def batch_counts(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct hashes, documents containing each) of one CSR batch (repeats within a
        document count once)."""
        return _df_batch(np.ascontiguousarray(hashes, dtype=np.uint64), np.ascontiguousarray(offsets, dtype=np.int64))

    def add_counts(self, hashes: np.ndarray, docs: np.ndarray, n_docs: int) -> None:
        """Add a batch already reduced by :meth:`batch_counts` that covered ``n_docs`` documents."""
        self.n_docs += int(n_docs)
        self._pending.append((hashes, docs))
        self._pending_size += len(hashes)
        if self._pending_size > max(len(self._hashes), 1 << 22):
            self._merge()

    def add_hashed(self, hashes: np.ndarray, offsets: np.ndarray) -> None:
        """Count a batch of documents given as CSR shingle hashes."""
        self.add_counts(*self.batch_counts(hashes, offsets), len(offsets) - 1)

    def add_texts(self, texts: Sequence[str]) -> None:
        """Count a batch of texts, shingled by ``shingling``."""
        if self.shingling is None:
            raise ValueError("this counter has no shingling; use add_hashed")
        sh = self.shingling
        data, offsets = encode_texts(texts, sh)
        h, off = shingle_texts_kernel(data, offsets, CHAR_CLASS, _kind_code(sh), sh.n, sh.strip_punctuation, False)
        self.add_hashed(h, off)

    def _merge(self) -> None:
        if not self._pending:
            return
        hs = np.concatenate([self._hashes] + [p[0] for p in self._pending])
        cs = np.concatenate([self._counts] + [p[1] for p in self._pending])
        self._hashes, self._counts = _merge_counts(hs, cs)
        self._pending, self._pending_size = [], 0

    def table(self, min_df: int = 2) -> IdfTable:
        """The IDF table of everything counted, keeping shingles in at least ``min_df`` documents."""
        self._merge()
        keep = self._counts >= min_df
        return IdfTable(self._hashes[keep], self._counts[keep], self.n_docs, min_df)


def fit_idf(docs: Sequence[str] | tuple[np.ndarray, np.ndarray], shingling: Shingling | None = DEFAULT_SHINGLING,
            *, min_df: int = 2) -> IdfTable:
    """Document frequencies of a collection: texts (shingled by ``shingling``) or a CSR pair
    ``(hashes, offsets)`` of already hashed features.

    >>> t = fit_idf(["the cat sat", "the dog sat", "a bird"], Shingling("word", 1))
    >>> t.n_docs, len(t), t.df.tolist()
    (3, 2, [2, 2])
    """
    counter = DocumentFrequencies(shingling)
    if isinstance(docs, tuple) and len(docs) == 2 and isinstance(docs[0], np.ndarray):
        counter.add_hashed(*docs)
    else:
        counter.add_texts(list(docs))
    return counter.table(min_df)


# ---------------------------------------------------------------------------------------------
# the hasher


class SimHasher:
    """Computes SimHash fingerprints of texts, hashed features or dense vectors, in batches.

    Args:
        bits: 64 or 128.
        seed: seeds the hyperplanes.
        shingling: how text becomes features (default word 2-grams).
        weighting: ``"count"`` or ``"idf"`` (then ``idf`` is required).
        idf: an :class:`IdfTable` (from :func:`fit_idf` or :meth:`fit_idf`).
        scheme: a full :class:`SimHashScheme` instead of the arguments above.

    >>> sh = SimHasher(bits=64, shingling=Shingling("word", 1))
    >>> fps = sh.sign(["the quick brown fox jumps over the lazy dog",
    ...                "the quick brown fox jumped over the lazy dog"])
    >>> fps.values.dtype, fps.hamming(0, j=1) < 20
    (dtype('uint64'), True)
    """

    def __init__(self, bits: int = 64, seed: int = 1, shingling: Shingling | None = None,
                 weighting: Literal["count", "idf"] = "count", idf: IdfTable | None = None,
                 scheme: SimHashScheme | None = None):
        if scheme is None:
            scheme = SimHashScheme(bits=bits, seed=seed,
                                   shingling=shingling if shingling is not None else DEFAULT_SHINGLING,
                                   weighting=weighting)
        if scheme.hash_family != HASH_FAMILY:
            raise ValueError("SimHasher takes a feature scheme; vector schemes are made by sign_vectors")
        if scheme.weighting == "idf":
            if idf is None:
                raise ValueError("weighting='idf' needs an IdfTable (see fit_idf)")
            if not isinstance(idf, IdfTable):
                raise TypeError(f"idf must be an IdfTable, got {type(idf).__name__}")
            if scheme.idf_digest is not None and scheme.idf_digest != idf.digest:
                raise IncompatibleSketchError("the IDF table does not match the scheme's idf_digest")
            scheme = replace(scheme, idf_digest=idf.digest)
        elif idf is not None:
            raise ValueError("an IDF table was given but weighting is 'count'")
        self.scheme = scheme
        self.idf = idf
        self._salts = scheme.salts()
        self._planes: dict[int, np.ndarray] = {}

    @property
    def bits(self) -> int:
        return self.scheme.bits

    def _wrap(self, words: np.ndarray, scheme: SimHashScheme | None = None) -> Fingerprints:
        scheme = scheme or self.scheme
        return Fingerprints(words.reshape(-1) if scheme.bits == 64 else words, scheme)

    def fit_idf(self, docs: Sequence[str] | tuple[np.ndarray, np.ndarray], *, min_df: int = 2) -> IdfTable:
        """Document frequencies of ``docs`` (texts, or CSR hashes) with this hasher's shingling."""
        return fit_idf(docs, self.scheme.shingling, min_df=min_df)

    def sign(self, texts: Sequence[str]) -> Fingerprints:
        """Fingerprints of many texts, shingled by the scheme's shingling."""
        values, _ = self.sign_texts_with_counts(texts)
        return self._wrap(values)

    def sign_texts_with_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw fingerprints (uint64[n, W]) and the number of shingles of each text (int64[n])."""
        sh = self.scheme.shingling
        if sh is None:
            raise ValueError("this scheme has no shingling; use sign_hashed")
        data, offsets = encode_texts(texts, sh)
        out = np.empty((len(texts), self.scheme.words), dtype=np.uint64)
        counts = np.empty(len(texts), dtype=np.int64)
        idf = self.idf
        use = idf is not None
        simhash_texts_kernel(data, offsets, CHAR_CLASS, _kind_code(sh), sh.n, sh.strip_punctuation, self._salts,
                             use, idf.hashes if use else np.empty(0, dtype=np.uint64),
                             idf.weights if use else np.empty(0, dtype=np.int64),
                             idf.directory if use else np.zeros(2, dtype=np.int64), idf.dir_shift if use else 64,
                             idf.default_weight if use else 0, out, counts)
        return out, counts

    def sign_hashed(self, hashes: np.ndarray, offsets: np.ndarray, weights: np.ndarray | None = None) -> Fingerprints:
        """Fingerprints of documents given as CSR feature hashes (document i owns
        ``hashes[offsets[i]:offsets[i + 1]]``; repeats add up).

        ``weights`` (one per hash, int or float, any sign) override the scheme's weighting;
        without them each hash weighs 1 (``count``) or its IDF weight (``idf``). With the same
        shingling, ``sign_hashed(*shingle_batch(texts, sh, unique=False))`` equals ``sign(texts)``.
        """
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(hashes) \
                or (np.diff(offsets) < 0).any():
            raise ValueError("offsets must start at 0, not decrease, and end at len(hashes)")
        out = np.empty((len(offsets) - 1, self.scheme.words), dtype=np.uint64)
        if weights is None and self.idf is not None:
            weights = self.idf.weights_of(hashes)
        if weights is None:
            _simhash_csr(hashes, offsets, self._salts, out)
        else:
            weights = np.asarray(weights)
            if weights.shape != hashes.shape:
                raise ValueError(f"need one weight per hash: {weights.shape} vs {hashes.shape}")
            if weights.dtype.kind in "iub":
                weights = np.ascontiguousarray(weights, dtype=np.int64)
            else:
                weights = np.ascontiguousarray(weights, dtype=np.float64)
                if not np.isfinite(weights).all():
                    raise ValueError("weights must be finite")
            _simhash_csr_weighted(hashes, weights, offsets, self._salts, out)
        return self._wrap(out)

    def sign_one(self, text: str) -> np.ndarray:
        """The fingerprint of one text: a uint64 scalar (64 bits) or uint64[2] (128 bits)."""
        return self.sign([text]).values[0]

    def vector_scheme(self, dim: int) -> SimHashScheme:
        """The scheme of fingerprints of ``dim``-dimensional vectors made by this hasher."""
        return SimHashScheme(bits=self.bits, seed=self.scheme.seed, shingling=None, dim=dim,
                             hash_family=VECTOR_FAMILY)

    def sign_vectors(self, X: Any, *, chunk: int = 65536) -> Fingerprints:
        """Fingerprints of the rows of a float array X (n, dim) by Gaussian random hyperplanes.

        Bit j is [x . G[:, j] > 0] with G from :meth:`SimHashScheme.hyperplanes` (float64
        products; a row with a projection within rounding of 0 may differ across BLAS builds).
        Non-finite values raise ValueError.
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.dtype.kind not in "fiu":
            raise ValueError(f"vectors must be a 2-D numeric array (n, dim), got {X.dtype} {X.shape}")
        n, dim = X.shape
        scheme = self.vector_scheme(dim)
        planes = self._planes.get(dim)
        if planes is None:
            planes = self._planes[dim] = scheme.hyperplanes(dim)
        out = np.empty((n, self.scheme.words), dtype=np.uint64)
        for lo in range(0, n, chunk):
            block = np.asarray(X[lo:lo + chunk], dtype=np.float64)
            if not np.isfinite(block).all():
                bad = lo + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
                raise ValueError(f"vector {bad} has a non-finite value")
            bits = (block @ planes) > 0
            packed = np.packbits(bits, axis=1, bitorder="little")
            out[lo:lo + chunk] = np.ascontiguousarray(packed).view("<u8").astype(np.uint64)
        return self._wrap(out, scheme)


def vectors_from_parquet(path: str, column: str) -> np.ndarray:
    """A Parquet list (or fixed-size list) column of numbers as float64[n, dim].

    Every row must be present and have the same length; the error names the file and row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from .errors import InputError

    try:
        table = pq.read_table(path, columns=[column])
    except (KeyError, pa.ArrowInvalid) as exc:
        raise InputError(path, None, f"cannot read column {column!r}: {exc}") from None
    col = table.column(column).combine_chunks()
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
            or pa.types.is_fixed_size_list(col.type)):
        raise InputError(path, None, f"column {column!r} is {col.type}, expected a list of numbers")
    n = len(col)
    if n == 0:
        return np.empty((0, 0), dtype=np.float64)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise InputError(path, row, f"column {column!r} is null")
    lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
    if (lengths != lengths[0]).any():
        row = int(np.flatnonzero(lengths != lengths[0])[0]) + 1
        raise InputError(path, row, f"vector of length {lengths[row - 1]}, expected {lengths[0]} like row 1")
    values = pc.list_flatten(col)
    if values.null_count:
        raise InputError(path, None, f"column {column!r} holds null numbers")
    flat = values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return flat.reshape(n, int(lengths[0]))
