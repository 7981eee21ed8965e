"""SimHash's Hamming search past the job's memory budget: the permuted tables, sorted externally.

The same search as :func:`neardup.methods.simhash.plan.search` (identical fingerprints
collapsed, then Manku et al.'s tables over the distinct ones, union-find over both), with the
same roots, pairs and counters, in memory that does not grow with the collection:

1. the distinct fingerprints: rows (fingerprint words, document) of the documents with shingles
   go through an external sort (:class:`neardup.core.extsort.Partitions`, by the top bits of the
   first word); in each part, sorted by (words, document), a run of equal fingerprints is one
   distinct fingerprint whose head (its first document) every other member is joined to. The
   distinct fingerprints, heads and run sizes go to spill files (a group is numbered in part
   order: the numbering differs from the in-memory one, which nothing outside this stage sees);
2. each table: its entries (kept bits above the group number, as in memory) are made a stretch
   of distinct fingerprints at a time and cut by the top kept bits into parts, each sorted and
   scanned by the in-memory kernels (:func:`~neardup._kernels.hamming.scan_table`): runs of
   equal keys are whole in one part, and a pair is reported by the first table whose kept
   blocks it agrees on, a function of the pair alone; the pairs' heads are joined at once;
3. roots are written over the forest (:func:`~neardup._kernels.unionfind.roots_in_place`):
   the smallest member of each component, as in memory.

With ``--pairs`` the distinct fingerprints' pairs are kept (they are the output) and expanded
to documents as in memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kernels.hamming import expand, scan_table, table_entries
from ..._kernels.sorting import radix_sort_bits
from ..._kernels.unionfind import roots_in_place, union_edges
from ...core.budget import Spill
from ...core.extsort import Partitions, parts_for
from .search import block_plan, choose_blocks

__all__ = ["search_external"]


def _forest(n: int, spill: Spill) -> np.ndarray:
    parent = spill.array(n, np.int64)
    step = 1 << 20
    for lo in range(0, n, step):
        parent[lo : lo + step] = np.arange(lo, min(lo + step, n), dtype=np.int64)
    spill.relieve()
    return parent


def _distinct(words: np.ndarray, counts: np.ndarray, parent: np.ndarray, want_pairs: bool, spill: Spill):
    """Step 1: (distinct fingerprints uint64[U, W], heads int64[U], sizes int64[U], members in
    group order int64[m] or None)."""
    n, w = words.shape
    step = max(spill.work // (16 * (w + 1)), 64)
    ndocs = int(np.count_nonzero(counts))
    parts = Partitions(spill, parts_for(ndocs, 8 * (w + 1), spill), w + 1)
    for lo in range(0, n, step):
        idx = lo + np.flatnonzero(np.asarray(counts[lo : lo + step]) > 0)
        rows = np.empty((len(idx), w + 1), dtype=np.uint64)
        rows[:, :w] = words[idx]
        rows[:, w] = idx.view(np.uint64)
        parts.add(rows)
    uniq, heads, sizes = spill.rows((w,), np.uint64), spill.rows((), np.int64), spill.rows((), np.int64)
    ordered = spill.rows((), np.int64) if want_pairs else None
    for part in parts:
        if not len(part):
            continue
        part = part[np.lexsort(tuple(part[:, c] for c in range(w, -1, -1)))]
        new = np.ones(len(part), dtype=bool)
        new[1:] = (part[1:, :w] != part[:-1, :w]).any(axis=1)
        members = np.ascontiguousarray(part[:, w].view(np.int64))
        starts = np.flatnonzero(new)
        head = members[starts]
        uniq.append(part[starts, :w])
        heads.append(head)
        sizes.append(np.diff(np.append(starts, len(part))))
        union_edges(parent, members[~new], head[np.cumsum(new) - 1][~new])
        if ordered is not None:
            ordered.append(members)
        spill.relieve()
    return uniq.finish(), heads.finish(), sizes.finish(), None if ordered is None else ordered.finish()


def search_external(
    values: np.ndarray,
    counts: np.ndarray,
    bits: int,
    max_distance: int,
    blocks: int | None,
    want_pairs: bool,
    spill: Spill,
) -> dict[str, Any]:
    """``search``'s result (root, counters, and pairs when ``want_pairs``) for fingerprints
    ``values`` (uint64[n] or uint64[n, 2]) and shingle ``counts``, under ``spill`` (see the
    module docs)."""
    n = len(values)
    words = values.reshape(-1, 1) if values.ndim == 1 else values  # uint64[n, W]
    parent = _forest(n, spill)
    uniq, heads, sizes, ordered = _distinct(words, counts, parent, want_pairs, spill)
    nuniq = len(heads)
    idx_bits = max(1, int(nuniq - 1).bit_length())
    if blocks is None:
        blocks = choose_blocks(bits, max_distance, nuniq, key_limit=64 - idx_bits)
    plan = block_plan(bits, max_distance, blocks)
    checked = pairs = 0
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if nuniq >= 2:
        kstart, ksize, nkept, keybits, kmask, bstart, bsize = plan.arrays(key_limit=64 - idx_bits)
        step = max(spill.work // 32, 64)
        for t in range(len(plan.tables)):
            kb = int(keybits[t])
            nparts = min(parts_for(nuniq, 8, spill), 1 << kb)
            table = Partitions(spill, nparts, 1, high=idx_bits + kb)
            for lo in range(0, nuniq, step):
                hi = min(lo + step, nuniq)
                entries = np.empty(hi - lo, dtype=np.uint64)
                table_entries(uniq[lo:hi], kstart[t], ksize[t], nkept[t], keybits[t], idx_bits, entries)
                table.add((entries + np.uint64(lo)).reshape(-1, 1))  # the group's number below the key
            for part in table:
                entries = np.ascontiguousarray(part[:, 0])
                radix_sort_bits(entries, idx_bits, kb)
                a, b, d, c = scan_table(entries, idx_bits, uniq, max_distance, t, kmask, bstart, bsize)
                checked += int(c)
                pairs += int((sizes[a] * sizes[b]).sum())
                union_edges(parent, heads[a], heads[b])
                if want_pairs:
                    found.append((a, b, d))
                spill.relieve()
    step = 1 << 20
    for lo in range(0, nuniq, step):
        s = np.asarray(sizes[lo : lo + step])
        pairs += int((s * (s - 1) // 2).sum())
    roots_in_place(parent)
    spill.relieve()
    counters = {
        "pairs": pairs,
        "searched": checked,
        "distinct": nuniq,
        "blocks": plan.blocks,
        "tables": len(plan.tables),
    }
    out: dict[str, Any] = {"root": parent, "counters": {**counters, "checked": counters.pop("searched")}}
    if want_pairs:
        ua = np.concatenate([f[0] for f in found]) if found else np.empty(0, dtype=np.int64)
        ub = np.concatenate([f[1] for f in found]) if found else np.empty(0, dtype=np.int64)
        ud = np.concatenate([f[2] for f in found]) if found else np.empty(0, dtype=np.int32)
        starts = np.zeros(nuniq + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        a, b, d = expand(ua, ub, ud, ordered, starts)
        order = np.lexsort((b, a))
        out["pairs"] = (a[order], b[order], 1.0 - d[order] / bits)
    return out
