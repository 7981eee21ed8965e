"""The outputs of ``neardup dedup``, written as one set (:class:`~neardup.io.transaction.OutputSet`).

Order of the renames at the commit (fixed): ``-o`` (or its parts), ``--removed``, ``--clusters``,
``--pairs``, ``--skipped``, ``--stats`` last, so a complete stats file means the set is complete.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from .. import __version__
from ..api import DedupResult, result_stats
from ..core.ids import id_array
from ..incremental import AgainstResult
from ..io import write_kept, write_table
from ..io.dask_write import file_partitions, part_name, write_partitions
from ..io.transaction import OutputSet
from ..io.write import write_bytes

ANNOTATION_COLUMNS = ("cluster", "cluster_size", "similarity", "kept")


@dataclass(frozen=True)
class Outputs:
    """What a run writes (None: not asked for)."""

    output: str
    """``-o``: a file, ``-`` (standard output) or a folder ending in ``/`` (one part per input)."""
    clusters: str | None = None
    pairs: str | None = None
    removed: str | None = None
    skipped: str | None = None
    stats: str | None = None
    annotate: bool = False
    annotate_prefix: str = ""

    def named(self) -> dict[str, str | None]:
        """option -> path, in the order they are committed."""
        return {
            "-o": self.output,
            "--removed": self.removed,
            "--clusters": self.clusters,
            "--pairs": self.pairs,
            "--skipped": self.skipped,
            "--stats": self.stats,
        }


@dataclass(frozen=True)
class ReadOptions:
    """How the inputs were read (the writers re-read them the same way)."""

    inputs: tuple[str, ...]
    text_field: str
    id_field: str | None
    on_error: str
    input_format: str | None
    id_policy: str = "field"
    workers: int = 1
    """Threads that copy the kept JSON Lines (the job's own workers)."""


def cluster_columns(result: DedupResult, against: AgainstResult | None) -> tuple[Any, np.ndarray]:
    """Per document: its cluster's kept document id (an Arrow array; with ``--against``, a NumPy
    one holding the index's document for a removed cluster) and its similarity to it."""
    similarity = np.asarray(result.similarity, dtype=np.float64)
    if against is None:
        return id_array(result.ids).take(result.kept), similarity
    cluster = np.asarray(result.ids, dtype=object)[result.kept]
    hit = ~np.isnan(against.match_similarity)
    cluster = np.where(hit, np.asarray(against.match_id, dtype=object), cluster)
    similarity = np.where(hit, against.match_similarity, similarity)
    return cluster, similarity


def annotation(result: DedupResult, keep_mask: np.ndarray, against, prefix: str) -> dict[str, np.ndarray]:
    """The columns ``--annotate`` adds: ``cluster`` (id of the cluster's kept document),
    ``cluster_size`` (documents in the cluster, 1 alone), ``similarity`` (to the kept document)
    and ``kept``; each name with ``prefix`` before it."""
    cluster, similarity = cluster_columns(result, against)
    if not isinstance(cluster, np.ndarray):
        cluster = cluster.to_numpy(zero_copy_only=False)
    root = np.asarray(result.root, dtype=np.int64)
    sizes = np.bincount(root, minlength=len(root))[root] if len(root) else np.zeros(0, np.int64)
    values = [cluster, sizes.astype(np.int64), similarity, np.asarray(keep_mask, dtype=bool)]
    return {prefix + name: col for name, col in zip(ANNOTATION_COLUMNS, values)}


def write_all(
    result: DedupResult,
    keep_mask: np.ndarray,
    outs: Outputs,
    read: ReadOptions,
    against: AgainstResult | None,
    stats_body,
    outcome=None,
    engine=None,
) -> None:
    """Write every output to its temporary, then commit them together (see the module docs).

    ``stats_body()`` gives the ``--stats`` document; it is called after the other outputs are
    written, so it holds their write time. ``outcome.replaced`` is set once the outputs are
    replaced (also when an interrupt came during the renames, which are then finished).
    ``engine``: the engine that ran the job; with a Dask engine whose workers read the input
    files, an output folder's parts are written by the workers, one per input partition
    (:mod:`neardup.io.dask_write`).
    """
    outputs = OutputSet()
    try:
        _write_all(result, keep_mask, outs, read, against, stats_body, outputs, engine)
    finally:
        if outcome is not None and outputs.committed:
            outcome.replaced = True


def _write_all(
    result, keep_mask, outs: Outputs, read: ReadOptions, against, stats_body, outputs: OutputSet, engine=None
) -> None:
    stdout_copy = None
    parts = 0
    with outputs, tempfile.TemporaryDirectory(prefix="neardup-out-") as scratch:
        t0 = time.perf_counter()
        annotate = annotation(result, keep_mask, against, outs.annotate_prefix) if outs.annotate else None
        kept_mask = np.ones(len(keep_mask), dtype=bool) if outs.annotate else keep_mask
        if outs.output.endswith(("/", os.sep)):
            parts = _write_parts(result, kept_mask, outs.output, read, annotate, outputs, engine)
        else:
            target, staged = outs.output, outputs
            if outs.output == "-":  # standard output: written in full first, copied after the commit
                target, staged = os.path.join(scratch, "kept.jsonl"), None
                stdout_copy = target
            _kept(result, kept_mask, target, read, annotate, staged)
        if outs.removed:
            _kept(result, ~np.asarray(keep_mask, dtype=bool), outs.removed, read, None, outputs)
        if outs.clusters:
            cluster, similarity = cluster_columns(result, against)
            write_table(
                {"id": id_array(result.ids), "cluster": cluster, "similarity": similarity}, outs.clusters, outputs
            )
        if outs.pairs:
            ids = id_array(result.ids)
            a, b, sim = result.pairs
            write_table({"id_a": ids.take(a), "id_b": ids.take(b), "similarity": sim}, outs.pairs, outputs)
        if outs.skipped:
            write_skipped(result.read_stats.details or [], outs.skipped, outputs)
        result.timings["write"] = time.perf_counter() - t0
        if outs.stats:
            body = orjson.dumps(stats_body(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"
            write_bytes(body, outs.stats, outputs)
        parts_dir = outs.output.endswith(("/", os.sep))
        # under the commit lock: the parts beyond this run's belong to no run's set now
        outputs.commit(after=(lambda: _remove_old_parts(outs.output, parts)) if parts_dir else None)
        if stdout_copy is not None:
            with open(stdout_copy, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()


def _kept(result, keep, path, read: ReadOptions, annotate, outputs) -> None:
    write_kept(
        list(read.inputs),
        keep,
        path,
        text_field=read.text_field,
        id_field=read.id_field,
        on_error=read.on_error,
        all_valid=result.read_stats.skipped == 0,
        input_format=read.input_format,
        annotate=annotate,
        outputs=outputs,
        id_policy=read.id_policy,
        snapshot=result.read_stats.snapshot,
        workers=read.workers,
    )


def _write_parts(result, keep, out_dir: str, read: ReadOptions, annotate, outputs, engine=None) -> int:
    """One JSON Lines part per input source (every shard of a folder, every match of a glob), in
    reading order: ``out_dir/part-00000.jsonl``, ... (a part may be empty); with a Dask engine
    that read the files on its workers, one part per input partition, written by the workers
    (:mod:`neardup.io.dask_write`). Returns the number of parts."""
    partitions = file_partitions(engine, len(keep))
    if partitions is not None:
        finals = [os.path.join(out_dir, part_name(k)) for k in range(len(partitions))]
        targets = [(final, str(outputs.stage(final))) for final in finals]
        write_partitions(
            engine,
            partitions,
            keep,
            targets,
            annotate=annotate,
            all_valid=result.read_stats.skipped == 0,
            snapshot=result.read_stats.snapshot,
        )
        return len(partitions)
    start = 0
    for i, (path, fmt, n) in enumerate(result.read_stats.sources):
        write_kept(
            [path],
            keep[start : start + n],
            os.path.join(out_dir, f"part-{i:05d}.jsonl"),
            text_field=read.text_field,
            id_field=read.id_field,
            on_error=read.on_error,
            all_valid=result.read_stats.skipped == 0,
            input_format=None if fmt == "txtdir" else fmt,
            annotate=None if annotate is None else {k: v[start : start + n] for k, v in annotate.items()},
            outputs=outputs,
            id_policy=read.id_policy,
            snapshot=result.read_stats.snapshot,
            workers=read.workers,
        )
        start += n
    return len(result.read_stats.sources)


def _remove_old_parts(out_dir: str, n: int) -> None:
    """Parts beyond this run's ``n`` left by an earlier run with more inputs or partitions (they
    are not part of this run's set), and the temporaries of such parts that killed runs left
    (``.part-00009.jsonl.PID.tmp``, their process gone)."""
    import contextlib
    import re
    from pathlib import Path

    from ..io.transaction import remove_stale_temporaries

    with contextlib.suppress(OSError):
        for name in os.listdir(out_dir):
            found = re.fullmatch(r"part-(\d{5,})\.jsonl", name)
            if found and int(found.group(1)) >= n:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(out_dir, name))
            stale = re.fullmatch(r"\.(part-(\d{5,})\.jsonl)\.\d+\.tmp", name)
            if stale and int(stale.group(2)) >= n:
                remove_stale_temporaries(Path(out_dir, stale.group(1)))


def write_skipped(details: list, path: str, outputs: OutputSet | None = None) -> None:
    """``--skipped``: one row per skipped record: ``file``, ``line`` (empty for a whole file that
    could not be read), ``reason`` (the stable key the summary counts) and ``message``."""
    import pyarrow as pa

    write_table(
        {
            "file": pa.array([d[0] for d in details], pa.string()),
            "line": pa.array([d[1] for d in details], pa.int64()),
            "reason": pa.array([d[2] for d in details], pa.string()),
            "message": pa.array([d[3] for d in details], pa.string()),
        },
        path,
        outputs,
    )


def stats_document(
    result: DedupResult,
    *,
    removed: int,
    settings: dict[str, Any],
    inputs: list[str],
    outputs: Outputs,
    total_seconds: float,
    against: AgainstResult | None = None,
    added_to_index: int | None = None,
) -> dict[str, Any]:
    """The ``--stats`` JSON: version, settings, inputs and outputs, counts, skips by reason,
    the method's counters and the seconds of every stage."""
    stats = result_stats(result, removed)
    counts = stats["counts"]
    counts["pairs_written"] = None if outputs.pairs is None else result.n_verified_pairs
    if against is not None:
        counts["removed_by_index"] = against.n_removed_by_index
    if added_to_index is not None:
        counts["added_to_index"] = added_to_index
    rs = result.read_stats
    return {
        "neardup_version": __version__,
        "method": stats["method"],
        "settings": settings,
        "inputs": list(inputs),
        "sources": [{"path": p, "format": f, "documents": n} for p, f, n in rs.sources],
        "outputs": {k: v for k, v in outputs.named().items() if v is not None},
        "annotate": [outputs.annotate_prefix + c for c in ANNOTATION_COLUMNS] if outputs.annotate else None,
        "counts": counts,
        "skipped_by_reason": stats["skipped_by_reason"],
        "counters": stats["counters"],
        "seconds": {**stats["seconds"], "total": round(total_seconds, 6)},
    }
