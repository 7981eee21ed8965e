"""Array helpers written once: growing row buffers, concatenation, CSR rows, text lengths."""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CsrParts",
    "CsrRows",
    "RowBuffer",
    "check_offsets",
    "concat",
    "concat_consuming",
    "csr_take",
    "sorted_unique",
    "text_lengths",
]


def check_offsets(offsets: np.ndarray, n: int) -> None:
    """Raise ``ValueError`` unless ``offsets`` are CSR offsets over ``n`` values: one dimension,
    at least one entry, starting at 0, never decreasing, ending at ``n`` (the kernels that take
    them read ``values[offsets[i]:offsets[i + 1]]`` unchecked)."""
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != n or (np.diff(offsets) < 0).any():
        end = offsets[-1] if offsets.ndim == 1 and len(offsets) else None
        raise ValueError(
            f"offsets must start at 0, not decrease, and end at len(hashes) = {n} (got {len(offsets)} offsets "
            f"ending at {end})"
        )


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D integer array, sorted: ``np.unique(values)`` by one sort and a
    comparison of neighbours. NumPy 2.3 and later answer a plain ``np.unique`` from a hash table
    first, which for many distinct integers costs far more than sorting (1M distinct int64 on
    NumPy 2.4: 0.99 s against 0.014 s here); the Dask engine's candidate stage calls it on
    millions of document numbers.

    >>> sorted_unique(np.array([5, 1, 5, 3, 1])).tolist()
    [1, 3, 5]
    """
    out = np.sort(np.asarray(values).reshape(-1))
    if len(out) < 2:
        return out
    keep = np.empty(len(out), dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def concat(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
    """``np.concatenate`` that returns ``empty`` for no parts."""
    return np.concatenate(parts) if parts else empty


def concat_consuming(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
    """:func:`concat` that empties ``parts`` as it copies them, so that the peak is the result
    and one part, not twice the result (a single part is returned as it is)."""
    if len(parts) <= 1:
        return parts.pop() if parts else empty
    out = np.empty(sum(len(p) for p in parts), dtype=parts[0].dtype)  # pages resident as written
    at = 0
    parts.reverse()
    while parts:
        p = parts.pop()
        out[at : at + len(p)] = p
        at += len(p)
        del p
    return out


def text_lengths(texts: Sequence[str]) -> np.ndarray:
    """int64[n]: the length in characters of every text.

    >>> text_lengths(["ab", "", "xyz"]).tolist()
    [2, 0, 3]
    """
    lengths = getattr(texts, "char_lengths", None)  # packed texts (neardup.text.utf8): not decoded
    if lengths is not None:
        return lengths()
    return np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


class RowBuffer:
    """Rows appended batch after batch into one array, without a final concatenation.

    The rows live in an anonymous memory map that grows by ``mremap`` (``mmap.resize``): the
    pages written move to the larger mapping without a copy, and capacity never written costs
    no resident memory, so the peak is the final array, not twice it. (``ndarray.resize``,
    used before, fills the new capacity with zeros: every doubling made all of it resident.)

    >>> buf = RowBuffer((2,), np.int64)
    >>> buf.append(np.ones((3, 2), dtype=np.int64)); buf.finish().shape
    (3, 2)
    """

    def __init__(self, row_shape: tuple[int, ...], dtype) -> None:
        self._row_shape = tuple(row_shape)
        self._dtype = np.dtype(dtype)
        self._row_bytes = int(np.prod(self._row_shape, dtype=np.int64)) * self._dtype.itemsize
        self._map: mmap.mmap | None = None
        self._array = self._grow(1024)
        self._n = 0

    def _grow(self, rows: int) -> np.ndarray:
        """A view of ``rows`` rows of the mapping, grown (or made) to hold them."""
        size = max(rows * self._row_bytes, 1)
        self._array = None  # no view of the mapping may exist while it is resized
        if self._map is None:
            self._map = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        else:
            self._map.resize(size)
        flat = np.frombuffer(self._map, dtype=self._dtype, count=rows * self._row_bytes // self._dtype.itemsize)
        return flat.reshape((rows,) + self._row_shape)

    def __len__(self) -> int:
        return self._n

    def append(self, rows: np.ndarray) -> None:
        need = self._n + len(rows)
        if need > len(self._array):
            self._array = self._grow(max(need, 2 * len(self._array)))
        self._array[self._n : need] = rows
        self._n = need

    def finish(self) -> np.ndarray:
        """The rows appended so far, as one array (the buffer must not be used afterwards)."""
        if self._n == 0 or self._row_bytes == 0:
            out = np.empty((self._n,) + self._row_shape, dtype=self._dtype)
        else:
            out = self._grow(self._n)
        self._array = self._map = None
        return out

    def __getstate__(self) -> dict[str, np.ndarray]:
        """Pickled: the rows appended, not the capacity behind them."""
        return {"rows": self._array[: self._n]}

    def __setstate__(self, state: dict[str, np.ndarray]) -> None:
        rows = state["rows"]
        self.__init__(rows.shape[1:], rows.dtype)
        self.append(rows)


class CsrParts:
    """Reduce: per-batch parts ``(docs, values, sizes)`` of variable-length rows (the rows of
    documents ``docs``, ``sizes[i]`` values each, one after the other), joined in input order as
    CSR: ``(docs, values, offsets)`` with the values of ``docs[i]`` at ``offsets[i]:offsets[i + 1]``.
    :meth:`joined` hands the parts' values over (once: the peak is then the joined values and one
    part, not both copies of every value).

    >>> parts = CsrParts(np.uint64)
    >>> parts.add((np.array([0]), np.array([7, 8], np.uint64), np.array([2])))
    >>> parts.add((np.array([3]), np.array([9], np.uint64), np.array([1])))
    >>> [a.tolist() for a in parts.joined()]
    [[0, 3], [7, 8, 9], [0, 2, 3]]
    """

    def __init__(self, dtype) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dtype = dtype

    def add(self, part) -> None:
        self._parts.append(part)

    def merge(self, other: CsrParts) -> None:
        self._parts.extend(other._parts)

    def joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._parts and self._parts[0][1] is None:
            raise RuntimeError("CsrParts.joined() hands the values over once")
        sizes = [p[2] for p in self._parts]
        offsets = np.zeros(sum(len(s) for s in sizes) + 1, dtype=np.int64)
        if sizes:
            np.cumsum(np.concatenate(sizes), out=offsets[1:])
        docs = concat([p[0] for p in self._parts], np.empty(0, np.int64))
        values = [p[1] for p in self._parts]
        self._parts = [(p[0], None, p[2]) for p in self._parts]  # the values are only in the list now
        return docs, concat_consuming(values, np.empty(0, self._dtype)), offsets


def csr_take(offsets: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value indices of CSR rows ``positions`` (in that order) and their new offsets.

    >>> [a.tolist() for a in csr_take(np.array([0, 2, 3, 6]), np.array([2, 0]))]
    [[3, 4, 5, 0, 1], [0, 3, 5]]
    """
    positions = np.asarray(positions, dtype=np.int64)
    starts, sizes = offsets[positions], np.diff(offsets)[positions]
    out = np.zeros(len(positions) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return np.repeat(starts - out[:-1], sizes) + np.arange(out[-1], dtype=np.int64), out


@dataclass(frozen=True, eq=False)
class CsrRows:
    """Rows of variable length, one per document: row ``i`` is ``values[offsets[i]:offsets[i + 1]]``.

    What the engines move between processes as one column of per-document rows
    (:class:`~neardup.core.plan.Sharded`): ``len``, :meth:`take`, :meth:`concat` and ``nbytes``.

    >>> rows = CsrRows.of(np.array([1, 3]), np.array([7, 8, 9], np.uint64), np.array([0, 2, 3]), 4)
    >>> [rows.row(i).tolist() for i in range(4)]
    [[], [7, 8], [], [9]]
    >>> [r.tolist() for r in CsrRows.concat([rows.take(np.array([3, 1])), rows.take(np.array([0]))]).split()]
    [[9], [7, 8], []]
    """

    values: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, docs: np.ndarray, values: np.ndarray, offsets: np.ndarray, n: int) -> CsrRows:
        """``n`` rows from the CSR rows of some of them (``docs``, increasing; ``offsets`` over
        ``values``, as :meth:`CsrParts.joined` gives them); the others are empty."""
        sizes = np.zeros(n, dtype=np.int64)
        sizes[np.asarray(docs, dtype=np.int64)] = np.diff(offsets)
        full = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=full[1:])
        return cls(values, full)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.offsets.nbytes)

    def row(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def split(self) -> list[np.ndarray]:
        """Every row, as views."""
        return [self.row(i) for i in range(len(self))]

    def take(self, positions: np.ndarray) -> CsrRows:
        """The rows at ``positions``, in that order."""
        entries, offsets = csr_take(self.offsets, positions)
        return CsrRows(self.values[entries], offsets)

    @classmethod
    def concat(cls, pieces: Sequence[CsrRows]) -> CsrRows:
        """The rows of ``pieces``, one after the other."""
        sizes = np.concatenate([np.diff(p.offsets) for p in pieces])
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(np.concatenate([p.values for p in pieces]), offsets)
