"""Classic MinHash kernels: the permutation parameters, and shingle hashes folded into signatures.

:func:`permutations` derives every ``(a_k, b_k)`` from the seed with SplitMix64;
:func:`fold_minhash` sets slot k to ``min_x ((a_k x + b_k) mod 2**64) >> 32`` over a set's element
hashes; :func:`minhash_csr` signs CSR sets, :func:`minhash_texts_kernel` texts, shingled on the
way by :mod:`neardup._kernels.shingles`. Every slot of the empty set's signature is
:data:`EMPTY_VALUE`. The hash family is defined in :mod:`neardup.methods.minhash.scheme`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import splitmix64
from .shingles import HASH_BLOCK, LOCKSTEP_WORDS, doc_hashes, doc_scratch

EMPTY_VALUE = np.uint32(0xFFFFFFFF)


_GAMMA = 0x9E3779B97F4A7C15


@nb.njit(cache=True)
def permutations(seed, k):
    a = np.empty(k, dtype=np.uint64)
    b = np.empty(k, dtype=np.uint64)
    gamma = np.uint64(_GAMMA)
    for i in range(k):
        a[i] = splitmix64(seed + np.uint64(2 * i) * gamma) | np.uint64(1)
        b[i] = splitmix64(seed + np.uint64(2 * i + 1) * gamma)
    return a, b


@nb.njit(cache=True, nogil=True)
def minhash_csr(hashes, offsets, a, b, out):
    acc = np.empty(a.shape[0], dtype=np.uint64)
    for d in range(offsets.shape[0] - 1):
        fold_minhash(hashes, offsets[d], offsets[d + 1], a, b, acc, out[d])


@nb.njit(inline="always", cache=True)
def fold_minhash(hashes, lo, hi, a, b, acc, sig):
    """Set ``sig`` to the classic MinHash of the element hashes ``hashes[lo:hi]``.

    Slot k is ``min_x ((a_k x + b_k) mod 2**64) >> 32``. As ``v -> v >> 32`` is monotone, this
    is the top half of ``min_x ((a_k x + b_k) mod 2**64)``, so the minimum is taken over the full
    64-bit values in ``acc`` (uint64[K] scratch; vectorized as multiply, add, unsigned min) and
    halved once at the end. Two elements are folded per pass over ``acc``, which halves its
    loads and stores; the multiplies are then what bounds the loop.
    """
    acc[:] = np.uint64(0xFFFFFFFFFFFFFFFF)
    k = acc.shape[0]
    i = lo
    while i + 2 <= hi:
        x0 = hashes[np.uint64(i)]
        x1 = hashes[np.uint64(i + 1)]
        for j in range(k):
            acc[j] = min(acc[j], min(a[j] * x0 + b[j], a[j] * x1 + b[j]))
        i += 2
    if i < hi:
        x0 = hashes[np.uint64(i)]
        for j in range(k):
            acc[j] = min(acc[j], a[j] * x0 + b[j])
    for j in range(k):
        sig[j] = np.uint32(acc[j] >> np.uint64(32))


@nb.njit(cache=True, nogil=True)
def minhash_texts_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """Fill ``sigs[d]`` with the MinHash of the shingles of ``data[starts[d]:ends[d]]`` and
    ``counts[d]`` with how many there were."""
    buf, words, pos = doc_scratch(starts, ends)
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        c = doc_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        fold_minhash(hs, 0, c, a, b, acc, sigs[d])
        counts[d] = c
