"""Documents as every stage sees them: numbered batches of ids and texts, re-readable sources.

Readers (:mod:`neardup.io`) turn files into batches; methods and engines consume batches and
never open a file, so a job runs the same on documents read from disk, held in memory, or
handed over by another system.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["DocBatch", "DocumentSource", "InMemorySource"]


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
