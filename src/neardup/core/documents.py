"""Documents as every stage sees them: numbered batches of ids and texts, re-readable sources.

Readers (:mod:`neardup.io`) turn files into batches; methods and engines consume batches and
never open a file, so a job runs the same on documents read from disk, held in memory, or
handed over by another system.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["DocBatch", "DocumentPart", "DocumentSource", "InMemorySource", "PartitionedSource"]


@dataclass(frozen=True)
class DocBatch:
    """Consecutive documents: ``ids[i]`` and ``texts[i]`` are document number ``start + i``.

    >>> b = DocBatch(start=4, ids=["a", "b"], texts=["x", "y"])
    >>> len(b), b.start + 1
    (2, 5)
    """

    start: int
    ids: list[str]
    texts: list[str]

    def __len__(self) -> int:
        return len(self.ids)


class DocumentSource(Protocol):
    """The input of a batch job: calling it reads the documents again from the start, as batches
    numbered 0, 1, 2, ... in the same order every time (a job may read its input several
    times: once per scan of its plan)."""

    def __call__(self) -> Iterable[DocBatch]: ...


class DocumentPart(Protocol):
    """One piece of a :class:`PartitionedSource`'s input, small and picklable: another process
    reads it with ``load()``."""

    def load(self) -> tuple[list[DocBatch], Any]:
        """The piece's documents as batches numbered from 0, and its read counters."""
        ...

    def describe(self) -> str:
        """Where the piece is, for messages."""
        ...


@runtime_checkable
class PartitionedSource(Protocol):
    """A :class:`DocumentSource` that can also describe its input as :class:`DocumentPart` s,
    read by other processes (the Dask engine's workers) instead of this one."""

    def __call__(self) -> Iterable[DocBatch]: ...

    def partitions(self, count: int | None, minimum: int, run: Callable[[Callable, list], list]) -> list[Any]:
        """About ``count`` parts (None: the source's choice, at least ``minimum``), in reading
        order; ``run(fn, items)`` maps a picklable ``fn`` over ``items`` where the parts will be
        read (for what must be looked at in the data itself)."""
        ...

    def claim_stats(self) -> Any:
        """The read counters a first read elsewhere should fill (None after the first read)."""
        ...

    def add_read_stats(self, stats: Any, parts: list[Any], found: list[Any]) -> None:
        """Add the counters ``found`` by loading ``parts`` (in order) to ``stats``."""
        ...


class InMemorySource:
    """A :class:`DocumentSource` over texts held in memory (ids default to their positions).

    >>> [len(b) for b in InMemorySource(["a", "b", "c"], batch_size=2)()]
    [2, 1]
    """

    def __init__(self, texts: list[str], ids: list[str] | None = None, *, batch_size: int = 2048) -> None:
        self.texts = list(texts)
        self.ids = [str(i) for i in range(len(self.texts))] if ids is None else list(ids)
        if len(self.ids) != len(self.texts):
            raise ValueError(f"got {len(self.ids)} ids for {len(self.texts)} texts")
        self.batch_size = batch_size

    def __call__(self) -> Iterable[DocBatch]:
        for start in range(0, len(self.texts), self.batch_size):
            end = start + self.batch_size
            yield DocBatch(start, self.ids[start:end], self.texts[start:end])
