"""Kernels of one-permutation hashing with optimal densification (the ``oph`` MinHash sketch).

The definition of the hash family ``"nd64/oph-dens-32"`` (binning, densification, the seeded
constants) is in :mod:`neardup.methods.minhash.oph`; these kernels compute it: the seeded
constants and attempt table, the fold of element hashes into bins, densification, and the
batch kernels over CSR hashes and over texts.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import fmix64, splitmix64
from .intrinsics import copy_into
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
    copy_into(orig, 0, sig, 0, k)
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
