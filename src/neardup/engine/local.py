"""The local engine: a plan's stages on one pool of worker threads on this machine.

Scans stream the input in batches through the pool (at most ``2 * workers`` batches in flight,
so memory holds a few batches of text, never the input; a file source also scans its JSON Lines
blocks on the pool, so the calling thread only reads them), and their parts are combined in input
order on the calling thread; steps and the candidate stage get the same pool. With one worker
nothing runs on another thread. Results never depend on the number of workers: batches are
processed independently and combined in input order, and clusters depend only on the verified
pairs (:mod:`neardup.core.components`).

The first scan of a plan does the exact pre-pass when the plan asks for it, in the same pass:
each batch's exact keys are computed on the workers (from the method's own encoding when its
scan has a ``prepare`` phase), the keys are admitted in input order on the calling thread, and
only the first document of each group of identical texts goes on to the method. Later scans
see only those representatives, numbered 0, 1, 2, ...
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from ..core.arrays import text_lengths
from ..core.budget import (
    Spill,
    available_memory,
    current_spill,
    default_memory,
    parse_size,
    resident_bytes,
    spill_rows,
    trim,
    using,
)
from ..core.documents import DocBatch, DocumentSource
from ..core.errors import InputChangedError
from ..core.ids import IdBuffer
from ..core.parallel import MAX_WORKERS, Threads
from ..core.plan import GroupBy, Plan, Prepass, Scan, StageContext, Step
from ..core.validation import check_int
from ..methods.exact.groups import ExactPrepass
from ..methods.exact.keys import prepass_keys
from .base import JobResult, Keep, NoProgress, Progress, finish_job

__all__ = ["LocalEngine"]


def _add_counters(total: dict[str, float], more: dict[str, float] | None) -> None:
    for name, value in (more or {}).items():
        total[name] = total.get(name, 0) + value


def _inputs(state: dict[str, Any], stage: Scan | Step | GroupBy) -> list[Any]:
    missing = [name for name in stage.inputs if name not in state]
    if missing:
        raise RuntimeError(f"stage {stage.name!r} needs {', '.join(missing)}, which no earlier stage made")
    return [state[name] for name in stage.inputs]


def _subset(batch: DocBatch, chosen: np.ndarray, start: int) -> DocBatch:
    idx = np.flatnonzero(chosen).tolist()
    return DocBatch(start, [batch.ids[i] for i in idx], [batch.texts[i] for i in idx])


def representatives(batches: Iterable[DocBatch], sketch: np.ndarray) -> Iterator[DocBatch]:
    """The documents of ``batches`` that ``sketch`` (bool over all documents) marks, as batches
    renumbered 0, 1, 2, ... among themselves (batches left empty are skipped)."""
    start = 0
    for batch in batches:
        chosen = sketch[batch.start : batch.start + len(batch)]
        if chosen.all() and batch.start == start:
            yield batch
            start += len(batch)
        elif chosen.any():
            sub = _subset(batch, chosen, start)
            start += len(sub)
            yield sub


# --------------------------------------------------------------------------------------------
# the phases of a scan, as functions of one batch (run on the workers)


def _whole(stage: Scan, config: Any, inputs: list[Any], batch: DocBatch):
    """A scan of one batch without the pre-pass: (batch, lengths, part)."""
    if stage.prepare is not None:
        prepared, _ = stage.prepare(config, batch, False)
        part = stage.map(config, prepared, None, *inputs)
    else:
        part = stage.map(config, batch, *inputs)
    return batch, text_lengths(batch.texts), part


def _prepared(stage: Scan, config: Any, prepass: Prepass, batch: DocBatch):
    """First phase with the pre-pass: (batch, lengths, prepared, exact keys)."""
    if stage.prepare is not None:
        prepared, keys = stage.prepare(config, batch, True)
    else:
        prepared, keys = batch, prepass_keys(batch.texts, nfkc=prepass.nfkc, casefold=prepass.casefold)
    return batch, text_lengths(batch.texts), prepared, keys


def _finished(stage: Scan, config: Any, inputs: list[Any], item):
    """Second phase with the pre-pass: (batch, lengths, part or None)."""
    batch, lengths, prepared, chosen, sub = item
    if stage.prepare is not None:
        return batch, lengths, stage.map(config, prepared, chosen, *inputs)
    return batch, lengths, (stage.map(config, sub, *inputs) if len(sub) else None)


def _map(stage: Scan, config: Any, inputs: list[Any], batch: DocBatch):
    return batch, stage.map(config, batch, *inputs)


def _read(source: DocumentSource, threads: Threads) -> Iterable[DocBatch]:
    """The batches of ``source``, read on the job's threads when it can (a file source scans
    JSON Lines blocks on the workers: :mod:`neardup.io.jsonl_threads`), else on this thread."""
    read_with = getattr(source, "read_with", None)
    return source() if read_with is None else read_with(threads)


class _Counted:
    """The batches of a source, counting their documents as they pass."""

    def __init__(self, batches: Iterable[DocBatch]) -> None:
        self._batches = batches
        self.documents = 0

    def __iter__(self) -> Iterator[DocBatch]:
        for batch in self._batches:
            self.documents += len(batch)
            yield batch


class LocalEngine:
    """Runs plans on this machine with ``workers`` threads (see the module docs).

    ``memory``: the job's memory budget in bytes or as a size (``"2GB"``; default: half the
    memory available when the job starts); what grows with the collection past it goes to
    spill files under ``tmp_dir`` (default: the system's temporary folder), with the same
    result (:mod:`neardup.core.budget`).

    >>> from neardup.core.documents import InMemorySource
    >>> from neardup.methods.exact.config import ExactConfig
    >>> texts = ["the same text", "The  same text", "another one"]
    >>> LocalEngine(workers=2).run(ExactConfig().plan(), InMemorySource(texts)).root.tolist()
    [0, 0, 2]
    """

    def __init__(self, workers: int = 1, *, memory: int | str | None = None, tmp_dir: str | None = None) -> None:
        self.workers = check_int("workers", workers, 1, MAX_WORKERS)
        try:
            self.memory = None if memory is None else parse_size(memory)
        except ValueError as exc:
            raise ValueError(f"memory: {exc}") from None
        self.tmp_dir = tmp_dir
        self.last_spill: Spill | None = None
        """The budget of the last job run (how much it spilled: ``disk_bytes``)."""

    def __repr__(self) -> str:
        return f"LocalEngine(workers={self.workers})"

    def budget(self) -> Spill:
        """A new job's budget: of ``memory``, an eighth is the working area of a stage (the
        candidate stage's sorts, the pages of spill files it reads between releases), and the
        job's arrays may hold what is left after two more eighths (the batches in flight, a
        hash table growing) and what this process holds already; the spill files' pages are released whenever
        the process's resident memory passes ``memory`` less half the working area. A stage
        that cannot spill (SpotSigs' search) is refused past ``memory`` when it was given, past
        the memory available when none was."""
        memory = self.memory if self.memory is not None else default_memory()
        work = max(memory // 8, 4096)
        limit = max(memory - resident_bytes() - 3 * work, 0)
        ceiling = self.memory if self.memory is not None else available_memory()
        return Spill(limit, self.tmp_dir, work=work, cap=memory - work // 2, ceiling=ceiling)

    def run(
        self,
        plan: Plan,
        source: DocumentSource,
        *,
        keep: Keep = "first",
        want_pairs: bool = False,
        progress: Progress | None = None,
    ) -> JobResult:
        """Run ``plan`` over ``source``; see :class:`~neardup.engine.base.Engine`."""
        spill = self.last_spill = self.budget()
        with using(spill):
            result = self._run(plan, source, keep, want_pairs, progress)
        return replace(result, spilled_bytes=spill.disk_peak) if spill.spilled else result

    def _run(self, plan: Plan, source: DocumentSource, keep: Keep, want_pairs: bool, progress) -> JobResult:
        progress = progress or NoProgress()
        spill = current_spill()
        config = plan.config
        if plan.utf8_texts and hasattr(source, "with_utf8_texts"):
            source = source.with_utf8_texts()  # a huge text is read as its UTF-8 bytes, no str
        state: dict[str, Any] = {}
        counters: dict[str, float] = {}
        timings: dict[str, float] = {}
        ids = IdBuffer()
        lengths = spill_rows((), np.int64)
        groups = None
        first = True
        with Threads(self.workers) as threads:
            ctx = StageContext(threads, want_pairs, counters)
            for stage in plan.stages:
                progress.stage(stage.name)
                t0 = time.perf_counter()
                inputs = _inputs(state, stage)
                if isinstance(stage, Scan):
                    reducer = stage.reduce(config)
                    if first:
                        admission = ExactPrepass() if plan.prepass is not None else None
                        for batch, lens, part in self._first_scan(
                            stage, config, inputs, source, plan.prepass, admission, threads
                        ):
                            ids.extend(batch.ids)
                            lengths.append(lens)
                            if part is not None:
                                reducer.add(part)
                            progress.advance(len(batch))
                            if spill.spilled:  # the pages of the pre-pass table and what was written
                                spill.relieve()
                        batch = part = None  # the last batch's texts are not kept for the rest of the job
                        if admission is not None:
                            groups = admission.groups()
                            counters["exact_duplicates"] = groups.n_duplicates
                        first = False
                    else:
                        counted = _Counted(_read(source, threads))
                        batches = counted if groups is None else representatives(counted, groups.sketch)
                        for batch, part in self.stream(threads, partial(_map, stage, config, inputs), batches):
                            reducer.add(part)
                            progress.advance(len(batch))
                        batch = part = None
                        if counted.documents != len(ids):
                            raise InputChangedError(
                                f"the input changed while the job ran: it gave {len(ids):,} documents when first "
                                f"read and {counted.documents:,} when read again for {stage.name!r}"
                            )
                    out = reducer.result()
                elif isinstance(stage, Step):
                    out = stage.fn(config, ctx, *inputs)
                elif isinstance(stage, GroupBy):
                    out = self.group_by(stage, config, ctx, inputs)
                else:
                    raise TypeError(f"unknown stage {stage!r}")
                _add_counters(counters, out.pop("counters", None))
                state.update(out)
                out = None
                if spill.spilled:
                    trim()
                timings[stage.name] = timings.get(stage.name, 0.0) + time.perf_counter() - t0
                if first:
                    raise RuntimeError(f"the {config.name} plan must start with a scan of the input")
        return finish_job(plan, state, groups, ids.finish(), lengths.finish(), keep, want_pairs, counters, timings)

    def group_by(self, stage: GroupBy, config: Any, ctx: StageContext, inputs: list[Any]) -> dict[str, Any]:
        """The candidate stage: the method's fast path on this machine."""
        return stage.local(config, ctx, *inputs)

    def stream(self, threads: Threads, fn, items: Iterable[Any]) -> Iterator[Any]:
        """``fn`` over the batches of a scan, results in input order: on the job's threads here;
        an engine that runs batches elsewhere overrides this."""
        return threads.stream(fn, items)

    def _first_scan(
        self,
        stage: Scan,
        config: Any,
        inputs: list[Any],
        source: DocumentSource,
        prepass: Prepass | None,
        admission: ExactPrepass | None,
        threads: Threads,
    ):
        if admission is None:
            yield from self.stream(threads, partial(_whole, stage, config, inputs), _read(source, threads))
            return

        def admitted(items):
            start = 0
            for batch, lens, prepared, keys in items:
                chosen = admission.admit(keys)
                sub = None
                if stage.prepare is None:
                    sub = _subset(batch, chosen, start)
                    start += len(sub)
                yield batch, lens, prepared, chosen, sub

        prepared = self.stream(threads, partial(_prepared, stage, config, prepass), _read(source, threads))
        yield from self.stream(threads, partial(_finished, stage, config, inputs), admitted(prepared))
