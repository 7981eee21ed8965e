"""Classic MinHash kernels: the permutation parameters, and shingle hashes folded into signatures.

:func:`permutations` derives every ``(a_k, b_k)`` from the seed with SplitMix64;
:func:`fold_minhash` sets slot k to ``min_x ((a_k x + b_k) mod 2**64) >> 32`` over a set's element
hashes; :func:`minhash_csr` signs CSR sets, :func:`minhash_texts_kernel` texts, shingled on the
way by :mod:`neardup._kernels.shingles`. Every slot of the empty set's signature is
:data:`EMPTY_VALUE`. The hash family is defined in :mod:`neardup.methods.minhash.scheme`.

Two folds give identical values: :func:`fold_minhash` multiplies in 64-bit lanes, which is one
instruction only with AVX-512DQ (``vpmullq``); without it (AVX2, the SSE2 baseline, most cloud and
laptop CPUs) LLVM emulates each 64-bit multiply and each unsigned 64-bit minimum with several
instructions, and :func:`fold_minhash32` evaluates the same top 32 bits through 32-bit lanes
instead (the multiply-shift split into halves, see its docstring), 1.5x faster on AVX2 (but
slower on the SSE2 baseline, which lacks 32-bit lane multiply and unsigned minimum, so that keeps
the 64-bit fold). Which one the kernels use is fixed when they compile, from the CPU target numba
compiles for (:data:`WIDE_MULTIPLY`); numba caches kernels per target, so each keeps its own.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hashing import splitmix64
from .shingles import HASH_BLOCK, LOCKSTEP_WORDS, doc_hashes, doc_scratch

EMPTY_VALUE = np.uint32(0xFFFFFFFF)


_GAMMA = 0x9E3779B97F4A7C15

# CPUs LLVM knows by name that have AVX-512DQ (used when NUMBA_CPU_NAME is set and
# NUMBA_CPU_FEATURES is empty, i.e. the named CPU's own feature set applies)
_AVX512DQ_CPUS = frozenset(
    {
        "skylake-avx512",
        "cascadelake",
        "cooperlake",
        "cannonlake",
        "icelake-client",
        "icelake-server",
        "tigerlake",
        "rocketlake",
        "sapphirerapids",
        "emeraldrapids",
        "graniterapids",
        "graniterapids-d",
        "znver4",
        "znver5",
        "x86-64-v4",
    }
)
_AVX2_CPUS = _AVX512DQ_CPUS | frozenset(
    {
        "haswell",
        "broadwell",
        "skylake",
        "alderlake",
        "raptorlake",
        "meteorlake",
        "arrowlake",
        "znver1",
        "znver2",
        "znver3",
        "x86-64-v3",
    }
)


def use_fold32() -> bool:
    """Whether the CPU target numba compiles for has AVX2 (32-bit lane multiply and unsigned
    minimum) but not AVX-512DQ (a 64-bit lane multiply): then :func:`fold_minhash32` is faster.
    On the SSE2 baseline (no ``pmulld``, ``pminud``) it is slower, so the 64-bit fold stays.

    Follows numba's own choice of target: ``NUMBA_CPU_NAME`` (default the host CPU) and
    ``NUMBA_CPU_FEATURES`` (default the host's features; empty: the named CPU's own)."""
    import llvmlite.binding as ll
    from numba.core import config

    name = (config.CPU_NAME or ll.get_host_cpu_name()).lower()
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    if features:
        flags = set(features.split(","))
        return "+avx2" in flags and "+avx512dq" not in flags
    return name in _AVX2_CPUS and name not in _AVX512DQ_CPUS


# fixed when the kernels compile (numba freezes globals); numba caches per CPU target
WIDE_MULTIPLY = not use_fold32()


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
def split_permutations(a, b):
    """The low and high 32-bit halves of every ``a_k`` and ``b_k`` (for :func:`fold_minhash32`)."""
    k = a.shape[0]
    halves = np.empty((4, k), dtype=np.uint32)
    m = np.uint64(0xFFFFFFFF)
    for j in range(k):
        halves[0, j] = np.uint32(a[j] & m)
        halves[1, j] = np.uint32(a[j] >> np.uint64(32))
        halves[2, j] = np.uint32(b[j] & m)
        halves[3, j] = np.uint32(b[j] >> np.uint64(32))
    return halves


@nb.njit(cache=True, nogil=True)
def minhash_csr(hashes, offsets, a, b, out):
    acc = np.empty(a.shape[0], dtype=np.uint64)
    halves = split_permutations(a, b)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    for d in range(offsets.shape[0] - 1):
        if WIDE_MULTIPLY:
            fold_minhash(hashes, offsets[d], offsets[d + 1], a, b, acc, out[d])
        else:
            fold_minhash32(hashes, offsets[d], offsets[d + 1], halves, acc32, out[d])


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


@nb.njit(inline="always", cache=True)
def fold_minhash32(hashes, lo, hi, halves, acc, sig):
    """Set ``sig`` to the classic MinHash of ``hashes[lo:hi]``, as :func:`fold_minhash`, through
    32-bit lanes (``halves`` from :func:`split_permutations`, ``acc`` uint32[K] scratch).

    With ``a = a_h 2^32 + a_l``, ``b = b_h 2^32 + b_l``, ``x = x_h 2^32 + x_l`` and
    ``p = a_l x_l`` (a 32 x 32 -> 64-bit product), the top half of ``(a x + b) mod 2^64`` is
    ``(hi(p) + a_h x_l + a_l x_h + b_h + c) mod 2^32``, where ``c`` is the carry out of
    ``lo(p) + b_l``; the terms ``a_h x_h 2^64`` and the high halves of ``a_h x_l``, ``a_l x_h``
    vanish mod 2^64 (Knuth, TAOCP vol. 2, 4.3.1, schoolbook multiplication). The minimum is
    taken over these 32-bit values directly (``v -> v >> 32`` is monotone), so every lane
    operation is one AVX2 instruction: ``vpmuludq``, ``vpmulld``, ``vpaddd``, ``vpminud``.
    """
    k = acc.shape[0]
    for j in range(k):
        acc[j] = np.uint32(0xFFFFFFFF)
    m = np.uint64(0xFFFFFFFF)
    for i in range(lo, hi):
        x = hashes[np.uint64(i)]
        xl = np.uint32(x & m)
        xh = np.uint32(x >> np.uint64(32))
        for j in range(k):
            al = halves[0, j]
            p = np.uint64(al) * np.uint64(xl)
            low = np.uint32(p)
            s = np.uint32(low + halves[2, j])
            c = np.uint32(1) if s < low else np.uint32(0)
            top = np.uint32(
                np.uint32(p >> np.uint64(32)) + np.uint32(halves[1, j] * xl) + np.uint32(al * xh) + halves[3, j] + c
            )
            acc[j] = min(acc[j], top)
    for j in range(k):
        sig[j] = acc[j]


@nb.njit(cache=True, nogil=True)
def minhash_texts_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """Fill ``sigs[d]`` with the MinHash of the shingles of ``data[starts[d]:ends[d]]`` and
    ``counts[d]`` with how many there were."""
    buf, words, pos = doc_scratch(starts, ends)
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    halves = split_permutations(a, b)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        c = doc_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        if WIDE_MULTIPLY:
            fold_minhash(hs, 0, c, a, b, acc, sigs[d])
        else:
            fold_minhash32(hs, 0, c, halves, acc32, sigs[d])
        counts[d] = c
