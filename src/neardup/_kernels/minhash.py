"""Classic MinHash kernels: the permutation parameters, and shingle hashes folded into signatures.

:func:`permutations` derives every ``(a_k, b_k)`` from the seed with SplitMix64;
:func:`fold_minhash` sets slot k to ``min_x ((a_k x + b_k) mod 2**64) >> 32`` over a set's element
hashes; :func:`minhash_csr` signs CSR sets, :func:`minhash_words_kernel` and
:func:`minhash_chars_kernel` texts, shingled on the way by :mod:`neardup._kernels.shingles`. Every slot of the empty
set's signature is :data:`EMPTY_VALUE`. The hash family is defined in :mod:`neardup.methods.minhash.scheme`.

Three folds give identical values (:func:`fold_set` picks one). :func:`fold_minhash` multiplies
in 64-bit lanes, which is one instruction only with AVX-512DQ (``vpmullq``), where
:func:`fold_minhash_blocks` does the same permutation-major with the minima in registers (1.9x);
without it (AVX2, the SSE2 baseline, most cloud and
laptop CPUs) LLVM emulates each 64-bit multiply and each unsigned 64-bit minimum with several
instructions, and :func:`fold_minhash32` evaluates the same top 32 bits through 32-bit lanes
instead (the multiply-shift split into halves, permutation-major with the minima in registers;
see its docstring), 2.1x the 64-bit fold on AVX2 (but slower on the SSE2 baseline, which lacks
32-bit lane multiply and unsigned minimum, so that keeps the 64-bit fold). Which one the kernels
use is fixed when they compile, from the CPU target numba compiles for (:data:`WIDE_MULTIPLY`,
:data:`FOLD64_BLOCKS`);
numba caches kernels per target, so each keeps its own.

Repeated elements change no minimum, so character-shingled texts and hashed sets with many
repeats are folded after :func:`drop_repeats` (a direct-mapped table that drops most repeats,
never a first occurrence): same signature, a quarter fewer hashes to fold for character 5-grams.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .charclass import IGNORE, OTHER, PUNCT, SPACE
from .hashing import splitmix64
from .intrinsics import copy_into, fold32x8, fold32x16, fold32x64, fold64x8, fold64x64
from .oph import densify, oph_fold_many
from .shingles import (
    _WORD_LUT,
    HASH_BLOCK,
    LOCKSTEP_WORDS,
    LOWER_ASCII,
    WORD_KIND,
    _char_units,
    _hash_fixed,
    _hash_starts,
    _word_tokens,
    char_hashes,
    doc_scratch,
    word_hashes,
)

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


def _target() -> tuple[str, set[str] | None]:
    """The CPU name numba compiles for and its feature flags (None: the named CPU's own)."""
    import llvmlite.binding as ll
    from numba.core import config

    name = (config.CPU_NAME or ll.get_host_cpu_name()).lower()
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    return name, (set(features.split(",")) if features else None)


def use_fold64_blocks() -> bool:
    """Whether the CPU target has AVX-512DQ (``vpmullq``; with AVX-512F's ``vpminuq``): then
    :func:`fold_minhash_blocks` holds 64 minima in eight ``zmm`` registers per pass."""
    name, flags = _target()
    if flags is not None:
        return "+avx512dq" in flags and "+avx512f" in flags
    return name in _AVX512DQ_CPUS


def use_fold32() -> bool:
    """Whether the CPU target numba compiles for has AVX2 (32-bit lane multiply and unsigned
    minimum) but not AVX-512DQ (a 64-bit lane multiply): then :func:`fold_minhash32` is faster.
    On the SSE2 baseline (no ``pmulld``, ``pminud``) it is slower, so the 64-bit fold stays.

    Follows numba's own choice of target: ``NUMBA_CPU_NAME`` (default the host CPU) and
    ``NUMBA_CPU_FEATURES`` (default the host's features; empty: the named CPU's own)."""
    name, flags = _target()
    if flags is not None:
        return "+avx2" in flags and "+avx512dq" not in flags
    return name in _AVX2_CPUS and name not in _AVX512DQ_CPUS


# fixed when the kernels compile (numba freezes globals); numba caches per CPU target
WIDE_MULTIPLY = not use_fold32()
FOLD64_BLOCKS = WIDE_MULTIPLY and use_fold64_blocks()


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


SEEN_BITS = 14
""":func:`drop_repeats` remembers at most ``2**SEEN_BITS`` hashes (128 KiB, within L2)."""


@nb.njit(cache=True, nogil=True)
def seen_table():
    """Scratch for :func:`drop_repeats`."""
    return np.empty(1 << SEEN_BITS, dtype=np.uint64)


@nb.njit(inline="always", cache=True)
def drop_repeats(hashes, lo, hi, seen, out):
    """Copy ``hashes[lo:hi]`` to ``out`` in order, leaving out some of the hashes that occurred
    before (not necessarily all); return how many were copied. ``out`` may be ``hashes`` itself
    when ``lo`` is 0 (the copy never overtakes the reading).

    A MinHash slot is a minimum, so a repeated element changes no slot and dropping repeats
    gives the same signature, for less folding (character 5-grams of English repeat ~24% within
    a document, word 5-grams ~1.5%). ``seen`` (from :func:`seen_table`) is a direct-mapped
    table: hash x goes to slot ``s(x) = (x * gamma mod 2^64) >> (64 - bits)``, and x is dropped
    exactly when slot s(x) holds x, which only a hash stored in this call can put there: the
    table starts with 0 in every slot but slot 0 and 1 in slot 0, and s(0) = 0 while s(1) > 0
    (gamma's top bit is set). A collision overwrites a slot, so some repeats pass: harmless.
    Branch-free, about a nanosecond per hash, and 16 bytes of table to clear per hash.
    """
    n = hi - lo
    bits = 6
    while (1 << bits) < 2 * n and bits < SEEN_BITS:
        bits += 1
    size = 1 << bits
    for s in range(size):
        seen[s] = 0
    seen[0] = 1
    shift = np.uint64(64 - bits)
    gamma = np.uint64(_GAMMA)
    m = 0
    for i in range(lo, hi):
        x = hashes[i]
        s = (x * gamma) >> shift
        out[m] = x
        m += seen[s] != x
        seen[s] = x
    return m


REPEAT_PROBE = 16
""":func:`minhash_csr` drops repeats from every set while they are at least 1/16 of the previous
set's elements, and otherwise from every 16th set only (to notice when they come back)."""

REPEAT_MAX = 1 << 16
""":func:`minhash_csr` folds larger sets as they are (the copy without repeats would take as much
memory as the set; the table remembers only ``2**SEEN_BITS`` hashes anyway)."""


@nb.njit(cache=True, nogil=True)
def minhash_csr(hashes, offsets, a, b, out):
    acc = np.empty(a.shape[0], dtype=np.uint64)
    halves = split_permutations(a, b)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    seen = seen_table()
    longest = 0
    for d in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[d + 1] - offsets[d])
    kept = np.empty(min(longest, REPEAT_MAX), dtype=np.uint64)
    repeats = True
    for d in range(offsets.shape[0] - 1):
        lo, hi = offsets[d], offsets[d + 1]
        if (repeats or d % REPEAT_PROBE == 0) and hi - lo <= REPEAT_MAX:
            m = drop_repeats(hashes, lo, hi, seen, kept)
            if hi > lo:
                repeats = (hi - lo - m) * REPEAT_PROBE >= hi - lo
            fold_set(kept, 0, m, a, b, halves, acc, acc32, out[d])
        else:  # a separate call: one array that is either of two made the SSE2 fold 10% slower
            fold_set(hashes, lo, hi, a, b, halves, acc, acc32, out[d])


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


FOLD_CHUNK = 1024
""":func:`fold_minhash32` takes a set's hashes this many at a time (8 KiB, so that they stay in L1
while every block of permutations passes over them)."""


@nb.njit(inline="always", cache=True)
def fold_minhash_blocks(hashes, lo, hi, a, b, acc, sig):
    """Set ``sig`` to the classic MinHash of ``hashes[lo:hi]``, as :func:`fold_minhash`, with
    AVX-512DQ: permutation-major, 64 permutations a pass (their 64-bit minima in eight ``zmm``
    registers, ``a`` and ``b`` in eight more, so per hash and 8 permutations one ``vpmullq``,
    ``vpaddq``, ``vpminuq`` and no loads or stores), the hashes :data:`FOLD_CHUNK` at a time
    (:func:`~neardup._kernels.intrinsics.fold64x64`, ``fold64x8``; ``acc`` uint64[K] scratch,
    ``hashes`` C-contiguous). 1.9x :func:`fold_minhash`, which loads and stores every minimum
    for every two hashes."""
    k = acc.shape[0]
    for j in range(k):
        acc[j] = np.uint64(0xFFFFFFFFFFFFFFFF)
    for c0 in range(lo, hi, FOLD_CHUNK):
        c1 = min(c0 + FOLD_CHUNK, hi)
        j = 0
        while j + 64 <= k:
            fold64x64(hashes, c0, c1, a, b, j, acc)
            j += 64
        while j + 8 <= k:
            fold64x8(hashes, c0, c1, a, b, j, acc)
            j += 8
        for r in range(j, k):
            best = acc[r]
            for i in range(c0, c1):
                best = min(best, a[r] * hashes[i] + b[r])
            acc[r] = best
    for j in range(k):
        sig[j] = np.uint32(acc[j] >> np.uint64(32))


@nb.njit(inline="always", cache=True)
def fold_set(hashes, lo, hi, a, b, halves, acc, acc32, sig):
    """``sig`` = the classic MinHash of ``hashes[lo:hi]`` by the fold for the compile target:
    :func:`fold_minhash_blocks` (AVX-512DQ), :func:`fold_minhash32` (AVX2 without it) or
    :func:`fold_minhash` (otherwise: the SSE2 baseline). Same values from all three."""
    if FOLD64_BLOCKS:
        fold_minhash_blocks(hashes, lo, hi, a, b, acc, sig)
    elif WIDE_MULTIPLY:
        fold_minhash(hashes, lo, hi, a, b, acc, sig)
    else:
        fold_minhash32(hashes, lo, hi, halves, b, acc32, sig)


@nb.njit(inline="always", cache=True)
def fold_minhash32(hashes, lo, hi, halves, b, acc, sig):
    """Set ``sig`` to the classic MinHash of ``hashes[lo:hi]``, as :func:`fold_minhash`, through
    32-bit lanes (``halves`` from :func:`split_permutations`, ``b`` the 64-bit ``b_k``, ``acc``
    uint32[K] scratch; ``hashes`` C-contiguous).

    With ``a = a_h 2^32 + a_l`` and ``x = x_h 2^32 + x_l``, the top half of ``(a x + b) mod 2^64``
    is ``(hi((a_l x_l + b) mod 2^64) + a_h x_l + a_l x_h) mod 2^32``: ``a x + b`` is
    ``(a_l x_l + b) + 2^32 (a_h x_l + a_l x_h) + 2^64 a_h x_h``, the last term vanishes mod
    2^64, and adding a multiple of 2^32 to a 64-bit value adds to its top half only (the carry
    out of the low half is already in ``a_l x_l + b``; Knuth, TAOCP vol. 2, 4.3.1). The minimum
    is taken over these 32-bit values directly (``v -> v >> 32`` is monotone).

    Permutation-major: a block of 64 permutations (then 16, then 8) keeps its 64 minima in eight
    vector registers while the hashes stream past (its ``a_l``, ``a_h``, ``b`` are operands read
    from L1, which the load ports absorb), and per hash and 8 permutations costs two ``vpmuludq``
    (even and odd lanes, 32 x 32 -> 64 bits, ``b`` added in 64 bits), two ``vpmulld``, four adds,
    a shift, a blend and ``vpminud``, no loads or stores of minima, and the hash's three
    broadcasts once per block (the intrinsics :func:`~neardup._kernels.intrinsics.fold32x64`,
    ``fold32x16``, ``fold32x8``; blocks of 16 kept their constants in registers but paid the
    broadcasts four times as often, 1.2x slower). The hashes are taken :data:`FOLD_CHUNK` at a
    time; the permutations left over (K mod 8) are folded one by one.
    """
    k = acc.shape[0]
    for j in range(k):
        acc[j] = np.uint32(0xFFFFFFFF)
    al = halves[0]
    ah = halves[1]
    m = np.uint64(0xFFFFFFFF)
    for c0 in range(lo, hi, FOLD_CHUNK):
        c1 = min(c0 + FOLD_CHUNK, hi)
        j = 0
        while j + 64 <= k:
            fold32x64(hashes, c0, c1, al, ah, b, j, acc)
            j += 64
        while j + 16 <= k:
            fold32x16(hashes, c0, c1, al, ah, b, j, acc)
            j += 16
        if j + 8 <= k:
            fold32x8(hashes, c0, c1, al, ah, b, j, acc)
            j += 8
        for r in range(j, k):
            alr, ahr, br = np.uint64(al[r]), np.uint32(ah[r]), b[r]
            best = acc[r]
            for i in range(c0, c1):
                x = hashes[i]
                top = np.uint32(
                    np.uint32((alr * (x & m) + br) >> np.uint64(32))
                    + np.uint32(ahr * np.uint32(x & m))
                    + np.uint32(np.uint32(alr) * np.uint32(x >> np.uint64(32)))
                )
                best = min(best, top)
            acc[r] = best
    for j in range(k):
        sig[j] = acc[j]


LONG_DOC = 1 << 24
"""Documents longer than this many bytes are tokenized :data:`WINDOW` bytes at a time (a
quarter of that for character shingles; :func:`long_doc`), so the kernel's scratch (tokens, their starts, the
shingle hashes: about 3.5 bytes a text byte) stays that of a window, not of the document."""

WINDOW = 1 << 22


@nb.njit(cache=True, nogil=True)
def _token_cut(data, i, end):
    """The first index in [i, end) of an ASCII byte that is not part of a word token (every such
    byte ends a token, see ``_word_tokens``), else ``end``."""
    lut = _WORD_LUT[0]
    while i < end:
        c = data[i]
        if c < 0x80 and lut[c] == 32:
            return i
        i += 1
    return end


@nb.njit(cache=True, nogil=True)
def _fold_into(hs, m, a, b, halves, acc, acc32, tmp, sig):
    """``sig = min(sig, MinHash of hs[:m])``, slot by slot: exact, as a slot is a monotone
    function (the top half) of the minimum over the elements."""
    fold_set(hs, 0, m, a, b, halves, acc, acc32, tmp)
    for j in range(sig.shape[0]):
        sig[j] = min(sig[j], tmp[j])


@nb.njit(cache=True, nogil=True)
def _copy_tokens(buf, pos, lo, hi, out, out_pos, at, k):
    """Copy tokens lo..hi-1 of a window (``buf``/``pos`` of ``_word_tokens``) to ``out`` from
    byte ``at``, each followed by one space, their starts to ``out_pos[k:]``; returns the end."""
    for t in range(lo, hi):
        out_pos[k] = at
        k += 1
        for q in range(pos[t], pos[t + 1] - 1):
            out[at] = buf[q]
            at += 1
        out[at] = 32
        at += 1
    return at


MAX_N = 256  # the longest shingle (neardup.text.shingles.MAX_SHINGLE_SIZE)


@nb.njit(cache=True, nogil=True)
def _scratch_bytes(size):
    """Token bytes for ``size`` text bytes, as ``doc_scratch`` sizes them (zeroed, 8-aligned)."""
    return np.zeros(((2 * size + 24) // 8) * 8, dtype=np.uint8)


CLASSIC, OPH, COLLECT = 0, 1, 2  # what _fold_windows does with the shingle hashes of a window


@nb.njit(cache=True, nogil=True)
def fold_long_doc(data, start, end, table, kind, n, strip, a, b, sig, window):
    """``sig`` = the classic MinHash of the word or character n-gram shingles of
    ``data[start:end]``, normalized ``window`` bytes at a time (:func:`long_doc`); returns the
    number of shingles. The MinHash kernels leave documents past :data:`LONG_DOC` bytes to it."""
    none = np.empty(0, dtype=np.uint64)
    cursor = np.zeros(1, dtype=np.int64)
    return long_doc(data, start, end, table, kind, n, strip, a, b, np.uint64(0), CLASSIC, sig, window, none, cursor)


@nb.njit(cache=True, nogil=True)
def oph_long_doc(data, start, end, table, kind, n, strip, params, seq, sig, window):
    """``sig`` = the densified one-permutation MinHash (as ``oph_texts_kernel``) of the word
    n-gram shingles of ``data[start:end]``, tokenized ``window`` bytes at a time; returns the
    number of shingles. A bin's value is the minimum over the shingles that fall in it, so the
    windows' bins combine by a minimum as classic slots do; densification comes last."""
    none = np.zeros(1, dtype=np.uint64)
    cursor = np.zeros(1, dtype=np.int64)
    c = long_doc(data, start, end, table, kind, n, strip, none, none, params[0], OPH, sig, window, none, cursor)
    densify(sig, params[1], params[2], seq, np.empty(sig.shape[0], dtype=np.uint32))
    return c


@nb.njit(cache=True, nogil=True)
def shingle_set_long_doc(data, start, end, table, kind, n, strip, window):
    """The sorted, duplicate-free word or character n-gram shingle hashes of ``data[start:end]``
    (as ``unique_rows(*shingle_encoded(...))``), tokenized ``window`` bytes at a time: the scratch is a window's,
    the hashes are written once (the array is as long as the text has bytes, but only the pages
    written become resident) and sorted in place."""
    out = np.empty(max(end - start + 1, 2 * MAX_N), dtype=np.uint64)
    cursor = np.zeros(1, dtype=np.int64)
    none = np.zeros(1, dtype=np.uint64)
    sig = np.empty(1, dtype=np.uint32)
    c = long_doc(data, start, end, table, kind, n, strip, none, none, np.uint64(0), COLLECT, sig, window, out, cursor)
    if c < 2:
        return out[:c].copy()
    part = out[:c]
    part.sort()
    k = 1
    for q in range(1, c):
        if part[q] != part[k - 1]:
            part[k] = part[q]
            k += 1
    return part[:k].copy()


@nb.njit(cache=True, nogil=True)
def _fold_any(hs, m, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor):
    """Fold ``hs[:m]`` into ``sig``: its classic slots, its OPH bins, or (COLLECT) append the
    hashes to ``out`` at ``cursor[0]``."""
    if mode == OPH:
        oph_fold_many(hs, 0, m, salt, sig, bins, values)
    elif mode == COLLECT:
        at = cursor[0]
        copy_into(out, at, hs, 0, m)
        cursor[0] = at + m
    else:
        _fold_into(hs, m, a, b, halves, acc, acc32, tmp, sig)


@nb.njit(cache=True, nogil=True)
def _fold_windows(data, start, end, table, kind, n, a, b, salt, mode, sig, window, out, cursor):
    """``sig`` = the classic MinHash (``mode`` OPH: the undensified OPH bins, salt ``salt``;
    COLLECT: the hashes appended to ``out``, see :func:`_fold_any`) of the word n-gram shingles
    of ``data[start:end]``, tokenized ``window`` bytes at a time; returns the number of
    shingles. Same signature and count as :func:`~neardup._kernels.shingles.doc_hashes` and a
    fold over the whole text.

    Windows end at an ASCII byte that separates tokens, so each token lies in one window and is
    tokenized as in the whole text. A window other than the last holds at least n tokens (it is
    doubled until it does). The shingles inside a window are hashed there; those across a cut
    are those of its *seam*: the last n - 1 tokens of the window before and the first n - 1
    tokens of the window after, joined by spaces as in the whole text (a shingle's hash depends
    on its bytes only). MinHash slots are minima, so the window signatures combine by a
    slot-wise minimum; the counts add up to tokens - n + 1.
    """
    lowbit = np.uint8(32) if kind & LOWER_ASCII else np.uint8(0)
    for j in range(sig.shape[0]):
        sig[j] = np.uint32(0xFFFFFFFF)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    halves = split_permutations(a, b)
    tmp = np.empty(sig.shape[0], dtype=np.uint32)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    cap = 0
    buf = _scratch_bytes(0)
    pos = np.empty(2, dtype=np.int64)
    hs = np.empty(2 * MAX_N, dtype=np.uint64)
    bins = np.empty(hs.shape[0], dtype=np.uint64)
    values = np.empty(hs.shape[0], dtype=np.uint32)
    tail = _scratch_bytes(0)
    tail_pos = np.empty(MAX_N, dtype=np.int64)
    ntail = 0
    tail_len = 0
    total = 0
    ws = start
    size = window
    while ws < end:
        we = _token_cut(data, min(ws + size, end), end)
        need = we - ws
        if need > cap:
            cap = need
            buf = _scratch_bytes(cap)
            pos = np.empty(cap + 2, dtype=np.int64)
            hs = np.empty(max(cap + 2, 2 * MAX_N), dtype=np.uint64)
            bins = np.empty(hs.shape[0], dtype=np.uint64)
            values = np.empty(hs.shape[0], dtype=np.uint32)
        words = buf.view(np.uint64)
        units, _ = _word_tokens(data, ws, we, table, buf, pos, lowbit)
        if we < end and units < n:
            size *= 2  # too few tokens for the seams: a longer window
            continue
        if ws == start and we == end:  # one window: the document as a whole
            c = word_hashes(data, start, end, table, kind, n, False, buf, words, pos, hs, 0, scratch)
            if c:
                _fold_any(hs, c, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor)
            return c
        if units >= n:
            m = units - n + 1
            _hash_starts(buf, words, pos, m, n, 1, hs, 0, scratch)
            _fold_any(hs, m, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor)
            total += m
        if ntail and units:
            head = min(n - 1, units)
            seam = _scratch_bytes(tail_len + pos[head] + 8)
            copy_into(seam, 0, tail, 0, tail_len)
            seam_pos = np.empty(ntail + head + 1, dtype=np.int64)
            copy_into(seam_pos, 0, tail_pos, 0, ntail)
            seam_pos[ntail + head] = _copy_tokens(buf, pos, 0, head, seam, seam_pos, tail_len, ntail)
            m = ntail + head - n + 1
            _hash_starts(seam, seam.view(np.uint64), seam_pos, m, n, 1, hs, 0, scratch)
            _fold_any(hs, m, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor)
            total += m
        if we < end and n > 1:  # the last n - 1 tokens begin the next seam
            ntail = n - 1
            tail = _scratch_bytes(pos[units] - pos[units - ntail] + 8)
            tail_len = _copy_tokens(buf, pos, units - ntail, units, tail, tail_pos, 0, 0)
        ws = we
        size = window
    return total


@nb.njit(cache=True, nogil=True)
def _char_cut(data, i, end, table, strip):
    """The first index j in [i, end) where ``data[j - 1]`` and ``data[j]`` are both ASCII
    characters the character stream keeps (not space, separator, ignored or stripped
    punctuation), else ``end``: the streams of the two sides then join with nothing between."""
    prev = False
    if i > 0 and i < end:
        c = data[i - 1]
        cls = table[c]
        prev = c < 0x80 and not (cls == SPACE or cls == OTHER or cls == IGNORE or (strip and cls == PUNCT))
    while i < end:
        c = data[i]
        cls = table[c] if c < 0x80 else SPACE
        keep = c < 0x80 and not (cls == SPACE or cls == OTHER or cls == IGNORE or (strip and cls == PUNCT))
        if keep and prev:
            return i
        prev = keep
        i += 1
    return end


@nb.njit(cache=True, nogil=True)
def _fold_char_windows(data, start, end, table, kind, n, strip, a, b, salt, mode, sig, window, out, cursor):
    """:func:`_fold_windows` for character n-gram shingles; returns the number of shingles.

    Windows are cut between two kept ASCII characters (:func:`_char_cut`), so the character
    stream of the text is the windows' streams one after the other. The shingles starting in a
    window are hashed from the stream of the window and enough bytes after it to hold n - 1 more
    characters (the stream of a prefix of the text is a prefix of its stream): no seams. A text
    with fewer than n characters in all is one shingle, the whole stream, as in ``char_hashes``.
    """
    lowbit = np.uint8(32) if kind & LOWER_ASCII else np.uint8(0)
    for j in range(sig.shape[0]):
        sig[j] = np.uint32(0xFFFFFFFF)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    halves = split_permutations(a, b)
    tmp = np.empty(sig.shape[0], dtype=np.uint32)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    cap = -1
    buf = _scratch_bytes(0)
    pos = np.empty(2, dtype=np.int64)
    hs = np.empty(2, dtype=np.uint64)
    bins = np.empty(2, dtype=np.uint64)
    values = np.empty(2, dtype=np.uint32)
    total = 0
    chars = 0
    ws = start
    while ws < end:
        we = _char_cut(data, min(ws + window, end), end, table, strip)
        ext = 4 * n + 64
        while True:
            xe = min(end, we + ext)
            while xe < end and data[xe] & 0xC0 == 0x80:  # a character boundary
                xe += 1
            if xe - ws > cap:
                cap = xe - ws + (xe - ws) // 8
                buf = _scratch_bytes(cap)
                pos = np.empty(cap + 2, dtype=np.int64)
                hs = np.empty(cap + 2, dtype=np.uint64)
                if mode == OPH:
                    bins = np.empty(cap + 2, dtype=np.uint64)
                    values = np.empty(cap + 2, dtype=np.uint32)
            units_a, _ = _char_units(data, ws, we, table, strip, buf, pos, lowbit)
            units, blen = _char_units(data, ws, xe, table, strip, buf, pos, lowbit)
            if xe == end or units - units_a >= n - 1:
                break
            ext *= 2
        chars += units_a
        m = min(units_a, units - n + 1) if we < end else units - n + 1
        if m > 0:
            if units == blen:
                _hash_fixed(buf, m, n, hs, 0)
            else:
                _hash_starts(buf, buf.view(np.uint64), pos, m, n, 0, hs, 0, scratch)
            _fold_any(hs, m, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor)
            total += m
        ws = we
    if total == 0 and chars > 0:  # fewer than n characters: one shingle, the whole stream
        buf = _scratch_bytes(end - start)
        pos = np.empty(end - start + 2, dtype=np.int64)
        c = char_hashes(data, start, end, table, kind, n, strip, buf, buf.view(np.uint64), pos, hs, 0, scratch)
        _fold_any(hs, c, a, b, halves, acc, acc32, tmp, sig, salt, mode, bins, values, out, cursor)
        total = c
    return total


@nb.njit(cache=True, nogil=True)
def long_doc(data, start, end, table, kind, n, strip, a, b, salt, mode, sig, window, out, cursor):
    """:func:`_fold_windows` (word shingles) or :func:`_fold_char_windows` (character ones)."""
    if kind & 1 == WORD_KIND:
        return _fold_windows(data, start, end, table, kind, n, a, b, salt, mode, sig, window, out, cursor)
    # a character window's scratch is about 20 bytes a text byte, a word window's 3.5
    w = max(window // 4, 1)
    return _fold_char_windows(data, start, end, table, kind, n, strip, a, b, salt, mode, sig, w, out, cursor)


@nb.njit(cache=True, nogil=True)
def minhash_words_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """Fill ``sigs[d]`` with the MinHash of the word shingles (``kind & 1 == WORD_KIND``) of
    ``data[starts[d]:ends[d]]`` and ``counts[d]`` with how many there were, except for documents
    longer than :data:`LONG_DOC` bytes: those get ``counts[d] = -1`` and ``sigs[d]`` untouched,
    and the caller signs them with :func:`fold_long_doc` (bounded scratch, same result).

    Kept small for its compile time, which the first run waits for: the long documents have a
    kernel of their own, compiled only when a job has one (compiled in here it was a third of
    this kernel's compile time), and character shingles another, :func:`minhash_chars_kernel`
    (the same loop over :func:`~neardup._kernels.shingles.char_hashes`): either compiles half
    the shingling code."""
    buf, words, pos = doc_scratch(starts, np.minimum(ends, starts + LONG_DOC))
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    halves = split_permutations(a, b)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        if ends[d] - starts[d] > LONG_DOC:
            counts[d] = -1
            continue
        c = word_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        fold_set(hs, 0, c, a, b, halves, acc, acc32, sigs[d])
        counts[d] = c


@nb.njit(cache=True, nogil=True)
def minhash_chars_kernel(data, starts, ends, table, kind, n, strip, a, b, sigs, counts):
    """:func:`minhash_words_kernel` for character shingles (``kind & 1 == CHAR_KIND``; documents
    past :data:`LONG_DOC` bytes are left to :func:`fold_long_doc` in the same way). Character
    shingles repeat often within a document, so they are folded after :func:`drop_repeats` (same
    signature; the count is that of all shingles)."""
    buf, words, pos = doc_scratch(starts, np.minimum(ends, starts + LONG_DOC))
    hs = np.empty(pos.shape[0], dtype=np.uint64)
    acc = np.empty(a.shape[0], dtype=np.uint64)
    halves = split_permutations(a, b)
    acc32 = np.empty(a.shape[0], dtype=np.uint32)
    seen = seen_table()
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    for d in range(starts.shape[0]):
        if ends[d] - starts[d] > LONG_DOC:
            counts[d] = -1
            continue
        c = char_hashes(data, starts[d], ends[d], table, kind, n, strip, buf, words, pos, hs, 0, scratch)
        m = drop_repeats(hs, 0, c, seen, hs)
        fold_set(hs, 0, m, a, b, halves, acc, acc32, sigs[d])
        counts[d] = c
