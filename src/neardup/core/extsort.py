"""Grouping equal keys past a job's memory budget: an external bucket sort on spill files.

A candidate stage that groups documents by equal keys (exact keys, I-Match signatures, the
kept bits of SimHash's permuted tables) sorts rows of ``uint64`` words, the key's words and the
document's index. In memory that is one sort of n rows. Past the budget
(:mod:`neardup.core.budget`) the rows are cut instead by the top bits of their leading key
word into ``parts`` (a power of two) spill files, in one pass over the documents a stretch at a
time, and the parts are read back and sorted one after the other, each in the stage's working
memory (``spill.work``). Every row of a given key lands in one part, each part keeps the rows
in the order they were added, and the parts come back in key order; so sorting each part by
(key, index) and concatenating gives exactly the one sort of all rows, and every run of equal
keys is whole inside one part.

The keys are hashes (or fingerprints), so the parts are about equal; a key shared by very many
documents makes one part large (its rows are still all needed at once to list that group).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .budget import Spill, current_spill

__all__ = ["Partitions", "external", "parts_for"]

MOST_PARTS = 1024
"""The most parts of one sort: at 32 bytes a row and a working area of 250 MB (a 2 GB budget),
8 billion rows."""


def external(nbytes: int, stage: str) -> Spill | None:
    """The current budget when a stage whose in-memory form takes ``nbytes`` must take its
    external form (the job has spilled already, or that would not fit); else None. The stage is
    noted in :attr:`Spill.external`."""
    spill = current_spill()
    if spill is None or (not spill.spilled and spill.fits(nbytes)):
        return None
    spill.external.add(stage)
    return spill


def parts_for(rows: int, row_bytes: int, spill: Spill) -> int:
    """The fewest parts (a power of two, at most :data:`MOST_PARTS`) whose sort, about twice a
    part's rows, fits in ``spill.work``."""
    need = 2 * rows * row_bytes
    parts = 1
    while parts < MOST_PARTS and need > parts * spill.work:
        parts *= 2
    return parts


class Partitions:
    """Rows of ``width`` uint64 words cut into ``parts`` spill files by bits
    ``[high - log2(parts), high)`` of column ``column`` (see the module docs); iterating gives
    each part's rows (in memory, in the order they were added), in the order of those bits.

    >>> from neardup.core.budget import Spill
    >>> p = Partitions(Spill(limit=0, work=4096), 4, 2)
    >>> p.add(np.array([[3 << 62, 0], [1, 1], [2 << 62, 2], [5, 3]], dtype=np.uint64))
    >>> [part[:, 1].tolist() for part in p]
    [[1, 3], [], [2], [0]]
    """

    def __init__(self, spill: Spill, parts: int, width: int, column: int = 0, high: int = 64) -> None:
        if parts < 1 or parts & (parts - 1):
            raise ValueError(f"parts must be a power of two, got {parts}")
        bits = parts.bit_length() - 1
        if not 0 <= bits <= high <= 64:
            raise ValueError(f"{parts} parts need {bits} key bits below bit {high}")
        self._spill = spill
        self._parts = parts
        self._width = width
        self._column = column
        self._shift = np.uint64(high - bits)
        self._mask = np.uint64(parts - 1)
        self._files = [spill.rows((width,), np.uint64) for _ in range(parts)]

    def __len__(self) -> int:
        return self._parts

    def add(self, rows: np.ndarray) -> None:
        """Append ``rows`` (uint64[m, width]) to their parts, keeping their order within each."""
        rows = np.asarray(rows, dtype=np.uint64).reshape(-1, self._width)
        if self._parts == 1:
            self._files[0].append(rows)
            return
        part = (rows[:, self._column] >> self._shift) & self._mask
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(self._parts + 1, dtype=np.uint64))
        rows = rows[order]
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            self._files[p].append(rows[bounds[p] : bounds[p + 1]])
        self._spill.relieve()

    def __iter__(self) -> Iterator[np.ndarray]:
        for p in range(self._parts):
            rows, self._files[p] = self._files[p], None
            if rows is None:
                raise RuntimeError("the parts of a Partitions are read once")
            part = np.array(rows.finish())  # into memory: the part is sorted next
            del rows
            yield part
            del part
            self._spill.relieve()


def equal_runs(
    keys: np.ndarray, valid: np.ndarray | None, spill: Spill, stretch: int | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For rows of ``keys`` (uint64[n, w], hashes) where ``valid`` holds (all when None), in
    parts: ``(members, heads)``, every member that is not the smallest index of its group of
    equal keys, and that smallest index. Together the parts list every such member once, as
    ``group_equal`` would root it; read a stretch of documents at a time."""
    n, w = keys.shape
    step = stretch or max(spill.work // (16 * (w + 1)), 64)
    count = n if valid is None else int(np.count_nonzero(valid))
    parts = Partitions(spill, parts_for(count, 8 * (w + 1), spill), w + 1)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        idx = np.arange(lo, hi, dtype=np.int64)
        if valid is not None:
            idx = idx[np.asarray(valid[lo:hi], dtype=bool)]
        rows = np.empty((len(idx), w + 1), dtype=np.uint64)
        rows[:, :w] = keys[idx]
        rows[:, w] = idx.view(np.uint64)
        parts.add(rows)
    rows = idx = None
    for part in parts:
        if len(part) < 2:
            continue
        order = np.lexsort(tuple(part[:, c] for c in range(w, -1, -1)))
        part = part[order]
        new = np.ones(len(part), dtype=bool)
        new[1:] = (part[1:, :w] != part[:-1, :w]).any(axis=1)
        members = part[:, w].view(np.int64)
        heads = members[new][np.cumsum(new) - 1]
        moved = ~new
        yield np.ascontiguousarray(members[moved]), np.ascontiguousarray(heads[moved])
