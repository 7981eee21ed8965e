"""``neardup dedup``: remove near-duplicates from files.

Exit codes: 0 success, 1 data error (the message names the file and line), 2 usage error.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

import click

from ..api import DedupResult, dedup
from ..core.errors import NeardupError
from ..incremental import AgainstResult, match_against
from ..index.durable import DurableIndex
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
from .safety import check_output_paths, interrupts


def _check_output_path(ctx, param, value):
    if value is None or (param.name == "output" and (value == "-" or value.endswith(("/", os.sep)))):
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
    "extension: .jsonl (.gz/.zst), .csv, .parquet; '-' writes JSON Lines to standard output; a folder "
    "ending in '/' gets one JSON Lines part per input file (OUT/part-00000.jsonl, ...), in reading order.",
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
@click.option(
    "--against",
    "against_path",
    default=None,
    help="Also remove documents that are near-duplicates of anything in this index (`neardup index create`); "
    "the index's method settings are used.",
)
@click.option(
    "--update",
    is_flag=True,
    help="With --against: add the kept documents to the index (after the outputs are written).",
)
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
    against_path,
    update,
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
      neardup dedup shards/ -o kept/ --engine dask --workers 8
    """
    reject_foreign_options(ctx, method)
    try:
        config = build_config(ctx, method, method_params)
    except NeardupError as exc:  # a word list that cannot be read
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)

    if update and against_path is None:
        raise click.UsageError("--update needs --against INDEX")
    check_output_paths(
        list(inputs) + ([against_path] if against_path else []),
        {"-o": output, "--clusters": clusters_path, "--pairs": pairs_path},
    )
    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    against = None
    try:
        with (
            interrupts(),
            against_index(against_path, update, method, config) as index,
            chosen_engine(engine, scheduler, partitions, workers) as job_engine,
            _progress(show_progress) as progress,
        ):
            config = index.config if index is not None else config
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
            keep_mask = result.keep_mask
            if index is not None:
                progress.stage("matching the index")
                t0 = time.perf_counter()
                against = match_against(index, result.source, result.root, result.keep_mask)
                keep_mask = against.keep_mask
                result.timings["against index"] = time.perf_counter() - t0
                clash = [i for i in against.kept_ids if i in index] if update else []
                if clash:
                    raise NeardupError(
                        f"{len(clash):,} kept document(s) have ids the index holds already, such as {clash[0]!r}, "
                        "with other text; nothing was written or added (give new ids, or remove them from the index)"
                    )
            progress.stage("writing")
            t0 = time.perf_counter()
            if output.endswith(("/", os.sep)):
                _write_parts(result, keep_mask, output, text_field, id_field, on_error)
            else:
                _write_output(result, keep_mask, inputs, output, text_field, id_field, on_error, input_format)
            if clusters_path:
                _write_clusters(result, clusters_path, against)
            if pairs_path:
                _write_pairs(result, pairs_path)
            result.timings["write"] = time.perf_counter() - t0
            if update:
                t0 = time.perf_counter()
                against.add_kept_to(index)
                result.timings["index update"] = time.perf_counter() - t0
    except (NeardupError, OSError) as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        _print_summary(result, config.name, time.perf_counter() - started, against, update)


def _write_output(result, keep, inputs, output, text_field, id_field, on_error, input_format) -> None:
    with _output_file(output) as target:
        write_kept(
            inputs,
            keep,
            target,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            all_valid=result.read_stats.skipped == 0,
            input_format=input_format,
            snapshot=result.read_stats.snapshot,
        )


def _write_parts(result, keep, out_dir: str, text_field, id_field, on_error) -> None:
    """One JSON Lines part per input source (every shard of a folder, every match of a glob), in
    reading order: ``out_dir/part-00000.jsonl``, ... (a part may be empty)."""
    start = 0
    for i, (path, fmt, n) in enumerate(result.read_stats.sources):
        write_kept(
            [path],
            keep[start : start + n],
            os.path.join(out_dir, f"part-{i:05d}.jsonl"),
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            all_valid=result.read_stats.skipped == 0,
            input_format=None if fmt == "txtdir" else fmt,
            snapshot=result.read_stats.snapshot,
        )
        start += n


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


def _write_clusters(result: DedupResult, path: str, against: AgainstResult | None = None) -> None:
    """id, cluster (its kept document; with --against, the index's document for a removed cluster), similarity."""
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    cluster, similarity = ids[result.kept], result.similarity
    if against is not None:
        hit = ~np.isnan(against.match_similarity)
        cluster = np.where(hit, np.asarray(against.match_id, dtype=object), cluster)
        similarity = np.where(hit, against.match_similarity, similarity)
    write_table({"id": ids, "cluster": cluster, "similarity": similarity}, path)


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


@contextmanager
def against_index(path: str | None, update: bool, method: str, config):
    """The index of ``--against`` (open for writing with ``--update``), or None. Its settings rule:
    method options that differ from both the defaults and the index's are a usage error."""
    if path is None:
        yield None
        return
    from ..methods.registry import config_to_dict, get_method

    with DurableIndex.open(path, "a" if update else "r") as index:
        given = config_to_dict(config)
        if given != config_to_dict(get_method(method)()) and given != config_to_dict(index.config):
            raise click.UsageError(
                f"the method options disagree with the index {path} (made with "
                f"{index.config.name} {index.config.to_json()}); leave them out to use the index's"
            )
        yield index


def _print_summary(
    result: DedupResult, method: str, total: float, against: AgainstResult | None = None, update: bool = False
) -> None:
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
    removed = result.n_removed if against is None else int(result.n_documents - against.keep_mask.sum())
    table.add_row("removed", f"{removed:,}")
    if against is not None:
        table.add_row("  in a cluster with a match in the index", f"{against.n_removed_by_index:,}")
    table.add_row("kept", f"{result.n_documents - removed:,}")
    if update:
        table.add_row("added to the index", f"{len(against.kept_ids):,}")
    for label, value in result.stats.items():
        table.add_row(label, value)
    for stage, seconds in result.timings.items():
        table.add_row(f"time {stage}", f"{seconds:.2f} s")
    table.add_row("time total", f"{total:.2f} s")
    console.print(table)
    for message in rs.file_errors:  # a file skipped or read in part: which one, and what was lost
        console.print(f"skipped: {message}", soft_wrap=True, markup=False, highlight=False)
