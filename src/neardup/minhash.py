"""MinHash sketches: K min-wise hashes per set, and Jaccard estimates with confidence intervals.

For a random permutation pi of the universe, Pr[min pi(A) = min pi(B)] = |A n B| / |A u B|
(Broder 1997, "On the resemblance and containment of documents"). With K independent
permutations the number r of equal slots is Binomial(K, J), so r/K is an unbiased estimate of J
with standard error sqrt(J(1-J)/K).

Hash family ("nd64/multiply-shift-32", format version 1). Elements are first hashed to 64 bits
``x`` (see :mod:`neardup._hash`; text shingles by :mod:`neardup.shingles`). Permutation k is
``h_k(x) = ((a_k * x + b_k) mod 2**64) >> 32``, a multiply-add-shift hash (Dietzfelbinger et
al. 1997) taken to 32 bits, with ``a_k`` odd. The parameters come from SplitMix64 seeded by
``seed``: with ``z_j = splitmix64(seed + j * 0x9E3779B97F4A7C15)``, ``a_k = z_{2k} | 1`` and
``b_k = z_{2k+1}``. A signature is uint32[K]; the empty set's is all 0xFFFFFFFF.

The fast option ``sketch="oph"`` (hash family "nd64/oph-dens-32", :mod:`neardup.oph`) hashes
each element once instead of K times: one-permutation hashing with optimal densification. Its
signatures have the same shape, the same empty-set convention and the same unbiased estimate
r/K, so everything that consumes ``Signatures`` takes them unchanged; the scheme keeps them
apart from classic ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Iterable, Literal, Sequence

import numba as nb
import numpy as np

from ._hash import MASK64, hash_ints, hash_spans, splitmix64
from .errors import IncompatibleSketchError
from .oph import OPH_FAMILY, oph_csr_kernel, oph_params, oph_sequence
from .shingles import Shingling, _kind_code, encode_for_sketch, fold_minhash, minhash_texts_kernel, oph_texts_kernel
from .text import CHAR_CLASS

FORMAT_VERSION = 1
HASH_FAMILY = "nd64/multiply-shift-32"
EMPTY_VALUE = np.uint32(0xFFFFFFFF)
_GAMMA = 0x9E3779B97F4A7C15

SKETCHES = {"classic": HASH_FAMILY, "oph": OPH_FAMILY}
"""Sketch name -> hash family: ``classic`` (K permutations) or ``oph`` (one permutation with
optimal densification, :mod:`neardup.oph`)."""
_SKETCH_OF = {family: name for name, family in SKETCHES.items()}


@dataclass(frozen=True)
class MinHashScheme:
    """Everything that determines a MinHash signature; sketches of different schemes never mix.

    Attributes:
        num_perm: K, the number of hash functions (slots of a signature).
        seed: seeds the K permutations.
        shingling: how text becomes a set; ``None`` for generic sets (items hashed as given).
        hash_family: name of the element hash and permutation family: ``HASH_FAMILY`` (classic
            MinHash, K permutations) or ``OPH_FAMILY`` (one-permutation hashing with optimal
            densification); see ``SKETCHES``.
        format_version: bumped whenever the same inputs would give different values.
    """

    num_perm: int = 128
    seed: int = 1
    shingling: Shingling | None = field(default_factory=Shingling)
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.num_perm, (int, np.integer)) or isinstance(self.num_perm, bool) or self.num_perm < 1:
            raise ValueError(f"num_perm must be an integer >= 1, got {self.num_perm!r}")
        if not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed <= MASK64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")
        if self.hash_family not in _SKETCH_OF:
            raise ValueError(f"hash_family must be one of {sorted(_SKETCH_OF)}, got {self.hash_family!r}")

    @property
    def sketch(self) -> str:
        """``"classic"`` or ``"oph"``: the name of the hash family (see ``SKETCHES``)."""
        return _SKETCH_OF[self.hash_family]

    def check_compatible(self, other: "MinHashScheme") -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
        if self != other:
            raise IncompatibleSketchError(
                f"sketches of different schemes cannot be compared: {self} vs {other}")

    def permutations(self) -> tuple[np.ndarray, np.ndarray]:
        """The multiply-shift parameters (a, b), uint64[num_perm] each (classic family only)."""
        if self.hash_family != HASH_FAMILY:
            raise ValueError(f"permutations() belong to the classic family; {self.hash_family!r} uses "
                             "neardup.oph.oph_params(seed)")
        return _permutations(np.uint64(self.seed), self.num_perm)


@nb.njit(cache=True)
def _permutations(seed, k):
    a = np.empty(k, dtype=np.uint64)
    b = np.empty(k, dtype=np.uint64)
    gamma = np.uint64(_GAMMA)
    for i in range(k):
        a[i] = splitmix64(seed + np.uint64(2 * i) * gamma) | np.uint64(1)
        b[i] = splitmix64(seed + np.uint64(2 * i + 1) * gamma)
    return a, b


@dataclass(frozen=True, eq=False)
class Signatures:
    """A batch of MinHash signatures: ``values`` is uint32 of shape (n, scheme.num_perm).

    A set with no elements (an empty document) has every slot equal to ``EMPTY_VALUE``; it is
    never similar to anything (Jaccard is undefined for two empty sets).
    """

    values: np.ndarray
    scheme: MinHashScheme

    def __post_init__(self) -> None:
        v = self.values
        if v.dtype != np.uint32 or v.ndim != 2 or v.shape[1] != self.scheme.num_perm:
            raise ValueError(f"signature values must be uint32 of shape (n, {self.scheme.num_perm}), "
                             f"got {v.dtype} {v.shape}")

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, index) -> "Signatures":
        rows = self.values[index]
        return Signatures(rows.reshape(-1, self.scheme.num_perm), self.scheme)

    @property
    def empty(self) -> np.ndarray:
        """bool[n]: which signatures are of empty sets."""
        return (self.values == EMPTY_VALUE).all(axis=1)

    def jaccard(self, i: int, other: "Signatures | None" = None, j: int = 0) -> float:
        """The estimate r/K between row i and row j of ``other`` (default: this batch)."""
        return self.estimate(i, other, j).value

    def estimate(self, i: int, other: "Signatures | None" = None, j: int = 0, *, level: float = 0.95,
                 method: Literal["wilson", "wald"] = "wilson") -> "Estimate":
        """The estimate between row i and row j of ``other``, with standard error and interval.

        Raises IncompatibleSketchError if the two batches were made with different schemes.
        """
        other = self if other is None else other
        self.scheme.check_compatible(other.scheme)
        return estimate_from_rows(self.values[i], other.values[j], level=level, method=method)


@dataclass(frozen=True)
class Estimate:
    """A Jaccard estimate from two signatures, with its uncertainty.

    Attributes:
        value: r / K, the fraction of equal slots (unbiased for J).
        matches: r.
        num_perm: K.
        stderr: sqrt(p (1 - p) / K) with p = value, the plug-in standard error.
        low, high: the confidence interval at ``level``.
        level: the confidence level, e.g. 0.95.
        method: ``"wilson"`` (default; keeps its coverage near 0 and 1) or ``"wald"``
            (p -/+ z * stderr, the textbook interval, clipped to [0, 1]).
    """

    value: float
    matches: int
    num_perm: int
    stderr: float
    low: float
    high: float
    level: float
    method: str


def confidence_interval(matches: int, num_perm: int, level: float = 0.95,
                        method: Literal["wilson", "wald"] = "wilson") -> tuple[float, float]:
    """Confidence interval for J from r = ``matches`` equal slots out of K = ``num_perm``.

    ``wald``: p +/- z sqrt(p(1-p)/K). ``wilson`` (Wilson 1927): centre (p + z^2/2K) / (1 + z^2/K),
    half-width z sqrt(p(1-p)/K + z^2/4K^2) / (1 + z^2/K). z is the normal quantile at (1+level)/2.

    >>> confidence_interval(90, 100, 0.95, "wald")
    (0.8412..., 0.9587...)
    """
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    if not 0 <= matches <= num_perm:
        raise ValueError(f"matches must be in [0, num_perm], got {matches} of {num_perm}")
    p = matches / num_perm
    z = NormalDist().inv_cdf((1 + level) / 2)
    if method == "wald":
        half = z * math.sqrt(p * (1 - p) / num_perm)
        return max(0.0, p - half), min(1.0, p + half)
    if method == "wilson":
        z2k = z * z / num_perm
        centre = (p + z2k / 2) / (1 + z2k)
        half = z * math.sqrt(p * (1 - p) / num_perm + z2k / (4 * num_perm)) / (1 + z2k)
        return max(0.0, centre - half), min(1.0, centre + half)
    raise ValueError(f"interval method must be 'wilson' or 'wald', got {method!r}")


def acceptance_probability(s: float, num_perm: int, threshold: float) -> float:
    """Probability that two sets of Jaccard ``s`` have an estimate r/K >= ``threshold``.

    r ~ Binomial(K, s), so this is the binomial tail sum_{r >= ceil(tK)} C(K, r) s^r (1-s)^(K-r):
    the chance that signature verification accepts a pair. Broder's example (K = 100, 90 slots):

    >>> round(acceptance_probability(0.8, 100, 0.9), 4)
    0.0057
    """
    if not 0 <= s <= 1:
        raise ValueError(f"similarity must be in [0, 1], got {s!r}")
    need = math.ceil(threshold * num_perm - 1e-9)
    if s in (0.0, 1.0):
        return float(s >= threshold) if need > 0 else 1.0
    # sum in log space so that tiny tails (1e-17) stay accurate
    log_s, log_q = math.log(s), math.log1p(-s)
    return float(sum(math.exp(math.lgamma(num_perm + 1) - math.lgamma(r + 1) - math.lgamma(num_perm - r + 1)
                              + r * log_s + (num_perm - r) * log_q) for r in range(max(need, 0), num_perm + 1)))


def estimate_from_rows(sig_a: np.ndarray, sig_b: np.ndarray, *, level: float = 0.95,
                       method: Literal["wilson", "wald"] = "wilson") -> Estimate:
    """The Jaccard estimate between two raw signature rows (uint32[K]) with its interval."""
    if sig_a.shape != sig_b.shape:
        raise ValueError(f"signatures have different lengths: {sig_a.shape} vs {sig_b.shape}")
    k = sig_a.shape[0]
    if (sig_a == EMPTY_VALUE).all() or (sig_b == EMPTY_VALUE).all():
        r = 0
    else:
        r = int(np.count_nonzero(sig_a == sig_b))
    p = r / k
    low, high = confidence_interval(r, k, level, method)
    return Estimate(p, r, k, math.sqrt(p * (1 - p) / k), low, high, level, method)


@nb.njit(cache=True, nogil=True)
def _minhash_csr(hashes, offsets, a, b, out):
    acc = np.empty(a.shape[0], dtype=np.uint64)
    for d in range(offsets.shape[0] - 1):
        fold_minhash(hashes, offsets[d], offsets[d + 1], a, b, acc, out[d])


def hash_items(items: Iterable) -> np.ndarray:
    """64-bit hashes of generic set items: str (UTF-8), bytes, or integers.

    >>> from neardup._hash import hash_str, hash_int
    >>> hash_items(["a", b"a", 7]).tolist() == [hash_str("a"), hash_str("a"), hash_int(7)]
    True
    """
    if isinstance(items, np.ndarray):
        if items.dtype.kind in "iu":
            return hash_ints(items.astype(np.uint64, copy=False) if items.dtype.kind == "u" else items.astype(np.int64))
        items = items.tolist()
    items = list(items)
    out = np.empty(len(items), dtype=np.uint64)
    blobs, where = [], []
    ints, int_where = [], []
    for i, item in enumerate(items):
        if isinstance(item, str):
            blobs.append(item.encode("utf-8", "surrogatepass"))
            where.append(i)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            blobs.append(bytes(item))
            where.append(i)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not -(1 << 63) <= int(item) < (1 << 64):
                raise ValueError(f"integer set item {item} does not fit in 64 bits")
            ints.append(int(item) & MASK64)
            int_where.append(i)
        else:
            raise TypeError(f"set items must be str, bytes or int, got {type(item).__name__}: {item!r}")
    if blobs:
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)), out=offsets[1:])
        out[np.asarray(where)] = hash_spans(np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets)
    if ints:
        out[np.asarray(int_where)] = hash_ints(np.asarray(ints, dtype=np.uint64))
    return out


class MinHasher:
    """Computes MinHash signatures of texts or generic sets, in batches.

    >>> mh = MinHasher(num_perm=128, shingling=Shingling("word", 2))
    >>> sigs = mh.sign(["Jack London traveled to Oakland", "Jack London traveled to the city of Oakland"])
    >>> sigs.values.shape
    (2, 128)
    >>> 0.2 < sigs.jaccard(0, j=1) < 0.6      # true Jaccard 3/8
    True

    ``sketch="oph"`` selects the fast one-permutation family (:mod:`neardup.oph`): one hash per
    element instead of K, same signature shape and estimate.

    >>> fast = MinHasher(num_perm=128, shingling=Shingling("word", 2), sketch="oph")
    >>> fast.scheme.hash_family
    'nd64/oph-dens-32'
    """

    def __init__(self, num_perm: int = 128, seed: int = 1, shingling: Shingling | None = None,
                 scheme: MinHashScheme | None = None, *, sketch: str | None = None):
        if sketch is not None and sketch not in SKETCHES:
            raise ValueError(f"sketch must be one of {sorted(SKETCHES)}, got {sketch!r}")
        if scheme is None:
            scheme = MinHashScheme(num_perm=num_perm, seed=seed,
                                   shingling=shingling if shingling is not None else Shingling(),
                                   hash_family=SKETCHES[sketch or "classic"])
        elif sketch is not None and scheme.sketch != sketch:
            raise ValueError(f"sketch={sketch!r} disagrees with the scheme's hash family {scheme.hash_family!r}")
        self.scheme = scheme
        if scheme.hash_family == OPH_FAMILY:
            self._oph = oph_params(scheme.seed)
            self._oph_seq = oph_sequence(self._oph, scheme.num_perm)
        else:
            self._a, self._b = scheme.permutations()

    @classmethod
    def for_sets(cls, num_perm: int = 128, seed: int = 1, *, sketch: str = "classic") -> "MinHasher":
        """A MinHasher for generic sets only (its scheme has ``shingling=None``)."""
        if sketch not in SKETCHES:
            raise ValueError(f"sketch must be one of {sorted(SKETCHES)}, got {sketch!r}")
        return cls(scheme=MinHashScheme(num_perm=num_perm, seed=seed, shingling=None,
                                        hash_family=SKETCHES[sketch]))

    def sign(self, texts: Sequence[str]) -> Signatures:
        """Signatures of many texts, shingled by the scheme's shingling."""
        values, _ = self.sign_texts_with_counts(texts)
        return Signatures(values, self.scheme)

    def sign_texts_with_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw signatures (uint32[n, K]) and the number of shingles of each text (int64[n])."""
        sh = self._text_shingling()
        data, offsets = encode_for_sketch(texts, sh)
        return self.sign_encoded(data, offsets[:-1], offsets[1:])

    def sign_encoded(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw signatures and shingle counts of the texts ``data[starts[i]:ends[i]]``, already
        normalized and UTF-8 encoded (as :func:`neardup.shingles.encode_texts` or
        :func:`~neardup.shingles.encode_for_sketch` packs them)."""
        sh = self._text_shingling()
        values = np.empty((len(starts), self.scheme.num_perm), dtype=np.uint32)
        counts = np.empty(len(starts), dtype=np.int64)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        if self.scheme.hash_family == OPH_FAMILY:
            oph_texts_kernel(data, starts, ends, CHAR_CLASS, _kind_code(sh), sh.n, sh.strip_punctuation,
                             self._oph, self._oph_seq, values, counts)
        else:
            minhash_texts_kernel(data, starts, ends, CHAR_CLASS, _kind_code(sh), sh.n, sh.strip_punctuation,
                                 self._a, self._b, values, counts)
        return values, counts

    def _text_shingling(self) -> Shingling:
        if self.scheme.shingling is None:
            raise ValueError("this scheme is for generic sets (shingling=None); use sign_sets")
        return self.scheme.shingling

    def sign_sets(self, sets: Iterable[Iterable]) -> Signatures:
        """Signatures of generic sets: iterables of str, bytes or ints (or integer numpy arrays).

        Items are hashed as :func:`hash_items` does, so a text's shingle strings give the same
        signature here as the text gives through :meth:`sign` with a text scheme.
        """
        parts = [hash_items(s) for s in sets]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        hashes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        return self.sign_hashed(hashes, offsets)

    def sign_hashed(self, hashes: np.ndarray, offsets: np.ndarray) -> Signatures:
        """Signatures of sets given as already-hashed uint64 CSR arrays (hashes, offsets)."""
        values = np.empty((len(offsets) - 1, self.scheme.num_perm), dtype=np.uint32)
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if self.scheme.hash_family == OPH_FAMILY:
            oph_csr_kernel(hashes, offsets, self._oph, self._oph_seq, values)
        else:
            _minhash_csr(hashes, offsets, self._a, self._b, values)
        return Signatures(values, self.scheme)

    def sign_one(self, text: str) -> np.ndarray:
        """The signature row (uint32[K]) of one text."""
        return self.sign([text]).values[0]
