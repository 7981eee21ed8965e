"""nd128, and the kernels that group equal keys for the exact method, its pre-pass and its index.

:func:`keys_kernel` computes nd128, two 64-bit lanes over the same 8-byte words (lane A is nd64,
:mod:`neardup._kernels.hashing`), of every document's normalized or raw bytes; nd128 and the exact
key of a text are defined in :mod:`neardup.methods.exact.keys`. :func:`pairs_within` and
:func:`cross` list the pairs of groups of equal keys, and :func:`admit_kernel` and
:func:`rehash_kernel` keep the open-addressing table of the keys seen so far, for the streaming
exact pre-pass (:mod:`neardup.methods.exact.groups`). The queries of
:class:`neardup.index.exact.ExactIndex` are here too. The lanes also make the I-Match signatures
(:mod:`neardup._kernels.imatch`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .charclass import IGNORE, OTHER, SPACE
from .hashing import P1, P2, SEED, fmix64, rotl64
from .intrinsics import copy_into, load8
from .runs import equal_range
from .shingles import decode

# --------------------------------------------------------------------------------------------
# nd128: lane B's seed and multipliers (lane A's are nd64's)
SEED_B = np.uint64(0x8EBC6AF09C88C6E3)


Q1 = np.uint64(0xA0761D6478BD642F)


Q2 = np.uint64(0xE7037ED1A0B428DB)


GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment, for the I-Match lexicon salts


@nb.njit(inline="always", cache=True)
def lane_a(h, w):
    return rotl64(h ^ (w * P1), 31) * P2


@nb.njit(inline="always", cache=True)
def lane_b(h, w):
    return rotl64(h ^ (w * Q1), 29) * Q2


@nb.njit(inline="always", cache=True)
def _push(byte, acc, shift, a, b):
    """Append one byte to the word accumulator; a full word goes into both lanes."""
    acc |= np.uint64(byte) << shift
    shift += np.uint64(8)
    if shift == 64:
        a = lane_a(a, acc)
        b = lane_b(b, acc)
        acc = np.uint64(0)
        shift = np.uint64(0)
    return acc, shift, a, b


@nb.njit(inline="always", cache=True)
def _finish(acc, shift, a, b, n, out, row):
    if shift:
        a = lane_a(a, acc)
        b = lane_b(b, acc)
    size = np.uint64(n)
    out[row, 0] = fmix64(a ^ size)
    out[row, 1] = fmix64(b ^ size)


@nb.njit(cache=True, nogil=True)
def keys_kernel(data, offsets, table, raw, out):
    """``out[d]`` = nd128 of document d's bytes, normalized (the exact key of
    :mod:`neardup.methods.exact.keys`) unless raw.

    The normalized bytes are never stored: each output byte goes into a 64-bit word accumulator,
    and every full word into both lanes.
    """
    ndoc = offsets.shape[0] - 1
    for d in range(ndoc):
        start = offsets[d]
        end = offsets[d + 1]
        a = SEED
        b = SEED_B
        acc = np.uint64(0)
        shift = np.uint64(0)
        if raw:
            i = start
            while i + 8 <= end:
                w = np.uint64(0)
                for q in range(8):
                    w |= np.uint64(data[i + q]) << np.uint64(8 * q)
                a = lane_a(a, w)
                b = lane_b(b, w)
                i += 8
            while i < end:
                acc, shift, a, b = _push(data[i], acc, shift, a, b)
                i += 1
            _finish(acc, shift, a, b, end - start, out, d)
            continue
        n = 0
        pending = False
        i = start
        while i < end:
            c = data[i]
            if c < 0x80:  # ASCII: one byte, one character
                cls = table[c]
                j = i + 1
            else:
                cp, j = decode(data, i, end)
                cls = table[cp]
            if cls == SPACE or cls == OTHER:
                pending = n > 0
            elif cls != IGNORE:
                if pending:
                    pending = False
                    acc, shift, a, b = _push(32, acc, shift, a, b)
                    n += 1
                if j == i + 1:
                    acc, shift, a, b = _push(c, acc, shift, a, b)
                else:
                    for q in range(i, j):  # the character's own bytes, as they are
                        acc, shift, a, b = _push(data[q], acc, shift, a, b)
                n += j - i
            i = j
        _finish(acc, shift, a, b, n, out, d)


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH8 = np.uint64(0x8080808080808080)
_PAST_Z = np.uint64(0x2525252525252525)  # 0x7F - ord("Z") in every byte
_FROM_A = np.uint64(0x3F3F3F3F3F3F3F3F)  # 0x80 - ord("A") in every byte


@nb.njit(inline="always", cache=True)
def _lower_word(w):
    """The 8 bytes of ``w`` with ASCII A-Z lower-cased: a byte's 7 low bits plus 0x3F reach
    0x80 from ``A`` on, plus 0x25 from past ``Z`` on (no carry leaves a byte: 0x7F + 0x3F <
    0x100); a byte below 0x80 with the first and not the second is A-Z, and gets 0x20."""
    low = w & _LOW7
    upper = ((low + _FROM_A) ^ (low + _PAST_Z)) & ~w & _HIGH8
    return w | (upper >> np.uint64(2))


@nb.njit(cache=True, nogil=True)
def lowered_keys_kernel(data, offsets, out):
    """``keys_kernel(lower_ascii(data), offsets, table, True, out)`` without the lower-cased
    copy: each byte is lower-cased (ASCII A-Z) as it goes into the word, 8 bytes at a time as
    ``keys_kernel``'s raw branch reads them."""
    for d in range(offsets.shape[0] - 1):
        start = offsets[d]
        end = offsets[d + 1]
        a = SEED
        b = SEED_B
        acc = np.uint64(0)
        shift = np.uint64(0)
        i = start
        while i + 8 <= end:
            w = _lower_word(load8(data, i))
            a = lane_a(a, w)
            b = lane_b(b, w)
            i += 8
        while i < end:
            c = data[i]
            c = c + np.uint8(32) * np.uint8(np.uint8(c - np.uint8(65)) < np.uint8(26))
            acc, shift, a, b = _push(c, acc, shift, a, b)
            i += 1
        _finish(acc, shift, a, b, end - start, out, d)


# --------------------------------------------------------------------------------------------
# pairs of groups of equal keys
@nb.njit(cache=True, nogil=True)
def pairs_within(members, starts, ends, total):
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    p = 0
    for g in range(starts.shape[0]):
        for x in range(starts[g], ends[g]):
            for y in range(x + 1, ends[g]):
                a[p] = members[x]
                b[p] = members[y]
                p += 1
    return a, b


@nb.njit(cache=True, nogil=True)
def cross(members, first, a, b, s):
    total = 0
    for q in range(a.shape[0]):
        total += (first[a[q] + 1] - first[a[q]]) * (first[b[q] + 1] - first[b[q]])
    pa = np.empty(total, dtype=np.int64)
    pb = np.empty(total, dtype=np.int64)
    ps = np.empty(total, dtype=np.float64)
    p = 0
    for q in range(a.shape[0]):
        for x in range(first[a[q]], first[a[q] + 1]):
            for y in range(first[b[q]], first[b[q] + 1]):
                u = members[x]
                v = members[y]
                pa[p] = min(u, v)
                pb[p] = max(u, v)
                ps[p] = s[q]
                p += 1
    return pa, pb, ps


# --------------------------------------------------------------------------------------------
# the pre-pass's table of the keys seen so far
@nb.njit(inline="always", cache=True)
def _find_slot(slots, reps, k0, k1):
    """The slot of key (k0, k1) in the open-addressing table (``slots`` keys, ``reps`` their
    first document, -1 = free), or the free slot where it belongs: linear probing from the key's
    low bits, which are hash output."""
    mask = np.uint64(reps.shape[0] - 1)
    h = k0 & mask
    while reps[h] >= 0 and not (slots[h, 0] == k0 and slots[h, 1] == k1):
        h = (h + np.uint64(1)) & mask
    return h


@nb.njit(cache=True, nogil=True)
def admit_kernel(slots, reps, keys, valid, start, rep):
    """Look every valid key up in the table (see :func:`_find_slot`) and insert the new ones.
    ``rep[i]`` becomes the first document with key i (``start + i`` if new). Returns how many
    keys were inserted."""
    added = 0
    for i in range(keys.shape[0]):
        rep[i] = start + i
        if not valid[i]:
            continue
        h = _find_slot(slots, reps, keys[i, 0], keys[i, 1])
        if reps[h] >= 0:
            rep[i] = reps[h]
        else:
            slots[h, 0], slots[h, 1], reps[h] = keys[i, 0], keys[i, 1], start + i
            added += 1
    return added


@nb.njit(cache=True, nogil=True)
def rehash_kernel(slots, reps, old_slots, old_reps):
    """Insert every entry of the old table into the (larger, empty) new one."""
    for j in range(old_reps.shape[0]):
        if old_reps[j] >= 0:
            h = _find_slot(slots, reps, old_slots[j, 0], old_slots[j, 1])
            slots[h, 0], slots[h, 1], reps[h] = old_slots[j, 0], old_slots[j, 1], old_reps[j]


# --------------------------------------------------------------------------------------------
# the index (ExactIndex: one SortedRuns table keyed by word 0 of the keys, see runs.py)
@nb.njit(cache=True, nogil=True)
def index_query_kernel(qkeys, keys, ids, dirs, runs, words, alive, limit):
    """The live rows whose 128-bit key (``words[row]``) equals each query key ``qkeys[q]``, as
    ``(offsets, rows)``: query q's rows are ``rows[offsets[q]:offsets[q + 1]]``, ascending, at
    most ``limit`` of them (``limit < 0``: all). Table 0 holds word 0 of the stored keys; an
    equal word 0 is verified by word 1."""
    nq = qkeys.shape[0]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    out = np.empty(max(16, nq), dtype=np.int64)
    n = 0
    for qi in range(nq):
        w0 = qkeys[qi, 0]
        w1 = qkeys[qi, 1]
        start = n
        for r in range(runs.shape[0]):
            a, b = equal_range(keys, dirs, runs, 0, r, w0)
            for p in range(a, b):
                row = np.int64(ids[0, p])
                if alive[row] and words[row, 1] == w1:
                    if n == out.shape[0]:
                        bigger = np.empty(2 * n, dtype=np.int64)
                        copy_into(bigger, 0, out, 0, n)
                        out = bigger
                    out[n] = row
                    n += 1
        if n - start > 1:
            out[start:n] = np.sort(out[start:n])
        if limit >= 0 and n - start > limit:
            n = start + limit
        offsets[qi + 1] = n
    return offsets, out[:n]
