"""The storage engine of every index: tables of sorted uint64 keys with uint32 row ids, in runs.

:class:`SortedRuns` holds T tables (the bands of an LSH index, the permuted tables of a Hamming
index, the one table of an exact index). Each ``append`` of n rows (one key per row and table)
becomes a new *run*: per table, the n keys sorted (an LSD radix sort) with their row ids. Runs
are merged like an LSM tree: while the run before the last is less than twice the last, the two
are merged, so n rows make O(log n) runs and an append costs O(batch log n) amortised. Removing
rows is ``compact(remap)``, which keeps the entries of the surviving rows (renumbered) and
merges everything into one run.

Finding a key in a run goes through the run's *bucket directory* (per table): the keys' top
``d = max(1, floor(log2 n))`` bits split a run of n keys into ``2^d`` buckets of 1 to 2 keys on
average when the top bits are uniform (hash outputs; the leading bits of SimHash fingerprints),
and ``dirs[t, s + u]`` is the offset in the run of the first key of table t whose top ``d`` bits
are ``>= u`` (``u = 0..2^d``; ``s``: the start of the run's directory). A lookup is then one
directory read and a short scan of its bucket (a binary search in it if it is long): two
dependent cache misses instead of the ~20 of a binary search over a run of 1M keys, for 2 to 4
bytes per key (a uint32 per bucket). Equal keys always share a bucket, so the runs stay sorted
and merge as before; a run's directory is built when the run is made. The kernels that read the
storage are in :mod:`neardup._kernels.runs` (``equal_range``) and the query kernels.

Memory: 12 bytes per row and table for the keys and ids, 2 to 4 for the directories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .._kernels.runs import compact_runs, fill_directory
from .._kernels.sorting import merge_runs, radix_sort_with
from ..core.parallel import MAX_WORKERS, Threads
from ..core.validation import ParameterError, check_int
from .growth import copy, reliever, zeros

__all__ = ["PARALLEL_ROWS", "SortedRuns", "run_each"]

PARALLEL_ROWS = 8192
"""Batches at least this large are sorted, merged and keyed on ``workers`` threads (the tables
split among them; below this a task is too short to pay for the threads)."""


def run_each(fn: Callable, items: Iterable, workers: int) -> None:
    """``fn(item)`` for every item, on ``workers`` threads (the kernels release the GIL)."""
    items = list(items)
    workers = min(workers, len(items))
    if workers <= 1:
        for item in items:
            fn(item)
        return
    with Threads(workers) as threads:
        threads.map(fn, items)


class SortedRuns:
    """T tables of sorted uint64 keys with uint32 row ids, in log-structured runs (see the module docs).

    Attributes (read by the query kernels, replaced by every change):
        keys, ids: (T, capacity) arrays; run k is columns ``bounds[k]:bounds[k + 1]``.
        bounds: int64, the run boundaries (``bounds[-1]`` entries per table).
        dirs: (T, m) uint32, the directories of every run, one after the other.
        runs: int64 (runs, 4): ``(lo, hi, s, 64 - d)`` per run: its columns, the start of its
            directory in ``dirs`` and the shift that gives a key's bucket.

    Args:
        tables: T, at least 1.
        workers: threads for the sorts and directories of batches of ``PARALLEL_ROWS`` rows or more.
    """

    def __init__(self, tables: int, *, workers: int = 1) -> None:
        tables = check_int("tables", tables, 1)
        self.workers = check_int("workers", workers, 1, MAX_WORKERS)
        self.keys = np.empty((tables, 0), dtype=np.uint64)
        self.ids = np.empty((tables, 0), dtype=np.uint32)
        self.bounds = np.zeros(1, dtype=np.int64)
        self.dirs = np.empty((tables, 0), dtype=np.uint32)
        self.runs = np.empty((0, 4), dtype=np.int64)

    @property
    def tables(self) -> int:
        return self.keys.shape[0]

    @property
    def size(self) -> int:
        """Entries per table."""
        return int(self.bounds[-1])

    def append(self, keys: np.ndarray, row_ids: np.ndarray) -> None:
        """Add n rows as a new run, then merge runs: ``keys[t, i]`` (uint64, shape (T, n), any
        strides) is the key of row ``row_ids[i]`` (uint32[n]) in table t."""
        if keys.shape != (self.tables, row_ids.shape[0]):
            raise ParameterError(
                f"keys must be of shape ({self.tables}, n) for n row ids, got {keys.shape} for {row_ids.shape}"
            )
        self._append(row_ids, keys, None)

    def append_filled(self, fill: Callable[[np.ndarray], None], row_ids: np.ndarray) -> None:
        """``append`` with the keys written by ``fill(out)`` straight into the storage: ``out`` is
        the (T, n) block of the new run (a strided view), so no (T, n) batch of keys is copied."""
        self._append(row_ids, None, fill)

    def _append(self, row_ids: np.ndarray, keys: np.ndarray | None, fill: Callable | None) -> None:
        if row_ids.ndim != 1 or row_ids.dtype != np.uint32:
            raise ParameterError(f"row_ids must be uint32[n], got {row_ids.dtype} of shape {row_ids.shape}")
        n = row_ids.shape[0]
        if n == 0:
            return
        self._reserve(self.size + n)
        lo, hi = self.size, self.size + n
        if fill is not None:
            fill(self.keys[:, lo:hi])

        def sort_table(j: int) -> None:
            if keys is not None:
                self.keys[j, lo:hi] = keys[j]
            self.ids[j, lo:hi] = row_ids
            radix_sort_with(self.keys[j, lo:hi], self.ids[j, lo:hi])

        run_each(sort_table, range(self.tables), self._workers_for(n))
        self.bounds = np.append(self.bounds, hi)
        self._merge_tail()
        self._index_last_run()

    def compact(self, remap: np.ndarray) -> None:
        """Keep the entries with ``remap[id] >= 0``, renamed to ``remap[id]`` (int64, indexed by
        row id); merge everything into one run."""
        self.bounds = compact_runs(self.keys, self.ids, self.bounds, remap)
        while self.bounds.shape[0] > 2:
            self._merge_last_two()
        self.keys = self.keys[:, : self.size].copy()  # give the removed rows' memory back
        self.ids = self.ids[:, : self.size].copy()
        self.runs = self.runs[:0]
        self.dirs = self.dirs[:, :0].copy()
        if self.bounds.shape[0] == 2:
            self._index_last_run()

    def _workers_for(self, n: int) -> int:
        return self.workers if n >= PARALLEL_ROWS else 1

    def _reserve(self, needed: int) -> None:
        capacity = self.keys.shape[1]
        if needed <= capacity:
            return
        capacity = max(needed, capacity + capacity // 2, 1024)
        for name in ("keys", "ids"):
            old = getattr(self, name)
            new = zeros((old.shape[0], capacity), old.dtype)
            copy(new[:, : self.size], old[:, : self.size])
            del old
            setattr(self, name, new)

    def _merge_tail(self) -> None:
        """Merge the last two runs while the older is less than twice the newer (O(log n) runs)."""
        b = self.bounds
        while b.shape[0] > 2 and b[-2] - b[-3] < 2 * (b[-1] - b[-2]):
            self._merge_last_two()
            b = self.bounds

    def _merge_last_two(self) -> None:
        lo, mid, hi = (int(x) for x in self.bounds[-3:])
        workers = min(self._workers_for(hi - lo), self.tables)
        step = -(-self.tables // workers)

        relieve = reliever()

        def merge(a: int) -> None:  # tables a .. a + step - 1 (each merged on its own)
            for j in range(a, min(a + step, self.tables)):  # a table at a time: its pages relieved after it
                merge_runs(self.keys[j : j + 1], self.ids[j : j + 1], lo, mid, hi)
                relieve()

        run_each(merge, range(0, self.tables, step), workers)
        self.bounds = np.delete(self.bounds, -2)

    def _index_last_run(self) -> None:
        """Build the directory of the last run; the runs before it are unchanged since theirs was built."""
        last = self.bounds.shape[0] - 2
        lo, hi = int(self.bounds[last]), int(self.bounds[last + 1])
        bits = max(1, (hi - lo).bit_length() - 1)
        runs = self.runs[:last]
        start = 0 if last == 0 else int(runs[-1, 2]) + (1 << (64 - int(runs[-1, 3]))) + 1
        end = start + (1 << bits) + 1
        if end > self.dirs.shape[1]:
            dirs = zeros((self.tables, max(end, self.dirs.shape[1] + self.dirs.shape[1] // 2)), np.uint32)
            copy(dirs[:, :start], self.dirs[:, :start])
            self.dirs = dirs

        relieve = reliever()

        def fill(j: int) -> None:
            fill_directory(self.keys[j, lo:hi], 64 - bits, self.dirs[j, start:end])
            relieve()

        run_each(fill, range(self.tables), self._workers_for(hi - lo))
        self.runs = np.vstack([runs, np.array([[lo, hi, start, 64 - bits]], dtype=np.int64)])
