"""SimHash kernels: salts and hyperplanes from the seed, weighted sign sums, document frequencies.

:func:`simhash_salt_array` and :func:`hyperplanes` make a scheme's per-word salts and Gaussian
hyperplanes; :func:`simhash_csr`, :func:`simhash_csr_weighted`, :func:`simhash_words_kernel` and
:func:`simhash_chars_kernel` (texts, shingled on the way by :mod:`neardup._kernels.shingles`, a
kernel per shingle kind) fold shingle hashes, with count
or IDF weights, into 64-bit fingerprint words; :func:`df_batch` and :func:`merge_counts` count
document frequencies for the IDF table. Fingerprints are defined in
:mod:`neardup.methods.simhash.scheme`.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .hashing import fmix64, splitmix64
from .shingles import HASH_BLOCK, LOCKSTEP_WORDS, char_hashes, doc_scratch, word_hashes
from .sorting import radix_sort_with

_GAMMA = 0x9E3779B97F4A7C15


@nb.njit(cache=True)
def simhash_salt_array(seed, w):
    out = np.empty(w, dtype=np.uint64)
    for i in range(w):
        out[i] = splitmix64(seed + np.uint64(i) * np.uint64(_GAMMA))
    return out


@nb.njit(cache=True)
def hyperplanes(seed, dim, bits):
    g = np.empty((dim, bits), dtype=np.float64)
    gamma = np.uint64(_GAMMA)
    scale = 1.0 / 9007199254740992.0  # 2**-53
    for j in range(bits):
        for i in range(dim):
            c = (np.uint64(j) << np.uint64(32)) | np.uint64(i)
            z1 = splitmix64(seed + (c << np.uint64(1)) * gamma)
            z2 = splitmix64(seed + ((c << np.uint64(1)) | np.uint64(1)) * gamma)
            u1 = (np.float64(z1 >> np.uint64(11)) + 1.0) * scale
            u2 = np.float64(z2 >> np.uint64(11)) * scale
            g[i, j] = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return g


# ---------------------------------------------------------------------------------------------
# weighted sign sums
@nb.njit(inline="always", cache=True)
def _fold_count(hashes, lo, hi, salt, cnt):
    """One 64-bit word of the count-weighted fingerprint of hashes[lo:hi] (weight 1 each).

    Eight uint64 accumulators hold 64 byte-wide counters (bit j of r is counted in byte j // 8
    of accumulator j % 8) and are flushed into ``cnt`` (int64[64]) every 255 hashes.
    """
    lanes = np.uint64(0x0101010101010101)
    cnt[:] = 0
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.uint64(0)
    pending = 0
    for i in range(lo, hi):
        r = fmix64(hashes[i] ^ salt)
        a0 += r & lanes
        a1 += (r >> np.uint64(1)) & lanes
        a2 += (r >> np.uint64(2)) & lanes
        a3 += (r >> np.uint64(3)) & lanes
        a4 += (r >> np.uint64(4)) & lanes
        a5 += (r >> np.uint64(5)) & lanes
        a6 += (r >> np.uint64(6)) & lanes
        a7 += (r >> np.uint64(7)) & lanes
        pending += 1
        if pending == 255 or i == hi - 1:
            for b in range(8):
                sh = np.uint64(8 * b)
                cnt[8 * b + 0] += np.int64((a0 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 1] += np.int64((a1 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 2] += np.int64((a2 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 3] += np.int64((a3 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 4] += np.int64((a4 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 5] += np.int64((a5 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 6] += np.int64((a6 >> sh) & np.uint64(0xFF))
                cnt[8 * b + 7] += np.int64((a7 >> sh) & np.uint64(0xFF))
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.uint64(0)
            pending = 0
    total = hi - lo
    word = np.uint64(0)
    for j in range(64):
        if 2 * cnt[j] > total:
            word |= np.uint64(1) << np.uint64(j)
    return word


@nb.njit(inline="always", cache=True)
def _fold_weighted(hashes, weights, lo, hi, salt, acc):
    """One 64-bit word of the fingerprint of hashes[lo:hi] with weights[lo:hi].

    ``acc`` (length 65, the weights' dtype) ends with acc[j] = sum of the weights whose bit j is
    set and acc[64] = sum of all weights; bit j is set when 2 * acc[j] > acc[64].
    """
    acc[:] = 0
    for i in range(lo, hi):
        r = fmix64(hashes[i] ^ salt)
        w = weights[i]
        acc[64] += w
        for j in range(64):
            acc[j] += w * np.int64((r >> np.uint64(j)) & np.uint64(1))
    word = np.uint64(0)
    for j in range(64):
        if 2 * acc[j] > acc[64]:
            word |= np.uint64(1) << np.uint64(j)
    return word


@nb.njit(cache=True, nogil=True)
def simhash_csr(hashes, offsets, salts, out):
    cnt = np.empty(64, dtype=np.int64)
    for d in range(offsets.shape[0] - 1):
        for w in range(salts.shape[0]):
            out[d, w] = _fold_count(hashes, offsets[d], offsets[d + 1], salts[w], cnt)


@nb.njit(cache=True, nogil=True)
def simhash_csr_weighted(hashes, weights, offsets, salts, out):
    acc = np.empty(65, dtype=weights.dtype)
    for d in range(offsets.shape[0] - 1):
        for w in range(salts.shape[0]):
            out[d, w] = _fold_weighted(hashes, weights, offsets[d], offsets[d + 1], salts[w], acc)


@nb.njit(inline="always", cache=True)
def _idf_lookup(table_hashes, table_weights, directory, dir_shift, default, x):
    p = x >> np.uint64(dir_shift) if dir_shift < 64 else np.uint64(0)
    lo, hi = directory[p], directory[p + np.uint64(1)]
    while lo < hi:
        mid = (lo + hi) >> 1
        if table_hashes[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < directory[p + np.uint64(1)] and table_hashes[lo] == x:
        return table_weights[lo]
    return default


@nb.njit(cache=True, nogil=True)
def lookup_idf_weights(hashes, table_hashes, table_weights, directory, dir_shift, default):
    out = np.empty(hashes.shape[0], dtype=np.int64)
    for i in range(hashes.shape[0]):
        out[i] = _idf_lookup(table_hashes, table_weights, directory, dir_shift, default, hashes[i])
    return out


@nb.njit(inline="always", cache=True)
def _texts_scratch(offsets, use_idf):
    """Per-batch scratch of the fingerprint kernels: (buf, words, pos, scratch, hbuf, wbuf, cnt, acc)."""
    buf, words, pos = doc_scratch(offsets[:-1], offsets[1:])
    scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
    hbuf = np.empty(pos.shape[0], dtype=np.uint64)
    wbuf = np.empty(pos.shape[0] if use_idf else 0, dtype=np.int64)
    return buf, words, pos, scratch, hbuf, wbuf, np.empty(64, dtype=np.int64), np.empty(65, dtype=np.int64)


@nb.njit(inline="always", cache=True)
def _fingerprint(d, c, hbuf, wbuf, salts, use_idf, idf, cnt, acc, out):
    """``out[d]`` = the fingerprint words of the ``c`` shingle hashes in ``hbuf`` (``idf``: the
    kernels' IDF arguments, a tuple)."""
    if use_idf:
        idf_hashes, idf_weights, idf_dir, idf_shift, idf_default = idf
        for i in range(c):
            wbuf[i] = _idf_lookup(idf_hashes, idf_weights, idf_dir, idf_shift, idf_default, hbuf[i])
        for w in range(salts.shape[0]):
            out[d, w] = _fold_weighted(hbuf, wbuf, 0, c, salts[w], acc)
    else:
        for w in range(salts.shape[0]):
            out[d, w] = _fold_count(hbuf, 0, c, salts[w], cnt)


@nb.njit(cache=True, nogil=True)
def simhash_words_kernel(
    data,
    offsets,
    table,
    kind,
    n,
    strip,
    salts,
    use_idf,
    idf_hashes,
    idf_weights,
    idf_dir,
    idf_shift,
    idf_default,
    out,
    counts,
):
    """Fingerprint every document of the packed UTF-8 ``data`` by its word shingles (``kind & 1
    == WORD_KIND``): its shingles are streamed by the shingling kernels into a per-document buffer
    and folded at once (no batch-wide CSR). :func:`simhash_chars_kernel` is the same loop for
    character shingles: a kernel per kind compiles half the shingling code."""
    buf, words, pos, scratch, hbuf, wbuf, cnt, acc = _texts_scratch(offsets, use_idf)
    idf = (idf_hashes, idf_weights, idf_dir, idf_shift, idf_default)
    for d in range(offsets.shape[0] - 1):
        c = word_hashes(data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, pos, hbuf, 0, scratch)
        counts[d] = c
        _fingerprint(d, c, hbuf, wbuf, salts, use_idf, idf, cnt, acc, out)


@nb.njit(cache=True, nogil=True)
def simhash_chars_kernel(
    data,
    offsets,
    table,
    kind,
    n,
    strip,
    salts,
    use_idf,
    idf_hashes,
    idf_weights,
    idf_dir,
    idf_shift,
    idf_default,
    out,
    counts,
):
    """:func:`simhash_words_kernel` for character shingles (``kind & 1 == CHAR_KIND``)."""
    buf, words, pos, scratch, hbuf, wbuf, cnt, acc = _texts_scratch(offsets, use_idf)
    idf = (idf_hashes, idf_weights, idf_dir, idf_shift, idf_default)
    for d in range(offsets.shape[0] - 1):
        c = char_hashes(data, offsets[d], offsets[d + 1], table, kind, n, strip, buf, words, pos, hbuf, 0, scratch)
        counts[d] = c
        _fingerprint(d, c, hbuf, wbuf, salts, use_idf, idf, cnt, acc, out)


# ---------------------------------------------------------------------------------------------
# document frequencies (weighting="idf")
@nb.njit(cache=True, nogil=True)
def df_batch(hashes, offsets):
    """(distinct hashes, number of documents holding each) of a CSR batch."""
    n = hashes.shape[0]
    keys = hashes.copy()
    doc = np.empty(n, dtype=np.int64)
    for d in range(offsets.shape[0] - 1):
        doc[offsets[d] : offsets[d + 1]] = d
    radix_sort_with(keys, doc)  # stable: documents ascend inside a run of equal hashes
    oh = np.empty(n, dtype=np.uint64)
    oc = np.empty(n, dtype=np.int64)
    q = -1
    for i in range(n):
        if q >= 0 and oh[q] == keys[i]:
            if doc[i] != doc[i - 1]:
                oc[q] += 1
        else:
            q += 1
            oh[q] = keys[i]
            oc[q] = 1
    return oh[: q + 1].copy(), oc[: q + 1].copy()


@nb.njit(cache=True, nogil=True)
def merge_counts(hashes, counts):
    """Sort (hash, count) entries by hash and add up the counts of equal hashes."""
    keys = hashes.copy()
    c = counts.copy()
    radix_sort_with(keys, c)
    n = keys.shape[0]
    q = -1
    for i in range(n):
        if q >= 0 and keys[q] == keys[i]:
            c[q] += c[i]
        else:
            q += 1
            keys[q] = keys[i]
            c[q] = c[i]
    return keys[: q + 1].copy(), c[: q + 1].copy()
