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

Key -> row needs no dict while int keys arrive in ascending order (the durable index's sequence
numbers, ids counted up): the first ``base`` rows hold keys that never decrease (``values[:base]``;
a removed row between two live ones repeats the key before it), so a key's row is a binary
search, and only the rows added out of order go in the dict ``ids``. A dict of 1M ints costs
about 100 MB and a second to build; the sorted prefix costs nothing beyond ``values``, and an
index loaded from a memory-mapped snapshot (:mod:`neardup.index.snapshot`) touches none of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterable, Iterator
from numbers import Integral

import numpy as np

from .growth import copy, zeros

__all__ = ["MAX_ROWS", "REMOVED", "RowKeys"]

MAX_ROWS = 2**32 - 2
"""Rows an index holds at most, removed ones included until compaction (row ids are uint32)."""

COMPACT_MIN_DEAD = 1024
"""Removed rows are dropped once there are at least this many and more than live ones."""

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Removed:
    """Marks a row whose key was removed (``None`` is a valid user key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<removed>"

    def __reduce__(self) -> str:
        return "REMOVED"  # one marker, also after pickling (``is REMOVED`` tests)


REMOVED = _Removed()

_NO_VALUES = np.empty(0, dtype=np.int64)


class RowKeys:
    """The keys of an index's rows (see the module docs).

    Attributes:
        ids: user key -> row, for the live rows from ``base`` on, in insertion order.
        base: rows ``0 .. base - 1`` are found by binary search in ``values[:base]`` (non-decreasing;
            strictly increasing over the live rows), not in ``ids``; 0 once keys are not all ints.
        base_live: live rows below ``base``.
        n: rows, removed ones included.
        alive: bool[capacity]; ``alive[row]`` for ``row < n`` says the row is not removed.
        values: int64[capacity], row -> key while every key is an int of 64 bits (``keys`` is
            None then); empty before the first row.
        keys: the list row -> key (``REMOVED`` for removed rows) once some key is not.
    """

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = {}
        self.base = 0
        self.base_live = 0
        self.n = 0
        self.alive = np.zeros(0, dtype=np.bool_)
        self.values = _NO_VALUES
        self.keys: list[Hashable] | None = None

    def __setstate__(self, state: dict) -> None:
        self.base = self.base_live = 0  # pickles of before the sorted prefix
        self.__dict__.update(state)

    def __len__(self) -> int:
        return self.base_live + len(self.ids)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.ids or self._base_row(key) >= 0

    def __iter__(self) -> Iterator[Hashable]:
        b = self.base
        first = self.values[:b][self.alive[:b]].tolist() if b else []
        return iter(first + list(self.ids))

    @property
    def mapped(self) -> bool:
        """Whether the keys are in ``values`` (every key an int of 64 bits, at least one row)."""
        return self.values.shape[0] > 0

    def row(self, key: Hashable) -> int:
        """The row of a live key, or -1."""
        row = self.ids.get(key)
        return self._base_row(key) if row is None else row

    def check_new(self, keys: list) -> None:
        """``KeyError`` unless ``keys`` are unique and none is in the index."""
        if self.ids.keys().isdisjoint(keys) and len(set(keys)) == len(keys) and not self._any_in_base(keys):
            return
        seen: set = set()
        for k in keys:
            if k in self:
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
            alive = zeros(capacity, np.bool_)
            copy(alive[:first], self.alive[:first])
            self.alive = alive
        if values is not None and self.values.shape[0] < self.alive.shape[0]:
            grown = zeros(self.alive.shape[0], np.int64)
            copy(grown[:first], self.values[:first])
            self.values = grown
        self.alive[first:n_new] = True
        if values is not None:
            self.values[first:n_new] = values
            if self._extends_base(values):
                b = self.base
                if first > b:  # removed rows since the prefix: they repeat the key before them
                    self.values[b:first] = self.values[b - 1] if b else _INT64_MIN
                self.base = n_new
                self.base_live += len(keys)
            else:
                self.ids.update(zip(keys, range(first, n_new)))
        else:
            self.keys.extend(keys)
            self.ids.update(zip(keys, range(first, n_new)))
        self.n = n_new
        return first

    def remove(self, keys: Iterable[Hashable]) -> list[int]:
        """Mark the rows of ``keys`` removed and return them; a key not in the index, or listed
        twice, raises ``KeyError`` (nothing is removed)."""
        keys = list(keys)
        found = [self.row(k) for k in keys]
        if -1 in found:
            raise KeyError(f"key {keys[found.index(-1)]!r} is not in the index")
        if len(set(found)) != len(found):
            raise KeyError("a key is listed twice in remove()")
        for k, row in zip(keys, found):
            if row < self.base:
                self.base_live -= 1
            else:
                del self.ids[k]
            if self.keys is not None:
                self.keys[row] = REMOVED
            self.alive[row] = False
        return found

    def should_compact(self) -> bool:
        live = len(self)
        dead = self.n - live
        return dead >= COMPACT_MIN_DEAD and dead > live

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        """Drop the removed rows: the live ones become rows 0.. in the same order. Returns
        ``(keep, remap)``: bool[n], the rows kept, and int64[n], the new row of each (-1: removed)."""
        n = self.n
        keep = self.alive[:n].copy()
        remap = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        live = int(keep.sum())
        capacity = max(live + live // 2, 256)
        self.base = self.base_live = 0
        if self.keys is None:
            values = np.zeros(capacity, dtype=np.int64)
            values[:live] = self.values[:n][keep]
            self.values = values
            v = values[:live]
            if bool(np.all(v[1:] > v[:-1])):
                self.ids = {}
                self.base = self.base_live = live
            else:
                self.ids = dict(zip(v.tolist(), range(live)))
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

    def _base_row(self, key: Hashable) -> int:
        """The row of ``key`` among the first ``base`` rows when it is live there, else -1."""
        b = self.base
        if not b or not isinstance(key, Integral) or isinstance(key, bool) or not _INT64_MIN <= key <= _INT64_MAX:
            return -1
        v = self.values
        row = int(np.searchsorted(v[:b], key))
        return row if row < b and v[row] == key and self.alive[row] else -1

    def _any_in_base(self, keys: list) -> bool:
        """Whether a key of ``keys`` is live among the first ``base`` rows (vectorized)."""
        b = self.base
        if not b:
            return False
        q = None
        if set(map(type, keys)) <= {int}:  # the common case (sequence numbers): no test per key in Python
            with contextlib.suppress(OverflowError):  # an int beyond int64: the test per key below
                q = np.array(keys, dtype=np.int64)
        if q is None:
            ints = [
                k for k in keys if isinstance(k, Integral) and not isinstance(k, bool) and _INT64_MIN <= k <= _INT64_MAX
            ]
            if not ints:
                return False
            q = np.array(ints, dtype=np.int64)
        if not q.shape[0]:
            return False
        v = self.values[:b]
        rows = np.minimum(np.searchsorted(v, q), b - 1)
        return bool((v[rows] == q)[self.alive[rows]].any())

    def _extends_base(self, values: np.ndarray) -> bool:
        """Whether new int keys continue the sorted prefix: no row out of order since it, and
        ascending above its last key."""
        if self.ids:
            return False
        if values.shape[0] > 1 and not bool(np.all(values[1:] > values[:-1])):
            return False
        if self.base == 0:  # removed rows before it would repeat the smallest int64
            return self.n == 0 or int(values[0]) > _INT64_MIN
        return int(values[0]) > int(self.values[self.base - 1])

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
            if self.base:  # the sorted prefix joins the dict, ahead of the rows added after it
                ids = {self.keys[r]: r for r in np.flatnonzero(self.alive[: self.base]).tolist()}
                ids.update(self.ids)
                self.ids = ids
                self.base = self.base_live = 0
        return None
