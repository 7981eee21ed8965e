"""Hamming-distance search over 64- and 128-bit fingerprints: permuted tables and bit-banding.

Fingerprints within Hamming distance k of each other are found without comparing all pairs,
by the permuted-table scheme of Manku, Jain and Das Sarma ("Detecting near-duplicates for web
crawling", WWW 2007), itself the pigeonhole principle made into sorted tables:

- The f bits are cut into m > k contiguous blocks (sizes differ by at most one bit; the larger
  blocks come first, from bit 0 upward).
- Two fingerprints at distance d <= k differ in at most k of the m blocks, so they agree
  exactly on at least m - k blocks. There is one **table** for each of the C(m, m - k) = C(m, k)
  choices of m - k blocks to keep (in lexicographic order of the kept block numbers); a table
  is keyed by the concatenated bits of its kept blocks (the permutation of the paper brings
  those bits to the front, which is the same thing). Every pair at distance <= k has equal keys
  in at least one table; a query therefore probes each table for its own key, and each
  fingerprint with an equal key (a *candidate*) is checked by its full Hamming distance.
- A pair that agrees in several tables is reported once, by the first table (in table order)
  whose kept blocks avoid every block where the two differ. That table is a function of the
  pair alone, so results do not depend on the order of work.

**Choosing m.** More blocks mean longer keys, hence fewer candidates, but more tables. With n
fingerprints and keys of b bits (the fewest kept bits of any table, at most the key width), a
probe meets about n / 2^b random candidates per table, and each table costs about
``PROBE_COST`` candidate checks per fingerprint (a sort pass or a binary search). The rule picks
the m in k+1..f minimising ``C(m, k) * (PROBE_COST + n / 2^b(m))``, the smallest m on ties, with
at most ``MAX_TABLES`` tables. For n = 2^20 and k = 3 on 64 bits it gives m = 5 (10 tables of
25-bit keys); for a few thousand fingerprints, m = k + 1.

**Bit-banding** (``bit_band_pairs``) is the plain LSH alternative: b bands of r contiguous bits;
two fingerprints are candidates when they agree on a whole band. When b * r = f and b > k every
pair within distance k is a candidate; in general the candidate probability of a pair at
distance d is 1 - Pr[every band holds a differing bit].

Implementation: tables are sorted uint64 arrays (an LSD radix sort with 16-bit digits, 2-4
passes), candidates are runs of equal keys, all in numba kernels that release the GIL. In the
batch all-pairs the document index is packed below the key in one uint64, so a table is one
array; identical fingerprints are collapsed first, so a large group of exact copies costs one
table entry rather than a quadratic run.

Fingerprints are ``uint64[n]`` (64 bits) or ``uint64[n, 2]`` (128 bits, bit j in word j // 64
at position j % 64), or a :class:`neardup.simhash.Fingerprints`.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Hashable, Iterable, Iterator, Sequence

import numba as nb
import numpy as np

from ._sorting import merge_runs, radix_sort_with
from .errors import IncompatibleSketchError

PROBE_COST = 8.0
"""Cost of one table per fingerprint (a sort pass or a binary search), in candidate checks."""
MAX_TABLES = 4096
"""The most tables the automatic choice of m may use."""

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


# ---------------------------------------------------------------------------------------------
# bit helpers (numba)


@nb.njit(inline="always", cache=True)
def popcount64(x):
    """Number of set bits of a uint64 (SWAR; LLVM turns it into one instruction where it can)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@nb.njit(inline="always", cache=True)
def _distance(words, i, j):
    d = 0
    for w in range(words.shape[1]):
        d += popcount64(words[i, w] ^ words[j, w])
    return d


@nb.njit(inline="always", cache=True)
def _bits_at(row, start, size):
    """``size`` (1..64) bits of a fingerprint row (uint64[W]) starting at bit ``start``."""
    w = start >> 6
    off = start & 63
    v = row[w] >> np.uint64(off)
    if off + size > 64:
        v |= row[w + 1] << np.uint64(64 - off)
    if size < 64:
        v &= (np.uint64(1) << np.uint64(size)) - np.uint64(1)
    return v


@nb.njit(inline="always", cache=True)
def _range_nonzero(row, start, size):
    """Whether any of bits [start, start + size) of ``row`` is set (size may exceed 64)."""
    p = start
    end = start + size
    while p < end:
        s = min(64, end - p)
        if _bits_at(row, p, s) != 0:
            return True
        p += s
    return False


@nb.njit(inline="always", cache=True)
def _key(row, kept_start, kept_size, nkept, keybits):
    """The first ``keybits`` (<= 64) of the concatenated kept ranges of a fingerprint row."""
    key = np.uint64(0)
    have = 0
    for q in range(nkept):
        start = kept_start[q]
        size = kept_size[q]
        while size > 0 and have < keybits:
            take = min(size, keybits - have, 64)
            v = _bits_at(row, start, take)
            if take == 64:
                key = v
            else:
                key = (key << np.uint64(take)) | v
            have += take
            start += take
            size -= take
    return key


@nb.njit(inline="always", cache=True)
def _block_mask(x, block_start, block_size):
    """Bit b set when the xor row ``x`` has a set bit in block b."""
    m = np.uint64(0)
    for b in range(block_start.shape[0]):
        if _range_nonzero(x, block_start[b], block_size[b]):
            m |= np.uint64(1) << np.uint64(b)
    return m


@nb.njit(inline="always", cache=True)
def _first_table(dmask, kept_mask):
    """The first table whose kept blocks avoid every block in ``dmask`` (-1: none)."""
    for t in range(kept_mask.shape[0]):
        if kept_mask[t] & dmask == 0:
            return t
    return -1


@nb.njit(inline="always", cache=True)
def _grow(arr, size):
    out = np.empty(max(2 * arr.shape[0], size, 64), dtype=arr.dtype)
    out[:arr.shape[0]] = arr
    return out


# ---------------------------------------------------------------------------------------------
# radix sorts (numba)


@nb.njit(cache=True, nogil=True)
def radix_sort_bits(a, shift, nbits):
    """Sort ``a`` (uint64) in place, stably, by its bits [shift, shift + nbits) (LSD, 16-bit digits)."""
    n = a.shape[0]
    tmp = np.empty_like(a)
    cnt = np.empty(65537, dtype=np.int64)
    src, dst = a, tmp
    in_tmp = False
    p = shift
    end = shift + nbits
    while p < end:
        width = min(16, end - p)
        mask = np.uint64((1 << width) - 1)
        sh = np.uint64(p)
        cnt[:] = 0
        for i in range(n):
            cnt[((src[i] >> sh) & mask) + np.uint64(1)] += 1
        trivial = False
        for v in range((1 << width) + 1):
            if cnt[v] == n:
                trivial = True
                break
        if not trivial:
            for v in range(1 << width):
                cnt[v + 1] += cnt[v]
            for i in range(n):
                dgt = (src[i] >> sh) & mask
                dst[cnt[dgt]] = src[i]
                cnt[dgt] += 1
            src, dst = dst, src
            in_tmp = not in_tmp
        p += width
    if in_tmp:
        a[:] = src


@nb.njit(cache=True, nogil=True)
def radix_argsort_rows(words):
    """Stable order of the rows of ``words`` (uint64[n, W]) by (word W-1, ..., word 0)."""
    n = words.shape[0]
    perm = np.arange(n)
    keys = np.empty(n, dtype=np.uint64)
    for w in range(words.shape[1]):  # least significant word first; each pass is stable
        for i in range(n):
            keys[i] = words[perm[i], w]
        radix_sort_with(keys, perm)
    return perm


@nb.njit(cache=True, nogil=True)
def _unique_from_order(words, order):
    """Group equal rows given their sorted order: (first row of each group, group id per row,
    group starts in ``order``)."""
    n = words.shape[0]
    gid = np.empty(n, dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    ng = 0
    for x in range(n):
        i = order[x]
        new = x == 0
        if not new:
            j = order[x - 1]
            for w in range(words.shape[1]):
                if words[i, w] != words[j, w]:
                    new = True
                    break
        if new:
            starts[ng] = x
            ng += 1
        gid[i] = ng - 1
    starts[ng] = n
    firsts = np.empty(ng, dtype=np.int64)
    for g in range(ng):
        firsts[g] = order[starts[g]]
    return firsts, gid, starts[:ng + 1].copy()


# ---------------------------------------------------------------------------------------------
# block plans


@dataclass(frozen=True)
class BlockPlan:
    """Blocks of bits and the tables built on them.

    Attributes:
        bits: f, the fingerprint width.
        max_distance: k; every pair within it agrees on all kept blocks of some table.
        starts, sizes: block b covers bits [starts[b], starts[b] + sizes[b]).
        tables: the kept block numbers of each table, in table order.
    """

    bits: int
    max_distance: int
    starts: tuple[int, ...]
    sizes: tuple[int, ...]
    tables: tuple[tuple[int, ...], ...]

    @property
    def blocks(self) -> int:
        """m, the number of blocks."""
        return len(self.starts)

    @property
    def key_bits(self) -> int:
        """The fewest kept bits of any table."""
        return min(sum(self.sizes[b] for b in t) for t in self.tables)

    def arrays(self, key_limit: int = 64):
        """Numba-ready arrays: kept (start, size) per table, kept counts, key widths, kept masks,
        block starts and sizes."""
        t = len(self.tables)
        width = max(len(x) for x in self.tables)
        kstart = np.zeros((t, width), dtype=np.int64)
        ksize = np.zeros((t, width), dtype=np.int64)
        nkept = np.zeros(t, dtype=np.int64)
        keybits = np.zeros(t, dtype=np.int64)
        kmask = np.zeros(t, dtype=np.uint64)
        for i, kept in enumerate(self.tables):
            nkept[i] = len(kept)
            for q, b in enumerate(kept):
                kstart[i, q] = self.starts[b]
                ksize[i, q] = self.sizes[b]
                kmask[i] |= np.uint64(1 << b)
            keybits[i] = min(sum(self.sizes[b] for b in kept), key_limit)
        return (kstart, ksize, nkept, keybits, kmask, np.asarray(self.starts, dtype=np.int64),
                np.asarray(self.sizes, dtype=np.int64))


def _split(bits: int, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    big, small = -(-bits // m), bits // m
    sizes = [big] * (bits % m) + [small] * (m - bits % m)
    starts = [0]
    for s in sizes[:-1]:
        starts.append(starts[-1] + s)
    return tuple(starts), tuple(sizes)


def _plan_cost(bits: int, k: int, m: int, n: int, key_limit: int) -> tuple[float, int]:
    _, sizes = _split(bits, m)
    kept = bits - sum(sorted(sizes, reverse=True)[:k])
    b = min(kept, key_limit)
    return math.comb(m, k) * (PROBE_COST + n / 2.0 ** b), math.comb(m, k)


def choose_blocks(bits: int, max_distance: int, n: int, *, key_limit: int = 64) -> int:
    """m, the number of blocks for n fingerprints within ``max_distance`` (see the module docs).

    >>> choose_blocks(64, 3, 2**20), choose_blocks(64, 3, 5000), choose_blocks(64, 0, 10**9)
    (5, 4, 1)
    """
    _check_distance(bits, max_distance)
    best_m, best_cost = max_distance + 1, math.inf
    for m in range(max_distance + 1, bits + 1):
        cost, tables = _plan_cost(bits, max_distance, m, max(n, 1), key_limit)
        if tables > MAX_TABLES and m > max_distance + 1:
            break
        if cost < best_cost:
            best_m, best_cost = m, cost
        if tables * PROBE_COST > best_cost:
            break
    return best_m


def block_plan(bits: int, max_distance: int, blocks: int) -> BlockPlan:
    """The permuted-table plan with ``blocks`` = m > k blocks and C(m, k) tables.

    >>> p = block_plan(64, 3, 5)
    >>> p.sizes, len(p.tables), p.tables[0], p.key_bits
    ((13, 13, 13, 13, 12), 10, (0, 1), 25)
    """
    _check_distance(bits, max_distance)
    if not isinstance(blocks, (int, np.integer)) or isinstance(blocks, bool) or not max_distance < blocks <= bits:
        raise ValueError(f"blocks must be an integer with max_distance < blocks <= bits "
                         f"({max_distance} < m <= {bits}), got {blocks!r}")
    starts, sizes = _split(bits, int(blocks))
    tables = tuple(combinations(range(int(blocks)), int(blocks) - max_distance))
    return BlockPlan(bits, max_distance, starts, sizes, tables)


def band_plan(bits: int, bands: int, rows: int) -> BlockPlan:
    """Bit-banding as a plan: ``bands`` blocks of ``rows`` bits, one table per band."""
    for name, v in (("bands", bands), ("rows", rows)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if bands * rows > bits:
        raise ValueError(f"bands * rows must be at most the fingerprint width {bits}, got {bands} * {rows}")
    if rows > 64:
        raise ValueError(f"rows must be at most 64, got {rows}")
    starts = tuple(i * rows for i in range(bands))
    return BlockPlan(bits, bits, starts, (rows,) * bands, tuple((i,) for i in range(bands)))


def _check_distance(bits: int, k: Any) -> None:
    if bits not in (64, 128):
        raise ValueError(f"bits must be 64 or 128, got {bits!r}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k < bits:
        raise ValueError(f"max_distance must be an integer in [0, {bits}), got {k!r}")


# ---------------------------------------------------------------------------------------------
# input


def as_words(fps: Any, bits: int | None = None) -> tuple[np.ndarray, int]:
    """Fingerprints as C-contiguous uint64[n, W] with W = bits / 64, and their width in bits.

    Accepts ``Fingerprints``, uint64[n] (64 bits) or uint64[n, 2] (128 bits).
    """
    if hasattr(fps, "values") and hasattr(fps, "scheme"):
        values = fps.values
    else:
        values = np.asarray(fps)
    if values.dtype != np.uint64:
        if values.dtype.kind in "iu" and values.size and values.min() >= 0:
            values = values.astype(np.uint64)
        elif values.size == 0:
            values = values.astype(np.uint64)
        else:
            raise TypeError(f"fingerprints must be uint64, got dtype {values.dtype}")
    if values.ndim == 1:
        words = values.reshape(-1, 1)
    elif values.ndim == 2 and values.shape[1] in (1, 2):
        words = values
    else:
        raise ValueError(f"fingerprints must be uint64[n] (64 bits) or uint64[n, 2] (128 bits), "
                         f"got shape {values.shape}")
    width = 64 * words.shape[1]
    if bits is not None and width != bits:
        raise ValueError(f"expected {bits}-bit fingerprints, got {width}-bit ones")
    return np.ascontiguousarray(words), width


# ---------------------------------------------------------------------------------------------
# batch all-pairs


@nb.njit(cache=True, nogil=True)
def _table_entries(words, kstart, ksize, nkept, keybits, idx_bits, out):
    for i in range(words.shape[0]):
        key = _key(words[i], kstart, ksize, nkept, keybits)
        out[i] = (key << np.uint64(idx_bits)) | np.uint64(i)


@nb.njit(cache=True, nogil=True)
def _scan_table(entries, idx_bits, words, kmax, t, kmask, bstart, bsize):
    """Pairs (i < j) inside runs of equal keys with d <= kmax whose first table is t."""
    n = entries.shape[0]
    idx_mask = (np.uint64(1) << np.uint64(idx_bits)) - np.uint64(1)
    sh = np.uint64(idx_bits)
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pd = np.empty(64, dtype=np.int32)
    npairs = 0
    checked = 0
    x_row = np.empty(words.shape[1], dtype=np.uint64)
    s = 0
    for e in range(1, n + 1):
        if e < n and (entries[e] >> sh) == (entries[s] >> sh):
            continue
        for x in range(s, e):
            i = np.int64(entries[x] & idx_mask)
            for y in range(x + 1, e):
                j = np.int64(entries[y] & idx_mask)
                checked += 1
                d = _distance(words, i, j)
                if d > kmax:
                    continue
                for w in range(words.shape[1]):
                    x_row[w] = words[i, w] ^ words[j, w]
                if _first_table(_block_mask(x_row, bstart, bsize), kmask) != t:
                    continue
                if npairs == pa.shape[0]:
                    pa = _grow(pa, npairs + 1)
                    pb = _grow(pb, npairs + 1)
                    pd = _grow(pd, npairs + 1)
                pa[npairs] = i
                pb[npairs] = j
                pd[npairs] = d
                npairs += 1
        s = e
    return pa[:npairs], pb[:npairs], pd[:npairs], checked


def _pairs_by_tables(words: np.ndarray, plan: BlockPlan, kmax: int, workers: int = 1):
    """Every pair (i < j) that agrees on the kept blocks of some table and has d <= kmax, once."""
    n = words.shape[0]
    empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32))
    if n < 2:
        return (*empty, 0)
    idx_bits = max(1, int(n - 1).bit_length())
    kstart, ksize, nkept, keybits, kmask, bstart, bsize = plan.arrays(key_limit=64 - idx_bits)

    def one(t: int):
        entries = np.empty(n, dtype=np.uint64)
        _table_entries(words, kstart[t], ksize[t], nkept[t], keybits[t], idx_bits, entries)
        radix_sort_bits(entries, idx_bits, int(keybits[t]))
        return _scan_table(entries, idx_bits, words, kmax, t, kmask, bstart, bsize)

    tables = range(len(plan.tables))
    if workers > 1 and len(plan.tables) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(one, tables))
    else:
        parts = [one(t) for t in tables]
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    d = np.concatenate([p[2] for p in parts])
    return a, b, d, sum(p[3] for p in parts)


@nb.njit(cache=True, nogil=True)
def _expand(ua, ub, ud, order, starts):
    """Pairs of unique rows -> pairs of original rows, plus the pairs inside each group (d = 0)."""
    total = 0
    for p in range(ua.shape[0]):
        total += (starts[ua[p] + 1] - starts[ua[p]]) * (starts[ub[p] + 1] - starts[ub[p]])
    for g in range(starts.shape[0] - 1):
        s = starts[g + 1] - starts[g]
        total += s * (s - 1) // 2
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    d = np.empty(total, dtype=np.int32)
    q = 0
    for p in range(ua.shape[0]):
        for x in range(starts[ua[p]], starts[ua[p] + 1]):
            for y in range(starts[ub[p]], starts[ub[p] + 1]):
                i, j = order[x], order[y]
                a[q] = min(i, j)
                b[q] = max(i, j)
                d[q] = ud[p]
                q += 1
    for g in range(starts.shape[0] - 1):
        for x in range(starts[g], starts[g + 1]):
            for y in range(x + 1, starts[g + 1]):
                a[q] = order[x]
                b[q] = order[y]
                d[q] = 0
                q += 1
    return a, b, d


@dataclass(frozen=True, eq=False)
class UniquePairs:
    """All-pairs result over the distinct fingerprints (what clustering needs).

    ``groups`` maps each input row to its distinct fingerprint (row ``firsts[g]`` is the first
    of group g); (a, b, d) are pairs of groups. ``order``/``starts``: the rows of group g are
    ``order[starts[g]:starts[g + 1]]``, ascending.
    """

    firsts: np.ndarray
    groups: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    a: np.ndarray
    b: np.ndarray
    d: np.ndarray
    plan: BlockPlan
    checked: int


def unique_pairs(fps: Any, max_distance: int, *, blocks: int | None = None, workers: int = 1,
                 plan: BlockPlan | None = None) -> UniquePairs:
    """All pairs within ``max_distance`` among the distinct fingerprints (see :func:`all_pairs`)."""
    words, bits = as_words(fps)
    order = radix_argsort_rows(words)
    firsts, groups, starts = _unique_from_order(words, order)
    uniq = np.ascontiguousarray(words[firsts])
    if plan is None:
        if blocks is None:
            idx_bits = max(1, int(len(uniq) - 1).bit_length())
            blocks = choose_blocks(bits, max_distance, len(uniq), key_limit=64 - idx_bits)
        plan = block_plan(bits, max_distance, blocks)
        kmax = max_distance
    else:
        kmax = plan.max_distance
    a, b, d, checked = _pairs_by_tables(uniq, plan, kmax, workers)
    return UniquePairs(firsts, groups, order, starts, a, b, d, plan, checked)


def all_pairs(fps: Any, max_distance: int, *, blocks: int | None = None,
              workers: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of fingerprints within Hamming distance ``max_distance``, exactly once.

    Returns ``(a, b, d)``: int64 row indices with a < b, sorted by (a, b), and int32 distances.
    Equal to brute force over all n(n-1)/2 pairs. ``blocks`` fixes m (else chosen from n and k,
    see :func:`choose_blocks`); ``workers`` threads share the tables (same result).

    >>> fps = np.array([0b1011, 0b1000, 0xFFFF, 0b1011], dtype=np.uint64)
    >>> [x.tolist() for x in all_pairs(fps, 2)]
    [[0, 0, 1], [1, 3, 3], [2, 0, 2]]
    """
    up = unique_pairs(fps, max_distance, blocks=blocks, workers=workers)
    a, b, d = _expand(up.a, up.b, up.d, up.order, up.starts)
    order = np.lexsort((b, a))
    return a[order], b[order], d[order]


def bit_band_pairs(fps: Any, bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs of bit-banding: rows that agree on all ``rows`` bits of some band.

    Band i is bits [i * rows, (i + 1) * rows); ``bands * rows`` must not exceed the width.
    Returns int64 ``(a, b)`` with a < b, sorted, each pair once. When ``bands * rows`` equals the
    width and ``bands > k``, every pair within distance k is among them (pigeonhole).

    >>> fps = np.array([0x00FF, 0xFFFF, 0x0F0F], dtype=np.uint64)
    >>> [x.tolist() for x in bit_band_pairs(fps, 8, 8)]
    [[0, 0, 1], [1, 2, 2]]
    """
    words, bits = as_words(fps)
    plan = band_plan(bits, bands, rows)
    up = unique_pairs(words, bits - 1, plan=plan)
    a, b, _ = _expand(up.a, up.b, up.d, up.order, up.starts)
    order = np.lexsort((b, a))
    return a[order], b[order]


def brute_force_pairs(fps: Any, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs within ``max_distance`` by comparing every pair (O(n^2); for tests and small n)."""
    words, _ = as_words(fps)
    return _brute(words, max_distance)


@nb.njit(cache=True, nogil=True)
def _brute(words, k):
    n = words.shape[0]
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pd = np.empty(64, dtype=np.int32)
    q = 0
    for i in range(n):
        for j in range(i + 1, n):
            d = _distance(words, i, j)
            if d <= k:
                if q == pa.shape[0]:
                    pa = _grow(pa, q + 1)
                    pb = _grow(pb, q + 1)
                    pd = _grow(pd, q + 1)
                pa[q] = i
                pb[q] = j
                pd[q] = d
                q += 1
    return pa[:q], pb[:q], pd[:q]


# ---------------------------------------------------------------------------------------------
# the index


@nb.njit(cache=True, nogil=True)
def _index_keys(words, kstart, ksize, nkept, keybits, out):
    for t in range(kstart.shape[0]):
        for i in range(words.shape[0]):
            out[t, i] = _key(words[i], kstart[t], ksize[t], nkept[t], keybits[t])


@nb.njit(cache=True, nogil=True)
def _sort_run(keys, rows, lo, hi):
    """Sort keys[t, lo:hi] (with rows) for every table t."""
    for t in range(keys.shape[0]):
        radix_sort_with(keys[t, lo:hi], rows[t, lo:hi])


@nb.njit(cache=True, nogil=True)
def _query_kernel(q_words, kmax, keys, rows, bounds, kstart, ksize, nkept, keybits, kmask, bstart, bsize,
                  fps, alive):
    nq = q_words.shape[0]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    out_rows = np.empty(64, dtype=np.int64)
    out_d = np.empty(64, dtype=np.int64)
    q = 0
    x_row = np.empty(fps.shape[1], dtype=np.uint64)
    for qi in range(nq):
        row = q_words[qi]
        for t in range(keys.shape[0]):
            key = _key(row, kstart[t], ksize[t], nkept[t], keybits[t])
            for r in range(bounds.shape[0] - 1):
                lo, hi = bounds[r], bounds[r + 1]
                # first position with keys >= key
                a, b = lo, hi
                while a < b:
                    mid = (a + b) >> 1
                    if keys[t, mid] < key:
                        a = mid + 1
                    else:
                        b = mid
                while a < hi and keys[t, a] == key:
                    cand = rows[t, a]
                    a += 1
                    if not alive[cand]:
                        continue
                    d = 0
                    for w in range(fps.shape[1]):
                        x_row[w] = fps[cand, w] ^ row[w]
                        d += popcount64(x_row[w])
                    if d > kmax:
                        continue
                    if _first_table(_block_mask(x_row, bstart, bsize), kmask) != t:
                        continue
                    if q == out_rows.shape[0]:
                        out_rows = _grow(out_rows, q + 1)
                        out_d = _grow(out_d, q + 1)
                    out_rows[q] = cand
                    out_d[q] = d
                    q += 1
        offsets[qi + 1] = q
    return offsets, out_rows[:q], out_d[:q]


_REMOVED = object()


class HammingIndex:
    """Fingerprints within Hamming distance k of a query, by Manku et al.'s permuted tables.

    Args:
        bits: fingerprint width, 64 or 128.
        max_distance: k, the largest distance a query can ask for.
        blocks: m > k blocks; ``None`` chooses m from the number of stored fingerprints (see
            :func:`choose_blocks`) and re-chooses it, rebuilding the tables, as the index grows.

    Each table is a sorted array of keys (the kept blocks' bits) with the row of each, kept in
    log-structured runs so that ``add`` costs O(batch log n) amortised; ``remove`` marks rows
    dead and compacts when more than half are. Memory: 8 * W bytes per fingerprint plus 16 bytes
    per fingerprint and table (C(m, k) tables). Not safe for concurrent add/remove.

    >>> index = HammingIndex(bits=64, max_distance=3)
    >>> index.add(["a", "b", "c"], np.array([0b1111, 0b0111, 2**40], dtype=np.uint64))
    >>> index.query(np.uint64(0b1110))
    [('a', 1), ('b', 2)]
    >>> index.remove(["a"]); index.query(np.uint64(0b1110))
    [('b', 2)]
    """

    def __init__(self, bits: int = 64, max_distance: int = 3, blocks: int | None = None, *, scheme=None):
        _check_distance(bits, max_distance)
        self._bits = bits
        self._k = int(max_distance)
        self._fixed_blocks = blocks
        self._plan = block_plan(bits, self._k, blocks if blocks is not None else choose_blocks(bits, self._k, 1))
        self._scheme = scheme
        w = bits // 64
        self._fps = np.empty((0, w), dtype=np.uint64)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._keys: list = []
        self._ids: dict[Hashable, int] = {}
        self._reset_tables()

    # -- properties --------------------------------------------------------------------------

    @property
    def bits(self) -> int:
        return self._bits

    @property
    def max_distance(self) -> int:
        return self._k

    @property
    def plan(self) -> BlockPlan:
        """The blocks and tables in use."""
        return self._plan

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._ids

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._ids))

    def __repr__(self) -> str:
        return (f"HammingIndex(bits={self._bits}, max_distance={self._k}, blocks={self._plan.blocks}, "
                f"tables={len(self._plan.tables)}, size={len(self)})")

    # -- mutation ----------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable], fps: Any) -> None:
        """Add one fingerprint per key. Keys must be new and unique, else ``KeyError`` (nothing added)."""
        words = self._words(fps)
        keys = list(keys)
        if len(keys) != words.shape[0]:
            raise ValueError(f"got {len(keys)} keys for {words.shape[0]} fingerprints")
        if not self._ids.keys().isdisjoint(keys) or len(set(keys)) != len(keys):
            seen: set = set()
            for k in keys:
                if k in self._ids or k in seen:
                    raise KeyError(f"key {k!r} is already in the index or given twice")
                seen.add(k)
        if not keys:
            return
        first = len(self._keys)
        self._store(words)
        self._keys.extend(keys)
        self._ids.update(zip(keys, range(first, first + len(keys))))
        if self._fixed_blocks is None:
            m = choose_blocks(self._bits, self._k, len(self._ids))
            if m != self._plan.blocks:
                self._plan = block_plan(self._bits, self._k, m)
                self._rebuild()
                return
        self._append_run(first, first + len(keys))

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the fingerprints of ``keys``; an unknown key raises ``KeyError`` (nothing removed)."""
        keys = list(keys)
        for k in keys:
            if k not in self._ids:
                raise KeyError(f"key {k!r} is not in the index")
        if len(set(keys)) != len(keys):
            raise KeyError("a key is listed twice in remove()")
        for k in keys:
            row = self._ids.pop(k)
            self._keys[row] = _REMOVED
            self._alive[row] = False
        dead = len(self._keys) - len(self._ids)
        if dead >= 1024 and dead > len(self._ids):
            self._compact()

    # -- queries -----------------------------------------------------------------------------

    def query(self, fp: Any, max_distance: int | None = None) -> list[tuple[Hashable, int]]:
        """Stored keys within ``max_distance`` (default and at most k) of ``fp``, as (key, distance)
        sorted by distance, then insertion order."""
        words = self._words(fp, single=True)
        if words.shape[0] != 1:
            raise ValueError(f"query takes one fingerprint, got {words.shape[0]}; use query_batch")
        return self.query_batch(words, max_distance)[0]

    def query_batch(self, fps: Any, max_distance: int | None = None) -> list[list[tuple[Hashable, int]]]:
        """``query`` for every fingerprint of a batch, in one kernel call."""
        words = self._words(fps)
        k = self._k if max_distance is None else max_distance
        if not isinstance(k, (int, np.integer)) or not 0 <= k <= self._k:
            raise ValueError(f"max_distance must be in [0, {self._k}] for this index, got {k!r}")
        kstart, ksize, nkept, keybits, kmask, bstart, bsize = self._arrays
        n = len(self._keys)
        offsets, rows, dist = _query_kernel(words, int(k), self._tkeys, self._trows, self._bounds, kstart, ksize,
                                            nkept, keybits, kmask, bstart, bsize, self._fps[:n], self._alive[:n])
        out = []
        keys = self._keys
        for q in range(words.shape[0]):
            lo, hi = offsets[q], offsets[q + 1]
            r, d = rows[lo:hi], dist[lo:hi]
            order = np.lexsort((r, d))
            out.append([(keys[i], int(x)) for i, x in zip(r[order].tolist(), d[order].tolist())])
        return out

    def pairs(self, max_distance: int | None = None) -> list[tuple[Hashable, Hashable, int]]:
        """Every pair of stored keys within ``max_distance`` (default k): (key_a, key_b, distance),
        key_a inserted before key_b, by :func:`all_pairs`."""
        k = self._k if max_distance is None else max_distance
        rows = np.flatnonzero(self._alive[:len(self._keys)])
        a, b, d = all_pairs(self._fps[rows], k)
        keys = self._keys
        return [(keys[rows[i]], keys[rows[j]], int(x)) for i, j, x in zip(a.tolist(), b.tolist(), d.tolist())]

    # -- internals ---------------------------------------------------------------------------

    def _words(self, fps: Any, single: bool = False) -> np.ndarray:
        if hasattr(fps, "values") and hasattr(fps, "scheme"):
            if self._scheme is None:
                self._scheme = fps.scheme
            elif fps.scheme != self._scheme:
                raise IncompatibleSketchError(
                    f"fingerprints of different schemes cannot be compared: {self._scheme} vs {fps.scheme}")
        values = fps.values if hasattr(fps, "values") else np.asarray(fps)
        if single and (values.ndim == 0 or (self._bits == 128 and values.ndim == 1)):
            values = values.reshape(1, -1) if self._bits == 128 else values.reshape(1)
        words, _ = as_words(values, self._bits)
        return words

    def _reset_tables(self) -> None:
        t = len(self._plan.tables)
        self._tkeys = np.empty((t, 0), dtype=np.uint64)
        self._trows = np.empty((t, 0), dtype=np.int64)
        self._bounds = np.zeros(1, dtype=np.int64)
        self._arrays = self._plan.arrays()

    def _store(self, words: np.ndarray) -> None:
        n_old = len(self._keys)
        n_new = n_old + words.shape[0]
        if n_new > self._fps.shape[0]:
            cap = max(n_new, self._fps.shape[0] * 3 // 2, 256)
            fps = np.empty((cap, self._fps.shape[1]), dtype=np.uint64)
            fps[:n_old] = self._fps[:n_old]
            alive = np.zeros(cap, dtype=np.bool_)
            alive[:n_old] = self._alive[:n_old]
            self._fps, self._alive = fps, alive
        self._fps[n_old:n_new] = words
        self._alive[n_old:n_new] = True

    def _append_run(self, lo: int, hi: int) -> None:
        """Add rows lo..hi (already stored) to the tables as a new sorted run, then merge runs."""
        size = int(self._bounds[-1])
        n = hi - lo
        if size + n > self._tkeys.shape[1]:
            cap = max(size + n, self._tkeys.shape[1] * 3 // 2, 1024)
            for name in ("_tkeys", "_trows"):
                old = getattr(self, name)
                new = np.empty((old.shape[0], cap), dtype=old.dtype)
                new[:, :size] = old[:, :size]
                setattr(self, name, new)
        kstart, ksize, nkept, keybits = self._arrays[:4]
        _index_keys(self._fps[lo:hi], kstart, ksize, nkept, keybits, self._tkeys[:, size:size + n])
        self._trows[:, size:size + n] = np.arange(lo, hi)
        _sort_run(self._tkeys, self._trows, size, size + n)
        self._bounds = np.append(self._bounds, size + n)
        b = self._bounds
        while b.shape[0] > 2 and b[-2] - b[-3] < 2 * (b[-1] - b[-2]):
            merge_runs(self._tkeys, self._trows, int(b[-3]), int(b[-2]), int(b[-1]))
            self._bounds = b = np.delete(b, -2)

    def _rebuild(self) -> None:
        """Rebuild every table from the live rows, as one run."""
        self._reset_tables()
        rows = np.flatnonzero(self._alive[:len(self._keys)])
        if not len(rows):
            return
        t = len(self._plan.tables)
        n = len(rows)
        kstart, ksize, nkept, keybits = self._arrays[:4]
        self._tkeys = np.empty((t, n), dtype=np.uint64)
        _index_keys(np.ascontiguousarray(self._fps[rows]), kstart, ksize, nkept, keybits, self._tkeys)
        self._trows = np.repeat(rows[None, :], t, axis=0)
        _sort_run(self._tkeys, self._trows, 0, n)
        self._bounds = np.array([0, n], dtype=np.int64)

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order) and rebuild."""
        n = len(self._keys)
        keep = self._alive[:n]
        fps = self._fps[:n][keep]
        self._keys = [k for k in self._keys if k is not _REMOVED]
        self._ids = {k: i for i, k in enumerate(self._keys)}
        self._fps = np.ascontiguousarray(fps)
        self._alive = np.ones(len(self._keys), dtype=np.bool_)
        if self._fixed_blocks is None:
            self._plan = block_plan(self._bits, self._k, choose_blocks(self._bits, self._k, len(self._keys)))
        self._rebuild()
