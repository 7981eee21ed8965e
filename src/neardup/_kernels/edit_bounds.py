"""Kernels of the edit-verification filter: upper bounds of the edit similarity that never refuse a
pair whose similarity reaches the threshold, at a merge of two sorted arrays a pair.

For token sequences a, b with L = max(|a|, |b|) and Levenshtein distance d (sim = 1 - d / L):

- length: d >= L - min(|a|, |b|);
- tokens: d >= L - LCS(a, b) >= L - |A & B|, with |A & B| the size of the multiset intersection of
  the tokens (an alignment keeps at most the tokens both have);
- bigrams (the q-gram lemma, Ukkonen 1992, q = 2): each edit destroys at most two bigrams of a
  sequence, so the multiset intersection of the bigrams is at least L - 1 - 2 d, i.e.
  d >= (L - 1 - |A2 & B2|) / 2. Equal bigram hashes of different bigrams only raise the
  intersection, so a hash collision can let a pair through, never refuse one.

A pair passes when each bound allows d <= dmax = floor((1 - t) L) (computed with a small upward
margin, so rounding cannot refuse a pair at the threshold).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def sort_rows(values, offsets):
    """Each CSR row of ``values`` sorted in place."""
    for r in range(len(offsets) - 1):
        s, e = offsets[r], offsets[r + 1]
        if e - s > 1:
            values[s:e] = np.sort(values[s:e])


@nb.njit(cache=True, nogil=True)
def bigram_rows(ids, offsets):
    """The bigram hashes of each CSR row of token ids (a row of n tokens has max(n - 1, 0)), as CSR."""
    n = len(offsets) - 1
    out_off = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        out_off[r + 1] = out_off[r] + max(offsets[r + 1] - offsets[r] - 1, 0)
    out = np.empty(out_off[n], dtype=np.uint64)
    for r in range(n):
        s, e, o = offsets[r], offsets[r + 1], out_off[r]
        for k in range(s, e - 1):
            x = np.uint64(ids[k]) * np.uint64(0x9E3779B97F4A7C15)
            y = np.uint64(ids[k + 1]) * np.uint64(0xC2B2AE3D27D4EB4F)
            h = x ^ (y + np.uint64(0x165667B19E3779F9)) ^ (x >> np.uint64(29))
            out[o + k - s] = h
    return out, out_off


@nb.njit(inline="always", cache=True)
def _shared(values, i, iend, j, jend):
    """Size of the multiset intersection of two sorted runs of ``values``."""
    c = 0
    while i < iend and j < jend:
        x = values[i]
        y = values[j]
        if x == y:
            c += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return c


@nb.njit(cache=True, nogil=True)
def within_bounds(uni, uni_off, bi, bi_off, ra, rb, threshold, out):
    """out[k] = the edit similarity of CSR rows ``ra[k]`` and ``rb[k]`` may reach ``threshold``
    by the length, token and bigram bounds (see the module docs); ``uni`` holds each row's tokens
    sorted, ``bi`` its bigram hashes sorted."""
    for k in range(len(ra)):
        a, b = ra[k], rb[k]
        la = uni_off[a + 1] - uni_off[a]
        lb = uni_off[b + 1] - uni_off[b]
        longer = max(la, lb)
        if longer <= 1:
            out[k] = True
            continue
        dmax = math.floor((1.0 - threshold) * longer + 1e-6)
        if longer - min(la, lb) > dmax:
            out[k] = False
            continue
        if longer - _shared(uni, uni_off[a], uni_off[a + 1], uni_off[b], uni_off[b + 1]) > dmax:
            out[k] = False
            continue
        shared2 = _shared(bi, bi_off[a], bi_off[a + 1], bi_off[b], bi_off[b + 1])
        out[k] = longer - 1 - shared2 <= 2 * dmax


@nb.njit(cache=True, nogil=True)
def dense_codes_kernel(ids, limit):
    """Renumber uint64 tokens 0, 1, 2, ... in order of first appearance (equal tokens, equal
    numbers) with an open-addressing hash table; (codes int64[n], distinct), or distinct = -1
    as soon as more than ``limit`` distinct tokens are seen."""
    n = len(ids)
    codes = np.empty(n, dtype=np.int64)
    size = 1 << 12
    keys = np.empty(size, dtype=np.uint64)
    vals = np.full(size, -1, dtype=np.int64)
    distinct = 0
    for k in range(n):
        x = ids[k]
        mask = np.uint64(size - 1)
        h = (x * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)
        slot = np.int64(h & mask)
        while vals[slot] >= 0 and keys[slot] != x:
            slot = (slot + 1) & (size - 1)
        if vals[slot] >= 0:
            codes[k] = vals[slot]
            continue
        if distinct >= limit:
            return codes, -1
        keys[slot] = x
        vals[slot] = distinct
        codes[k] = distinct
        distinct += 1
        if 2 * distinct > size:  # grow: rehash into a table twice the size
            old_keys, old_vals = keys, vals
            size *= 2
            keys = np.empty(size, dtype=np.uint64)
            vals = np.full(size, -1, dtype=np.int64)
            m2 = np.uint64(size - 1)
            for q in range(len(old_vals)):
                if old_vals[q] >= 0:
                    y = old_keys[q]
                    s2 = np.int64(((y * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & m2)
                    while vals[s2] >= 0:
                        s2 = (s2 + 1) & (size - 1)
                    keys[s2] = y
                    vals[s2] = old_vals[q]
    return codes, distinct
