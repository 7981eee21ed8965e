"""One-permutation hashing with optimal densification, the fast MinHash option: definition and kernels.

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

Kernels: :func:`oph_param_array` (salt, c and d from the seed), :func:`sequence` (the first
attempts of every bin, tabled), :func:`oph_fold_many` (binning), :func:`densify`, and
:func:`oph_csr_kernel` and :func:`oph_texts_kernel` (sets and texts). Their Python entries are in
:mod:`neardup.methods.minhash.oph` and :mod:`neardup.methods.minhash.sketch`.

>>> import numpy as np
>>> from neardup.methods.minhash.sketch import MinHasher
>>> mh = MinHasher.for_sets(num_perm=128, sketch="oph")
>>> sigs = mh.sign_sets([range(0, 1000), range(200, 1200)])   # J = 800 / 1200
>>> abs(sigs.jaccard(0, j=1) - 2 / 3) < 0.15
True
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import fmix64, splitmix64
from .shingles import HASH_BLOCK, LOCKSTEP_WORDS, doc_hashes, doc_scratch

EMPTY = np.uint32(0xFFFFFFFF)


_GAMMA = 0x9E3779B97F4A7C15


_LOW32 = np.uint64(0xFFFFFFFF)


_ATTEMPTS_PER_BIN = 32


@nb.njit(cache=True)
def oph_param_array(seed):
    out = np.empty(3, dtype=np.uint64)
    gamma = np.uint64(_GAMMA)
    for j in range(3):
        out[j] = splitmix64(seed + np.uint64(j) * gamma)
    out[1] |= np.uint64(1)
    return out


TABLE_ATTEMPTS = 8


@nb.njit(inline="always", cache=True)
def _attempt(i, t, c, d, kk):
    """Attempt t of empty bin i: the bin it borrows from if that one is non-empty."""
    u = fmix64(c * ((np.uint64(i) << np.uint64(32)) | np.uint64(t)) + d) >> np.uint64(32)
    return (u * kk) >> np.uint64(32)


@nb.njit(cache=True)
def sequence(c, d, k, attempts):
    kk = np.uint64(k)
    seq = np.empty((k, attempts), dtype=np.uint32)
    for i in range(k):
        for t in range(attempts):
            seq[i, t] = _attempt(i, t, c, d, kk)
    return seq


@nb.njit(inline="always", cache=True)
def oph_fold_many(hashes, lo, hi, salt, sig, bins, values):
    """Fold ``hashes[lo:hi]`` into ``sig``: first every bin and value (a vectorized loop), then
    the minima (``bins``, ``values``: scratch of at least ``hi - lo`` entries)."""
    k = sig.shape[0]
    kk = np.uint64(k)
    xs = hashes[lo:hi]
    m = xs.shape[0]
    if k >= 2 and k & (k - 1) == 0:  # K = 2^p: the bin ((y >> 32) * K) >> 32 is y >> (64 - p), one multiply less
        p = 0
        while (1 << p) < k:
            p += 1
        sh = np.uint64(64 - p)
        for i in range(m):
            y = fmix64(xs[i] ^ salt)
            bins[i] = y >> sh
            values[i] = np.uint32(y & _LOW32)
    else:
        for i in range(m):
            y = fmix64(xs[i] ^ salt)
            bins[i] = ((y >> np.uint64(32)) * kk) >> np.uint64(32)
            values[i] = np.uint32(y & _LOW32)
    for i in range(m):
        b = bins[i]
        sig[b] = min(sig[b], values[i])  # no branch: whether it lowers the bin is often a coin flip


@nb.njit(cache=True, nogil=True)
def densify(sig, c, d, seq, orig, attempts=-1):
    """Fill the empty bins of ``sig`` in place (optimal densification). ``seq`` is
    :func:`~neardup.methods.minhash.oph.oph_sequence`'s table of first attempts, ``orig``
    uint32[K] scratch; ``attempts`` per empty bin defaults to 32 K (tests lower it to reach the
    documented fallback)."""
    k = sig.shape[0]
    if attempts < 0:
        attempts = _ATTEMPTS_PER_BIN * k
    nonempty = 0
    for i in range(k):
        nonempty += sig[i] != EMPTY
    if nonempty == 0 or nonempty == k:
        return
    if nonempty == 1:
        v = EMPTY
        for i in range(k):
            v = min(v, sig[i])
        sig[:] = v
        return
    orig[:] = sig
    kk = np.uint64(k)
    first = min(attempts, seq.shape[1])
    for i in range(k):
        if orig[i] != EMPTY:
            continue
        # the first hit among the tabled attempts, found without a branch per attempt
        j = -1
        for t in range(first - 1, -1, -1):
            jt = np.int64(seq[i, t])
            j = jt if orig[jt] != EMPTY else j
        if j >= 0:
            sig[i] = orig[j]
            continue
        for t in range(first, attempts):
            jt = _attempt(i, t, c, d, kk)
            if orig[jt] != EMPTY:
                j = np.int64(jt)
                break
        if j < 0:  # practically never: the next non-empty bin to the right, cyclically
            j = (i + 1) % k
            while orig[j] == EMPTY:
                j = (j + 1) % k
        sig[i] = orig[j]


@nb.njit(cache=True, nogil=True)
def oph_csr_kernel(hashes, offsets, params, seq, out):
    """OPH signatures of the sets ``hashes[offsets[d]:offsets[d+1]]`` (element hashes) into ``out``."""
    salt, c, d_ = params[0], params[1], params[2]
    orig = np.empty(out.shape[1], dtype=np.uint32)
    longest = 0
    for d in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[d + 1] - offsets[d])
    bins = np.empty(longest, dtype=np.uint64)
    values = np.empty(longest, dtype=np.uint32)
    for d in range(offsets.shape[0] - 1):
        sig = out[d]
        sig[:] = EMPTY
        oph_fold_many(hashes, offsets[d], offsets[d + 1], salt, sig, bins, values)
        densify(sig, c, d_, seq, orig)


@nb.njit(cache=True, nogil=True)
def oph_texts_kernel(data, starts, ends, table, kind, n, strip, params, seq, sigs, counts):
    """Fill ``sigs[d]`` with the densified one-permutation MinHash (:mod:`neardup.methods.minhash.oph`)
    of the shingles of ``data[starts[d]:ends[d]]`` and ``counts[d]`` with how many there were;
    ``params`` and ``seq`` are :func:`~neardup.methods.minhash.oph.oph_params` and
    :func:`~neardup.methods.minhash.oph.oph_sequence`."""
    buf, words, pos = doc_scratch(starts, ends)
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    bins = np.empty(pos.shape[0], dtype=np.uint64)
    values = np.empty(pos.shape[0], dtype=np.uint32)
    orig = np.empty(sigs.shape[1], dtype=np.uint32)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        c = doc_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        sig = sigs[d]
        sig[:] = np.uint32(0xFFFFFFFF)
        oph_fold_many(hs, 0, c, params[0], sig, bins, values)
        densify(sig, params[1], params[2], seq, orig)
        counts[d] = c
