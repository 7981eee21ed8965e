"""The user keys of an index's rows: key -> row, row -> key, which rows are live, and compaction.

Every index stores its sketches by *row*: row i is the i-th key added (removed ones included),
so ascending rows are insertion order, and the tables hold row ids (uint32). :class:`RowKeys`
maps between rows and the user's keys (any hashable, unique in the index) and marks removed
rows; ``compact`` renumbers the live rows densely, keeping their order.

While every key is a Python int of 64 bits, the keys are kept in an int64 array only
(``values``, row -> key): a query kernel can then return keys instead of rows (no Python object
read per result), and the garbage collector has no list of n keys to walk (~28 ms a full
collection at 1M keys; a dict of ints is not tracked). The first other key turns them into a
list (``keys``, row -> key or ``REMOVED``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

import numpy as np

__all__ = ["MAX_ROWS", "REMOVED", "RowKeys"]

MAX_ROWS = 2**32 - 2
"""Rows an index holds at most, removed ones included until compaction (row ids are uint32)."""

COMPACT_MIN_DEAD = 1024
"""Removed rows are dropped once there are at least this many and more than live ones."""


class _Removed:
    """Marks a row whose key was removed (``None`` is a valid user key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<removed>"


REMOVED = _Removed()

_NO_VALUES = np.empty(0, dtype=np.int64)


class RowKeys:
    """The keys of an index's rows (see the module docs).

    Attributes:
        ids: user key -> row, for the live rows, in insertion order.
        n: rows, removed ones included.
        alive: bool[capacity]; ``alive[row]`` for ``row < n`` says the row is not removed.
        values: int64[capacity], row -> key while every key is an int of 64 bits (``keys`` is
            None then); empty before the first row.
        keys: the list row -> key (``REMOVED`` for removed rows) once some key is not.
    """

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = {}
        self.n = 0
        self.alive = np.zeros(0, dtype=np.bool_)
        self.values = _NO_VALUES
        self.keys: list[Hashable] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.ids

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self.ids))

    @property
    def mapped(self) -> bool:
        """Whether the keys are in ``values`` (every key an int of 64 bits, at least one row)."""
        return self.values.shape[0] > 0

    def check_new(self, keys: list) -> None:
        """``KeyError`` unless ``keys`` are unique and none is in the index."""
        if self.ids.keys().isdisjoint(keys) and len(set(keys)) == len(keys):
            return
        seen: set = set()
        for k in keys:
            if k in self.ids:
                raise KeyError(f"key {k!r} is already in the index")
            if k in seen:
                raise KeyError(f"key {k!r} is given twice")
            seen.add(k)

    def append(self, keys: list) -> int:
        """Give ``keys`` (checked by ``check_new``) the next rows; returns the first of them."""
        first = self.n
        n_new = first + len(keys)
        if n_new > MAX_ROWS:
            raise OverflowError(f"an index holds at most {MAX_ROWS} rows")
        values = self._int_values(keys)
        if n_new > self.alive.shape[0]:
            capacity = max(n_new, self.alive.shape[0] + self.alive.shape[0] // 2, 256)
            alive = np.zeros(capacity, dtype=np.bool_)
            alive[:first] = self.alive[:first]
            self.alive = alive
        if values is not None and self.values.shape[0] < self.alive.shape[0]:
            grown = np.empty(self.alive.shape[0], dtype=np.int64)
            grown[:first] = self.values[:first]
            self.values = grown
        self.alive[first:n_new] = True
        if values is not None:
            self.values[first:n_new] = values
        else:
            self.keys.extend(keys)
        self.ids.update(zip(keys, range(first, n_new)))
        self.n = n_new
        return first

    def remove(self, keys: Iterable[Hashable]) -> list[int]:
        """Mark the rows of ``keys`` removed and return them; a key not in the index, or listed
        twice, raises ``KeyError`` (nothing is removed)."""
        keys = list(keys)
        missing = [k for k in keys if k not in self.ids]
        if missing:
            raise KeyError(f"key {missing[0]!r} is not in the index")
        if len(set(keys)) != len(keys):
            raise KeyError("a key is listed twice in remove()")
        rows = []
        for k in keys:
            row = self.ids.pop(k)
            if self.keys is not None:
                self.keys[row] = REMOVED
            self.alive[row] = False
            rows.append(row)
        return rows

    def should_compact(self) -> bool:
        dead = self.n - len(self.ids)
        return dead >= COMPACT_MIN_DEAD and dead > len(self.ids)

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        """Drop the removed rows: the live ones become rows 0.. in the same order. Returns
        ``(keep, remap)``: bool[n], the rows kept, and int64[n], the new row of each (-1: removed)."""
        n = self.n
        keep = self.alive[:n].copy()
        remap = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        live = int(keep.sum())
        capacity = max(live + live // 2, 256)
        if self.keys is None:
            values = np.empty(capacity, dtype=np.int64)
            values[:live] = self.values[:n][keep]
            self.values = values
            self.ids = dict(zip(values[:live].tolist(), range(live)))
        else:
            self.keys = [k for k in self.keys if k is not REMOVED]
            self.ids = {k: i for i, k in enumerate(self.keys)}
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.alive[:live] = True
        self.n = live
        return keep, remap

    def key(self, row: int) -> Hashable:
        return int(self.values[row]) if self.keys is None else self.keys[row]

    def lookup(self, rows: np.ndarray) -> list[Hashable]:
        """The keys of ``rows`` (an int array)."""
        if self.keys is None:
            return self.values[rows].tolist()
        keys = self.keys
        return [keys[r] for r in rows.tolist()]

    def _int_values(self, keys: list) -> np.ndarray | None:
        """``keys`` as int64 while every key added so far is a Python int that fits, else None
        (and from then on the keys live in the list ``keys``)."""
        if self.keys is None and set(map(type, keys)) <= {int}:
            try:
                return np.array(keys, dtype=np.int64)
            except OverflowError:
                pass
        if self.keys is None:
            n = self.n
            self.keys = self.values[:n].tolist()
            for row in np.flatnonzero(~self.alive[:n]).tolist():
                self.keys[row] = REMOVED
            self.values = _NO_VALUES
        return None
