"""MinHash sketches: K min-wise hashes per set, and Jaccard estimates with confidence intervals.

For a random permutation pi of the universe, Pr[min pi(A) = min pi(B)] = |A n B| / |A u B|
(Broder 1997, "On the resemblance and containment of documents"). With K independent
permutations the number r of equal slots is Binomial(K, J), so r/K is an unbiased estimate of J
with standard error sqrt(J(1-J)/K).

Hash family ("nd64/multiply-shift-32", format version 1). Elements are first hashed to 64 bits
``x`` (see :mod:`neardup._kernels.hashing`; text shingles by :mod:`neardup.text.shingles`). Permutation k is
``h_k(x) = ((a_k * x + b_k) mod 2**64) >> 32``, a multiply-add-shift hash (Dietzfelbinger et
al. 1997) taken to 32 bits, with ``a_k`` odd. The parameters come from SplitMix64 seeded by
``seed``: with ``z_j = splitmix64(seed + j * 0x9E3779B97F4A7C15)``, ``a_k = z_{2k} | 1`` and
``b_k = z_{2k+1}``. A signature is uint32[K]; the empty set's is all 0xFFFFFFFF.

The fast option ``sketch="oph"`` (hash family "nd64/oph-dens-32", :mod:`neardup.methods.minhash.oph`) hashes
each element once instead of K times: one-permutation hashing with optimal densification. Its
signatures have the same shape, the same empty-set convention and the same unbiased estimate
r/K, so everything that consumes ``Signatures`` takes them unchanged; the scheme keeps them
apart from classic ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..._kernels.hashing import MASK64
from ..._kernels.minhash import EMPTY_VALUE, permutations
from ...core.errors import IncompatibleSketchError
from ...core.schemes import Scheme
from ...core.validation import Choice, Instance, Integer, Optional, check
from ...text.shingles import Shingling
from .estimate import Estimate, estimate_from_rows
from .oph import OPH_FAMILY

__all__ = [
    "FORMAT_VERSION",
    "HASH_FAMILY",
    "MAX_NUM_PERM",
    "SKETCHES",
    "MinHashScheme",
    "Signatures",
]

FORMAT_VERSION = 2  # 2: letters of Thai, Lao, Khmer and Myanmar are tokens of their own (with their marks)


HASH_FAMILY = "nd64/multiply-shift-32"


SKETCHES = {"classic": HASH_FAMILY, "oph": OPH_FAMILY}
"""Sketch name -> hash family: ``classic`` (K permutations) or ``oph`` (one permutation with
optimal densification, :mod:`neardup.methods.minhash.oph`)."""


_SKETCH_OF = {family: name for name, family in SKETCHES.items()}


MAX_NUM_PERM = 2048
"""The largest K accepted anywhere (schemes, hashers, configs, LSH bandings): choosing the banding
alone takes seconds beyond it (2.4 s at 2048, 11 s at 4096, 42 s at 8192), and no estimate needs
more (the standard error at K = 2048 is at most 0.011)."""


NUM_PERM = Integer(1, MAX_NUM_PERM)
"""The constraint on K."""


SEED = Integer(0, MASK64)
"""The constraint on seeds: an integer in [0, 2**64)."""


@dataclass(frozen=True)
class MinHashScheme(Scheme):
    """Everything that determines a MinHash signature; sketches of different schemes never mix.

    Attributes:
        num_perm: K, the number of hash functions (slots of a signature), in [1, MAX_NUM_PERM].
        seed: seeds the K permutations, an integer in [0, 2**64).
        shingling: how text becomes a set; ``None`` for generic sets (items hashed as given).
        hash_family: name of the element hash and permutation family: ``HASH_FAMILY`` (classic
            MinHash, K permutations) or ``OPH_FAMILY`` (one-permutation hashing with optimal
            densification); see ``SKETCHES``.
        format_version: bumped whenever the same inputs would give different values.

    >>> MinHashScheme(num_perm=64).to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'scheme': 'minhash', 'format_version': 2, 'num_perm': 64, 'seed': 1,
     'shingling': {'kind': 'word', 'n': 5, 'strip_punctuation': False, 'nfkc': True, 'casefold': True},
     'hash_family': 'nd64/multiply-shift-32'}
    >>> MinHashScheme(num_perm=100000)
    Traceback (most recent call last):
    ...
    neardup.core.validation.ParameterError: num_perm must be an integer in [1, 2048], got 100000
    """

    kind = "minhash"

    num_perm: int = 128
    seed: int = 1
    shingling: Shingling | None = field(default_factory=Shingling)
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "num_perm", check("num_perm", self.num_perm, NUM_PERM))
        set_(self, "seed", check("seed", self.seed, SEED))
        check("shingling", self.shingling, Optional(Instance(Shingling)))
        set_(self, "hash_family", check("hash_family", self.hash_family, Choice(tuple(_SKETCH_OF))))
        set_(self, "format_version", check("format_version", self.format_version, Integer(1, FORMAT_VERSION)))

    @property
    def sketch(self) -> str:
        """``"classic"`` or ``"oph"``: the name of the hash family (see ``SKETCHES``)."""
        return _SKETCH_OF[self.hash_family]

    def check_compatible(self, other: MinHashScheme) -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
        if self != other:
            raise IncompatibleSketchError(f"sketches of different schemes cannot be compared: {self} vs {other}")

    def permutations(self) -> tuple[np.ndarray, np.ndarray]:
        """The multiply-shift parameters (a, b), uint64[num_perm] each (classic family only)."""
        if self.hash_family != HASH_FAMILY:
            raise ValueError(
                f"permutations() belong to the classic family; {self.hash_family!r} uses "
                "neardup.methods.minhash.oph.oph_params(seed)"
            )
        return permutations(np.uint64(self.seed), self.num_perm)


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
            raise ValueError(
                f"signature values must be uint32 of shape (n, {self.scheme.num_perm}), got {v.dtype} {v.shape}"
            )

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, index) -> Signatures:
        rows = self.values[index]
        return Signatures(rows.reshape(-1, self.scheme.num_perm), self.scheme)

    @property
    def empty(self) -> np.ndarray:
        """bool[n]: which signatures are of empty sets."""
        return (self.values == EMPTY_VALUE).all(axis=1)

    def jaccard(self, i: int, other: Signatures | None = None, j: int = 0) -> float:
        """The estimate r/K between row i and row j of ``other`` (default: this batch)."""
        return self.estimate(i, other, j).value

    def estimate(
        self,
        i: int,
        other: Signatures | None = None,
        j: int = 0,
        *,
        level: float = 0.95,
        method: Literal["wilson", "wald"] = "wilson",
    ) -> Estimate:
        """The estimate between row i and row j of ``other``, with standard error and interval.

        Raises IncompatibleSketchError if the two batches were made with different schemes.
        """
        other = self if other is None else other
        self.scheme.check_compatible(other.scheme)
        return estimate_from_rows(self.values[i], other.values[j], level=level, method=method)
