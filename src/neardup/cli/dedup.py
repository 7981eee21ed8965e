"""``neardup dedup``: remove near-duplicates from files.

Exit codes: 0 success, 1 data error (the message names the file and line), 2 usage error.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import click

from ..api import DedupResult, dedup
from ..core.errors import NeardupError
from ..io import output_format, write_kept, write_table
from ..io.paths import INPUT_FORMATS
from .common import EXIT_DATA_ERROR, SETTINGS
from .engine_options import add_engine_options, chosen_engine
from .options import (
    MethodCommand,
    add_method_options,
    build_config,
    reject_foreign_options,
)


def _check_output_path(ctx, param, value):
    if value is None or (value == "-" and param.name == "output"):
        return value
    try:
        output_format(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


@click.command("dedup", cls=MethodCommand, context_settings=SETTINGS)
@click.argument("inputs", nargs=-1, required=True, type=str)
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    callback=_check_output_path,
    help="Where to write the kept records, with all their fields; the format follows the "
    "extension: .jsonl (.gz/.zst), .csv, .parquet; '-' writes JSON Lines to standard output.",
)
@click.option(
    "--input-format",
    type=click.Choice(list(INPUT_FORMATS)),
    default=None,
    help="Read every input as this format, whatever its extension (needed for '-', standard input).",
)
@click.option(
    "--keep",
    type=click.Choice(["first", "longest"]),
    default="first",
    show_default=True,
    help="Which document of each cluster is kept.",
)
@click.option(
    "--clusters",
    "clusters_path",
    default=None,
    callback=_check_output_path,
    help="Also write one row per document: id, cluster (id of its kept document), similarity.",
)
@click.option(
    "--pairs",
    "pairs_path",
    default=None,
    callback=_check_output_path,
    help="Also write every verified pair: id_a, id_b, similarity.",
)
@add_method_options
@click.option("--text-field", default="text", show_default=True, help="Field holding the text.")
@click.option(
    "--id-field", default=None, help="Field holding the document id [default: 'id' when present, else FILE:LINE]."
)
@click.option(
    "--html",
    is_flag=True,
    help="The text field holds HTML: remove markup before comparing (.html/.htm files in a directory always are).",
)
@click.option("--main-content", is_flag=True, help="With HTML, keep only each page's main content block.")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="On a bad record: stop with an error naming file and line, or skip and count it.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Threads [default: all cores] (with --engine dask: worker processes of the LocalCluster); "
    "results do not depend on it.",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=2048, show_default=True, help="Documents per batch.")
@add_engine_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary.")
@click.pass_context
def dedup_cmd(
    ctx,
    inputs,
    output,
    input_format,
    method,
    keep,
    clusters_path,
    pairs_path,
    text_field,
    id_field,
    html,
    main_content,
    on_error,
    workers,
    batch_size,
    engine,
    scheduler,
    partitions,
    quiet,
    **method_params,
):
    """Remove near-duplicates from INPUTS: JSONL (.gz/.zst), CSV, Parquet or Arrow files; folders of
    such shards (read recursively, in sorted order) or of .txt/.html files; quoted globs; '-' for
    standard input (with --input-format); fsspec URLs (s3://, gs://, https://, hf://) where the
    filesystem package is installed.

    Writes the kept records to OUTPUT; optionally the clusters and the verified pairs. Options of a
    method other than --method are refused.

    \b
    Examples:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup dedup pages/ -o kept.parquet --threshold 0.7 --char-ngram 5
      neardup dedup crawl.jsonl.zst -o exact.jsonl --method exact --html
      neardup dedup 'shards/**/*.parquet' -o kept.parquet
      cat docs.jsonl | neardup dedup - --input-format jsonl -o - > kept.jsonl
    """
    reject_foreign_options(ctx, method)
    try:
        config = build_config(ctx, method, method_params)
    except NeardupError as exc:  # a word list that cannot be read
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)

    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    try:
        with chosen_engine(engine, scheduler, partitions, workers) as job_engine, _progress(show_progress) as progress:
            result = dedup(
                inputs,
                config,
                keep=keep,
                workers=workers if job_engine is None else None,
                engine=job_engine,
                batch_size=batch_size,
                text_field=text_field,
                id_field=id_field,
                on_error=on_error,
                html=html,
                main_content=main_content,
                input_format=input_format,
                want_pairs=pairs_path is not None,
                on_batch=progress.advance,
                on_stage=progress.stage,
            )
            progress.stage("writing")
            t0 = time.perf_counter()
            with _output_file(output) as target:
                write_kept(
                    inputs,
                    result.keep_mask,
                    target,
                    text_field=text_field,
                    id_field=id_field,
                    on_error=on_error,
                    all_valid=result.read_stats.skipped == 0,
                    input_format=input_format,
                )
            if clusters_path:
                _write_clusters(result, clusters_path)
            if pairs_path:
                _write_pairs(result, pairs_path)
            result.timings["write"] = time.perf_counter() - t0
    except NeardupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        _print_summary(result, method, time.perf_counter() - started)


@contextmanager
def _output_file(output: str):
    """``output`` itself, or for ``-`` a temporary JSON Lines file copied to standard output."""
    if output != "-":
        yield output
        return
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="neardup-out-") as tmp:
        path = f"{tmp}/kept.jsonl"
        yield path
        with open(path, "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
        sys.stdout.buffer.flush()


def _write_clusters(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    write_table({"id": ids, "cluster": ids[result.kept], "similarity": result.similarity}, path)


def _write_pairs(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    a, b, sim = result.pairs
    write_table({"id_a": ids[a], "id_b": ids[b], "similarity": sim}, path)


class _NoProgress:
    def advance(self, n: int) -> None:
        pass

    def stage(self, name: str) -> None:
        pass


@contextmanager
def _progress(enabled: bool):
    """A rich progress display on stderr with ``advance(n_documents)`` and ``stage(name)``."""
    if not enabled:
        yield _NoProgress()
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(finished_text="[green]done"),
        TextColumn("{task.description}"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )

    class Display:
        def __init__(self) -> None:
            self.task = None
            self.start = time.perf_counter()
            self.done = 0

        def advance(self, n: int) -> None:
            self.done += n
            rate = self.done / max(time.perf_counter() - self.start, 1e-9)
            progress.update(self.task, info=f"{self.done:,} documents, {rate:,.0f}/s")

        def stage(self, name: str) -> None:
            if self.task is not None:
                progress.update(self.task, completed=1)
            self.task = progress.add_task(name, total=1, info="")
            self.start = time.perf_counter()
            self.done = 0

    with progress:
        yield Display()


def _print_summary(result: DedupResult, method: str, total: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    rs = result.read_stats
    table = Table(title=f"neardup dedup --method {method}", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("documents read", f"{result.n_documents:,}")
    table.add_row("skipped", f"{rs.skipped:,}")
    for reason, count in sorted(rs.reasons.items()):
        table.add_row(f"  {reason}", f"{count:,}")
    table.add_row("empty (no features)", f"{result.empty:,}")
    table.add_row("clusters (2+ documents)", f"{result.n_clusters:,}")
    table.add_row("removed", f"{result.n_removed:,}")
    table.add_row("kept", f"{result.n_documents - result.n_removed:,}")
    for label, value in result.stats.items():
        table.add_row(label, value)
    for stage, seconds in result.timings.items():
        table.add_row(f"time {stage}", f"{seconds:.2f} s")
    table.add_row("time total", f"{total:.2f} s")
    console.print(table)
