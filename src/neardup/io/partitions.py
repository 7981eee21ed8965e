"""Input files as partitions that another process can read on its own: the documents of a job
described by ``(path, byte range)``, never shipped as text.

:class:`FileSource` is the :class:`~neardup.core.documents.DocumentSource` of a job over files
(what :func:`neardup.dedup` reads). Called, it streams the documents on this process, exactly as
:func:`~neardup.io.read.read_documents`. An engine that reads on other machines (the Dask
engine) asks it instead for :meth:`FileSource.parts`: small picklable :class:`FilePart`
descriptions, each read by :meth:`FilePart.read` wherever it runs, through fsspec.

How files are split (:func:`split_ranges`):

* an uncompressed JSON Lines file larger than its share (the input's bytes / ``target``
  partitions) is cut into byte ranges by the Hadoop/Dask rule: a range ``[start, end)`` begins
  after the first ``\\n`` at or after ``start`` (at 0 when ``start`` is 0) and ends after the first
  ``\\n`` at or after ``end`` (the line that crosses ``end`` belongs to it), so the ranges of a
  file hold each of its lines exactly once;
* every other input (compressed JSONL, CSV, whose records may span lines, Parquet, Arrow, a
  folder of ``.txt``/``.html`` files) is one partition.

Document ids ``PATH:LINE`` need the line number where a range starts: :func:`locate_range` (run
where the data is, one small answer per range) finds the range's true bounds and counts its
newlines, and :func:`line_bases` prefix-sums those counts per file. Read this way, the
concatenated partitions give the documents, ids, errors (``file:line``) and skip counters of
:func:`~neardup.io.read.read_documents`, in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial

from ..core.documents import DocBatch
from ..core.errors import LinesNeeded
from ..core.parallel import Threads
from ..text.html import html_to_text
from .formats import compression
from .jsonl import _scan_jsonl_blocks
from .paths import file_size, open_binary
from .policy import Policy, ReadStats, make_policy, unreadable, unreadable_errors
from .read import _batches, batched, resolve_inputs, scan
from .streams import BLOCK, StreamDamage, count_newlines, damaged

__all__ = [
    "FilePart",
    "FileSource",
    "LinesNeeded",
    "ReadOptions",
    "count_lines",
    "line_bases",
    "locate_range",
    "merge_stats",
    "split_ranges",
]

PARTITION_BYTES = 32 << 20
"""Default partition size: splittable input bytes per partition."""


@dataclass(frozen=True)
class ReadOptions:
    """How records are read (the arguments of :func:`~neardup.io.read.read_documents`)."""

    text_field: str = "text"
    id_field: str | None = None
    on_error: str = "fail"
    html: bool = False
    main_content: bool = False
    batch_size: int = 2048
    id_policy: str = "field"
    utf8_texts: bool = False
    """JSONL texts may come as UTF-8 (:class:`~neardup.text.utf8.PackedTexts` spans, a very long
    one as :class:`~neardup.text.utf8.Utf8Text`), for a plan whose stages take them; not with
    ``html``, whose conversion needs a ``str``."""

    def policy(self, stats: ReadStats | None, snapshot: dict | None = None) -> Policy:
        """The reading policy; ``snapshot``: the first pass's (a later pass refuses changed files)."""
        pol = make_policy(
            self.text_field,
            self.id_field,
            self.on_error,
            stats,
            self.html,
            self.main_content,
            self.id_policy,
            snapshot,
        )
        return replace(pol, utf8_texts=True) if self.utf8_texts and not self.html else pol


@dataclass(frozen=True)
class FilePart:
    """One partition of the input: a whole file (``end`` None) or bytes ``[begin, end)`` of an
    uncompressed JSONL file whose first line is line ``first_line`` (None: not counted; reading
    it raises :class:`~neardup.core.errors.LinesNeeded` at the first record that needs a line
    number, and :meth:`FileSource.number_lines` gives it). ``source`` numbers the expanded input
    it belongs to (its reading order)."""

    source: int
    path: str
    fmt: str
    begin: int = 0
    end: int | None = None
    first_line: int | None = 1
    options: ReadOptions = ReadOptions()

    def load(self) -> tuple[list[DocBatch], ReadStats]:
        """The partition's documents as batches numbered from 0, and what reading them counted
        (:class:`~neardup.core.documents.DocumentPart`)."""
        stats = ReadStats(details=[])  # every skip's details: the driver keeps them when --skipped asks
        return self.batches(self.options, stats), stats

    def describe(self) -> str:
        return self.path if self.end is None else f"{self.path} bytes [{self.begin}, {self.end})"

    def read(self, options: ReadOptions, stats: ReadStats) -> Iterator[tuple[list[str], list[str]]]:
        """The ``(ids, texts)`` chunks of the partition's valid records, in order; ``stats``
        counts them (and what was skipped) as :func:`~neardup.io.read.read_documents` would."""
        pol = options.policy(stats)
        if self.end is None:
            chunks = scan(self.path, self.fmt, pol, False, options.batch_size)
        else:
            chunks = _scan_range(self, pol)
        convert = pol.html and self.fmt != "txtdir"
        for chunk in chunks:
            stats.documents += len(chunk.ids)
            texts = [html_to_text(t, main_content=pol.main_content) for t in chunk.texts] if convert else chunk.texts
            yield chunk.ids, texts

    def batches(self, options: ReadOptions, stats: ReadStats) -> list[DocBatch]:
        """The partition's documents as batches of ``options.batch_size``, numbered from 0."""
        return list(batched(self.read(options, stats), options.batch_size))


class _Limited:
    """``read(n)`` of at most ``length`` bytes of a binary stream."""

    def __init__(self, raw, length: int) -> None:
        self._raw = raw
        self._left = length

    def read(self, size: int) -> bytes:
        if self._left <= 0:
            return b""
        data = self._raw.read(min(size, self._left))
        self._left -= len(data)
        return data

    def readinto(self, buffer) -> int:
        """Read at most the bytes left into ``buffer`` (a writable buffer); 0 at the end."""
        if self._left <= 0:
            return 0
        with memoryview(buffer) as view:
            n = self._raw.readinto(view[: min(len(view), self._left)]) or 0
        self._left -= n
        return n

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _scan_range(part: FilePart, pol: Policy):
    if part.begin == 0:
        pol.stats.files += 1  # a file counts once, with its first range
    pol.opening(part.path)
    try:
        raw = open_binary(part.path)
        raw.seek(part.begin)
    except OSError as exc:
        pol.reject(unreadable(part.path, exc))
        return
    records = 0
    with _Limited(raw, part.end - part.begin) as stream:
        try:
            base = None if part.first_line is None else part.first_line - 1
            for chunk in _scan_jsonl_blocks(stream, part.path, pol, base, bom=part.begin == 0, reuse=True):
                records += len(chunk.ids)
                yield chunk
        except StreamDamage as exc:  # the records before the damage are read
            pol.reject(damaged(part.path, exc, records))


def splittable(path: str, fmt: str) -> bool:
    """Whether a source can be read in byte ranges: uncompressed JSON Lines."""
    return fmt == "jsonl" and compression(path) is None


def split_ranges(sources: Sequence[tuple[str, str]], target: int) -> list[FilePart]:
    """About ``target`` partitions of ``sources`` (``(path, format)``, in reading order), in
    reading order, before :func:`locate_range`: ranges are cut at ``size * i // k``.

    >>> [(p.begin, p.end) for p in split_ranges([("x.csv", "csv")], 4)]
    [(0, None)]
    """
    sizes = [file_size(p) if splittable(p, f) else 0 for p, f in sources]
    share = max(1, math.ceil(sum(sizes) / max(1, target)))
    parts: list[FilePart] = []
    for i, ((path, fmt), size) in enumerate(zip(sources, sizes)):
        k = math.ceil(size / share) if size > share else 1
        if k <= 1 or not splittable(path, fmt):
            parts.append(FilePart(i, path, fmt))
        else:
            parts += [FilePart(i, path, fmt, size * j // k, size * (j + 1) // k) for j in range(k)]
    return parts


def _line_start_after(f, offset: int, size: int) -> int:
    """The position just after the first ``\\n`` at or after ``offset`` (``size`` when none);
    0 for offset 0."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    f.seek(offset)
    pos = offset
    while True:
        data = f.read(1 << 16)
        if not data:
            return size
        i = data.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(data)


def _newlines(f, begin: int, end: int) -> int:
    """The ``\\n`` bytes of ``[begin, end)`` of an open binary file."""
    newlines = 0
    if end > begin:
        f.seek(begin)
        left = end - begin
        while left > 0:
            data = f.read(min(BLOCK * 4, left))
            if not data:
                break
            newlines += count_newlines(data)
            left -= len(data)
    return newlines


def locate_range(part: FilePart, lines: bool = True) -> tuple[int, int, int | None]:
    """``(begin, end, newlines)``: the true bounds of a range by the splitting rule (module docs)
    and the number of ``\\n`` between them (None without ``lines``: not counted). Runs where the
    file is read; an unreadable file gives ``(start, start, 0)``, and the error comes when the
    range is read."""
    try:
        size = file_size(part.path)
        with open_binary(part.path) as f:
            begin = _line_start_after(f, part.begin, size)
            end = _line_start_after(f, part.end, size)
            newlines = _newlines(f, begin, end) if lines else None
    except unreadable_errors():
        return part.begin, part.begin, 0
    return begin, max(begin, end), newlines


def count_lines(part: FilePart) -> int:
    """The ``\\n`` bytes of a located range (0 for an unreadable file, whose error comes when
    the range is read)."""
    try:
        with open_binary(part.path) as f:
            return _newlines(f, part.begin, part.end)
    except unreadable_errors():
        return 0


def line_bases(parts: Sequence[FilePart], located: Sequence[tuple[int, int, int | None]]) -> list[FilePart]:
    """The ranges with their true bounds and first line numbers (newlines prefix-summed per
    file; None after a range whose newlines were not counted: a file's first range is line 1
    all the same); empty ranges are dropped, except a file's first (the file still counts as
    read). Whole files (``end`` None) pass unchanged."""
    out: list[FilePart] = []
    lines: dict[int, int | None] = {}
    for part, (begin, end, newlines) in zip(parts, located):
        if part.end is None:  # a whole file
            out.append(part)
            continue
        first = lines.get(part.source, 0)
        lines[part.source] = None if first is None or newlines is None else first + newlines
        if begin < end or part.begin == 0:
            out.append(replace(part, begin=begin, end=end, first_line=None if first is None else first + 1))
    return out


def merge_stats(total: ReadStats, parts: Sequence[FilePart], stats: Sequence[ReadStats], sources) -> None:
    """Add the counters of the partitions' reads (in order) to ``total``; ``sources`` is the
    expanded input list, for the per-source document counts."""
    per_source: dict[int, int] = {}
    for part, s in zip(parts, stats):
        total.files += s.files
        total.documents += s.documents
        total.skipped += s.skipped
        total.reasons.update(s.reasons)
        total.bytes_read += s.bytes_read
        total.line_ids += s.line_ids
        total.file_errors += s.file_errors
        if total.details is not None and s.details:
            total.details += s.details
        for path, seen in s.snapshot.items():  # what the workers found, for the writers' change check
            total.snapshot.setdefault(path, seen)
        per_source[part.source] = per_source.get(part.source, 0) + s.documents
    for i, (path, fmt) in enumerate(sources):
        if i in per_source:
            total.sources.append((path, fmt, per_source[i]))


class FileSource:
    """The documents of input files (see the module docs): a re-readable
    :class:`~neardup.core.documents.DocumentSource` whose first read fills ``stats``, and the
    description of its partitions for engines that read elsewhere.

    The paths are expanded once (a glob or a folder is listed once, standard input copied once),
    and checked at once: a missing path or an unknown extension raises
    :class:`~neardup.core.errors.InputError` here.
    """

    def __init__(
        self,
        paths,
        options: ReadOptions | None = None,
        *,
        input_format: str | None = None,
        stats: ReadStats | None = None,
    ) -> None:
        self.options = options or ReadOptions()
        if not isinstance(self.options.batch_size, int) or self.options.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.options.batch_size!r}")
        self.options.policy(None)  # checks the fields and on_error
        self.sources = resolve_inputs(paths, input_format)
        self.stats = stats if stats is not None else ReadStats()
        self._fresh = True

    def __call__(self, *, utf8_texts: bool = False) -> Iterator[DocBatch]:
        """Read the documents here (the first read counts into ``stats``). ``utf8_texts``: a very
        long JSONL text may come as a :class:`~neardup.text.utf8.Utf8Text` (not with ``html``,
        whose conversion needs a ``str``)."""
        return self.read_with(None, utf8_texts=utf8_texts)

    def read_with(self, threads: Threads | None, *, utf8_texts: bool = False) -> Iterator[DocBatch]:
        """:meth:`__call__`, JSON Lines scanned on ``threads`` (the engine's workers): the same
        batches (:mod:`neardup.io.jsonl_threads`)."""
        stats = self.stats if self._fresh else None
        self._fresh = False
        policy = self.options.policy(stats, None if stats is not None else self.stats.snapshot)
        if utf8_texts and not policy.html:
            policy = replace(policy, utf8_texts=True)
        return _batches(self.sources, policy, self.options.batch_size, threads)

    def with_utf8_texts(self) -> _Utf8Reads:
        """This source, reading very long JSONL texts as :class:`~neardup.text.utf8.Utf8Text` (for an
        engine running a plan whose stages take them: :attr:`neardup.core.plan.Plan.utf8_texts`)."""
        return _Utf8Reads(self)

    def claim_stats(self) -> ReadStats | None:
        """The stats to fill by a first read done elsewhere (None after the first read)."""
        stats = self.stats if self._fresh else None
        self._fresh = False
        return stats

    def parts(
        self, target: int, locate: Callable[[list[FilePart]], list[tuple[int, int, int | None]]]
    ) -> list[FilePart]:
        """About ``target`` partitions, in reading order; ``locate`` runs :func:`locate_range` on
        each byte range (the Dask engine runs it on its workers)."""
        parts = split_ranges(self.sources, target)
        ranged = [p for p in parts if p.end is not None]
        if ranged:
            found = iter(locate(ranged))
            parts = line_bases(parts, [next(found) if p.end is not None else (0, 0, 0) for p in parts])
        return [replace(p, options=self.options) for p in parts]

    def partitions(
        self, count: int | None, minimum: int, run: Callable[[Callable, list], list], lines: bool = True
    ) -> list[FilePart]:
        """:meth:`parts` for an engine (:class:`~neardup.core.documents.PartitionedSource`):
        ``count`` of them, or by default at least ``minimum`` and one per
        :data:`PARTITION_BYTES` of splittable input; the ranges are located by ``run``. Without
        ``lines`` their newlines are not counted (a range after a file's first has no first
        line number; see :meth:`number_lines`): an input whose records all have ids and no
        errors never needs them, and counting reads the input once more."""
        target = count or max(minimum, -(-self.input_bytes() // PARTITION_BYTES))
        locate = locate_range if lines else partial(locate_range, lines=False)
        return self.parts(target, lambda ranged: run(locate, ranged))

    def number_lines(self, parts: list[FilePart], run: Callable[[Callable, list], list]) -> list[FilePart]:
        """``parts`` of :meth:`partitions` with every range's first line number (the newlines of
        every range counted by ``run``), for reading the ones that raised
        :class:`~neardup.core.errors.LinesNeeded`."""
        ranged = [p for p in parts if p.end is not None]
        found = iter(run(count_lines, ranged) if ranged else [])
        return line_bases(parts, [(p.begin, p.end, next(found)) if p.end is not None else (0, 0, 0) for p in parts])

    def add_read_stats(self, stats: ReadStats, parts: list[FilePart], found: list[ReadStats]) -> None:
        """Add the counters of the partitions' reads (in order) to ``stats``."""
        merge_stats(stats, parts, found, self.sources)

    @property
    def partitionable(self) -> bool:
        """Whether partitions may be read apart (not with ``id_policy="line"``, which needs every
        id read before a record's to tell a repeated one)."""
        return self.options.id_policy == "field"

    def input_bytes(self) -> int:
        """Bytes of the inputs that can be split (uncompressed JSONL), for sizing partitions."""
        return sum(file_size(p) for p, f in self.sources if splittable(p, f))


@dataclass(frozen=True)
class _Utf8Reads:
    """A :class:`FileSource` read with ``utf8_texts``, on this thread or on the engine's."""

    source: FileSource

    def __call__(self) -> Iterator[DocBatch]:
        return self.source.read_with(None, utf8_texts=True)

    def read_with(self, threads: Threads | None) -> Iterator[DocBatch]:
        return self.source.read_with(threads, utf8_texts=True)
