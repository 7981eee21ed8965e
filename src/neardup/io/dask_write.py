"""The kept records of a Dask job written by the workers: one JSON Lines part per input partition.

After :meth:`~neardup.engine.dask_engine.DaskEngine.run` over files, the engine knows the job's
input partitions (:attr:`~neardup.engine.dask_engine.DaskEngine.last_partitions`: byte ranges of
large JSONL files, whole files otherwise) and how many documents each gave. The kept records of
partition ``k`` are documents ``[s_k, s_k + n_k)`` of the job (``s_k`` = the documents of the
partitions before it), so :func:`write_partitions` sends each partition's description and its
slice ``keep[s_k : s_k + n_k]`` (and of the ``--annotate`` columns) to a task that runs on any
worker, reads the partition there and writes its kept records
(:func:`~neardup.io.write.write_kept_part`). Concatenated in partition order the parts are the
bytes that :func:`~neardup.io.write.write_kept` writes for the whole input; this process reads
none of the input.

Each part goes to the temporary that this process's
:class:`~neardup.io.transaction.OutputSet` staged for it (``.part-00003.jsonl.PID.tmp``, PID
this process's): the name depends only on the partition, and a task opens it anew, so a task run
again (its worker died, or it raised and is retried) replaces what the earlier attempt wrote. The
set's commit renames the parts with the other outputs; a run that fails or is killed before the
commit leaves the previous outputs, and its temporaries are removed by its abort or by the next
run. The workers must see the output folder at the same path as this process (a LocalCluster
does; a remote cluster needs a shared filesystem): each task reports the bytes it wrote and a
part that this process does not find at that size is an error, never a silently missing part.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import NeardupError
from .partitions import FilePart
from .write import write_kept_part

__all__ = ["PartsWritten", "file_partitions", "part_name", "write_partitions"]


def part_name(k: int) -> str:
    """The file name of part ``k`` of an output folder: ``part-00000.jsonl``, ..."""
    return f"part-{k:05d}.jsonl"


@dataclass(frozen=True)
class PartsWritten:
    """What :func:`write_partitions` wrote: records per part, and the process ids that wrote
    them (each part's last successful attempt)."""

    records: tuple[int, ...]
    pids: tuple[int, ...]


def file_partitions(engine: Any, documents: int) -> list[tuple[FilePart, int]] | None:
    """The (partition, documents) of the job ``engine`` ran last when the workers can write them:
    a Dask engine whose job read files on its workers (every partition a
    :class:`~neardup.io.partitions.FilePart`) and gave ``documents`` documents; else None."""
    found = getattr(engine, "last_partitions", None)
    if not found or not all(isinstance(part, FilePart) for part, _ in found):
        return None
    if sum(n for _, n in found) != documents:
        return None
    return list(found)


def _snapshot_of(part: FilePart, snapshot: dict | None) -> dict | None:
    """What the first pass saw of the files of ``part`` (the file; a folder of text files: each
    file in it), for the writer's changed-input check; None: nothing."""
    if not snapshot:
        return None
    if part.fmt == "txtdir":
        inside = part.path.rstrip("/" + os.sep) + os.sep
        found = {path: seen for path, seen in snapshot.items() if path == part.path or path.startswith(inside)}
    else:
        found = {part.path: snapshot[part.path]} if part.path in snapshot else {}
    return found or None


def _write_task(
    part: FilePart, keep: np.ndarray, annotate, out_path: str, tmp: str, all_valid: bool, snapshot
) -> tuple[int, int, int]:
    """On a worker: write the partition's kept records to ``tmp``; (records, bytes, process id)."""
    records = write_kept_part(part, keep, out_path, tmp, all_valid=all_valid, annotate=annotate, snapshot=snapshot)
    return records, os.path.getsize(tmp), os.getpid()


def write_partitions(
    engine: Any,
    partitions: list[tuple[FilePart, int]],
    keep: np.ndarray,
    targets: list[tuple[str, str]],
    *,
    annotate: dict[str, np.ndarray] | None = None,
    all_valid: bool = False,
    snapshot: dict | None = None,
) -> PartsWritten:
    """Write the kept records of each partition on the workers of ``engine`` (a
    :class:`~neardup.engine.dask_engine.DaskEngine`): partition ``k`` to ``targets[k]``
    (``(output, temporary)``: the output's name gives the format, JSON Lines; the temporary is
    the file written). ``keep`` (and each ``annotate`` column) has one entry per document of the
    job; ``all_valid``: the first pass skipped no record (the JSON Lines are copied without
    parsing). At most two tasks per worker thread are in flight; when one fails, those in flight
    finish before the error is raised (so none writes after the caller removed the temporaries),
    and an interrupt cancels them."""
    from dask.distributed import wait

    if len(targets) != len(partitions):
        raise ValueError(f"{len(targets)} targets for {len(partitions)} partitions")
    client = engine.client
    window = 2 * engine._cluster_threads()
    records: list[int] = [0] * len(partitions)
    pids: list[int] = [0] * len(partitions)
    pending: deque = deque()

    def collect() -> None:
        k, future = pending.popleft()
        n, size, pid = future.result()
        tmp = targets[k][1]
        here = os.path.getsize(tmp) if os.path.exists(tmp) else None
        if here != size:
            raise NeardupError(
                f"a worker wrote {size:,} bytes to {tmp}, which this process "
                + ("does not find" if here is None else f"finds with {here:,}")
                + "; the workers must write the output folder at the same path as this process (a shared filesystem)"
            )
        records[k], pids[k] = n, pid

    start = 0
    try:
        for k, ((part, n), (out_path, tmp)) in enumerate(zip(partitions, targets)):
            cols = None if annotate is None else {name: col[start : start + n] for name, col in annotate.items()}
            where = _snapshot_of(part, snapshot)
            args = (part, np.asarray(keep[start : start + n], dtype=bool), cols, str(out_path), str(tmp))
            future = client.submit(_write_task, *args, all_valid, where, pure=False, retries=engine.retries)
            pending.append((k, future))
            start += n
            if len(pending) >= window:
                collect()
        while pending:
            collect()
    except Exception:
        wait([f for _, f in pending])  # none still writes when the caller removes the temporaries
        raise
    except BaseException:
        client.cancel([f for _, f in pending])
        raise
    return PartsWritten(tuple(records), tuple(pids))
