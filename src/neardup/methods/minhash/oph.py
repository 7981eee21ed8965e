"""One-permutation hashing with optimal densification: the fast MinHash option, defined.

Classic MinHash (:mod:`neardup.methods.minhash.scheme`) applies K hash functions to every element,
so sketching costs K multiply-adds per element. One-permutation hashing (OPH; Li, Owen and Zhang, NIPS 2012)
applies one: the hashed universe is cut into K equal *bins*, and slot k keeps the minimum value
of the elements that fall into bin k, so sketching costs one hash per element whatever K is.

A bin that no element falls into is *empty*. Two sketches cannot be compared slot by slot while
bins are empty, so the empty bins are filled by *densification*: optimal densification
(Shrivastava, "Optimal Densification for Fast and Accurate Minwise Hashing", ICML 2017) lets
every empty bin i borrow the value of the first non-empty bin met along its own pseudo-random
sequence of bins, a sequence that depends on i and the seed only. Two sets whose bins are empty
in the same places then borrow from the same places, and for every slot

    Pr[sig_A[k] == sig_B[k]] = |A n B| / |A u B| = J,

so r/K (r equal slots) is an unbiased estimate of J, exactly as for classic MinHash, and the
signatures plug into everything built on classic ones (``Signatures``, LSH banding, estimates).
Its variance is close to classic MinHash's: slightly lower when the union of the two sets is
much larger than K (the bins sample without replacement), higher when the sets are so small
that many bins are empty (the densified bins repeat values). ``tests/test_oph.py`` measures
and asserts the ratios.

Definition (hash family ``"nd64/oph-dens-32"``, format version 1)
------------------------------------------------------------------
Elements are first hashed to 64 bits ``x`` exactly as for classic MinHash
(:mod:`neardup._kernels.hashing`; text shingles by :mod:`neardup.text.shingles`). From the seed, with
``z_j = splitmix64(seed + j * 0x9E3779B97F4A7C15)`` (all arithmetic mod 2**64):

- ``salt = z_0``, ``c = z_1 | 1``, ``d = z_2``.

Binning. ``y = fmix64(x ^ salt)`` (MurmurHash3's 64-bit finaliser, a bijection: this is the one
permutation). The element falls into bin ``floor(K * (y >> 32) / 2**32)`` (for K a power of two,
the top log2(K) bits of y) with value ``y mod 2**32`` (the low 32 bits). Slot k is the least
value among the elements of bin k. A bin is *empty* when no element falls into it with a value
below 0xFFFFFFFF (an element whose value is 0xFFFFFFFF, one in 2**32, counts for nothing).

Densification. If every bin is empty (the empty set), every slot stays 0xFFFFFFFF, the same
empty-set convention as classic MinHash. Otherwise each empty bin i takes the value of the first
non-empty bin j met along the attempts t = 0, 1, 2, ...::

    u_t = fmix64((c * ((i << 32) | t) + d) mod 2**64) >> 32
    j_t = floor(K * u_t / 2**32)

(a seeded multiply-add hash of the pair (bin, attempt), 2-universal over the pairs, finalised by
fmix64 so that the attempts of one bin do not form an arithmetic sequence). Values are always
borrowed from bins that were non-empty before densification, never from filled ones. If 32 K
attempts all miss (probability below e^-64 when two or more bins are non-empty), bin i takes the
value of the next non-empty bin to its right, cyclically; with exactly one non-empty bin every
slot takes its value, which is what any attempt sequence gives.

The signature is uint32[K], like a classic one; the scheme's ``hash_family`` keeps the two kinds
apart (comparing or indexing a classic and an OPH signature raises ``IncompatibleSketchError``).

The kernels are in :mod:`neardup._kernels.oph`; :class:`~neardup.methods.minhash.sketch.MinHasher`
with ``sketch="oph"`` is the way in.

>>> import numpy as np
>>> from neardup.methods.minhash.sketch import MinHasher
>>> mh = MinHasher.for_sets(num_perm=128, sketch="oph")
>>> sigs = mh.sign_sets([range(0, 1000), range(200, 1200)])   # J = 800 / 1200
>>> abs(sigs.jaccard(0, j=1) - 2 / 3) < 0.15
True
"""

from __future__ import annotations

import numpy as np

from ..._kernels.oph import TABLE_ATTEMPTS, oph_param_array, sequence

OPH_FAMILY = "nd64/oph-dens-32"


def oph_params(seed: int) -> np.ndarray:
    """The seeded constants (salt, c, d) of the definition above, as uint64[3] (kernels in
    :mod:`neardup._kernels.oph`)."""
    return oph_param_array(np.uint64(seed))


def oph_sequence(params: np.ndarray, num_perm: int) -> np.ndarray:
    """The first 8 attempts of every bin's densification sequence, uint32[K, 8]: a table the
    kernels read instead of hashing, since the sequence depends on the seed and K only."""
    return sequence(params[1], params[2], num_perm, TABLE_ATTEMPTS)
