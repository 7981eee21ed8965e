"""The batch dedup job: read -> featurize/sketch -> candidates -> verify -> cluster -> write.

The method-specific part (how documents become sketches, how candidate pairs are found and
verified) lives in one module per method (:mod:`neardup.dedup_minhash`, ...), each offering a
frozen config whose ``find`` runs its stages over a whole input and returns :class:`Found`.
What every method shares lives here: streaming the input in batches through a bounded thread
pool, choosing the kept document of each cluster, each member's similarity to it, and the result.

Stages are plain functions of arrays with no hidden global state, so another engine can map the
same functions over partitions. Texts are streamed and read again where needed (exact
verification, writing the kept records); memory grows with the sketches, not with the text.
Results do not depend on the number of workers: batches are processed independently and put back
in input order, and clusters depend only on the verified edges (see :mod:`neardup.cluster`).
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Literal, Protocol, Sequence

import numpy as np

from . import io
from .cluster import choose_kept

Reader = Callable[[], Iterable[io.DocBatch]]
"""Reads the whole input again from the start, as document batches."""


@dataclass(frozen=True)
class RunContext:
    """How a method's job runs, whatever the method."""

    workers: int = 1
    """Threads for the per-batch stages."""
    want_pairs: bool = False
    """Return every verified pair, not only the clusters."""
    on_batch: Callable[[int], None] = lambda n: None
    """Called with the number of documents of each batch sketched."""
    on_stage: Callable[[str], None] = lambda name: None
    """Called with the name of each stage as it starts."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per stage, filled in by the job."""


@dataclass(frozen=True, eq=False)
class Found:
    """What a method's job found over a whole input."""

    ids: list[str]
    lengths: np.ndarray
    """int64[n] text length in characters (for keep='longest')."""
    root: np.ndarray
    """int64[n] smallest document index of each document's cluster."""
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    """Verified pairs (index a < index b, similarity), when asked for."""
    similarity: Callable[[np.ndarray, np.ndarray], np.ndarray]
    """similarity(docs, others)[q]: the method's similarity of docs[q] to others[q]."""
    stats: dict[str, str]
    """Method-specific lines for the summary (label -> value)."""
    empty: np.ndarray
    """bool[n]: documents with no features (never near-duplicates of anything)."""


class Method(Protocol):
    """A method's config: validated settings plus the job that uses them."""

    def find(self, read: Reader, ctx: RunContext) -> Found: ...


@dataclass(frozen=True, eq=False)
class DedupResult:
    """Everything a dedup run found."""

    ids: list[str]
    root: np.ndarray
    """int64[n] smallest document index of each document's cluster."""
    kept: np.ndarray
    """int64[n] index of the kept document of each document's cluster."""
    similarity: np.ndarray
    """float64[n] similarity of each document to its kept document (1.0 for kept ones)."""
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    """Verified pairs (index a < index b, similarity), when asked for."""
    stats: dict[str, str]
    read_stats: io.ReadStats
    timings: dict[str, float]
    empty: int

    @property
    def keep_mask(self) -> np.ndarray:
        return self.kept == np.arange(len(self.kept))

    @property
    def n_documents(self) -> int:
        return len(self.ids)

    @property
    def n_removed(self) -> int:
        return int(len(self.kept) - np.count_nonzero(self.keep_mask))

    @property
    def n_clusters(self) -> int:
        """Clusters with two or more documents."""
        if not len(self.root):
            return 0
        return int(np.count_nonzero(np.bincount(self.root) >= 2))


def bounded_map(fn: Callable, items: Iterable, workers: int) -> Iterator:
    """``map(fn, items)`` on a thread pool, in order, with at most 2 * workers items in flight."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def concat(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
    """``np.concatenate`` that returns ``empty`` for no parts."""
    return np.concatenate(parts) if parts else empty


class RowBuffer:
    """Rows appended batch after batch into one array, without a final concatenation.

    The array grows by ``ndarray.resize``, which reallocates in place where it can (``mremap``
    for large arrays on Linux), and capacity that was never written costs no resident memory;
    so the peak is about the final array, not twice it.
    """

    def __init__(self, row_shape: tuple[int, ...], dtype) -> None:
        self._array = np.empty((1024,) + row_shape, dtype=dtype)
        self._n = 0

    def append(self, rows: np.ndarray) -> None:
        need = self._n + len(rows)
        if need > len(self._array):
            self._array.resize((max(need, 2 * len(self._array)),) + self._array.shape[1:], refcheck=False)
        self._array[self._n:need] = rows
        self._n = need

    def finish(self) -> np.ndarray:
        """The rows appended so far, as one array (the buffer must not be used afterwards)."""
        self._array.resize((self._n,) + self._array.shape[1:], refcheck=False)
        return self._array


def expand_prepass(groups, ids: list[str], lengths: np.ndarray, sub: Found, stats: dict[str, str]) -> Found:
    """What a method found on the representatives of exact-duplicate ``groups``
    (:class:`neardup.exact.ExactGroups`), spread back to every document.

    A document joins its representative's cluster; pairs inside a group have similarity 1.0 and
    a pair of representatives stands for every pair of their members. Groups whose
    representative has no features are dissolved: empty documents never match, not even each
    other.
    """
    every = groups.to_sketched(np.arange(len(ids)))
    pairs = groups.expand_pairs(*sub.pairs, sub_empty=sub.empty) if sub.pairs is not None else None

    def similarity(docs: np.ndarray, others: np.ndarray) -> np.ndarray:
        return sub.similarity(groups.to_sketched(docs), groups.to_sketched(others))

    return Found(ids, lengths, groups.expand_root(sub.root, sub.empty), pairs, similarity, stats, sub.empty[every])


def find_with_exact_prepass(method: Method, read: Reader, ctx: RunContext, *, nfkc: bool = True,
                            casefold: bool = True) -> Found:
    """Run ``method`` on the first document of each group of identical normalized texts only.

    Equal texts have equal features under every method, so the result equals the method's result
    on all documents (``expand_prepass``); only the repeated work is saved. The 128-bit keys
    (:func:`neardup.exact.prepass_keys`) are computed while reading; every later pass of the
    method over the input skips the same documents.
    """
    from .exact import ExactPrepass, prepass_keys

    ids: list[str] = []
    lengths: list[np.ndarray] = []
    state: dict = {}

    def first_pass() -> Iterator[io.DocBatch]:
        prepass = ExactPrepass()
        start = 0
        for batch in read():
            chosen = np.flatnonzero(prepass.admit(prepass_keys(batch.texts, nfkc=nfkc, casefold=casefold)))
            ids.extend(batch.ids)
            lengths.append(np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch.texts)))
            if len(chosen):
                yield io.DocBatch(start, [batch.ids[i] for i in chosen], [batch.texts[i] for i in chosen])
                start += len(chosen)
        state["groups"] = prepass.groups()

    def later_pass() -> Iterator[io.DocBatch]:
        sketch = state["groups"].sketch
        start = 0
        for batch in read():
            chosen = np.flatnonzero(sketch[batch.start:batch.start + len(batch.texts)])
            if len(chosen):
                yield io.DocBatch(start, [batch.ids[i] for i in chosen], [batch.texts[i] for i in chosen])
                start += len(chosen)

    sub = method.find(lambda: later_pass() if "groups" in state else first_pass(), ctx)
    groups = state["groups"]
    stats = {"exact duplicates (pre-pass)": f"{groups.n_duplicates:,}", **sub.stats}
    return expand_prepass(groups, ids, concat(lengths, np.empty(0, dtype=np.int64)), sub, stats)


def dedup(paths: Sequence[str], method: Method | None = None, *, keep: Literal["first", "longest"] = "first",
          workers: int | None = None, batch_size: int = 2048, text_field: str = "text",
          id_field: str | None = None, on_error: Literal["fail", "skip"] = "fail", html: bool = False,
          main_content: bool = False, want_pairs: bool = False,
          on_batch: Callable[[int], None] | None = None,
          on_stage: Callable[[str], None] | None = None) -> DedupResult:
    """Run the dedup job on input files and return what it found (nothing is written).

    ``method`` is a method config (default ``MinHashConfig()``); ``keep`` picks the kept document
    of each cluster (``first`` or ``longest``); ``workers`` threads (default: every core);
    ``html`` strips markup from the text field (``main_content``: keep each page's main block).

    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> docs = ["the quick brown fox jumps over the lazy dog near the river bank today"] * 2
    >>> _ = (d / "in.jsonl").write_text("".join(json.dumps({"text": t}) + "\\n" for t in docs))
    >>> dedup([str(d / "in.jsonl")]).n_removed
    1
    """
    if method is None:
        from .dedup_minhash import MinHashConfig

        method = MinHashConfig()
    if keep not in ("first", "longest"):
        raise ValueError(f"keep must be 'first' or 'longest', got {keep!r}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    read_stats = io.ReadStats()
    first_pass = [True]

    def read() -> Iterable[io.DocBatch]:
        stats = read_stats if first_pass[0] else None
        first_pass[0] = False
        return io.read_documents(paths, text_field=text_field, id_field=id_field, on_error=on_error,
                                 batch_size=batch_size, stats=stats, html=html, main_content=main_content)

    ctx = RunContext(workers=workers or os.cpu_count() or 1, want_pairs=want_pairs,
                     on_batch=on_batch or (lambda n: None), on_stage=on_stage or (lambda name: None))
    found = method.find(read, ctx)
    kept = choose_kept(found.root, keep, found.lengths)
    similarity = found.similarity(np.arange(len(kept)), kept)
    stats = dict(found.stats)
    repeated = len(found.ids) - len(set(found.ids))
    if repeated:
        stats["repeated ids"] = f"{repeated:,} (ids in --clusters/--pairs are ambiguous; see --id-field)"
    return DedupResult(found.ids, found.root, kept, similarity, found.pairs, stats, read_stats,
                       ctx.timings, int(np.count_nonzero(found.empty)))
