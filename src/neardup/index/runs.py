"""TODO: docstring."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._kernels.lsh import compact_runs, fill_directory
from .._kernels.sorting import merge_runs, radix_sort_with

PARALLEL_ROWS = 65536  # batches at least this large are sorted / hashed on threads


def run_each(fn, items, parallel: bool) -> None:
    """``fn(item)`` for every item; on a thread pool when ``parallel`` (the kernels release the GIL)."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1)
    if not parallel or workers <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(fn, items):
            pass


class BandTables:
    """Per band, sorted uint64 keys with the internal row id of each, in log-structured runs.

    Each run has, per band, a *bucket directory*: band keys are 64-bit hash outputs, so their top
    ``d`` bits are uniform and split a run of ``n`` keys into ``2^d`` buckets of 1 to 2 keys on
    average (``d = max(1, floor(log2 n))``). ``dirs[j, s + t]`` is the offset in the run of the
    first key of band ``j`` whose top ``d`` bits are ``>= t`` (``t = 0..2^d``, so bucket ``t`` is
    ``dirs[j, s + t]:dirs[j, s + t + 1]``), where ``s`` is the start of the run's directory.
    Finding a key is then one directory read and a short scan of its bucket (a binary search in
    it if it is long, e.g. many equal keys): two dependent cache misses instead of the ~20 of a
    binary search over a run of 1M keys, for 2 to 4 bytes per key (a uint32 per bucket).
    Equal keys always share a bucket, so nothing else changes: the runs stay sorted and merge
    as before, and a run's directory is built when the run is made (``_index_last_run``).

    ``runs[k] = (lo, hi, s, 64 - d)`` describes run ``k``: its columns ``lo:hi`` in ``keys`` and
    ``ids``, its directory start in ``dirs`` and the shift that gives a key's bucket.
    """

    def __init__(self, bands: int) -> None:
        self.keys = np.empty((bands, 0), dtype=np.uint64)
        self.ids = np.empty((bands, 0), dtype=np.uint32)
        self.bounds = np.zeros(1, dtype=np.int64)  # run k is columns bounds[k]:bounds[k+1]
        self.dirs = np.empty((bands, 0), dtype=np.uint32)
        self.runs = np.empty((0, 4), dtype=np.int64)

    @property
    def size(self) -> int:
        return int(self.bounds[-1])

    def append(self, row_keys: np.ndarray, row_ids: np.ndarray) -> None:
        """Add rows with their band keys (shape (n, bands)) as a new run, then merge runs."""
        n = row_keys.shape[0]
        if n == 0:
            return
        self._reserve(self.size + n)
        lo, hi = self.size, self.size + n

        def sort_band(j: int) -> None:
            self.keys[j, lo:hi] = row_keys[:, j]
            self.ids[j, lo:hi] = row_ids
            radix_sort_with(self.keys[j, lo:hi], self.ids[j, lo:hi])

        run_each(sort_band, range(row_keys.shape[1]), parallel=n >= PARALLEL_ROWS)
        self.bounds = np.append(self.bounds, hi)
        self._merge_tail()
        self._index_last_run()

    def compact(self, remap: np.ndarray) -> None:
        """Keep entries with ``remap[id] >= 0``, renamed to ``remap[id]``; merge into one run."""
        self.bounds = compact_runs(self.keys, self.ids, self.bounds, remap)
        while self.bounds.shape[0] > 2:
            self._merge_last_two()
        self.keys = self.keys[:, : self.size].copy()  # give the removed rows' memory back
        self.ids = self.ids[:, : self.size].copy()
        self.runs = self.runs[:0]
        self.dirs = self.dirs[:, :0].copy()
        if self.bounds.shape[0] == 2:
            self._index_last_run()

    def _reserve(self, needed: int) -> None:
        capacity = self.keys.shape[1]
        if needed <= capacity:
            return
        capacity = max(needed, capacity + capacity // 2, 1024)
        for name in ("keys", "ids"):
            old = getattr(self, name)
            new = np.empty((old.shape[0], capacity), dtype=old.dtype)
            new[:, : self.size] = old[:, : self.size]
            setattr(self, name, new)

    def _merge_tail(self) -> None:
        """Merge the last two runs while the older is less than twice the newer (O(log n) runs)."""
        b = self.bounds
        while b.shape[0] > 2 and b[-2] - b[-3] < 2 * (b[-1] - b[-2]):
            self._merge_last_two()
            b = self.bounds

    def _merge_last_two(self) -> None:
        lo, mid, hi = (int(x) for x in self.bounds[-3:])
        merge_runs(self.keys, self.ids, lo, mid, hi)
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
            dirs = np.empty((self.dirs.shape[0], max(end, self.dirs.shape[1] + self.dirs.shape[1] // 2)), np.uint32)
            dirs[:, :start] = self.dirs[:, :start]
            self.dirs = dirs

        def fill(j: int) -> None:
            fill_directory(self.keys[j, lo:hi], 64 - bits, self.dirs[j, start:end])

        run_each(fill, range(self.keys.shape[0]), parallel=hi - lo >= PARALLEL_ROWS)
        self.runs = np.vstack([runs, np.array([[lo, hi, start, 64 - bits]], dtype=np.int64)])
