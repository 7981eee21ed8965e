"""SpotSigs kernels: spot signature extraction, and the exact all-pairs search over the signatures.

:func:`extract_kernel` turns UTF-8 texts into their multisets of spot signature keys (CSR of sorted
hashes and counts, whose lengths :func:`row_sums` adds up), as :mod:`neardup.methods.spotsigs.signatures`
defines them. For the search
(:mod:`neardup.methods.spotsigs.pairs`, which describes the partitions and the pruning bounds):
:func:`take_rows` orders the documents, :func:`signature_ids` and :func:`fill_lists` build the
inverted lists, :func:`probe` searches a range of documents against longer ones with the bounds,
:func:`bruteforce` compares every pair, and :func:`rows_similarity` gives documents' weighted
Jaccard to others.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .charclass import IDEOGRAPH, IGNORE, OTHER, SYLLABLE, WORD
from .hashing import fmix64, hash_span_words
from .intrinsics import copy_into
from .shingles import decode

KEY_ANTECEDENT, KEY_CHAIN = 0, 1
"""Spot signature key modes: antecedent and chain, or the chain alone."""
_COLON = 58


# ---------------------------------------------------------------------------------------------
# Signature sets (CSR multisets)
@nb.njit(cache=True, nogil=True)
def row_sums(counts, offsets):
    out = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    for d in range(out.shape[0]):
        for e in range(offsets[d], offsets[d + 1]):
            out[d] += counts[e]
    return out


# ---------------------------------------------------------------------------------------------
# Extraction
@nb.njit(inline="always", cache=True)
def _contains(sorted_arr, h):
    i = np.searchsorted(sorted_arr, h)
    return i < sorted_arr.shape[0] and sorted_arr[i] == h


@nb.njit(cache=True, nogil=True)
def extract_kernel(data, offsets, table, ant, skip, d, c, key_mode):
    """Spot signatures of every document of ``data`` (UTF-8, split by ``offsets``) as CSR
    ``(values uint64, counts int32, doc_offsets int64)``; see :mod:`neardup.methods.spotsigs.signatures`."""
    ndoc = offsets.shape[0] - 1
    longest = 0
    for q in range(ndoc):
        longest = max(longest, offsets[q + 1] - offsets[q])
    buf = np.zeros(((longest + 24) // 8) * 8, dtype=np.uint8)
    words = buf.view(np.uint64)
    kbuf = np.zeros(((2 * longest + 32) // 8) * 8, dtype=np.uint8)
    kwords = kbuf.view(np.uint64)
    tstart = np.empty(longest + 1, dtype=np.int64)
    tend = np.empty(longest + 1, dtype=np.int64)
    is_ant = np.empty(longest + 1, dtype=np.bool_)
    ns = np.empty(longest + 1, dtype=np.int64)  # token index of the m-th non-stopword
    ns_upto = np.empty(longest + 1, dtype=np.int64)  # non-stopwords among tokens 0..t
    keys = np.empty(longest + 1, dtype=np.uint64)
    total = offsets[ndoc] - offsets[0] + 1
    out_v = np.empty(total, dtype=np.uint64)
    out_c = np.empty(total, dtype=np.int32)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    pos = 0
    for q in range(ndoc):
        start = offsets[q]
        end = offsets[q + 1]
        # 1. tokens, copied into buf (format characters inside a token are dropped)
        ntok = 0
        blen = 0
        in_tok = False
        i = start
        while i <= end:
            if i < end:
                cp, j = decode(data, i, end)
                cls = table[cp]
            else:
                j = end + 1
                cls = OTHER
            if cls == WORD:
                if not in_tok:
                    tstart[ntok] = blen
                    in_tok = True
                for b in range(i, j):
                    buf[blen] = data[b]
                    blen += 1
            elif cls != IGNORE:
                if in_tok:
                    tend[ntok] = blen
                    ntok += 1
                    in_tok = False
                if cls == SYLLABLE:  # starts a token its marks (WORD) join
                    tstart[ntok] = blen
                    in_tok = True
                    for b in range(i, j):
                        buf[blen] = data[b]
                        blen += 1
                elif cls == IDEOGRAPH:
                    tstart[ntok] = blen
                    for b in range(i, j):
                        buf[blen] = data[b]
                        blen += 1
                    tend[ntok] = blen
                    ntok += 1
            i = j
        # 2. classify tokens by their hash
        m = 0
        for t in range(ntok):
            h = hash_span_words(words, tstart[t], tend[t])
            is_ant[t] = _contains(ant, h)
            if not _contains(skip, h):
                ns[m] = t
                m += 1
            ns_upto[t] = m
        # 3. one key per antecedent with a complete chain
        nk = 0
        for t in range(ntok):
            if not is_ant[t]:
                continue
            first = ns_upto[t]  # index in ns of the first non-stopword after t
            if first + c * d - 1 >= m:
                continue
            klen = 0
            if key_mode == KEY_ANTECEDENT:
                for b in range(tstart[t], tend[t]):
                    kbuf[klen] = buf[b]
                    klen += 1
            for e in range(1, c + 1):
                if klen > 0:
                    kbuf[klen] = _COLON
                    klen += 1
                w = ns[first + e * d - 1]
                for b in range(tstart[w], tend[w]):
                    kbuf[klen] = buf[b]
                    klen += 1
            keys[nk] = hash_span_words(kwords, 0, klen)
            nk += 1
        # 4. the multiset: sorted distinct keys with counts
        if nk > 0:
            s = np.sort(keys[:nk])
            out_v[pos] = s[0]
            out_c[pos] = 1
            u = pos
            for k in range(1, nk):
                if s[k] == out_v[u]:
                    out_c[u] += 1
                else:
                    u += 1
                    out_v[u] = s[k]
                    out_c[u] = 1
            pos = u + 1
        doc_off[q + 1] = pos
    return out_v[:pos].copy(), out_c[:pos].copy(), doc_off


# ---------------------------------------------------------------------------------------------
# All pairs
@nb.njit(inline="always", cache=True)
def _wjaccard(values, counts, off, x, y, lx, ly):
    i = off[x]
    ie = off[x + 1]
    j = off[y]
    je = off[y + 1]
    inter = 0
    while i < ie and j < je:
        vi = values[i]
        vj = values[j]
        if vi == vj:
            inter += min(np.int64(counts[i]), np.int64(counts[j]))
            i += 1
            j += 1
        elif vi < vj:
            i += 1
        else:
            j += 1
    union = lx + ly - inter
    return inter / union if union > 0 else 0.0


@nb.njit(cache=True, nogil=True)
def _grow(arr, need):
    out = np.empty(max(2 * arr.shape[0], need, 64), dtype=arr.dtype)
    copy_into(out, 0, arr, 0, arr.shape[0])
    return out


@nb.njit(cache=True, nogil=True)
def take_rows(values, counts, offsets, rows):
    """Rows ``rows`` of a CSR, in that order."""
    n = rows.shape[0]
    off = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        d = rows[r]
        off[r + 1] = off[r] + offsets[d + 1] - offsets[d]
    v = np.empty(off[n], dtype=values.dtype)
    c = np.empty(off[n], dtype=counts.dtype)
    for r in range(n):
        d = rows[r]
        copy_into(v, off[r], values, offsets[d], off[r + 1] - off[r])
        copy_into(c, off[r], counts, offsets[d], off[r + 1] - off[r])
    return v, c, off


@nb.njit(cache=True, nogil=True)
def signature_ids(values):
    """A dense id per distinct value (in order of first appearance), by open addressing."""
    m = values.shape[0]
    size = 1024
    while size < 2 * min(m, 1 << 16):
        size *= 2
    slot_key = np.empty(size, dtype=np.uint64)
    slot_id = np.full(size, -1, dtype=np.int64)
    keys = np.empty(max(m, 1), dtype=np.uint64)
    sid = np.empty(m, dtype=np.int64)
    n = 0
    for e in range(m):
        v = values[e]
        mask = np.uint64(size - 1)
        h = fmix64(v) & mask
        while slot_id[h] >= 0 and slot_key[h] != v:
            h = (h + np.uint64(1)) & mask
        if slot_id[h] < 0:
            slot_key[h] = v
            slot_id[h] = n
            keys[n] = v
            n += 1
            if 2 * n > size:  # keep the load under 1/2: rehash into a table twice as large
                size *= 2
                mask = np.uint64(size - 1)
                slot_key = np.empty(size, dtype=np.uint64)
                slot_id = np.full(size, -1, dtype=np.int64)
                for q in range(n):
                    g = fmix64(keys[q]) & mask
                    while slot_id[g] >= 0:
                        g = (g + np.uint64(1)) & mask
                    slot_key[g] = keys[q]
                    slot_id[g] = q
                sid[e] = n - 1
                continue
        sid[e] = slot_id[h]
    return sid, n


@nb.njit(cache=True, nogil=True)
def fill_lists(sid, off, list_off):
    """Inverted lists: for each signature, the ranks of the documents holding it, ascending."""
    nr = off.shape[0] - 1
    nxt = list_off[:-1].copy()
    ranks = np.empty(list_off[-1], dtype=np.int64)
    for r in range(nr):
        for e in range(off[r], off[r + 1]):
            s = sid[e]
            ranks[nxt[s]] = r
            nxt[s] += 1
    return ranks


@nb.njit(cache=True, nogil=True)
def probe(r0, r1, tau, pruning, values, counts, off, sid, rlen, list_off, list_rank, limit, seen):
    """Search documents (ranks) r0..r1-1 against longer ones; returns pairs and counters."""
    cap = 256
    pa = np.empty(cap, dtype=np.int64)
    pb = np.empty(cap, dtype=np.int64)
    ps = np.empty(cap, dtype=np.float64)
    k = 0
    computed = 0
    pruned = 0
    cut = 0
    skipped = 0
    opened = 0
    order = np.empty(64, dtype=np.int64)
    for r in range(r0, r1):
        lo = off[r]
        m = off[r + 1] - lo
        lx = rlen[r]
        lim = limit[r]
        if pruning:  # lists by ascending length (document frequency), ties in signature order
            if order.shape[0] < m:
                order = np.empty(2 * m, dtype=np.int64)
            for t in range(m):
                s = sid[lo + t]
                order[t] = (list_off[s + 1] - list_off[s]) * m + t
            order[:m].sort()
        delta1 = 0
        for t in range(m):
            e = lo + (order[t] % m if pruning else t)
            if pruning and (lx - delta1) / (lx + delta1) < tau:
                skipped += m - t
                break
            s = sid[e]
            a = list_off[s]
            b = list_off[s + 1]
            p = a + np.searchsorted(list_rank[a:b], r) + 1
            opened += 1
            while p < b:
                y = list_rank[p]
                if y >= lim:
                    break
                if seen[y] != r:
                    ly = rlen[y]
                    if pruning and (lx - delta1) / (ly + delta1) < tau:
                        q = a + np.searchsorted(list_rank[a:b], lim)
                        pruned += q - p
                        cut += 1
                        break
                    seen[y] = r
                    sim = _wjaccard(values, counts, off, r, y, lx, ly)
                    computed += 1
                    if sim >= tau:
                        if k == pa.shape[0]:
                            pa = _grow(pa, k + 1)
                            pb = _grow(pb, k + 1)
                            ps = _grow(ps, k + 1)
                        pa[k] = r
                        pb[k] = y
                        ps[k] = sim
                        k += 1
                p += 1
            delta1 += counts[e]
    stats = np.array([computed, k, pruned, cut, skipped, opened], dtype=np.int64)
    return pa[:k].copy(), pb[:k].copy(), ps[:k].copy(), stats


@nb.njit(cache=True, nogil=True)
def bruteforce(values, counts, off, lengths, docs, tau):
    n = docs.shape[0]
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    ps = np.empty(64, dtype=np.float64)
    k = 0
    for i in range(n):
        x = docs[i]
        for j in range(i + 1, n):
            y = docs[j]
            sim = _wjaccard(values, counts, off, x, y, lengths[x], lengths[y])
            if sim >= tau:
                if k == pa.shape[0]:
                    pa = _grow(pa, k + 1)
                    pb = _grow(pb, k + 1)
                    ps = _grow(ps, k + 1)
                pa[k] = x
                pb[k] = y
                ps[k] = sim
                k += 1
    return pa[:k].copy(), pb[:k].copy(), ps[:k].copy()


@nb.njit(cache=True, nogil=True)
def rows_similarity(values, counts, off, lengths, docs, others):
    out = np.empty(docs.shape[0], dtype=np.float64)
    for q in range(docs.shape[0]):
        x = docs[q]
        y = others[q]
        if x == y:
            out[q] = 1.0
        else:
            out[q] = _wjaccard(values, counts, off, x, y, lengths[x], lengths[y])
    return out
