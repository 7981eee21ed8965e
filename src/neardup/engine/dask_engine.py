"""The Dask engine: a plan's batches and candidate groups on the workers of a ``dask.distributed``
cluster.

- **Scans.** Each batch of documents is sent to a worker (``client.submit``), at most
  ``2 * workers`` batches in flight, and the parts come back in input order to the method's
  reducer here, exactly as on the local engine's threads. A task whose worker dies is run again
  elsewhere (Dask's scheduler reschedules it; ``retries`` more attempts are allowed on errors).
- **Steps** run here, on this process's threads (they are whole-state computations: document
  frequencies, IDF tables).
- **The candidate stage** (:class:`~neardup.core.plan.GroupBy`) is spread by its definition
  (:mod:`neardup.engine.dask_groupby`): every (document, table) key is shuffled to one of
  ``partitions`` buckets, each bucket's groups are verified on a worker with the method's
  ``verify`` (the state it needs is broadcast once), each bucket's pairs become a forest there, and
  forests are merged pairwise on the workers; only the final forest (documents in clusters and
  their roots) comes back, and the pairs only when the job asks for them.

The answer is the reference engine's, which the contract tests require to be the local
engine's: same ids, clusters, kept documents, similarities and pairs.

What stays on this process: the reducers' state (the signatures) and the keys before the
shuffle. See docs/scaling.md for what that means at 100M+ documents.

>>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
>>> engine = DaskEngine(Client(LocalCluster(n_workers=2, threads_per_worker=1)))  # doctest: +SKIP
>>> neardup.dedup(["docs.jsonl"], engine=engine)  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..core.documents import DocBatch
from ..core.parallel import Threads
from ..core.plan import GroupBy, Scan, StageContext
from ..core.validation import check_int
from .dask_groupby import bucket_entries, merge_forests, pairs_forest, roots_from_forest, unique_pairs, verify_bucket
from .local import LocalEngine, _finished, _prepared, _subset

__all__ = ["DaskEngine", "local_client"]


def _nbytes(obj: Any) -> int:
    """Payload bytes of a task's argument or result: array bytes plus text characters."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, DocBatch):
        return sum(map(len, obj.texts)) + sum(map(len, obj.ids))
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _without_batch(fn, item):
    """``fn(item)`` on a worker, returned without the batch it starts with (the caller has it)."""
    result = fn(item)
    if isinstance(result, tuple) and result and isinstance(result[0], DocBatch):
        return (None, *result[1:])
    return result


def _lengths_and_keys(first: tuple) -> tuple[np.ndarray, np.ndarray]:
    """From a first pre-pass phase's result on a worker: only what the admission needs."""
    return first[1], first[3]


def _finish_remote(stage: Scan, config: Any, inputs: list[Any], first: tuple, chosen: np.ndarray, start: int):
    """The second pre-pass phase on the worker that holds the first one's result: the part."""
    batch, lengths, prepared, _ = first
    sub = None if stage.prepare is not None else _subset(batch, chosen, start)
    return _finished(stage, config, inputs, (batch, lengths, prepared, chosen, sub))[2]


def _call(fn, item):
    return fn(item)


def _batch_of(item: Any) -> DocBatch | None:
    if isinstance(item, DocBatch):
        return item
    if isinstance(item, tuple) and item and isinstance(item[0], DocBatch):
        return item[0]
    return None


def _bucket_pairs(result: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return result[0], result[1], result[2]


def _bucket_groups(result: tuple) -> int:
    return result[3]


def _bucket_forest(result: tuple) -> tuple[np.ndarray, np.ndarray]:
    return pairs_forest(result[0], result[1])


def _bucket_sizes(result: tuple) -> int:
    return len(result[0])


def local_client(workers: int, memory_limit: str | None = "auto"):
    """A ``dask.distributed`` client of a new LocalCluster of ``workers`` worker processes with
    one thread each."""
    from dask.distributed import Client, LocalCluster

    workers = check_int("workers", workers, 1, 1 << 16)
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=memory_limit,
        dashboard_address=None,
        host="127.0.0.1",
    )
    return Client(cluster)


class DaskEngine(LocalEngine):
    """Runs plans on a ``dask.distributed`` client (see the module docs).

    ``partitions``: shuffle buckets of the candidate stage (default: 4 per worker thread);
    ``retries``: extra attempts of a task that raised (a lost worker's tasks are rescheduled by
    Dask anyway); ``threads``: this process's threads for the plan's steps.
    """

    def __init__(self, client, *, partitions: int | None = None, retries: int = 2, threads: int = 1) -> None:
        super().__init__(workers=threads)
        self.client = client
        self.partitions = None if partitions is None else check_int("partitions", partitions, 1, 1 << 20)
        self.retries = check_int("retries", retries, 0, 100)
        self.shuffle_bytes: dict[str, int] = {}
        """Bytes of (table, key, document) entries shuffled by each candidate stage of the last job."""
        self.group_by_seconds: dict[str, float] = {}
        self.scan_bytes: dict[str, int] = {"to workers": 0, "from workers": 0}
        """Payload bytes (array bytes plus text characters) the scans sent to and got from the workers."""

    def __repr__(self) -> str:
        return f"DaskEngine({self.client!r}, partitions={self.partitions})"

    def run(self, plan, source, **kwargs):
        """Run ``plan`` over ``source`` on the cluster; see :class:`~neardup.engine.base.Engine`."""
        self.shuffle_bytes, self.group_by_seconds = {}, {}
        self.scan_bytes = {"to workers": 0, "from workers": 0}
        return super().run(plan, source, **kwargs)

    def _cluster_threads(self) -> int:
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def stream(self, threads: Threads, fn, items: Iterable[Any]) -> Iterator[Any]:
        """``fn`` over the batches on the cluster, results in input order, ``2 * cluster threads``
        batches in flight."""
        window = 2 * self._cluster_threads()
        pending: deque = deque()

        def done():
            item, future = pending.popleft()
            result = future.result()
            self.scan_bytes["to workers"] += _nbytes(item)
            self.scan_bytes["from workers"] += _nbytes(result)
            if isinstance(result, tuple) and result and result[0] is None:
                result = (_batch_of(item), *result[1:])
            return result

        for item in items:
            task = _without_batch if _batch_of(item) is not None else _call
            pending.append((item, self.client.submit(task, fn, item, pure=False, retries=self.retries)))
            if len(pending) >= window:
                yield done()
        while pending:
            yield done()

    def _first_scan(self, stage, config, inputs, source, prepass, admission, threads):
        """The first scan; with the exact pre-pass, each batch's prepared form stays on its worker
        between the two phases (only lengths and exact keys come here to be admitted)."""
        if admission is None:
            yield from super()._first_scan(stage, config, inputs, source, prepass, admission, threads)
            return
        client, retries = self.client, self.retries
        window = 2 * self._cluster_threads()
        first: deque = deque()
        second: deque = deque()
        start = 0

        def admit_oldest():
            nonlocal start
            batch, whole, small = first.popleft()
            lens, keys = small.result()
            self.scan_bytes["to workers"] += _nbytes(batch)
            self.scan_bytes["from workers"] += _nbytes(lens) + _nbytes(keys)
            chosen = admission.admit(keys)
            self.scan_bytes["to workers"] += _nbytes(chosen)
            part = client.submit(_finish_remote, stage, config, inputs, whole, chosen, start, retries=retries)
            start += int(np.count_nonzero(chosen))
            second.append((batch, lens, part))

        def finish_oldest():
            batch, lens, part = second.popleft()
            result = part.result()
            self.scan_bytes["from workers"] += _nbytes(result)
            return batch, lens, result

        for batch in source():
            whole = client.submit(_prepared, stage, config, prepass, batch, pure=False, retries=retries)
            first.append((batch, whole, client.submit(_lengths_and_keys, whole, retries=retries)))
            if len(first) >= window:
                admit_oldest()
            if len(second) >= window:
                yield finish_oldest()
        while first:
            admit_oldest()
        while second:
            yield finish_oldest()

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
        forests = [client.submit(_bucket_forest, r, retries=self.retries) for r in results]
        while len(forests) > 1:  # a tree of pairwise merges
            merged = [
                client.submit(merge_forests, forests[i], forests[i + 1], retries=self.retries)
                for i in range(0, len(forests) - 1, 2)
            ]
            if len(forests) % 2:
                merged.append(forests[-1])
            forests = merged
        forest = forests[0].result() if forests else (np.empty(0, np.int64), np.empty(0, np.int64))
        out: dict[str, Any] = {"root": roots_from_forest(n, forest)}
        groups = sum(client.gather([client.submit(_bucket_groups, r) for r in results]))
        pair_count = sum(client.gather([client.submit(_bucket_sizes, r) for r in results]))
        if ctx.want_pairs:
            found = client.gather([client.submit(_bucket_pairs, r) for r in results])
            a = np.concatenate([f[0] for f in found]) if found else np.empty(0, np.int64)
            b = np.concatenate([f[1] for f in found]) if found else np.empty(0, np.int64)
            s = np.concatenate([f[2] for f in found]) if found else np.empty(0, np.float64)
            out["pairs"] = unique_pairs(a, b, s)
        del results, bucket_futures, state, forests  # released on the cluster with their last reference
        self.shuffle_bytes[stage.name] = shuffled
        out["counters"] = {
            "dask_shuffle_bytes": float(shuffled),
            "dask_buckets": float(parts),
            "dask_groups_verified": float(groups),
            "dask_bucket_pairs": float(pair_count),
        }
        self.group_by_seconds[stage.name] = time.perf_counter() - t0
        return out
