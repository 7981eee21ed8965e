"""Kernels of MinHash LSH: band keys, and the phased probes of the LSH index.

A band key is nd64 of the band's slots from a start state of its own (:func:`band_keys_kernel`;
the format is given with :func:`neardup.methods.minhash.lsh.band_keys`, its Python entry). The
index (:class:`neardup.index.lsh.LSHIndex`) keeps the band keys of its rows in sorted runs with
bucket directories (:class:`neardup.index.runs.SortedRuns`, kernels in
:mod:`neardup._kernels.runs`); a query finds its results in four phases whose cache misses
overlap (:func:`query_one` for one signature, :func:`query_kernel` for many).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.core import types
from numba.experimental import structref

from .hashing import P1, P2, SEED, fmix64, rotl64
from .intrinsics import copy_into, prefetch
from .minhash import EMPTY_VALUE

_SCAN = 8  # keys compared at once in a bucket (see _scan)


# --------------------------------------------------------------------------------------------
# band keys
@nb.njit(inline="always")
def _band_key(row, j, rows, start):
    """The key of band ``j`` of one signature ``row``, from the band's start state (see
    :func:`neardup.methods.minhash.lsh.band_keys`)."""
    h = start
    c = j * rows
    end = c + rows
    while c + 2 <= end:
        w = np.uint64(row[c]) | (np.uint64(row[c + 1]) << np.uint64(32))
        h = rotl64(h ^ (w * P1), 31) * P2
        c += 2
    if c < end:
        h = rotl64(h ^ (np.uint64(row[c]) * P1), 31) * P2
    return fmix64(h ^ np.uint64(4 * rows))


@nb.njit(cache=True, nogil=True)
def band_keys_kernel(values, bands, rows, out):
    starts = np.empty(bands, dtype=np.uint64)
    for j in range(bands):
        starts[j] = fmix64(SEED ^ np.uint64(j))
    for i in range(values.shape[0]):
        for j in range(bands):
            out[i, j] = _band_key(values[i], j, rows, starts[j])
    return out


# --------------------------------------------------------------------------------------------
# index kernels
#
# The band tables are a ``SortedRuns`` storage with one table per band (see ``runs.py``): sorted
# runs of band keys with their row ids, merged like an LSM tree (O(log n) runs), each with a
# bucket directory on the top bits of its keys, so finding a key costs two memory reads instead
# of a binary search's log2(n).
@nb.njit(inline="always")
def _insertion_sort(a, n):
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@nb.njit(inline="always")
def _sort_prefix(a, n):
    if n <= 32:
        _insertion_sort(a, n)
    else:
        a[:n] = np.sort(a[:n])


@nb.njit(inline="always")
def _grown(a, need):
    """A copy of ``a`` with room for at least ``need`` items (at least twice as many)."""
    bigger = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    bigger[: a.shape[0]] = a
    return bigger


@nb.njit(inline="always")
def _is_empty(q):
    for c in range(q.shape[0]):
        if q[c] != EMPTY_VALUE:
            return False
    return True


@nb.njit(inline="always")
def _locate(q, rows, keys, dirs, ids, runs, qk, span):
    """Phase 1 of a query: the band keys of ``q`` into ``qk`` and, for every (run, band) pair,
    the bucket that can hold the key into ``span`` (``span[2i]:span[2i+1]``, ``i = run * bands +
    band``), with a prefetch of the bucket's keys and first id.

    Every directory read here is independent of the others, so their cache misses overlap; so
    do the prefetches, which the scan of phase 2 then finds on their way.
    """
    bands = keys.shape[0]
    for j in range(bands):
        qk[j] = _band_key(q, j, rows, fmix64(SEED ^ np.uint64(j)))
    for r in range(runs.shape[0]):
        lo = runs[r, 0]
        last = runs[r, 1] - 1
        d0 = runs[r, 2]
        sh = np.uint64(runs[r, 3])
        if last < lo:  # an empty run (everything compacted away)
            span[2 * r * bands : 2 * (r + 1) * bands] = lo
            continue
        for j in range(bands):
            t = d0 + np.int64(qk[j] >> sh)
            a = lo + np.int64(dirs[j, t])
            i = r * bands + j
            span[2 * i] = a
            span[2 * i + 1] = lo + np.int64(dirs[j, t + 1])
            c = min(a, last)
            prefetch(keys, (j, c))
            prefetch(keys, (j, max(c, min(span[2 * i + 1], last + 1) - 1)))  # a bucket may span two lines
            prefetch(ids, (j, c))


@nb.njit(inline="always")
def _room(span, hits):
    """``hits``, grown if needed to hold every key of the buckets in ``span``."""
    need = 0
    for i in range(span.shape[0] // 2):
        need += span[2 * i + 1] - span[2 * i]
    return hits if need <= hits.shape[0] else _grown(hits, need)


@nb.njit(inline="always")
def _scan(qk, span, keys, ids, hits):
    """Phase 2: write to ``hits`` (which must have room for every key of the buckets, see
    ``_room``) the row of every key equal to the query's in its bucket. Returns how many."""
    nh = 0
    bands = keys.shape[0]
    width = keys.shape[1]
    for r in range(span.shape[0] // (2 * bands)):
        for j in range(bands):
            i = r * bands + j
            a = span[2 * i]
            b = span[2 * i + 1]
            key = qk[j]
            if b - a <= _SCAN:
                # The usual bucket (1-2 keys): compare a fixed _SCAN keys without branching and
                # mask off those past the bucket (a scan that stops at the first larger key
                # mispredicts its exit in almost every bucket). Reads stay inside the bucket's
                # (prefetched) lines: past its end, the last key is read again.
                top = min(max(a, b - 1), width - 1)  # an empty bucket may start at the very end
                row = keys[j]
                m = 0
                for t in range(_SCAN):  # unsigned indices into one row: no wraparound code (~0.05 us a query)
                    m |= np.int64(row[np.uint64(min(a + t, top))] == key) << t
                m &= (np.int64(1) << (b - a)) - 1
                t = 0
                while m != 0:
                    if m & 1:
                        hits[nh] = ids[j, a + t]
                        nh += 1
                    m >>= 1
                    t += 1
                continue
            a += np.searchsorted(keys[j, a:b], key)  # a long bucket: many equal keys
            while a < b and keys[j, a] == key:
                hits[nh] = ids[j, a]
                nh += 1
                a += 1
    return nh


@nb.njit(inline="always")
def _distinct(hits, nh, sigs):
    """Phase 3: sort the rows ``hits[:nh]`` and drop repeats, prefetching each row's signature.
    Returns how many rows: they are ``hits[:end]``."""
    _sort_prefix(hits, nh)
    end = 0
    prev = -1
    for i in range(nh):
        row = hits[i]
        if row != prev:
            prev = row
            hits[end] = row
            end += 1
            prefetch(sigs, (row, 0))
    return end


@nb.njit(inline="always")
def _verify(q, rows_found, sigs, alive, key_values, min_matches, limit, codes):
    """Phase 4: the results among the distinct candidate rows ``rows_found`` into ``codes``
    (at least as long), as in ``_candidates``; returns how many."""
    k = q.shape[0]
    mapped = key_values.shape[0] > 0
    n = 0
    for i in range(rows_found.shape[0]):
        row = rows_found[i]
        if mapped:
            prefetch(key_values, (row,))
        if not alive[row]:
            continue
        m = 0
        for c in range(k):
            m += sigs[row, c] == q[c]
        if m >= min_matches:
            codes[n] = ((k - m) << 32) | row
            n += 1
    _sort_prefix(codes, n)
    if limit >= 0 and n > limit:
        n = limit
    return n


@nb.njit(cache=True, nogil=True)
def _candidates(q, rows, keys, ids, dirs, runs, sigs, alive, key_values, min_matches, limit):
    """The results of one query row ``q``, as ``(codes, n)``: ``codes[:n]`` ascending, one per result.

    A result is a live row sharing at least one band key with ``q`` and having ``m >= min_matches``
    slots equal to it; its code is ``(K - m) << 32 | row``, so ascending codes are matches
    descending, then row (insertion order) ascending; at most ``limit`` of them (``limit < 0``: all).
    ``key_values`` (possibly empty) is only prefetched for the candidates.

    The lookups go in phases over all (run, band) pairs (``_locate``, ``_scan``, ``_distinct``,
    ``_verify``) so that the cache misses of a phase (about one per pair, each ~0.1-0.25 us)
    are independent and overlap instead of adding up.
    """
    bands = keys.shape[0]
    nruns = runs.shape[0]
    if nruns == 0 or _is_empty(q):
        return np.empty(0, dtype=np.int64), 0
    qk = np.empty(bands, dtype=np.uint64)
    span = np.empty(2 * bands * nruns, dtype=np.int64)
    _locate(q, rows, keys, dirs, ids, runs, qk, span)
    hits = _room(span, np.empty(max(32, bands), dtype=np.int64))
    nh = _scan(qk, span, keys, ids, hits)
    end = _distinct(hits, nh, sigs)
    n = _verify(q, hits[:end], sigs, alive, key_values, min_matches, limit, hits)
    return hits, n


@structref.register
class _QueryStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _QueryState(structref.StructRefProxy):
    """What a single query reads -- the banding's ``rows`` and the index arrays -- as one numba
    object: unboxing one argument instead of eight saves ~0.2 us a call."""


structref.define_proxy(
    _QueryState, _QueryStateType, ["rows", "keys", "ids", "dirs", "runs", "sigs", "alive", "key_values"]
)


@nb.njit(cache=True)
def query_state(rows, keys, ids, dirs, runs, sigs, alive, key_values):
    """A ``_QueryState`` (built by a cached kernel: no compilation at run time)."""
    return _QueryState(rows, keys, ids, dirs, runs, sigs, alive, key_values)


@nb.njit(cache=True, nogil=True)
def query_one(q, state, min_matches, limit):
    """``_candidates`` of one signature ``q`` as ``(n, key0, matches0, pairs)``.

    ``q`` must be one aligned row of K contiguous slots, of shape (K,) or (1, K); anything else
    gives ``n = -1`` (the caller then validates it properly). Results are (row, matches), or
    (key_values[row], matches) when ``state.key_values`` is not empty: the first in ``key0`` and
    ``matches0``, all of them as the (n, 2) array ``pairs`` when ``n > 1``. With one result or
    none, ``pairs`` is None: boxing an array costs ~0.45 us, more than the rest of the call.
    """
    k = state.sigs.shape[1]
    last = q.ndim - 1
    if q.shape[last] != k or q.size != k or q.strides[last] != q.itemsize or q.ctypes.data % q.itemsize:
        return -1, 0, 0, None
    row = q.reshape(k)
    key_values = state.key_values
    codes, n = _candidates(
        row,
        state.rows,
        state.keys,
        state.ids,
        state.dirs,
        state.runs,
        state.sigs,
        state.alive,
        key_values,
        min_matches,
        limit,
    )
    if n == 0:
        return 0, 0, 0, None
    mapped = key_values.shape[0] > 0
    if n == 1:
        r = codes[0] & 0xFFFFFFFF
        return 1, key_values[r] if mapped else r, k - (codes[0] >> 32), None
    pairs = np.empty((n, 2), dtype=np.int64)
    for i in range(n):
        r = codes[i] & 0xFFFFFFFF
        pairs[i, 0] = key_values[r] if mapped else r
        pairs[i, 1] = k - (codes[i] >> 32)
    return n, pairs[0, 0], pairs[0, 1], pairs


@nb.njit(cache=True, nogil=True)
def query_kernel(qvalues, rows, keys, ids, dirs, runs, sigs, alive, min_matches, limit):
    """``_candidates`` of every query row. Returns (offsets, ids, matches): query q's results are
    ``offsets[q]:offsets[q+1]``, in the order of ``_candidates``."""
    nq = qvalues.shape[0]
    k = qvalues.shape[1]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    no_keys = np.empty(0, dtype=np.int64)
    out_ids = np.empty(max(64, nq), dtype=np.int64)
    out_matches = np.empty(max(64, nq), dtype=np.int64)
    used = 0
    for q in range(nq):
        codes, n = _candidates(qvalues[q], rows, keys, ids, dirs, runs, sigs, alive, no_keys, min_matches, limit)
        if used + n > out_ids.shape[0]:
            cap = max(2 * out_ids.shape[0], used + n)
            bigger_ids = np.empty(cap, dtype=np.int64)
            copy_into(bigger_ids, 0, out_ids, 0, used)
            bigger_matches = np.empty(cap, dtype=np.int64)
            copy_into(bigger_matches, 0, out_matches, 0, used)
            out_ids, out_matches = bigger_ids, bigger_matches
        for i in range(n):
            out_ids[used + i] = codes[i] & 0xFFFFFFFF
            out_matches[used + i] = k - (codes[i] >> 32)
        used += n
        offsets[q + 1] = used
    return offsets, out_ids[:used], out_matches[:used]
