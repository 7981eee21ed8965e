"""Sequence number -> document id for the durable index, in arrays rather than a dict of strings.

The durable index keys its in-memory lookup by each row's SQLite sequence number and turns the
sequence numbers a query finds into ids here. A dict of a million ids costs over 100 MB and a
second to build; :class:`IdTable` keeps them as one UTF-8 byte array with offsets, in ascending
sequence order (binary search), and only the most recent rows in a small dict that is folded
into the arrays when it reaches ``_FOLD_MIN`` rows. The arrays are views of larger ones that
grow by half (:func:`neardup.index.growth.zeros`: spill files past a memory budget), so a fold
copies only the rows it adds. The arrays pickle as arrays, so a lookup snapshot
(:mod:`neardup.index.snapshot`) maps them from disk untouched.

Ids of removed rows may stay (they are never asked for: the lookup returns live rows only) and
are dropped by :meth:`IdTable.live`, which the snapshot writer calls.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .growth import copy, zeros

__all__ = ["IdTable"]

_FOLD_MIN = 65536


class IdTable:
    """seq -> id (see the module docs). ``seqs`` (int64, ascending), ``offsets`` (int64,
    len(seqs) + 1) and ``data`` (uint8) hold the folded rows; ``recent`` the others."""

    def __init__(self, seqs: np.ndarray | None = None, offsets: np.ndarray | None = None, data=None) -> None:
        self.seqs = np.zeros(0, dtype=np.int64) if seqs is None else seqs
        self.offsets = np.zeros(1, dtype=np.int64) if offsets is None else offsets
        self.data = np.zeros(0, dtype=np.uint8) if data is None else data
        self.recent: dict[int, str] = {}
        self._backing: dict[str, np.ndarray] = {}  # name -> the array that ``name`` is the start of

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_backing", None)  # (the arrays' spare room is not saved)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._backing = {}

    def __getitem__(self, seq: int) -> str:
        doc_id = self.recent.get(seq)
        if doc_id is not None:
            return doc_id
        seqs = self.seqs
        pos = int(seqs.searchsorted(seq))  # the method: np.searchsorted's dispatch costs a microsecond
        if pos == seqs.shape[0] or seqs[pos] != seq:
            raise KeyError(seq)
        a, b = self.offsets[pos : pos + 2].tolist()
        return str(memoryview(self.data)[a:b], "utf-8", "surrogatepass")

    def many(self, seqs: Iterable[int]) -> list[str]:
        """``[self[s] for s in seqs]``, with one binary search for all of them (a query's matches:
        about 0.4 us an id against 2 us for ``self[s]``). Each id is decoded from a slice of a
        memoryview of the bytes (no copy of the array)."""
        seqs = list(seqs)
        recent = self.recent
        n = self.seqs.shape[0]
        if not n or len(seqs) < 16:  # (a search per id costs less than making the arrays)
            return [self[s] for s in seqs]
        q = np.array(seqs, dtype=np.int64)
        pos = self.seqs.searchsorted(q)
        np.minimum(pos, n - 1, out=pos)
        found = (self.seqs[pos] == q).tolist()
        starts, ends = self.offsets[pos].tolist(), self.offsets[pos + 1].tolist()
        data = memoryview(self.data)
        return [
            str(data[a:b], "utf-8", "surrogatepass") if f else recent[s]
            for s, f, a, b in zip(seqs, found, starts, ends)
        ]

    def add(self, seqs: list[int], ids: list[str]) -> None:
        """Rows with sequence numbers above every one held."""
        self.recent.update(zip(seqs, ids))
        if len(self.recent) >= _FOLD_MIN:
            self._fold()

    def extend(self, seqs: list[int], encoded: list[bytes]) -> None:
        """:meth:`add` of ids already UTF-8 encoded, straight into the arrays (a full load)."""
        self._fold()
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        offsets = np.empty(lengths.shape[0], dtype=np.int64)
        np.cumsum(lengths, out=offsets)
        offsets += self.offsets[-1]
        self._append(np.array(seqs, dtype=np.int64), offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def discard(self, seqs: Iterable[int]) -> None:
        """Rows removed (their ids may stay in the arrays until :meth:`live`)."""
        for s in seqs:
            self.recent.pop(s, None)

    def live(self, seqs: np.ndarray) -> IdTable:
        """A table of the rows ``seqs`` (ascending int64) only, all in arrays."""
        self._fold()
        if np.array_equal(self.seqs, seqs):
            return self  # every row held is live (nothing was removed): the arrays as they are
        pos = np.searchsorted(self.seqs, seqs)
        if seqs.shape[0] and (pos.max() >= self.seqs.shape[0] or not np.array_equal(self.seqs[pos], seqs)):
            raise KeyError("a live row has no id")
        starts, ends = self.offsets[pos], self.offsets[pos + 1]
        lengths = ends - starts
        offsets = np.zeros(seqs.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # the bytes of each kept id, gathered in one indexing: start of its id + position within it
        within = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        data = self.data[np.repeat(starts, lengths) + within]
        return IdTable(np.array(seqs, dtype=np.int64), offsets, data)

    def _fold(self) -> None:
        if not self.recent:
            return
        seqs = np.fromiter(self.recent.keys(), dtype=np.int64, count=len(self.recent))
        encoded = [s.encode("utf-8", "surrogatepass") for s in self.recent.values()]
        order = np.argsort(seqs, kind="stable")
        if not np.all(order[1:] > order[:-1]):
            seqs = seqs[order]
            encoded = [encoded[i] for i in order.tolist()]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        offsets = np.empty(lengths.shape[0], dtype=np.int64)
        np.cumsum(lengths, out=offsets)
        offsets += self.offsets[-1]
        self._append(seqs, offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))
        self.recent = {}

    def _append(self, seqs: np.ndarray, offsets: np.ndarray, data: np.ndarray) -> None:
        """Rows after every one in the arrays: their seqs, the offsets of their ends, their bytes."""
        for name, more in (("seqs", seqs), ("offsets", offsets), ("data", data)):
            now = getattr(self, name)
            n, m = now.shape[0], more.shape[0]
            back = self._backing.get(name)
            if back is None or back.shape[0] < n + m:
                back = zeros(max(n + m, n + n // 2, 1024), now.dtype)
                copy(back[:n], now)
                self._backing[name] = back
            back[n : n + m] = more
            setattr(self, name, back[: n + m])
