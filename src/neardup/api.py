"""The batch dedup job as a function: read -> the method's plan on an engine -> result.

:func:`dedup` wires the layers together: a reader of :mod:`neardup.io` is the document source,
the method config gives the plan, an engine runs it (:class:`~neardup.engine.local.LocalEngine`
with every core by default). Nothing is written; the command line writes the outputs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import numpy as np

from .core.components import center_clusters, keep_order
from .core.documents import DocumentSource, InMemorySource
from .core.ids import id_array, repeated_ids
from .core.parallel import MAX_WORKERS
from .core.progress import display_for, watch_compiles
from .core.validation import Choice, Integer, Optional, check, conflict
from .engine.base import Engine, JobResult
from .engine.local import LocalEngine
from .io import ReadStats
from .io.memory import is_in_memory, select_rows, texts_and_ids
from .io.partitions import FileSource, ReadOptions
from .methods.base import MethodConfig
from .methods.registry import DEFAULT_METHOD, get_method
from .text.edit import require_rapidfuzz

__all__ = ["CLUSTERINGS", "DedupResult", "dedup", "default_workers"]

MAX_BATCH_SIZE = 10_000_000

CLUSTERINGS = ("components", "center")
"""``cluster=``: connected components of the verified pairs, or greedy center (star) clusters
(:func:`~neardup.core.components.center_clusters`)."""
DEFAULT_CLUSTER = "components"

_SLACK = 1e-9
"""How far below the pair threshold a similarity may fall by rounding and still count as at it."""


def default_workers() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True, eq=False)
class DedupResult:
    """Everything a dedup run found (nothing is written)."""

    config: MethodConfig
    job: JobResult
    read_stats: ReadStats
    source: DocumentSource = field(repr=False)
    """Reads the job's documents again, in the same order (a later pass, such as ``--against``)."""
    cluster: str = DEFAULT_CLUSTER
    """How the clusters were made (:data:`CLUSTERINGS`)."""
    verified_pairs_found: int | None = None
    """:attr:`n_verified_pairs` of a job that made the pairs and dropped them (``cluster="center"``
    without ``want_pairs``)."""

    @property
    def ids(self) -> list[str]:
        return self.job.ids

    @property
    def root(self) -> np.ndarray:
        """int64[n] smallest document index of each document's cluster."""
        return self.job.root

    @property
    def kept(self) -> np.ndarray:
        """int64[n] index of the kept document of each document's cluster."""
        return self.job.kept

    @property
    def similarity(self) -> np.ndarray:
        """float64[n] similarity of each document to its kept document (1.0 for kept ones)."""
        return self.job.similarity

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Verified pairs (index a < index b, similarity), when asked for."""
        return self.job.pairs

    @property
    def counters(self) -> dict[str, float]:
        return self.job.counters

    @property
    def timings(self) -> dict[str, float]:
        return self.job.timings

    @property
    def empty(self) -> int:
        """Documents with no features."""
        return int(np.count_nonzero(self.job.empty))

    def __repr__(self) -> str:
        threshold = getattr(self.config, "threshold", None)
        at = "" if threshold is None else f", threshold={threshold}"
        return (
            f"DedupResult(method={self.config.name!r}{at}, documents={self.n_documents:,}, "
            f"removed={self.n_removed:,}, clusters={self.n_clusters:,})"
        )

    @property
    def n_verified_pairs(self) -> int | None:
        """Pairs of documents at or above the threshold, pairs inside a group of exact duplicates
        included: the rows ``want_pairs`` gives (:meth:`pairs_table`, ``--pairs``), the same on
        every engine. ``None`` when the job made no pairs (connected components alone skip the
        pairs of documents already in one cluster, so they are not all found)."""
        if self.pairs is not None:
            return len(self.pairs[0])
        return self.verified_pairs_found

    @property
    def below_threshold(self) -> int:
        """Removed documents whose similarity to their kept document is below the method's pair
        threshold (:attr:`~neardup.methods.base.MethodConfig.pair_threshold`): joined to it
        through other documents by connected components; always 0 with ``cluster="center"``."""
        removed = ~self.keep_mask
        low = np.asarray(self.similarity) < self.config.pair_threshold - _SLACK
        return int(np.count_nonzero(removed & low))

    @property
    def stats(self) -> dict[str, Any]:
        """The run in numbers, in the shape of ``neardup dedup --stats PATH.json``'s sections of
        the same names: ``method`` (the config as a dict), ``counts`` (documents, skipped, empty,
        clusters, verified_pairs, removed, below_threshold, kept, files, bytes_read, repeated_ids,
        ids_from_file_line, spilled_bytes), ``skipped_by_reason``, ``counters`` (the method's, as floats) and
        ``seconds`` (per stage)."""
        return result_stats(self)

    @property
    def summary(self) -> dict[str, str]:
        """The method's summary lines for people (label -> text), as the command line prints them."""
        lines = dict(self.config.describe(self.counters))
        verified = self.n_verified_pairs
        lines["verified pairs"] = (
            f"{verified:,} (every pair at or above the threshold, exact duplicates included: the rows of --pairs)"
            if verified is not None
            else "not counted (clustering alone skips pairs already joined; --pairs or --cluster center counts them)"
        )
        if self.n_removed:
            below = self.below_threshold
            hint = " (--cluster center keeps them)" if below and self.cluster == "components" else ""
            lines["below threshold"] = (
                f"{below:,} of {self.n_removed:,} removed documents below {self.config.pair_threshold:g} "
                f"to their kept document{hint}"
            )
        repeated = repeated_ids(self.ids)
        if self.read_stats.line_ids:
            lines["ids from FILE:LINE"] = f"{self.read_stats.line_ids:,} (their id was missing or repeated)"
        if repeated:
            lines["repeated ids"] = f"{repeated:,} (ids in --clusters/--pairs are ambiguous; see --id-field)"
        return lines

    def kept_rows(self, data: Any) -> Any:
        """The rows of ``data`` (the in-memory data this result was computed from) that are kept,
        as the same type: a list, a pandas DataFrame (its index kept), a pyarrow Table or
        RecordBatch, or a ``datasets.Dataset`` (by ``select``)."""
        return select_rows(data, self.keep_mask, self.n_documents)

    def removed_rows(self, data: Any) -> Any:
        """The rows of ``data`` that are removed (near-duplicates of a kept row), as the same type
        (see :meth:`kept_rows`)."""
        return select_rows(data, ~np.asarray(self.keep_mask, dtype=bool), self.n_documents)

    def to_arrow(self) -> Any:
        """One row per document, in input order: ``id``, ``cluster`` (the id of the cluster's kept
        document, as in ``--annotate`` and ``--clusters``), ``cluster_size`` (1 for a singleton),
        ``similarity`` (to the cluster's kept document, as the method measures it) and ``kept``,
        as a pyarrow Table."""
        import pyarrow as pa

        root = np.asarray(self.root, dtype=np.int64)
        sizes = np.bincount(root, minlength=len(root))[root] if len(root) else np.zeros(0, np.int64)
        ids = id_array(self.ids)
        return pa.table(
            {
                "id": ids,
                "cluster": ids.take(pa.array(np.asarray(self.kept, dtype=np.int64))),
                "cluster_size": pa.array(sizes.astype(np.int64)),
                "similarity": pa.array(np.asarray(self.similarity, dtype=np.float64)),
                "kept": pa.array(np.asarray(self.keep_mask, dtype=bool)),
            }
        )

    def to_pandas(self) -> Any:
        """:meth:`to_arrow` as a pandas DataFrame (needs pandas)."""
        return self.to_arrow().to_pandas()

    def pairs_table(self) -> Any:
        """The verified pairs (``want_pairs=True``) as a pyarrow Table ``a``, ``b``, ``similarity``
        (document numbers) with ``id_a``/``id_b``; ``None`` when pairs were not asked for."""
        import pyarrow as pa

        if self.pairs is None:
            return None
        a, b, sim = (np.asarray(x) for x in self.pairs)
        ids = id_array(self.ids)
        return pa.table(
            {
                "a": pa.array(a.astype(np.int64)),
                "b": pa.array(b.astype(np.int64)),
                "similarity": pa.array(sim.astype(np.float64)),
                "id_a": ids.take(pa.array(a.astype(np.int64))),
                "id_b": ids.take(pa.array(b.astype(np.int64))),
            }
        )

    @property
    def keep_mask(self) -> np.ndarray:
        return self.job.keep_mask

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


def result_stats(result: DedupResult, removed: int | None = None) -> dict[str, Any]:
    """``result.stats``: the numbers of a run, the sections of ``--stats`` that the result holds
    (``removed``: the removed documents when more than the job's were removed, as by ``--against``)."""
    from .methods.registry import config_to_dict

    rs = result.read_stats
    removed = result.n_removed if removed is None else removed
    counts = {
        "documents": result.n_documents,
        "skipped": rs.skipped,
        "empty": result.empty,
        "clusters": result.n_clusters,
        "verified_pairs": result.n_verified_pairs,
        "removed": removed,
        "below_threshold": result.below_threshold,
        "kept": result.n_documents - removed,
        "files": rs.files,
        "bytes_read": rs.bytes_read,
        "repeated_ids": repeated_ids(result.ids),
        "ids_from_file_line": rs.line_ids,
        "spilled_bytes": result.job.spilled_bytes,
    }
    return {
        "method": config_to_dict(result.config),
        "counts": counts,
        "skipped_by_reason": dict(sorted(rs.reasons.items())),
        "counters": {k: float(v) for k, v in result.counters.items()},
        "seconds": {k: round(v, 6) for k, v in result.timings.items()},
    }


def method_config(method: MethodConfig | str | None, options: dict[str, Any]) -> MethodConfig:
    """The config of a ``dedup`` call: ``method`` (a config, a method's name or None for the
    default method) with ``options`` (its settings as keywords) applied."""
    if method is None or isinstance(method, str):
        cls = get_method(DEFAULT_METHOD if method is None else method)
        base = None
    elif isinstance(method, MethodConfig):
        cls, base = type(method), method
    else:
        raise TypeError(
            f"method must be a method config (such as MinHashConfig()) or a method's name, got {type(method).__name__}"
        )
    if not options:
        return base if base is not None else cls()
    known = [f.name for f in fields(cls) if f.init]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(
            f"dedup() got unknown option(s) {', '.join(map(repr, unknown))}: neither a dedup() argument nor a "
            f"setting of method {cls.name!r} ({', '.join(known)})"
        )
    return replace(base, **options) if base is not None else cls(**options)


class _Callbacks:
    """A progress display with two optional callbacks beside it."""

    def __init__(
        self, display: Any, on_batch: Callable[[int], None] | None, on_stage: Callable[[str], None] | None
    ) -> None:
        self._display, self._batch, self._stage = display, on_batch, on_stage

    def advance(self, n: int) -> None:
        self._display.advance(n)
        if self._batch is not None:
            self._batch(n)

    def stage(self, name: str) -> None:
        self._display.stage(name)
        if self._stage is not None:
            self._stage(name)

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        if hasattr(self._display, "compiling"):
            self._display.compiling(message, seconds, kernel)

    def compiled(self, seconds: float) -> None:
        if hasattr(self._display, "compiled"):
            self._display.compiled(seconds)

    def run(self, method: str, job: Callable[[Any], JobResult]) -> JobResult:
        """``job(self)`` with the kernels' compile notice, the display closed after."""
        try:
            with watch_compiles(self, method):
                return job(self)
        finally:
            close = getattr(self._display, "close", None)
            if close is not None:
                close()


def dedup(
    paths: Any,
    method: MethodConfig | str | None = None,
    *,
    keep: Literal["first", "longest"] = "first",
    cluster: Literal["components", "center"] = DEFAULT_CLUSTER,
    workers: int | None = None,
    batch_size: int = 2048,
    text_field: str = "text",
    id_field: str | None = None,
    id_policy: Literal["field", "line"] = "field",
    on_error: Literal["fail", "skip"] = "fail",
    html: bool = False,
    main_content: bool = False,
    input_format: str | None = None,
    want_pairs: bool = False,
    record_skipped: bool = False,
    engine: Engine | None = None,
    memory: int | str | None = None,
    tmp_dir: str | None = None,
    on_batch: Callable[[int], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    read_stats: ReadStats | None = None,
    progress: Any = None,
    **options: Any,
) -> DedupResult:
    """Run the dedup job on input files or in-memory data and return what it found (nothing is written).

    ``paths`` is a list of input paths, or documents held in memory: a list of texts, a pandas
    DataFrame, a pyarrow Table or RecordBatchReader, or a Hugging Face ``datasets.Dataset``
    (``text_field`` / ``id_field`` name its columns; ids default to row positions). A list of
    strings is paths when every one looks like a path (no whitespace; exists, ``-``, a URL, a glob
    or an input extension), texts when none does.

    ``method`` is a method config (default ``MinHashConfig()``) or a method's name; ``options``
    are its settings as keywords (``dedup(df, threshold=0.9)``, ``dedup(df, "simhash",
    max_distance=8)``), applied to the config given or to the method's defaults; ``keep`` picks
    the kept document of each cluster (``first`` or ``longest``); ``cluster`` how clusters are
    made: ``components`` (connected components of the verified pairs: a removed document may be
    below the threshold to its kept one, joined through others) or ``center`` (greedy center
    clustering in ``keep`` order: every removed document is a verified neighbour of its kept one);
    ``engine`` runs the job (default: the local engine with ``workers`` threads, every core when
    None, and a budget of ``memory`` bytes or a size such as ``"2GB"``, past which it spills to
    ``tmp_dir``: :mod:`neardup.core.budget`); ``html`` strips markup from the text field
    (``main_content``: keep each page's main block). ``paths`` may hold files, folders of shards,
    globs, ``-`` and fsspec URLs; ``input_format`` overrides their extensions
    (:mod:`neardup.io.paths`). ``progress`` shows the job (:mod:`neardup.core.progress`: None,
    the default, a bar per stage in a notebook and elsewhere one line on stderr while kernels
    compile on a first run; False nothing; True the bars anywhere; or a display object);
    ``on_stage(name)`` and ``on_batch(documents)`` follow the job too; ``read_stats``, when given,
    is the :class:`~neardup.io.policy.ReadStats` the first pass over the files fills as it reads
    (bytes read, documents, skips), for a progress display.

    ``id_policy="line"`` (files, with ``id_field``): a record whose id is missing, empty or repeats
    an earlier record's gets the id ``FILE:LINE`` instead of being a bad record (counted in
    ``read_stats.line_ids``). ``record_skipped``: keep ``(path, line, reason, message)`` of every
    record ``on_error="skip"`` skipped in ``read_stats.details``.

    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> docs = ["the quick brown fox jumps over the lazy dog near the river bank today"] * 2
    >>> _ = (d / "in.jsonl").write_text("".join(json.dumps({"text": t}) + "\\n" for t in docs))
    >>> dedup([str(d / "in.jsonl")]).n_removed
    1
    >>> dedup(docs + ["an unrelated text about something else"], threshold=0.9)
    DedupResult(method='minhash', threshold=0.9, documents=3, removed=1, clusters=1)
    """
    method = method_config(method, options)
    if getattr(method, "verify", None) == "edit":
        require_rapidfuzz()  # before the whole read and sketch
    keep = check("keep", keep, Choice(("first", "longest")))
    cluster = check("cluster", cluster, Choice(CLUSTERINGS))
    run_pairs = want_pairs or cluster == "center"
    workers = check("workers", workers, Optional(Integer(1, MAX_WORKERS)))
    batch_size = check("batch_size", batch_size, Integer(1, MAX_BATCH_SIZE))
    if engine is not None and workers is not None:
        raise conflict("give either engine or workers (the engine has its own workers)")
    if engine is not None and (memory is not None or tmp_dir is not None):
        raise conflict("give either engine or memory/tmp_dir (the engine has its own budget)")
    id_policy = check("id_policy", id_policy, Choice(("field", "line")))
    if id_policy == "line" and id_field is None:
        raise conflict("id_policy='line' needs an id_field")
    shown = _Callbacks(display_for(progress), on_batch, on_stage)
    if read_stats is None:
        read_stats = ReadStats()
    if record_skipped and read_stats.details is None:
        read_stats.details = []
    if is_in_memory(paths):
        if html or main_content:
            raise conflict("html/main_content apply to input files, not to in-memory data")
        texts, ids = texts_and_ids(paths, text_field, id_field)
        read_stats.documents = len(texts)
        engine = engine or LocalEngine(workers or default_workers(), memory=memory, tmp_dir=tmp_dir)
        mem = InMemorySource(texts, ids, batch_size=batch_size)
        job = shown.run(
            method.name, lambda p: engine.run(method.plan(), mem, keep=keep, want_pairs=run_pairs, progress=p)
        )
        return _result(method, _clustered(job, cluster, keep, want_pairs), read_stats, mem, cluster)
    options = ReadOptions(text_field, id_field, on_error, html, main_content, batch_size, id_policy)
    source = FileSource(paths, options, input_format=input_format, stats=read_stats)
    engine = engine or LocalEngine(workers or default_workers(), memory=memory, tmp_dir=tmp_dir)
    job = shown.run(
        method.name, lambda p: engine.run(method.plan(), source, keep=keep, want_pairs=run_pairs, progress=p)
    )
    return _result(method, _clustered(job, cluster, keep, want_pairs), read_stats, source, cluster)


def _result(method, clustered, read_stats, source, cluster) -> DedupResult:
    job, found = clustered
    return DedupResult(method, job, read_stats, source, cluster, found)


def _clustered(job: JobResult, cluster: str, keep: str, want_pairs: bool) -> tuple[JobResult, int | None]:
    """``job`` with its clusters made by ``cluster`` from its verified pairs (the engine's are
    connected components), on this process whatever the engine, so every engine and worker
    count gives the same clusters; the pairs are dropped unless asked for, their number kept."""
    if cluster == "components":
        return job, None
    n = len(job.ids)
    a, b, s = job.pairs
    root, kept, similarity = center_clusters(n, a, b, s, keep_order(n, keep, np.asarray(job.lengths)))
    job = replace(job, root=root, kept=kept, similarity=similarity, pairs=job.pairs if want_pairs else None)
    return job, len(a)
