"""The repeats job: one pass that finds what repeats, then the records written cleaned.

:func:`find_repeats` reads the documents once (:func:`neardup.io.read_documents`) and returns a
:class:`RepeatsResult`; its :meth:`RepeatsResult.removed` gives, for one document and its text,
the character ranges that go (in order, not overlapping), which :func:`clean` cuts out. The
results do not depend on ``workers``: batches are processed on the threads and taken in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.budget import default_memory
from ..core.parallel import Threads
from ..io import ReadStats, read_documents
from .bloom import CountingBloom, false_positive_rate
from .config import RepeatsConfig
from .spans import BYTES_PER_TOKEN, ShardStore, Spans, find_spans
from .tokens import batch_tokens
from .tokens import concat as concat_tokens
from .units import UnitBatch, batch_units, repeated_units, segments
from .units import concat as concat_units


@dataclass(frozen=True)
class Removed:
    """One removed range of a document: characters ``[start, end)``, its length in the job's
    unit (tokens for spans, lines for lines and paragraphs), how many times it occurs, and the
    number of another document that holds it (the same document when none other does)."""

    start: int
    end: int
    length: int
    occurrences: int
    other: int


@dataclass
class RepeatsResult:
    """What a repeats job found; ``removed(number, text)`` is called in document order."""

    config: RepeatsConfig
    ids: list
    read_stats: ReadStats
    n_documents: int
    timings: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    spans: Spans | None = None
    units: UnitBatch | None = None
    unit_remove: np.ndarray | None = None
    unit_count: np.ndarray | None = None
    unit_head: np.ndarray | None = None
    unit_first: np.ndarray | None = None
    bloom: CountingBloom | None = None
    _span_at: np.ndarray | None = None
    _seen: dict = field(default_factory=dict)

    def removed(self, number: int, text: str) -> list[Removed]:
        """The ranges of document ``number`` (whose text is ``text``) that go."""
        if self.spans is not None:
            if self._span_at is None:
                self._span_at = np.searchsorted(self.spans.doc, np.arange(self.n_documents + 1))
            s = self.spans
            a, b = self._span_at[number], self._span_at[number + 1]
            return [
                Removed(int(s.start[i]), int(s.end[i]), int(s.length[i]), int(s.occurrences[i]), int(s.other[i]))
                for i in range(a, b)
            ]
        if self.bloom is not None:
            return self._bloom_removed(number, text)
        u0, u1 = self.unit_first[number], self.unit_first[number + 1]
        gone = np.flatnonzero(self.unit_remove[u0:u1])
        if not len(gone):
            return []
        ranges = segments(text, self.units.lines[u0:u1])
        first = self._first_of()
        return [
            Removed(*ranges[g], int(self.units.lines[u0 + g]), int(self.unit_count[u0 + g]), int(first[u0 + g]))
            for g in gone.tolist()
        ]

    def _first_of(self) -> np.ndarray:
        """The document of the first unit with each unit's content."""
        if "first" not in self._seen:
            doc_of = np.repeat(np.arange(len(self.units.per_doc)), self.units.per_doc)
            self._seen["first"] = doc_of[self.unit_head]
        return self._seen["first"]

    def removed_batch(self, start: int, texts: list[str]) -> list[list[Removed]]:
        """:meth:`removed` of documents ``start, start + 1, ...`` (called in document order)."""
        if self.bloom is None:
            return [self.removed(start + i, t) for i, t in enumerate(texts)]
        c = self.config
        u = batch_units(texts, c.mode == "paragraphs")
        counts = self.bloom.counts(u.hi, u.lo)
        repeated = ~u.blank & (counts >= c.min_count)
        seen = self.bloom.seen_many(u.hi, u.lo, repeated)
        gone = repeated & seen if c.keep_first else repeated
        out = []
        at = 0
        for t, n in zip(texts, u.per_doc.tolist()):
            hit = np.flatnonzero(gone[at : at + n])
            if len(hit):
                ranges = segments(t, u.lines[at : at + n])
                out.append([Removed(*ranges[g], int(u.lines[at + g]), int(counts[at + g]), -1) for g in hit.tolist()])
            else:
                out.append([])
            at += n
        return out

    def _bloom_removed(self, number: int, text: str) -> list[Removed]:
        return self.removed_batch(number, [text])[0]


def clean(text: str, removed: list[Removed]) -> str:
    """``text`` without the ``removed`` ranges (in order, not overlapping).

    >>> clean("abcdef", [Removed(1, 3, 2, 2, 0), Removed(4, 5, 1, 2, 0)])
    'adf'
    """
    if not removed:
        return text
    parts, at = [], 0
    for r in removed:
        parts.append(text[at : r.start])
        at = r.end
    parts.append(text[at:])
    return "".join(parts)


def find_repeats(
    inputs,
    config: RepeatsConfig,
    *,
    workers: int = 1,
    memory: int | None = None,
    tmp_dir: str | None = None,
    batch_size: int = 2048,
    text_field: str = "text",
    id_field: str | None = None,
    id_policy: str = "field",
    on_error: str = "fail",
    input_format: str | None = None,
    record_skipped: bool = False,
    read_stats: ReadStats | None = None,
    on_batch: Callable[[int], None] | None = None,
    bloom_items: int | None = None,
) -> RepeatsResult:
    """Read ``inputs`` once and find what repeats (see :class:`RepeatsConfig`)."""
    stats = read_stats if read_stats is not None else ReadStats()
    if record_skipped and stats.details is None:
        stats.details = []
    t0 = time.perf_counter()
    batches = read_documents(
        list(inputs),
        text_field=text_field,
        id_field=id_field,
        on_error=on_error,
        batch_size=batch_size,
        stats=stats,
        input_format=input_format,
        id_policy=id_policy,
    )
    ids: list = []
    result = RepeatsResult(config, ids, stats, 0)
    paragraphs = config.mode == "paragraphs"
    budget = memory if memory is not None else default_memory()
    with Threads(workers) as threads:
        if config.mode == "spans":
            shard_tokens = max(1024, budget // BYTES_PER_TOKEN)
            shards, current, held = ShardStore(tmp_dir), [], 0
            try:
                for batch, toks in threads.stream(lambda b: (b, batch_tokens(b.texts, config.unit)), batches):
                    ids += batch.ids
                    if held and held + len(toks.key) > shard_tokens:
                        full, current, held = concat_tokens(current), [], 0
                        shards.append(full, spill=True)
                        del full
                    current.append(toks)
                    held += len(toks.key)
                    if on_batch is not None:
                        on_batch(len(batch))
                if current or not len(shards):
                    last, current = concat_tokens(current), []
                    shards.append(last, spill=len(shards) > 0)  # a shard of several is read when its turn comes
                    del last
                result.timings["read and tokenize"] = time.perf_counter() - t0
                t1 = time.perf_counter()
                result.n_documents = len(ids)
                result.spans = find_spans(shards, config.min_length, config.min_count, tmp_dir)
            finally:
                shards.close()
            result.timings["suffix arrays"] = time.perf_counter() - t1
            result.counters.update(
                tokens=float(sum(shards.tokens)),
                shards=float(len(shards)),
                removed_spans=float(len(result.spans.doc)),
                removed_tokens=float(result.spans.length.sum()),
            )
            return result
        if config.bloom is not None:
            items = config.bloom_items or bloom_items or 1_000_000
            bloom = CountingBloom.sized(items, config.bloom)
            n_units = 0
            for batch, u in threads.stream(lambda b: (b, batch_units(b.texts, paragraphs)), batches):
                ids += batch.ids
                bloom.add(u.hi, u.lo, u.blank)
                n_units += int((~u.blank).sum())
                if on_batch is not None:
                    on_batch(len(batch))
            result.n_documents = len(ids)
            result.bloom = bloom
            result.timings["read and hash"] = time.perf_counter() - t0
            result.counters.update(
                units=float(n_units),
                bloom_bytes=float(bloom.nbytes),
                bloom_k=float(bloom.k),
                bloom_fpr_bound=false_positive_rate(bloom.m, bloom.k, max(n_units, 1)),
            )
            return result
        parts = []
        for batch, u in threads.stream(lambda b: (b, batch_units(b.texts, paragraphs)), batches):
            ids += batch.ids
            parts.append(u)
            if on_batch is not None:
                on_batch(len(batch))
    result.timings["read and hash"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    units = concat_units(parts)
    result.n_documents = len(ids)
    result.units = units
    result.unit_first = np.zeros(len(units.per_doc) + 1, dtype=np.int64)
    np.cumsum(units.per_doc, out=result.unit_first[1:])
    result.unit_remove, result.unit_count, result.unit_head = repeated_units(units, config.min_count, config.keep_first)
    result.timings["count"] = time.perf_counter() - t1
    result.counters.update(units=float((~units.blank).sum()), removed_units=float(result.unit_remove.sum()))
    return result
