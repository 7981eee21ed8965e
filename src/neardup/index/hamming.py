"""TODO: docstring."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .._kernels.hamming import index_keys, query_kernel, sort_run
from .._kernels.sorting import merge_runs
from ..core.errors import IncompatibleSketchError
from ..methods.simhash.search import (
    BlockPlan,
    all_pairs,
    as_words,
    block_plan,
    check_distance,
    choose_blocks,
)

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
        check_distance(bits, max_distance)
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
        return (
            f"HammingIndex(bits={self._bits}, max_distance={self._k}, blocks={self._plan.blocks}, "
            f"tables={len(self._plan.tables)}, size={len(self)})"
        )

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
        offsets, rows, dist = query_kernel(
            words,
            int(k),
            self._tkeys,
            self._trows,
            self._bounds,
            kstart,
            ksize,
            nkept,
            keybits,
            kmask,
            bstart,
            bsize,
            self._fps[:n],
            self._alive[:n],
        )
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
        rows = np.flatnonzero(self._alive[: len(self._keys)])
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
                    f"fingerprints of different schemes cannot be compared: {self._scheme} vs {fps.scheme}"
                )
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
        index_keys(self._fps[lo:hi], kstart, ksize, nkept, keybits, self._tkeys[:, size : size + n])
        self._trows[:, size : size + n] = np.arange(lo, hi)
        sort_run(self._tkeys, self._trows, size, size + n)
        self._bounds = np.append(self._bounds, size + n)
        b = self._bounds
        while b.shape[0] > 2 and b[-2] - b[-3] < 2 * (b[-1] - b[-2]):
            merge_runs(self._tkeys, self._trows, int(b[-3]), int(b[-2]), int(b[-1]))
            self._bounds = b = np.delete(b, -2)

    def _rebuild(self) -> None:
        """Rebuild every table from the live rows, as one run."""
        self._reset_tables()
        rows = np.flatnonzero(self._alive[: len(self._keys)])
        if not len(rows):
            return
        t = len(self._plan.tables)
        n = len(rows)
        kstart, ksize, nkept, keybits = self._arrays[:4]
        self._tkeys = np.empty((t, n), dtype=np.uint64)
        index_keys(np.ascontiguousarray(self._fps[rows]), kstart, ksize, nkept, keybits, self._tkeys)
        self._trows = np.repeat(rows[None, :], t, axis=0)
        sort_run(self._tkeys, self._trows, 0, n)
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
