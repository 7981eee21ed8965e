"""Document ids as a job holds them: a list of strings while they are few, packed bytes past the
memory budget.

A Python string costs about 50 bytes besides its characters, and a list 8 more; at ten million
documents that is most of a gigabyte. :class:`IdBuffer` keeps the ids of a job as a list while
the budget (:mod:`neardup.core.budget`) allows it and, from the batch that would take it past,
as an :class:`IdColumn`: their UTF-8 bytes one after the other and int64 offsets, in two row
buffers of the budget (so they go to a spill file in turn), read as an Arrow ``large_string``
array without a copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._kernels.charclass import CHAR_CLASS
from .._kernels.exact import keys_kernel
from .budget import current_spill, spill_rows

__all__ = ["IdBuffer", "IdColumn", "id_array", "repeated_ids"]

_LIST_BYTES = 64  # about what a list entry and its str object cost besides the characters


class IdColumn(Sequence):
    """Ids packed as UTF-8 bytes and offsets: id ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    >>> col = IdColumn.of(["a", "bé", ""])
    >>> len(col), col[1], list(col), col == ["a", "bé", ""]
    (3, 'bé', ['a', 'bé', ''], True)
    """

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets

    @classmethod
    def of(cls, ids: Sequence[str]) -> IdColumn:
        data, lengths = _encode(ids)
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(data, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < -n or i >= n:
            raise IndexError(f"id {i} out of range for {n} ids")
        i %= n
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, len(self), 65536):
            yield from self.to_arrow()[lo : lo + 65536].to_pylist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdColumn | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IdColumn({len(self):,} ids, {self.data.nbytes:,} bytes)"

    def to_arrow(self) -> Any:
        """The ids as a pyarrow ``large_string`` array over the same bytes (no copy)."""
        import pyarrow as pa

        return pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(self.offsets), pa.py_buffer(self.data))


def _encode(ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8", "surrogatepass") for s in ids]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths


class IdBuffer:
    """The ids of a job's documents as they are read (see the module docs)."""

    def __init__(self) -> None:
        self._list: list[str] | None = []
        self._chars = 0
        self._data = None
        self._offsets = None
        self._end = 0

    def __len__(self) -> int:
        return len(self._list) if self._list is not None else len(self._offsets) - 1

    def extend(self, ids: Sequence[str]) -> None:
        if self._list is not None:
            spill = current_spill()
            chars = sum(map(len, ids))
            need = (len(self._list) + len(ids)) * _LIST_BYTES + self._chars + chars
            if spill is None or spill.fits(need):
                self._list.extend(ids)
                self._chars += chars
                return
            self._pack()
        data, lengths = _encode(ids)
        self._data.append(data)
        ends = np.cumsum(lengths)
        ends += self._end
        self._offsets.append(ends)
        self._end = int(ends[-1]) if len(ends) else self._end

    def _pack(self) -> None:
        self._data, self._offsets = spill_rows((), np.uint8), spill_rows((), np.int64)
        self._offsets.append(np.zeros(1, dtype=np.int64))
        done, self._list = self._list, None
        for lo in range(0, len(done), 65536):
            self.extend(done[lo : lo + 65536])

    def finish(self) -> list[str] | IdColumn:
        """The ids: a list, or an :class:`IdColumn` once they outgrew the budget."""
        if self._list is not None:
            return self._list
        return IdColumn(self._data.finish(), self._offsets.finish())


def id_array(ids: Sequence[str]) -> Any:
    """The ids as a pyarrow ``string`` array (``large_string`` for an :class:`IdColumn` of 2 GB
    or more of ids, which 32-bit offsets cannot address), so that outputs written from either
    form are the same bytes."""
    import pyarrow as pa

    if not isinstance(ids, IdColumn):
        return pa.array(ids, pa.string())
    column = ids.to_arrow()
    return column.cast(pa.string()) if len(ids.data) < 2**31 - 1 else column


def repeated_ids(ids: Sequence[str]) -> int:
    """How many ids repeat an earlier one.

    Packed ids are counted by sorting a 64-bit hash of each one's bytes and comparing the bytes
    of the ids in every run of equal hashes (exact whatever the hashes collide): 16 bytes an id
    at once, where Arrow's ``count_distinct`` took 140 (1.4 GB for 10M ids)."""
    if not isinstance(ids, IdColumn):
        return len(ids) - len(set(ids))
    n = len(ids)
    if n < 2:
        return 0
    keys = np.empty((n, 2), dtype=np.uint64)
    keys_kernel(ids.data, ids.offsets, CHAR_CLASS, True, keys)
    h = keys[:, 0].copy()
    del keys
    order = np.argsort(h, kind="stable")
    h = h[order]
    same = np.flatnonzero(h[1:] == h[:-1])
    if not len(same):
        return 0
    starts = same[np.r_[True, np.diff(same) > 1]]  # first of every run of equal hashes
    repeated = 0
    for start in starts.tolist():
        end = start + 1
        while end < n and h[end] == h[start]:
            end += 1
        run = [ids[int(j)] for j in order[start:end]]
        repeated += len(run) - len(set(run))
    return repeated
