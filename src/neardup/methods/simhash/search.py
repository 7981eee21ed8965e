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
at position j % 64), or a :class:`neardup.methods.simhash.scheme.Fingerprints`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from ..._kernels.hamming import brute, expand, scan_table, table_entries
from ..._kernels.sorting import radix_argsort_rows, radix_sort_bits, unique_from_order
from ...core.parallel import Threads, as_threads
from ...core.validation import Choice, Integer, check, conflict

PROBE_COST = 8.0
"""Cost of one table per fingerprint (a sort pass or a binary search), in candidate checks."""


MAX_TABLES = 4096
"""The most tables the automatic choice of m may use."""


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
        return (
            kstart,
            ksize,
            nkept,
            keybits,
            kmask,
            np.asarray(self.starts, dtype=np.int64),
            np.asarray(self.sizes, dtype=np.int64),
        )


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
    return math.comb(m, k) * (PROBE_COST + n / 2.0**b), math.comb(m, k)


def choose_blocks(bits: int, max_distance: int, n: int, *, key_limit: int = 64) -> int:
    """m, the number of blocks for n fingerprints within ``max_distance`` (see the module docs).

    >>> choose_blocks(64, 3, 2**20), choose_blocks(64, 3, 5000), choose_blocks(64, 0, 10**9)
    (5, 4, 1)
    """
    bits, max_distance = check_distance(bits, max_distance)
    n = check("n", n, Integer(0))
    key_limit = check("key_limit", key_limit, Integer(1, 64))
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
    bits, max_distance = check_distance(bits, max_distance)
    blocks = check("blocks", blocks, Integer(max_distance + 1, bits))  # m > k, at least one bit a block
    starts, sizes = _split(bits, blocks)
    tables = tuple(combinations(range(blocks), blocks - max_distance))
    return BlockPlan(bits, max_distance, starts, sizes, tables)


def band_plan(bits: int, bands: int, rows: int) -> BlockPlan:
    """Bit-banding as a plan: ``bands`` blocks of ``rows`` bits, one table per band."""
    bits = check("bits", bits, _BITS)
    bands = check("bands", bands, Integer(1, bits))
    rows = check("rows", rows, Integer(1, 64))  # a band's bits are one key
    if bands * rows > bits:
        raise conflict(f"bands * rows must be at most the fingerprint width {bits}, got {bands} * {rows}")
    starts = tuple(i * rows for i in range(bands))
    return BlockPlan(bits, bits, starts, (rows,) * bands, tuple((i,) for i in range(bands)))


_BITS = Choice((64, 128))


def check_distance(bits: Any, k: Any) -> tuple[int, int]:
    """``(bits, max_distance)`` as ints, or a parameter error: bits 64 or 128, max_distance in
    [0, bits). The search finds every pair within any such distance; a method or an index that
    wants near-duplicates bounds it by about bits / 2 (where unrelated fingerprints lie)."""
    bits = check("bits", bits, _BITS)
    return bits, check("max_distance", k, Integer(0, bits - 1))


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
        if (values.dtype.kind in "iu" and values.size and values.min() >= 0) or values.size == 0:
            values = values.astype(np.uint64)
        else:
            raise TypeError(f"fingerprints must be uint64, got dtype {values.dtype}")
    if values.ndim == 1:
        words = values.reshape(-1, 1)
    elif values.ndim == 2 and values.shape[1] in (1, 2):
        words = values
    else:
        raise ValueError(
            f"fingerprints must be uint64[n] (64 bits) or uint64[n, 2] (128 bits), got shape {values.shape}"
        )
    width = 64 * words.shape[1]
    if bits is not None and width != bits:
        raise ValueError(f"expected {bits}-bit fingerprints, got {width}-bit ones")
    return np.ascontiguousarray(words), width


def _pairs_by_tables(words: np.ndarray, plan: BlockPlan, kmax: int, threads: Threads):
    """Every pair (i < j) that agrees on the kept blocks of some table and has d <= kmax, once."""
    n = words.shape[0]
    empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32))
    if n < 2:
        return (*empty, 0)
    idx_bits = max(1, int(n - 1).bit_length())
    kstart, ksize, nkept, keybits, kmask, bstart, bsize = plan.arrays(key_limit=64 - idx_bits)

    def one(t: int):
        entries = np.empty(n, dtype=np.uint64)
        table_entries(words, kstart[t], ksize[t], nkept[t], keybits[t], idx_bits, entries)
        radix_sort_bits(entries, idx_bits, int(keybits[t]))
        return scan_table(entries, idx_bits, words, kmax, t, kmask, bstart, bsize)

    parts = threads.map(one, range(len(plan.tables)))
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    d = np.concatenate([p[2] for p in parts])
    return a, b, d, sum(p[3] for p in parts)


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


def unique_pairs(
    fps: Any, max_distance: int, *, blocks: int | None = None, workers: Threads | int = 1, plan: BlockPlan | None = None
) -> UniquePairs:
    """All pairs within ``max_distance`` among the distinct fingerprints (see :func:`all_pairs`);
    ``workers`` (a number, or the job's :class:`~neardup.core.parallel.Threads`) share the tables."""
    words, bits = as_words(fps)
    order = radix_argsort_rows(words)
    firsts, groups, starts = unique_from_order(words, order)
    uniq = np.ascontiguousarray(words[firsts])
    if plan is None:
        if blocks is None:
            idx_bits = max(1, int(len(uniq) - 1).bit_length())
            blocks = choose_blocks(bits, max_distance, len(uniq), key_limit=64 - idx_bits)
        plan = block_plan(bits, max_distance, blocks)
        kmax = max_distance
    else:
        kmax = plan.max_distance
    threads, owned = as_threads(workers)
    try:
        a, b, d, checked = _pairs_by_tables(uniq, plan, kmax, threads)
    finally:
        if owned:
            threads.close()
    return UniquePairs(firsts, groups, order, starts, a, b, d, plan, checked)


def all_pairs(
    fps: Any, max_distance: int, *, blocks: int | None = None, workers: Threads | int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of fingerprints within Hamming distance ``max_distance``, exactly once.

    Returns ``(a, b, d)``: int64 row indices with a < b, sorted by (a, b), and int32 distances.
    Equal to brute force over all n(n-1)/2 pairs. ``blocks`` fixes m (else chosen from n and k,
    see :func:`choose_blocks`); ``workers`` threads share the tables (same result).

    >>> fps = np.array([0b1011, 0b1000, 0xFFFF, 0b1011], dtype=np.uint64)
    >>> [x.tolist() for x in all_pairs(fps, 2)]
    [[0, 0, 1], [1, 3, 3], [2, 0, 2]]
    """
    up = unique_pairs(fps, max_distance, blocks=blocks, workers=workers)
    a, b, d = expand(up.a, up.b, up.d, up.order, up.starts)
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
    a, b, _ = expand(up.a, up.b, up.d, up.order, up.starts)
    order = np.lexsort((b, a))
    return a[order], b[order]


def brute_force_pairs(fps: Any, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs within ``max_distance`` by comparing every pair (O(n^2); for tests and small n)."""
    words, bits = as_words(fps)
    _, max_distance = check_distance(bits, max_distance)
    return brute(words, max_distance)
