"""What a running command shows on stderr: its progress, the first run's kernel compilation, its summary.

:class:`JobProgress` is the live display of a dedup job on a terminal (rich): the stage, documents
done and their rate, and where the total is known a percentage and an estimated time left; in
the first pass over the inputs by bytes read out of the inputs' total size
(:func:`input_bytes`: local uncompressed files), in later passes by documents out of those
read. It is shown only when stderr is a terminal; otherwise :class:`NoProgress` shows nothing.

:func:`compile_notice` watches numba compile its kernels (numba's ``numba:compile`` event, which
fires only for a kernel that is not cached): the first run of a job, or the first after an
upgrade, compiles each kernel the job uses once, which takes a while, so the display says
"compiling kernels (first run only, about N s)" with a spinner and the time so far; without a
terminal the notice is one line. :func:`print_summary` ends a run with the counts, the share
removed ("removed 46 of 360 (12.8%)"), the output paths and the time of each stage.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.progress import FIRST_RUN_SECONDS, compile_message, first_run_seconds, watch_compiles

__all__ = [
    "FIRST_RUN_SECONDS",
    "CompileClock",
    "JobProgress",
    "NoProgress",
    "compile_message",
    "compile_notice",
    "first_run_seconds",
    "input_bytes",
    "print_summary",
    "removed_share",
    "sources_bytes",
]


def input_bytes(inputs, input_format: str | None = None) -> int | None:
    """The total size of the inputs when every source is a local uncompressed JSON Lines, CSV,
    Parquet or Arrow file (what the readers count in ``ReadStats.bytes_read``; standard input
    counts, as the temporary file it is copied to), else None."""
    from ..io.read import resolve_inputs

    if any("://" in str(p) for p in inputs):
        return None  # not worth listing remote folders twice
    try:
        sources = resolve_inputs(list(inputs), input_format)
    except Exception:  # the job itself reports bad inputs
        return None
    return sources_bytes(sources)


def sources_bytes(sources) -> int | None:
    """:func:`input_bytes` of resolved inputs, ``(path, format)`` pairs."""
    total = 0
    for path, fmt in sources:
        if fmt == "txtdir" or not isinstance(path, str) or "://" in path or path == "-":
            return None
        if path.endswith((".gz", ".zst")):
            return None  # bytes_read counts the decompressed stream
        try:
            total += os.path.getsize(path)
        except OSError:
            return None
    return total or None


class NoProgress:
    """The display of a run without a terminal: nothing."""

    def advance(self, n: int) -> None:
        pass

    def stage(self, name: str) -> None:
        pass


class JobProgress:
    """A live rich display of a job on ``console``; ``stats`` is the job's first-pass
    :class:`~neardup.io.policy.ReadStats` and ``total_bytes`` the inputs' size, when known."""

    def __init__(
        self, console, stats=None, total_bytes: int | None = None, clock: Callable[[], float] = time.monotonic
    ):
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.stats, self.total_bytes, self._clock = stats, total_bytes, clock
        self.progress = Progress(
            SpinnerColumn(finished_text="[green]done"),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = None
        self._compile_task = None
        self._first = True  # the first stage reads the inputs
        self._stage_start = clock()
        self.done = 0

    def __enter__(self) -> JobProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def stage(self, name: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=1, total=1, info="")
            self._first = False
        self.task = self.progress.add_task(name, total=None, info="")
        self._stage_start = self._clock()
        self.done = 0

    def fraction(self) -> float | None:
        """How much of the current stage is done, where that is known."""
        if self._first:
            if self.stats is None or not self.total_bytes:
                return None
            return min(self.stats.bytes_read / self.total_bytes, 1.0)
        total = self.stats.documents if self.stats is not None else 0
        return min(self.done / total, 1.0) if total else None

    def advance(self, n: int) -> None:
        self.done += n
        elapsed = max(self._clock() - self._stage_start, 1e-9)
        info = f"{self.done:,} documents, {self.done / elapsed:,.0f}/s"
        f = self.fraction()
        if f is None:
            self.progress.update(self.task, info=info)
            return
        if f > 0:
            info = f"{f:.0%}  ETA {_duration(elapsed * (1 - f) / f)}  {info}"
        self.progress.update(self.task, total=1.0, completed=f, info=info)

    # the kernel compile notice
    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        text = f"{message}: {kernel}"
        if self._compile_task is None:
            self._compile_task = self.progress.add_task(text, total=None, info="")
        self.progress.update(self._compile_task, description=text, visible=True)

    def compiled(self, seconds: float) -> None:
        if self._compile_task is not None:
            self.progress.update(self._compile_task, visible=False)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@contextmanager
def job_progress(enabled: bool, stats=None, total_bytes: int | None = None, console=None) -> Iterator[Any]:
    """A :class:`JobProgress` on stderr (or ``console``) when ``enabled``, else a :class:`NoProgress`."""
    if not enabled:
        yield NoProgress()
        return
    if console is None:
        from rich.console import Console

        console = Console(stderr=True)
    with JobProgress(console, stats, total_bytes) as display:
        yield display


class CompileClock:
    """Seconds numba spent compiling kernels (or waiting for the subprocesses that compile them
    ahead), by the job stage that was running: :func:`compile_notice` fills it, the caller names
    the stage (``stage``) as the job moves on, and :meth:`apart` takes the time out of the stages."""

    def __init__(self) -> None:
        self.stage: str | None = None
        self.by_stage: dict[str | None, float] = {}

    @property
    def total(self) -> float:
        return sum(self.by_stage.values())

    def apart(self, timings: dict[str, float], name: str = "compile (first run)") -> None:
        """Take the compile time out of the stages it was booked in and give it its own entry
        ``name`` (only when it is more than 10 ms: a warm cache compiles nothing)."""
        if self.total < 0.01:
            return
        for stage, seconds in self.by_stage.items():
            if stage in timings:
                timings[stage] = max(timings[stage] - seconds, 0.0)
        timings[name] = self.total


@contextmanager
def compile_notice(method: str, display=None, echo: Callable[[str], None] | None = None) -> Iterator[CompileClock]:
    """While the block runs, tell when numba compiles a kernel (not cached yet): on a
    :class:`JobProgress` ``display`` as a line with a spinner and the kernel's name, else once
    through ``echo`` (a line on stderr); with neither, nothing is shown
    (:func:`~neardup.core.progress.watch_compiles`). Yields a :class:`CompileClock` that adds up
    the compile time by stage either way."""
    clock = CompileClock()
    with watch_compiles(_Notice(clock, display, echo), method):
        yield clock


class _Notice:
    """The compile notice on a :class:`JobProgress`, or once through ``echo``, and the time of each
    compile booked to the clock's stage."""

    def __init__(self, clock: CompileClock, display, echo: Callable[[str], None] | None) -> None:
        self._clock, self._echo, self._told, self._spent = clock, echo, False, 0.0
        self._display = display if isinstance(display, JobProgress) else None

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        if self._display is not None:
            self._display.compiling(message, seconds, kernel)
        elif self._echo is not None and not self._told:
            self._told = True
            self._echo(f"neardup: {message}")

    def compiled(self, seconds: float) -> None:
        took, self._spent = seconds - self._spent, seconds
        clock = self._clock
        clock.by_stage[clock.stage] = clock.by_stage.get(clock.stage, 0.0) + took
        if self._display is not None:
            self._display.compiled(seconds)


def removed_share(removed: int, total: int) -> str:
    """``"46 of 360 (12.8%)"``."""
    pct = 100.0 * removed / total if total else 0.0
    return f"{removed:,} of {total:,} ({pct:.1f}%)"


def print_summary(
    console,
    result,
    method: str,
    total_seconds: float,
    outputs: list[tuple[str, str]],
    against=None,
    update: bool = False,
) -> None:
    """The end of a dedup run on ``console``: counts, the share removed, where the outputs went
    (``outputs``: (what, path); ``-`` is standard output), the time of each stage."""
    from rich.table import Table

    rs = result.read_stats
    removed = result.n_removed if against is None else int(result.n_documents - against.keep_mask.sum())
    table = Table(title=f"neardup dedup --method {method}", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("documents read", f"{result.n_documents:,}")
    table.add_row("skipped", f"{rs.skipped:,}")
    for reason, count in sorted(rs.reasons.items()):
        table.add_row(f"  {reason}", f"{count:,}")
    table.add_row("empty (no features)", f"{result.empty:,}")
    table.add_row("clusters (2+ documents)", f"{result.n_clusters:,}")
    table.add_row("removed", removed_share(removed, result.n_documents))
    if against is not None:
        table.add_row("  in a cluster with a match in the index", f"{against.n_removed_by_index:,}")
    table.add_row("kept", f"{result.n_documents - removed:,}")
    if update:
        table.add_row("added to the index", f"{len(against.kept_ids):,}")
    for label, value in result.summary.items():
        table.add_row(label, value)
    for stage, seconds in result.timings.items():
        table.add_row(f"time {stage}", f"{seconds:.2f} s")
    table.add_row("time total", f"{total_seconds:.2f} s")
    console.print(table)
    for message in rs.file_errors:  # a file skipped or read in part: which one, and what was lost
        console.print(f"skipped: {message}", soft_wrap=True, markup=False, highlight=False)
    written = "".join(f"; {what}: {'standard output' if path == '-' else path}" for what, path in outputs)
    console.print(f"removed {removed_share(removed, result.n_documents)}{written}", soft_wrap=True, markup=False)
