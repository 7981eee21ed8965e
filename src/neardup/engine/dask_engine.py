"""The Dask engine: a plan's scans, candidate groups and (for plans that allow it) per-document
state on the workers of a ``dask.distributed`` cluster.

- **Input partitions.** A job over files (:class:`~neardup.io.partitions.FileSource`, a
  :class:`~neardup.core.documents.PartitionedSource`) is cut
  into partitions: byte ranges of large uncompressed JSONL files, whole files otherwise; the
  workers locate each range's line bounds and count its newlines (one small answer each), and
  each worker reads its partitions itself through fsspec. Only the descriptions leave this
  process. Any other document source is sent batch by batch, as data.
- **Scans.** The first scan runs in two phases per partition: read (and, with the exact
  pre-pass, normalize and key) on a worker, where the result stays; ids, lengths and exact keys
  come here to be admitted in input order; then the method's map runs on that worker. At most
  ``2 x cluster threads`` partitions are in each phase. Later scans read the partitions again
  on the workers. A scan whose result is a table of the collection (``Scan.table``: document
  frequencies) is reduced on the workers: each partition's parts into a reducer on the worker
  that made them, those reducers merged there in a tree (``Reducer.merge``, 8 at a time, in
  input order) as they finish; only the merged result comes here. A task whose worker dies is
  run again elsewhere (Dask's scheduler reschedules it and whatever it needs from its lineage;
  ``retries`` more attempts on errors).
- **State on the workers** (plans with a :class:`~neardup.core.plan.Sharded` form: every
  method's). The stages before the plan's last scan run as below (an IDF table or a lexicon
  made here from the counting scan's table, and broadcast); each partition's result of the last
  scan is reduced where it was made into a *shard*; the shards compute their own group-by keys
  and shuffle them, a bucket takes the rows of only the documents of its groups of two or more
  from their shards, and the similarity of each document to its kept one is computed on rows
  taken the same way. A plan that verifies its candidates on their texts read again (a
  :class:`~neardup.core.plan.Recheck`: ``verify="exact"`` or ``"edit"``) keeps each bucket's
  candidate pairs there, gathers the documents they name on one worker, reads each partition
  again on a worker for those documents (rows that stay there), and verifies each bucket's pairs
  on rows taken from those shards. What comes here: ids, lengths, exact keys, the earlier scans'
  reduced tables (document frequencies), empty flags, roots, similarities, pairs when asked
  for, and counts.
- **Otherwise** (``worker_state=False``) the parts of scans of rows come back to the method's
  reducer here, steps (document frequencies, IDF tables, edit verification) run here, and the
  candidate stage
  (:class:`~neardup.core.plan.GroupBy`) is spread by its definition
  (:mod:`neardup.engine.dask_groupby`): every (document, table) key is shuffled to one of
  ``partitions`` buckets, each bucket's groups are verified on a worker with the method's
  ``verify`` (the state it needs is broadcast once).
- **Components.** Each bucket's pairs become a forest on its worker, and forests are merged
  in a tree on the workers (8 at a time); only the final forest (documents in clusters and
  their roots) comes back, and the pairs only when the job asks for them.

The answer is the reference engine's, which the contract tests require to be the local
engine's: same ids, clusters, kept documents, similarities and pairs. See docs/scaling.md for
the measurements and what remains on this process.

>>> import neardup
>>> texts = ["the cat sat on the mat and looked out of the window at the rain today",
...          "the cat sat on the mat and looked out of the window at the rain today!",
...          "a completely different sentence about something else entirely here"]
>>> with local_client(2) as client:  # or Client(LocalCluster(...)), Client("tcp://scheduler:8786")
...     result = neardup.dedup(texts, neardup.MinHashConfig(), engine=DaskEngine(client))
>>> result.n_documents, result.n_removed, result.keep_mask.tolist()
(3, 1, [True, False, True])
"""

from __future__ import annotations

import pickle
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from operator import getitem
from typing import Any

import numpy as np

from ..core.arrays import CsrRows, sorted_unique, text_lengths
from ..core.budget import current_spill, parse_size, spill_rows, trim, using
from ..core.documents import DocBatch, DocumentSource, PartitionedSource
from ..core.errors import InputChangedError, LinesNeeded
from ..core.ids import IdBuffer
from ..core.parallel import Threads
from ..core.plan import GroupBy, Plan, Prepass, Recheck, Scan, Sharded, StageContext, Step
from ..core.validation import check_int
from ..methods.exact.groups import ExactGroups, ExactPrepass
from .base import JobResult, Keep, NoProgress, Progress, finish_job
from .dask_groupby import (
    bucket_entries,
    candidate_bucket,
    candidates_with_rows,
    check_bucket,
    connect_with_rows,
    docs_between,
    entries_bytes,
    grouped_entries,
    merge_forests,
    pairs_forest,
    recheck_with_rows,
    roots_from_forest,
    shards_empty,
    shards_entries,
    similarity_with_rows,
    take_group_rows,
    union_docs,
    unique_pairs,
    verify_bucket,
    verify_with_rows,
)
from .local import LocalEngine, _add_counters, _finished, _inputs, _prepared, _subset, _whole

__all__ = ["DaskEngine", "local_client", "split_memory"]

_SIMILARITY_ROW = 64
"""Bytes of this process's working memory a document of one call of the similarity to the kept
documents (past the budget, ``finish_job`` calls it for ``work / 64`` documents at a time: their
numbers, kept documents and similarities here; their rows on the workers)."""

_SIMILARITY_BUCKET = 10_000
"""Pairs (document, kept) a bucket of that similarity takes at the least: a small call is one
bucket, not one per shuffle partition."""

_MERGE_FAN_IN = 8
"""Forests joined by one merge task: each merge sorts the documents its forests touch, so a
wider tree sorts less in all (8 buckets: one merge instead of 7); a task holds at most this many
forests, never every edge."""


def _reads_on_workers(source: Any) -> bool:
    """Whether the workers read the source's partitions themselves (files, by default), else this
    process reads it and sends the batches."""
    return isinstance(source, PartitionedSource) and getattr(source, "partitionable", True)


def _nbytes(obj: Any) -> int:
    """Payload bytes of a task's argument or result: array bytes plus text characters."""
    if hasattr(obj, "nbytes"):  # arrays, CSR rows
        return int(obj.nbytes)
    if isinstance(obj, DocBatch):
        return sum(map(len, obj.texts)) + sum(map(len, obj.ids))
    if isinstance(obj, str):
        return len(obj)
    if hasattr(obj, "load"):  # a DocumentPart: its description
        return len(pickle.dumps(obj))
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _table_bytes(out: dict[str, Any]) -> int:
    """Payload bytes of a reduced table (a scan's result): its arrays, and those of the objects
    in it (document-frequency counters) one level down."""
    return sum(
        _nbytes(vars(v)) if hasattr(v, "__dict__") and not hasattr(v, "nbytes") else _nbytes(v) for v in out.values()
    )


# --------------------------------------------------------------------------------------------
# the scans, as functions of one partition (run on the workers)


def _load(part) -> tuple[list[DocBatch], Any]:
    """A partition's documents as batches numbered from 0, and its read counters: a
    :class:`~neardup.core.documents.DocumentPart` is read here; a batch was sent by the driver."""
    if isinstance(part, DocBatch):
        return [DocBatch(0, part.ids, part.texts)], None
    return part.load()


def _utf8_part(part):
    """``part`` read with UTF-8 texts (a file partition's read options; other parts as they are)."""
    options = getattr(part, "options", None)
    return part if options is None else replace(part, options=replace(options, utf8_texts=True))


def _read_first(stage: Scan, config: Any, prepass: Prepass | None, part):
    """First scan, phase 1: read the partition and (with the pre-pass) prepare it; the result
    stays on the worker until phase 2."""
    try:
        batches, stats = _load(part)
    except LinesNeeded:  # read again once its first line number is known
        return None
    if prepass is None:
        items = [(b, text_lengths(b.texts), None, None) for b in batches]
    else:
        items = [_prepared(stage, config, prepass, b) for b in batches]
    return items, stats


def _summary(held) -> tuple[list[str], np.ndarray, np.ndarray | None, Any] | None:
    """What the driver needs of phase 1: ids, text lengths, exact keys (pre-pass), read counters
    (None: the partition needs its first line number)."""
    if held is None:
        return None
    items, stats = held
    ids = [i for item in items for i in item[0].ids]
    lengths = np.concatenate([item[1] for item in items]) if items else np.empty(0, np.int64)
    keys = np.concatenate([item[3] for item in items]) if items and items[0][3] is not None else None
    return ids, lengths, keys, stats


def _finish_first(stage: Scan, config: Any, inputs: list[Any], held, chosen, doc_start: int, sub_start: int):
    """First scan, phase 2: the parts of the partition's documents (of those ``chosen`` by the
    pre-pass), numbered from ``doc_start`` (``sub_start`` among the representatives)."""
    items, _ = held
    parts = []
    offset, sub = 0, sub_start
    for batch, lengths, prepared, _keys in items:
        whole = DocBatch(doc_start + offset, batch.ids, batch.texts)
        if chosen is None:
            parts.append(_whole(stage, config, inputs, whole)[2])
        else:
            mask = chosen[offset : offset + len(batch)]
            picked = None if stage.prepare is not None else _subset(whole, mask, sub)
            parts.append(_finished(stage, config, inputs, (whole, lengths, prepared, mask, picked))[2])
            sub += int(np.count_nonzero(mask))
        offset += len(batch)
    return parts


def _finish_shard(
    stage: Scan, config: Any, inputs: list[Any], held, chosen, doc_start: int, sub_start: int, columns: tuple
) -> dict[str, Any]:
    """First scan, phase 2, state kept on the worker: the partition's parts reduced there into a
    shard (:mod:`neardup.engine.dask_groupby`) of the columns the plan's ``Sharded`` reads."""
    parts = _finish_first(stage, config, inputs, held, chosen, doc_start, sub_start)
    return _shard(stage, config, parts, sub_start, columns)


def _shard(stage: Scan, config: Any, parts: list[Any], start: int, columns: tuple) -> dict[str, Any]:
    """A shard (:mod:`neardup.engine.dask_groupby`): the parts of a partition's documents,
    numbered from ``start``, reduced here, and the ``columns`` kept of the result."""
    reducer = stage.reduce(config)
    for part in parts:
        if part is not None:
            reducer.add(part)
    out = reducer.result()
    rows = {name: out[name] for name in columns}
    n = len(next(iter(rows.values()))) if rows else 0
    return {"start": start, "n": n, "rows": rows, "counters": out.get("counters")}


def _reduced(stage: Scan, config: Any, parts: list[Any]):
    """The reducer of ``stage`` with a partition's ``parts`` added in order (on the worker that
    made them; the reducer stays there)."""
    reducer = stage.reduce(config)
    for part in parts:
        if part is not None:
            reducer.add(part)
    return reducer


def _finish_reduce(stage: Scan, config: Any, inputs: list[Any], held, chosen, doc_start: int, sub_start: int):
    """First scan, phase 2, reduced on the worker: the partition's reducer."""
    return _reduced(stage, config, _finish_first(stage, config, inputs, held, chosen, doc_start, sub_start))


def _merge_reducers(stage: Scan, config: Any, *reducers):
    """One reducer of consecutive stretches of input (``reducers`` in input order), merged left
    to right into a fresh one: the inputs are not changed, so a retried merge counts once."""
    merged = stage.reduce(config)
    for reducer in reducers:
        merged.merge(reducer)
    return merged


def _reducer_result(reducer) -> dict[str, Any]:
    return reducer.result()


class _WorkerReduction:
    """A scan's reduction on the workers: each partition's parts are reduced into a reducer
    where they were made (:func:`_finish_reduce`, :func:`_rescan_reduce`), and those reducers
    (futures, pushed in input order) are merged in a tree on the workers, ``_MERGE_FAN_IN`` at a
    time, as they arrive; only the final reducer's ``result()`` comes to the driver.

    ``levels[h]`` holds merged reducers of ``_MERGE_FAN_IN ** h`` partitions each, in input
    order; every one at a higher level covers input before every one at a lower level, so the
    final merge takes them highest level first."""

    def __init__(self, client, stage: Scan, config: Any, retries: int) -> None:
        self.client, self.stage, self.config, self.retries = client, stage, config, retries
        self.levels: list[list[Any]] = []
        self.received = 0
        """Payload bytes of the result that came to the driver."""

    def _merge(self, reducers: list[Any]):
        if len(reducers) == 1:
            return reducers[0]
        return self.client.submit(_merge_reducers, self.stage, self.config, *reducers, retries=self.retries)

    def push(self, future) -> None:
        """Add the reducer of the next partition (a future)."""
        level = 0
        while True:
            if level == len(self.levels):
                self.levels.append([])
            self.levels[level].append(future)
            if len(self.levels[level]) < _MERGE_FAN_IN:
                return
            future, self.levels[level] = self._merge(self.levels[level]), []
            level += 1

    def result(self) -> dict[str, Any]:
        """The merged reducer's result, computed on a worker and brought here."""
        pending = [f for level in reversed(self.levels) for f in level]
        self.levels = []
        if not pending:
            return self.stage.reduce(self.config).result()
        while len(pending) > 1:
            pending = [self._merge(pending[i : i + _MERGE_FAN_IN]) for i in range(0, len(pending), _MERGE_FAN_IN)]
        out = self.client.submit(_reducer_result, pending[0], retries=self.retries).result()
        self.received = _table_bytes(out)
        return out


def _shard_counters(shard: dict[str, Any]) -> dict[str, float] | None:
    return shard["counters"]


def _rescan(stage: Scan, config: Any, inputs: list[Any], part, expected: int, chosen, sub_start: int):
    """A later scan of one partition: the parts of its documents (those ``chosen`` when the
    pre-pass ran), numbered from ``sub_start``."""
    batches, _ = _load(part)
    got = sum(map(len, batches))
    if got != expected:
        where = "a batch" if isinstance(part, DocBatch) else part.describe()
        raise InputChangedError(
            f"the input changed while the job ran: {where} gave {expected:,} documents when first read and "
            f"{got:,} when read again for {stage.name!r}"
        )
    parts = []
    offset, sub = 0, sub_start
    for batch in batches:
        if chosen is None:
            picked = DocBatch(sub, batch.ids, batch.texts)
        else:
            picked = _subset(batch, chosen[offset : offset + len(batch)], sub)
        if len(picked):
            parts.append(stage.map(config, picked, *inputs))
        sub += len(picked)
        offset += len(batch)
    return parts


def _wait_for(future) -> None:
    """Wait for a task whose result stays on the cluster; raise its error, if it failed."""
    from dask.distributed import wait

    wait([future])
    if future.status == "error":
        future.result()


def _rescan_shard(
    stage: Scan, config: Any, inputs: list[Any], part, expected: int, chosen, sub_start: int, columns: tuple
) -> dict[str, Any]:
    """A later scan of one partition, its parts reduced here into a shard that stays."""
    return _shard(stage, config, _rescan(stage, config, inputs, part, expected, chosen, sub_start), sub_start, columns)


def _reread_shard(stage: Scan, config: Any, part, expected: int, chosen, start: int, n: int, wanted: np.ndarray):
    """A :class:`~neardup.core.plan.Recheck`'s scan of one partition: the rows of its
    representatives at positions ``wanted`` (from 0; ``n`` in all, the first numbered ``start``
    in the job), as a shard of one column ``"reread"`` (:class:`~neardup.core.arrays.CsrRows`;
    the others' rows empty). A partition without wanted documents is not read."""
    mask = np.zeros(n, dtype=bool)
    mask[wanted] = True
    reducer = stage.reduce(config)
    if len(wanted):
        for found in _rescan(stage, config, [mask], part, expected, chosen, 0):
            reducer.add(found)
    docs, values, offsets = reducer.joined()
    return {"start": start, "n": n, "rows": {"reread": CsrRows.of(docs, values, offsets, n)}, "counters": None}


def _rescan_reduce(stage: Scan, config: Any, inputs: list[Any], part, expected: int, chosen, sub_start: int):
    """A later scan of one partition, its parts reduced here into the partition's reducer."""
    return _reduced(stage, config, _rescan(stage, config, inputs, part, expected, chosen, sub_start))


def _parts_again(job: _Job):
    """The job's partitions to read again, in input order: ``(k, part, documents, chosen,
    first)``, a file part (the workers read it) or a batch of any other source (sent again);
    ``chosen``: which of its documents the exact pre-pass kept (None without it); ``first``: the
    number of its first representative in the job."""
    parts: Iterable[Any] = job.parts if _reads_on_workers(job.source) else job.source()
    sketch = job.groups.sketch if job.groups is not None else None
    doc_start = sub_start = 0
    for k, part in enumerate(parts):
        expected = len(part) if isinstance(part, DocBatch) else job.part_docs[k]
        chosen = None if sketch is None else sketch[doc_start : doc_start + expected]
        yield k, part, expected, chosen, sub_start
        doc_start += expected
        sub_start += expected if chosen is None else int(np.count_nonzero(chosen))


def _forest_size(forest: tuple[np.ndarray, np.ndarray]) -> int:
    return len(forest[0])


def _forest_slice(forest: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    return forest[0][lo:hi], forest[1][lo:hi]


def _roots(client, retries: int, n: int, forest) -> np.ndarray:
    """int64[n]: each document's root (:func:`~neardup.engine.dask_groupby.roots_from_forest`)
    from the merged forest (a future; None: no pairs). Within the job's budget, the forest comes
    here whole; past it, the roots are an array of the budget (a spill file) and the forest
    comes a stretch at a time, so this process never holds the documents in clusters at once."""
    spill = current_spill()
    if spill is None or spill.fits(16 * n):
        found = forest.result() if forest is not None else (np.empty(0, np.int64), np.empty(0, np.int64))
        return roots_from_forest(n, found)
    root = spill.array(n, np.int64)
    step = max(spill.work // 64, 1 << 16)
    for lo in range(0, n, step):
        root[lo : lo + step] = np.arange(lo, min(lo + step, n), dtype=np.int64)
        spill.relieve()
    size = 0 if forest is None else client.submit(_forest_size, forest, retries=retries).result()
    for lo in range(0, size, step):
        nodes, roots = client.submit(_forest_slice, forest, lo, lo + step, retries=retries).result()
        root[nodes] = roots
        spill.relieve()
    return root


def _joined(pieces: list[np.ndarray], n: int, dtype: Any) -> np.ndarray:
    """The per-shard ``pieces`` (``n`` entries in all) as one array of the job's budget."""
    spill = current_spill()
    out = np.empty(n, dtype=dtype) if spill is None else spill.array(n, dtype)
    at = 0
    for piece in pieces:
        out[at : at + len(piece)] = piece
        at += len(piece)
    if at != n:
        raise RuntimeError(f"the shards gave {at} rows for {n} documents")
    return out


_ADMIT_STRETCH = 512
"""Keys admitted between two releases of the spilled pre-pass table's pages: each key reads a
random slot, and each read maps 64 KB of the file around it (Linux fault-around), so a whole
partition's keys (18,000 a 32 MB partition) would map the whole table."""


def _admitted(admission: ExactPrepass, keys: np.ndarray) -> np.ndarray:
    """``admission.admit(keys)``; past the budget, ``_ADMIT_STRETCH`` keys at a time with the spill
    files' pages released between (the same answer: admission goes in input order)."""
    spill = current_spill()
    if spill is None or not spill.spilled or len(keys) <= _ADMIT_STRETCH:
        return admission.admit(keys)
    out = np.empty(len(keys), dtype=bool)
    for lo in range(0, len(keys), _ADMIT_STRETCH):
        out[lo : lo + _ADMIT_STRETCH] = admission.admit(keys[lo : lo + _ADMIT_STRETCH])
        spill.relieve()
    return out


def _no_components(want_pairs: bool) -> dict[str, Any]:
    """What the candidate stage gives for a job without documents."""
    out: dict[str, Any] = {"root": np.arange(0, dtype=np.int64), "groups": 0}
    if want_pairs:
        out["pairs"] = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
    return out


def _last_scan(plan: Plan, recheck: Recheck | None = None) -> int:
    """The position of the plan's last scan among its stages (before ``recheck``'s scan, which the
    sharded form runs itself)."""
    skip = None if recheck is None else recheck.scan.name
    scans = [k for k, stage in enumerate(plan.stages) if isinstance(stage, Scan) and stage.name != skip]
    if not scans:
        raise RuntimeError(f"the {plan.config.name} plan must start with a scan of the input")
    return scans[-1]


class _Job:
    """What the driver keeps of a job's input: ids, lengths, the partitions and their documents
    (counted by the first scan), the exact pre-pass groups."""

    def __init__(self, source: DocumentSource) -> None:
        self.source = source
        self.ids = IdBuffer()
        """Packed past the driver's budget (:class:`~neardup.core.ids.IdBuffer`), never one
        ``str`` per document then."""
        self.lengths = spill_rows((), np.int64)
        self.parts: list[Any] | None = None
        self.part_docs: list[int] = []
        self.groups: ExactGroups | None = None
        self.shards: list[tuple[int, int, Any]] = []
        """(first document, documents, future) of each shard kept on the workers."""
        self.utf8_texts = False
        """The plan's scans take UTF-8 texts (:attr:`~neardup.core.plan.Plan.utf8_texts`): the
        workers read JSONL texts as the scanner's spans, no ``str`` made."""
        self.reread: list[tuple[int, int, Any]] = []
        """(first document, documents, future) of each partition's re-read rows (a
        :class:`~neardup.core.plan.Recheck`), kept on the workers."""
        self.shared: Any = None
        """The inputs of the scan that made the shards (broadcast), held while the shards are:
        a shard lost with its worker is made again from them."""


def _taken_bytes(*taken) -> int:
    """Bytes of the rows shards sent to one bucket."""
    return sum(int(docs.nbytes) + sum(int(a.nbytes) for a in rows.values()) for docs, rows in taken)


def _prefer(address: str) -> dict[str, Any]:
    """``client.submit`` options that run a task on the worker at ``address`` when it is there
    (elsewhere when it is not, as after a worker is lost); none for an unknown address."""
    return {"workers": [address], "allow_other_workers": True} if address else {}


def _bucket_pairs(result: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return result[0], result[1], result[2]


def _bucket_counts(result: tuple) -> tuple[int, int]:
    """(groups verified, pairs found) of a bucket's result."""
    return result[3], len(result[0])


def _bucket_forest(result: tuple) -> tuple[np.ndarray, np.ndarray]:
    return pairs_forest(result[0], result[1])


MIN_WORKER_MEMORY = 256_000_000
"""The least memory limit :func:`split_memory` gives a worker."""


def split_memory(memory: int | str, workers: int) -> tuple[int, int]:
    """(this process's budget, each worker's memory limit) of a job budget of ``memory`` (bytes or
    a size) on a LocalCluster of ``workers`` worker processes: an eighth to this process (the
    driver keeps only what it must of each document, spilled past it), the rest split evenly
    between the workers, which hold the signatures and keys; a worker gets at least
    ``MIN_WORKER_MEMORY`` (a worker process with its libraries loaded takes about 200 MB before
    it holds anything, and Dask refuses a task whose inputs pass its limit).

    >>> split_memory("2GB", 2)
    (250000000, 875000000)
    >>> split_memory("64KB", 2)
    (8000, 256000000)
    """
    try:
        total = parse_size(memory)
    except ValueError as exc:
        raise ValueError(f"memory: {exc}") from None
    workers = check_int("workers", workers, 1, 1 << 16)
    driver = total // 8
    return driver, max((total - driver) // workers, MIN_WORKER_MEMORY)


def local_client(workers: int, memory_limit: str | int | None = "auto", spill_only: bool = False):
    """A ``dask.distributed`` client of a new LocalCluster of ``workers`` worker processes with
    one thread each.

    ``spill_only``: a worker past ``memory_limit`` moves the data it holds (shards of signatures
    and keys, entries, rows) to disk (Dask's spilling: from 60% of the limit, and of what it holds
    from 70% of the process's memory), and is never paused or restarted for its memory: a job
    whose working set passes the limit for a while goes on, slower, instead of failing (a
    restarted worker loses its shards, which are made again, and past the limit again).

    The workers start with glibc's own malloc settings: Dask's nanny sets
    ``MALLOC_TRIM_THRESHOLD_=65536`` by default, and setting any malloc threshold also turns off
    glibc's dynamic mmap threshold, so every allocation over 128 KiB (a batch's texts,
    signatures, band keys) becomes a fresh ``mmap`` whose pages fault in again each time: in the
    first scan of a MinHash job that is 7.5x the page faults and about a quarter more CPU
    (docs/scaling.md, "Memory settings"). A variable already in the environment is left as it is; a
    worker that the nanny restarts after a loss gets the same.

    The scheduler runs without Dask's active memory manager, whose default policy
    (``ReduceReplicas``, every 2 s) drops the copies of broadcast data down to one: the inputs a
    scan broadcasts (an IDF table, a lexicon) stay needed while its shards live, since a shard
    lost with its worker is made again from them, and scattered data cannot be recomputed, so
    losing the worker that held the last copy failed the job ("lose scattered data, which can't
    be recovered"; seen twice in the killed-worker tests)."""
    import dask
    from dask.distributed import Client, LocalCluster

    workers = check_int("workers", workers, 1, 1 << 16)
    settings: dict[str, Any] = {
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
        "distributed.scheduler.active-memory-manager.start": False,
    }
    if spill_only:
        settings["distributed.worker.memory.pause"] = False
        settings["distributed.worker.memory.terminate"] = False
    with dask.config.set(settings):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address="127.0.0.1:0",  # a free port: two clusters at once need not both want 8787
            host="127.0.0.1",
        )
    return Client(cluster)


class DaskEngine(LocalEngine):
    """Runs plans on a ``dask.distributed`` client (see the module docs).

    ``partitions``: about how many pieces a file input is read in, and the shuffle buckets of
    the candidate stage (default: 4 per worker thread, and at least one input partition per
    32 MB of splittable input); ``retries``: extra attempts of a task that raised (a lost
    worker's tasks are rescheduled by Dask anyway); ``threads``: this process's threads for the
    plan's steps; ``worker_state``: keep the per-document state on the workers for plans that
    allow it (``False`` brings it here, as other plans do: for comparison); ``memory``: this
    process's budget (bytes or a size; default: half the memory available when the job starts)
    for what it keeps of each document, spilled under ``tmp_dir`` past it (the workers keep to
    the cluster's own memory limit: :func:`split_memory`, :func:`local_client`).
    """

    def __init__(
        self,
        client,
        *,
        partitions: int | None = None,
        retries: int = 2,
        threads: int = 1,
        worker_state: bool = True,
        memory: int | str | None = None,
        tmp_dir: str | None = None,
    ) -> None:
        super().__init__(workers=threads, memory=memory, tmp_dir=tmp_dir)
        self.client = client
        self.worker_state = bool(worker_state)
        self.input_partitions = 0
        """Input partitions of the last job."""
        self.last_partitions: list[tuple[Any, int]] = []
        """(partition, documents) of the last job's input, in order: a
        :class:`~neardup.io.partitions.FilePart` the workers read, or None for a batch sent from
        here (:func:`~neardup.io.dask_write.write_partitions` writes the kept records of each)."""
        self.counted_lines = False
        """Whether the last job counted the lines of its byte ranges (a job that reads its input
        once counts them only when a record needs its line number)."""
        self.row_bytes: dict[str, int] = {}
        """Bytes of per-document rows moved between workers by the last job (worker state only)."""
        self.partitions = None if partitions is None else check_int("partitions", partitions, 1, 1 << 20)
        self.retries = check_int("retries", retries, 0, 100)
        self.shuffle_bytes: dict[str, int] = {}
        """Bytes of (table, key, document) entries shuffled by each candidate stage of the last job."""
        self.group_by_seconds: dict[str, float] = {}
        self.scan_bytes: dict[str, int] = {"to workers": 0, "from workers": 0}
        """Payload bytes (array bytes plus text characters) the scans sent to and got from the workers."""

    def __repr__(self) -> str:
        return f"DaskEngine({self.client!r}, partitions={self.partitions})"

    def run(
        self,
        plan: Plan,
        source: DocumentSource,
        *,
        keep: Keep = "first",
        want_pairs: bool = False,
        progress: Progress | None = None,
    ) -> JobResult:
        """Run ``plan`` over ``source`` on the cluster; see :class:`~neardup.engine.base.Engine`.
        What this process keeps of each document (ids, lengths, the exact pre-pass table, roots,
        kept documents, similarities) keeps to its budget (``memory``), spilled past it as the
        local engine's (:mod:`neardup.core.budget`)."""
        spill = self.last_spill = self.budget()
        with using(spill):
            result = self._run(plan, source, keep, want_pairs, progress)
        return replace(result, spilled_bytes=spill.disk_peak) if spill.spilled else result

    def _run(self, plan: Plan, source: DocumentSource, keep: Keep, want_pairs: bool, progress) -> JobResult:
        self.shuffle_bytes, self.group_by_seconds = {}, {}
        self.scan_bytes = {"to workers": 0, "from workers": 0}
        self.input_partitions = 0
        self.last_partitions = []
        self.counted_lines = False
        self.row_bytes = {}
        progress = progress or NoProgress()
        state: dict[str, Any] = {}
        counters: dict[str, float] = {}
        timings: dict[str, float] = {}
        job = _Job(source)
        job.utf8_texts = plan.utf8_texts
        sharded = plan.sharded if self.worker_state else None
        if sharded is not None:
            return self._run_sharded(plan, sharded, job, keep, want_pairs, progress)
        self._stages(plan, plan.stages, job, state, want_pairs, counters, timings, progress)
        if current_spill() is not None and current_spill().spilled:
            trim()
        ids, lengths = job.ids.finish(), job.lengths.finish()
        return finish_job(plan, state, job.groups, ids, lengths, keep, want_pairs, counters, timings)

    def _stages(self, plan: Plan, stages, job: _Job, state, want_pairs: bool, counters, timings, progress) -> None:
        """Run ``stages`` of ``plan`` in order, their results added to ``state``: scans on the
        workers, their parts reduced here, or (a scan whose result is a ``table``) on the
        workers, only the result coming here (:class:`_WorkerReduction`); steps here; group-bys
        by their definition."""
        config = plan.config
        with Threads(self.workers) as threads:
            ctx = StageContext(threads, want_pairs, counters)
            for stage in stages:
                progress.stage(stage.name)
                t0 = time.perf_counter()
                inputs = _inputs(state, stage)
                if isinstance(stage, Scan):
                    if stage.table:
                        reducer: Any = _WorkerReduction(self.client, stage, config, self.retries)
                    else:
                        reducer = stage.reduce(config)
                    if job.parts is None:
                        self._first_scan_parts(
                            stage, config, inputs, plan.prepass, job, reducer, progress, lines=plan.scans > 1
                        )
                        if job.groups is not None:
                            counters["exact_duplicates"] = job.groups.n_duplicates
                    else:
                        self._scan_again(stage, config, inputs, job, reducer, progress)
                    out = reducer.result()
                    if stage.table:
                        self.scan_bytes["from workers"] += reducer.received
                elif isinstance(stage, Step):
                    out = stage.fn(config, ctx, *inputs)
                elif isinstance(stage, GroupBy):
                    out = self.group_by(stage, config, ctx, inputs)
                else:
                    raise TypeError(f"unknown stage {stage!r}")
                _add_counters(counters, out.pop("counters", None))
                state.update(out)
                timings[stage.name] = timings.get(stage.name, 0.0) + time.perf_counter() - t0
                if job.parts is None:
                    raise RuntimeError(f"the {config.name} plan must start with a scan of the input")

    def _cluster_threads(self) -> int:
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def _run_on_workers(self, fn, items: list) -> list:
        return self.client.gather(self.client.map(fn, items, pure=False, retries=self.retries))

    def _source_parts(self, source: PartitionedSource, lines: bool = True) -> list[Any]:
        """The partitions of a source the workers read themselves: ``partitions`` of them, or
        the source's choice (at least 4 per worker thread); what must be looked at in the data
        to cut them (line bounds of byte ranges) is looked at on the workers. Without ``lines``
        (a source that can leave them out: :meth:`~neardup.io.partitions.FileSource.number_lines`)
        the byte ranges' newlines are counted only if a partition needs them."""
        minimum = 4 * self._cluster_threads()
        if not lines and hasattr(source, "number_lines"):
            return source.partitions(self.partitions, minimum, self._run_on_workers, lines=False)
        return source.partitions(self.partitions, minimum, self._run_on_workers)

    def _run_sharded(self, plan: Plan, sharded: Sharded, job: _Job, keep, want_pairs, progress) -> JobResult:
        """The plan with its per-document state left on the workers: the stages before its last
        scan run as without shards (their results, such as an IDF table, broadcast to that
        scan); the last scan makes one shard per partition on the worker that maps it, and the
        candidate stage, the components and the similarity to the kept documents run on the
        shards (:meth:`_sharded_group_by`). What comes here: ids, lengths, exact keys, the
        earlier scans' reduced tables, the empty flags, the roots, the similarities, the pairs
        when asked for, and counts."""
        config = plan.config
        last = _last_scan(plan, sharded.recheck)
        scan, group = plan.stages[last], plan.stages[-1]  # the sharded form stands for the stages after scan
        state: dict[str, Any] = {}
        counters: dict[str, float] = {}
        timings: dict[str, float] = {}
        self._stages(plan, plan.stages[:last], job, state, want_pairs, counters, timings, progress)
        progress.stage(scan.name)
        t0 = time.perf_counter()
        self._shard_scan(plan, scan, _inputs(state, scan), job, progress, sharded.columns)
        if job.groups is not None:
            counters["exact_duplicates"] = job.groups.n_duplicates
        for found in self.client.gather([self.client.submit(_shard_counters, f) for _, _, f in job.shards]):
            _add_counters(counters, found)
        timings[scan.name] = time.perf_counter() - t0
        del state  # the earlier stages' results: the last scan's inputs, on the workers now
        progress.stage(group.name)
        t0 = time.perf_counter()
        state = self._sharded_group_by(group.name, sharded, config, job, want_pairs, progress)
        _add_counters(counters, state.pop("counters"))
        timings[group.name] = time.perf_counter() - t0
        spill = current_spill()
        if spill is not None and spill.spilled:
            trim()
        ids, lengths = job.ids.finish(), job.lengths.finish()

        holders: list = []  # where the shards are, asked once (finish_job calls a stretch at a time past the budget)
        self.row_bytes["similarity"] = 0

        def similarity(docs: np.ndarray, others: np.ndarray) -> np.ndarray:
            shards = job.reread if sharded.recheck is not None else job.shards
            if not holders and shards:
                holders.append(self._shard_holders(shards)[0])
            return self._sharded_similarity(sharded, config, shards, docs, others, holders[0] if holders else [])

        # a call of similarity holds 3 numbers a document here (the rows stay on the workers)
        result = finish_job(
            plan, state, job.groups, ids, lengths, keep, want_pairs, counters, timings, similarity, _SIMILARITY_ROW
        )
        job.shards, job.reread, job.shared = [], [], None  # released on the cluster with their last reference
        return result

    def _shard_scan(self, plan: Plan, scan: Scan, inputs: list[Any], job: _Job, progress, columns: tuple) -> None:
        """The scan whose results stay on the workers as shards (``job.shards``): the first
        scan (with the pre-pass admission) or a later one (the representatives read again)."""
        if job.parts is None:
            lines = plan.scans > 1  # a job that reads its input once numbers lines only when it must
            self._first_scan_parts(scan, plan.config, inputs, plan.prepass, job, None, progress, columns, lines=lines)
        else:
            self._scan_again(scan, plan.config, inputs, job, None, progress, columns)

    def _first_scan_parts(
        self,
        stage,
        config,
        inputs,
        prepass,
        job: _Job,
        reducer,
        progress,
        columns: tuple | None = None,
        lines: bool = True,
    ) -> None:
        """The first scan, partition by partition: phase 1 (read, prepare) on a worker, whose
        result stays there; ids, lengths and exact keys come here to be admitted in input order;
        phase 2 (the method's map) runs on the worker that holds phase 1, and its parts come
        back to ``reducer``, or are reduced there: into the partition's reducer (``reducer`` a
        :class:`_WorkerReduction`, which merges them on the workers) or, with ``columns``, into
        a shard (``job.shards``), either staying on the cluster. At most ``2 x cluster threads``
        partitions are in each phase at once. Without ``lines`` (a job that reads its input
        once) byte ranges are read without their first line numbers; the first one whose records
        need them (an id ``FILE:LINE``, an error naming its line) has every range's lines
        counted and is read again."""
        from dask.distributed import wait

        client, retries = self.client, self.retries
        window = 2 * self._cluster_threads()
        admission = ExactPrepass() if prepass is not None else None
        listed: list[Any] = []
        numbered = self.counted_lines = lines
        if _reads_on_workers(job.source):
            listed = self._source_parts(job.source, lines)
            if job.utf8_texts:
                listed = [_utf8_part(p) for p in listed]
            parts: Iterable[Any] = (listed[k] for k in range(len(listed)))  # numbered ones once counted
            self.input_partitions = len(listed)
            stats = job.source.claim_stats()
        else:
            parts, stats = job.source(), None
        job.parts, job.part_docs = [], []
        read_stats: list[Any] = []
        first: deque = deque()
        second: deque = deque()
        doc_start = sub_start = 0

        def read_first(k: int, part):
            held = client.submit(_read_first, stage, config, prepass, part, pure=False, retries=retries)
            return k, part, held, client.submit(_summary, held, retries=retries)

        def read_numbered(k: int):
            """Partition ``k`` read again with its first line number: the lines of every range
            are counted once, and the partitions in flight are read again numbered too (an
            input without ids needs them all)."""
            nonlocal numbered
            if not numbered:
                listed[:] = job.source.number_lines(listed, self._run_on_workers)
                numbered = self.counted_lines = True
                for i, entry in enumerate(first):
                    if getattr(entry[1], "first_line", 1) is None:
                        first[i] = read_first(entry[0], listed[entry[0]])
            _, part, held, summary = read_first(k, listed[k])
            found = summary.result()
            if found is None:
                raise RuntimeError(f"{part.describe()} needed its line numbers when they were given")
            return part, held, found

        def admit_oldest() -> None:
            nonlocal doc_start, sub_start
            k, part, held, summary = first.popleft()
            found = summary.result()
            if found is None:
                part, held, found = read_numbered(k)
            ids, lengths, keys, part_stats = found
            self.scan_bytes["from workers"] += sum(map(len, ids)) + _nbytes(lengths) + _nbytes(keys)  # ids: str
            if part_stats is not None:
                read_stats.append(part_stats)
            job.ids.extend(ids)
            job.lengths.append(lengths)
            spill = current_spill()
            if spill is not None and spill.spilled:  # the pages of the pre-pass table and ids written
                spill.relieve()
            job.parts.append(None if isinstance(part, DocBatch) else part)
            job.part_docs.append(len(ids))
            chosen = None
            if admission is not None:  # a partition without documents has no keys to admit
                chosen = _admitted(admission, keys) if ids else np.zeros(0, dtype=bool)
            self.scan_bytes["to workers"] += _nbytes(chosen)
            m = len(ids) if chosen is None else int(np.count_nonzero(chosen))
            args = (stage, config, inputs, held, chosen, doc_start, sub_start)
            if isinstance(reducer, _WorkerReduction):
                future = client.submit(_finish_reduce, *args, retries=retries)
            elif columns is None:
                future = client.submit(_finish_first, *args, retries=retries)
            else:
                future = client.submit(_finish_shard, *args, columns, retries=retries)
                job.shards.append((sub_start, m, future))
            doc_start += len(ids)
            sub_start += m
            second.append((len(ids), future))

        def finish_oldest() -> None:
            n, future = second.popleft()
            if isinstance(reducer, _WorkerReduction):  # the partition's reducer stays on its worker
                _wait_for(future)
                reducer.push(future)
            elif columns is None:
                found = future.result()
                self.scan_bytes["from workers"] += _nbytes(found)
                for part in found:
                    if part is not None:
                        reducer.add(part)
            else:  # the shard stays where it was made; waiting only bounds the work in flight
                wait([future])
                if future.status == "error":
                    future.result()
            progress.advance(n)

        for k, part in enumerate(parts):
            self.scan_bytes["to workers"] += _nbytes(part)
            first.append(read_first(k, part))
            if len(first) >= window:
                admit_oldest()
            if len(second) >= window:
                finish_oldest()
        while first:
            admit_oldest()
            if len(second) >= window:
                finish_oldest()
        while second:
            finish_oldest()
        if admission is not None:
            job.groups = admission.groups()
        if stats is not None:
            job.source.add_read_stats(stats, job.parts, read_stats)
        self.last_partitions = list(zip(job.parts, job.part_docs))

    def _scan_again(self, stage, config, inputs, job: _Job, reducer, progress, columns: tuple | None = None) -> None:
        """A later scan: each partition read again on a worker (file parts), or sent again (any
        other source), its chosen documents mapped there; parts come back in input order to
        ``reducer``, or are reduced there into the partition's reducer (a
        :class:`_WorkerReduction`) or, with ``columns``, into a shard (``job.shards``), either
        staying on the cluster."""
        client, retries = self.client, self.retries
        window = 2 * self._cluster_threads()
        shared = client.scatter([list(inputs)], broadcast=True)[0] if inputs else []
        if columns is not None:
            job.shared = shared
        pending: deque = deque()
        doc_start = 0

        def done() -> None:
            n, future = pending.popleft()
            if isinstance(reducer, _WorkerReduction):  # the partition's reducer stays on its worker
                _wait_for(future)
                reducer.push(future)
            elif columns is None:
                found = future.result()
                self.scan_bytes["from workers"] += _nbytes(found)
                for part in found:
                    reducer.add(part)
            else:
                _wait_for(future)
            progress.advance(n)

        for _, part, expected, chosen, sub_start in _parts_again(job):
            self.scan_bytes["to workers"] += _nbytes(part) + _nbytes(chosen)
            args = (stage, config, shared, part, expected, chosen, sub_start)
            if isinstance(reducer, _WorkerReduction):
                future = client.submit(_rescan_reduce, *args, pure=False, retries=retries)
            elif columns is None:
                future = client.submit(_rescan, *args, pure=False, retries=retries)
            else:
                future = client.submit(_rescan_shard, *args, columns, pure=False, retries=retries)
                job.shards.append((sub_start, expected if chosen is None else int(np.count_nonzero(chosen)), future))
            pending.append((expected, future))
            doc_start += expected
            if len(pending) >= window:
                done()
        while pending:
            done()
        if doc_start != len(job.ids):
            raise InputChangedError(
                f"the input changed while the job ran: it gave {len(job.ids):,} documents when first read and "
                f"{doc_start:,} when read again for {stage.name!r}"
            )

    def group_by(self, stage: GroupBy, config: Any, ctx: StageContext, inputs: list[Any]) -> dict[str, Any]:
        """The candidate stage by its definition, bucket by bucket on the workers."""
        client = self.client
        t0 = time.perf_counter()
        keys, member = stage.keys(config, *inputs)
        n = np.asarray(keys).shape[0]
        parts = self.partitions or 4 * self._cluster_threads()
        buckets = bucket_entries(keys, member, parts)
        shuffled = sum(_nbytes(b) for b in buckets)
        del keys, member
        [state] = client.scatter([list(inputs)], broadcast=True)
        bucket_futures = client.scatter(buckets)
        del buckets
        results = [
            client.submit(verify_bucket, stage.verify, config, b, state, pure=False, retries=self.retries)
            for b in bucket_futures
        ]
        out = self._components(n, results, ctx.want_pairs)
        groups, pair_count = out.pop("groups"), out.pop("pair_count")
        del results, bucket_futures, state  # released on the cluster with their last reference
        self.shuffle_bytes[stage.name] = shuffled
        out["counters"] = {
            "dask_shuffle_bytes": float(shuffled),
            "dask_buckets": float(parts),
            "dask_groups_verified": float(groups),
            "dask_bucket_pairs": float(pair_count),
        }
        self.group_by_seconds[stage.name] = time.perf_counter() - t0
        return out

    def _components(self, n: int, results: list, want_pairs: bool) -> dict[str, Any]:
        """From the buckets' verified pairs (futures): the roots (each bucket's forest, merged
        in a tree on the workers, 8 at a time), the pairs when wanted, and counts."""
        client = self.client
        forests = [client.submit(_bucket_forest, r, retries=self.retries) for r in results]
        counts = [client.submit(_bucket_counts, r, retries=self.retries) for r in results]
        while len(forests) > 1:  # a tree of merges, _MERGE_FAN_IN forests at a time
            forests = [
                client.submit(merge_forests, *forests[i : i + _MERGE_FAN_IN], retries=self.retries)
                if len(forests[i : i + _MERGE_FAN_IN]) > 1
                else forests[i]
                for i in range(0, len(forests), _MERGE_FAN_IN)
            ]
        out: dict[str, Any] = {"root": _roots(client, self.retries, n, forests[0] if forests else None)}
        counted = client.gather(counts)
        out["groups"] = sum(g for g, _ in counted)
        out["pair_count"] = sum(p for _, p in counted)
        if want_pairs:
            found = client.gather([client.submit(_bucket_pairs, r) for r in results])
            a = np.concatenate([f[0] for f in found]) if found else np.empty(0, np.int64)
            b = np.concatenate([f[1] for f in found]) if found else np.empty(0, np.int64)
            s = np.concatenate([f[2] for f in found]) if found else np.empty(0, np.float64)
            out["pairs"] = unique_pairs(a, b, s)
        return out

    def _shard_holders(self, shards: list[tuple[int, int, Any]]) -> tuple[list[list[int]], list[str]]:
        """The shards (``job.shards`` or ``job.reread``) by the worker that holds them (shard
        numbers, in order), and each group's worker address ("" when unknown): a task over one
        group's shards runs where they are, so the candidate stage has tasks per worker, not per
        shard. A shard recomputed elsewhere meanwhile is fetched, which changes no answer."""
        futures = [f for _, _, f in shards]
        holders = self.client.who_has(futures)
        groups: dict[str, list[int]] = {}
        for k, f in enumerate(futures):
            where = holders.get(f.key) or ("",)
            groups.setdefault(min(where), []).append(k)
        return list(groups.values()), list(groups)

    def _verify_buckets(self, check, fn, config: Any, grouped: list, held: list[list], where: list[str]) -> tuple:
        """Submit the verification of every bucket: bucket ``b`` on worker ``b mod W`` (a
        preference: Dask runs it elsewhere if that worker is gone), where it reads that
        worker's shards in place; each other worker sends the rows of the documents of all
        of that worker's buckets once (one take each, shared by those buckets) instead of
        once per bucket. Returns the buckets' result futures and the takes' byte counts."""
        client, retries, buckets = self.client, self.retries, len(grouped)
        count = len(held)
        results: list = [None] * buckets
        moved = []
        for i in range(count):
            mine = list(range(i, buckets, count))
            if not mine:
                continue
            wanted = client.submit(
                union_docs, *[grouped[b] for b in mine], retries=retries, priority=4 * buckets, **_prefer(where[i])
            )
            taken = [
                client.submit(
                    take_group_rows, wanted, *held[j], retries=retries, priority=2 * buckets + 1, **_prefer(where[j])
                )
                for j in range(count)
                if j != i
            ]
            moved += [client.submit(_taken_bytes, t) for t in taken]
            for b in mine:
                results[b] = client.submit(
                    check_bucket,
                    check,
                    fn,
                    config,
                    grouped[b],
                    len(held[i]),
                    *held[i],
                    *taken,
                    retries=retries,
                    priority=2 * (buckets - b) + 1,
                    **_prefer(where[i]),
                )
        return results, moved

    def _sharded_group_by(
        self, name: str, sharded: Sharded, config: Any, job: _Job, want_pairs: bool, progress: Progress
    ) -> dict[str, Any]:
        """The candidate stage on the shards: each worker computes its shards' (table, key,
        document) entries and splits them into buckets where it is; each bucket keeps its groups
        of two or more and asks each worker for the rows of those documents; verification,
        forests and their merges run on the workers. Buckets are prioritised in order (a
        bucket's verification before the next bucket's rows), so few buckets' rows are held at
        once. Returns the state ``finish_job`` needs."""
        client, retries = self.client, self.retries
        t0 = time.perf_counter()
        n = sum(m for _, m, _ in job.shards)
        buckets = self.partitions or 4 * self._cluster_threads()
        groups, where = self._shard_holders(job.shards) if job.shards else ([], [])
        held = [[job.shards[k][2] for k in group] for group in groups]
        empty = [client.submit(shards_empty, sharded.empty, config, *fs, retries=retries) for fs in held]
        entries = [
            client.submit(shards_entries, sharded.keys, config, buckets, n, *fs, retries=retries, priority=4 * buckets)
            for fs in held
        ]
        sizes = [client.submit(entries_bytes, e) for e in entries]
        grouped = [
            client.submit(
                grouped_entries,
                *[client.submit(getitem, e, b, priority=4 * buckets) for e in entries],
                retries=retries,
                priority=4 * buckets,
                **_prefer(where[b % len(where)] if where else ""),
            )
            for b in range(buckets if job.shards else 0)  # a job without documents has no buckets
        ]
        del entries  # each worker's entries are released once every bucket has its piece
        check = verify_with_rows if want_pairs or sharded.connect is None else connect_with_rows
        fn = sharded.verify if check is verify_with_rows else sharded.connect  # connect: clusters only
        if sharded.recheck is not None and sharded.pairwise:  # each candidate pair in one bucket
            check, fn = candidates_with_rows, (sharded.verify, sharded.keys, n, buckets)
        results, moved = self._verify_buckets(check, fn, config, grouped, held, where) if job.shards else ([], [])
        del grouped  # rows are released as their worker's buckets are verified
        rechecked: list = []
        if sharded.recheck is not None and job.shards:
            progress.stage(sharded.recheck.scan.name)
            results, rechecked = self._recheck(sharded.recheck, config, job, results, progress)
            progress.stage(name)
        out = self._components(n, results, want_pairs) if job.shards else _no_components(want_pairs)
        found = client.gather(empty)
        per_shard = [None] * len(job.shards)
        for group, arrays in zip(groups, found):
            for k, a in zip(group, arrays):
                per_shard[k] = a
        state: dict[str, Any] = {"empty": _joined(per_shard, n, bool)}
        shuffled = sum(client.gather(sizes))
        moved = client.gather(moved)
        groups_verified, pair_count = out.pop("groups"), out.pop("pair_count", 0)
        state.update(out)
        del results
        self.shuffle_bytes[name] = shuffled
        self.row_bytes["verify"] = int(sum(moved))
        if rechecked:
            self.row_bytes["recheck"] = int(sum(client.gather(rechecked)))
        state["counters"] = {
            "dask_shuffle_bytes": float(shuffled),
            "dask_buckets": float(buckets),
            "dask_groups_verified": float(groups_verified),
            "dask_bucket_pairs": float(pair_count),
            "dask_rows_moved_bytes": float(sum(moved) + self.row_bytes.get("recheck", 0)),
        }
        self.group_by_seconds[name] = time.perf_counter() - t0
        return state

    def _recheck(
        self, recheck: Recheck, config: Any, job: _Job, results: list, progress: Progress
    ) -> tuple[list, list]:
        """The candidate pairs of every bucket (``results``, futures) verified again on the rows
        of ``recheck``'s scan: the documents in a candidate pair are gathered on one worker
        (their numbers only), each partition is read again on a worker for those of its
        documents (``job.reread``: rows that stay there), and each bucket takes the rows of its
        pairs' documents as the first verification did. Returns the buckets' new results and
        the takes' byte counts."""
        client, retries = self.client, self.retries
        buckets = [client.submit(candidate_bucket, r, retries=retries) for r in results]
        wanted = client.submit(union_docs, *buckets, retries=retries)
        job.reread = []
        for k, part, expected, chosen, start in _parts_again(job):
            n = job.shards[k][1]  # the partition's representatives
            mine = client.submit(docs_between, wanted, start, start + n, retries=retries)
            self.scan_bytes["to workers"] += _nbytes(part) + _nbytes(chosen)
            args = (recheck.scan, config, part, expected, chosen, start, n, mine)
            job.reread.append((start, n, client.submit(_reread_shard, *args, pure=False, retries=retries)))
        for k, (_, _, future) in enumerate(job.reread):  # where the rows are decides where each bucket runs
            _wait_for(future)
            progress.advance(job.part_docs[k])
        groups, where = self._shard_holders(job.reread)
        held = [[job.reread[k][2] for k in group] for group in groups]
        return self._verify_buckets(recheck_with_rows, recheck.verify, config, buckets, held, where)

    def _sharded_similarity(
        self,
        sharded: Sharded,
        config: Any,
        shards: list[tuple[int, int, Any]],
        docs: np.ndarray,
        others: np.ndarray,
        groups: list[list[int]],
    ) -> np.ndarray:
        """Each document's similarity to its kept one, on the shards' rows: the pairs of distinct
        documents go to buckets by the kept document, each bucket gets the rows of its documents
        from the workers that hold them (each row moves once), and only the similarities come
        back; ``groups``: the shards by the worker that holds them (:meth:`_shard_holders`)."""
        client, retries = self.client, self.retries
        out = np.ones(len(docs), dtype=np.float64)
        q = np.flatnonzero(docs != others)
        if not len(q):
            return out
        d, k = docs[q], others[q]
        buckets = max(1, min(self.partitions or 4 * self._cluster_threads(), len(q) // _SIMILARITY_BUCKET))
        starts = np.array([start for start, _, _ in shards], dtype=np.int64)
        ends = starts + np.array([m for _, m, _ in shards], dtype=np.int64)
        bucket = k % buckets
        pending = []
        moved = 0
        for c in range(buckets):  # submitted all at once; gathered after
            sel = np.flatnonzero(bucket == c)
            if not len(sel):
                continue
            wanted = sorted_unique(np.concatenate([d[sel], k[sel]]))
            lo, hi = np.searchsorted(wanted, starts), np.searchsorted(wanted, ends)
            taken = [
                client.submit(take_group_rows, wanted, *[shards[r][2] for r in group], retries=retries)
                for group in groups
                if any(hi[r] > lo[r] for r in group)
            ]
            found = client.submit(similarity_with_rows, sharded.similarity, config, d[sel], k[sel], *taken)
            pending.append((sel, found, client.submit(_taken_bytes, *taken)))
        for sel, found, size in pending:
            out[q[sel]] = found.result()
            moved += size.result()
        self.row_bytes["similarity"] = self.row_bytes.get("similarity", 0) + int(moved)
        return out
