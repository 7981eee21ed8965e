"""The ``neardup`` command line.

Exit codes: 0 success, 1 data error (the message names the file and line), 2 usage error.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import click

from . import __version__, io
from ._cli_common import shingling_option
from .cli_tools import COMMANDS
from .errors import InputError, NeardupError
from .dedup_minhash import DEFAULT_NGRAM, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD, MinHashConfig
from .pipeline import DedupResult, dedup

EXIT_DATA_ERROR = 1


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find near-duplicate documents: shingling, MinHash and LSH.

    Run `neardup COMMAND --help` for the options of a command.
    """


def _check_output_path(ctx, param, value):
    if value is None:
        return None
    try:
        io.output_format(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


@main.command("dedup")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", "output", required=True, callback=_check_output_path,
              help="Where to write the kept records, with all their fields; the format follows the "
                   "extension: .jsonl (.gz/.zst), .csv, .parquet.")
@click.option("--method", type=click.Choice(["minhash"]), default="minhash", show_default=True,
              help="Near-duplicate method.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=DEFAULT_THRESHOLD,
              show_default=True, help="Jaccard similarity at or above which documents are near-duplicates.")
@click.option("--ngram", type=click.IntRange(min=1), default=None,
              help=f"Word n-gram shingle size [default: {DEFAULT_NGRAM}].")
@click.option("--char-ngram", type=click.IntRange(min=1), default=None,
              help="Use character n-gram shingles of this size instead of word n-grams.")
@click.option("--strip-punctuation", is_flag=True, help="Drop punctuation before character shingling.")
@click.option("--num-perm", type=click.IntRange(min=1), default=DEFAULT_NUM_PERM, show_default=True,
              help="MinHash signature length K.")
@click.option("--bands", type=click.IntRange(min=1), default=None,
              help="LSH bands b (default: chosen from the threshold and K).")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="LSH rows per band r (default: chosen from the threshold and K).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True,
              help="Seed of the MinHash permutations.")
@click.option("--verify", type=click.Choice(["signature", "exact"]), default="signature", show_default=True,
              help="Keep a candidate pair when its signature estimate reaches the threshold, or when "
                   "the exact Jaccard of its shingle sets does (re-reads candidate texts).")
@click.option("--keep", type=click.Choice(["first", "longest"]), default="first", show_default=True,
              help="Which document of each cluster is kept.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Sketching threads [default: all cores]; results do not depend on it.")
@click.option("--text-field", default="text", show_default=True, help="Field holding the text.")
@click.option("--id-field", default=None,
              help="Field holding the document id [default: 'id' when present, else FILE:LINE].")
@click.option("--clusters", "clusters_path", default=None, callback=_check_output_path,
              help="Also write one row per document: id, cluster (id of its kept document), similarity.")
@click.option("--pairs", "pairs_path", default=None, callback=_check_output_path,
              help="Also write every verified pair: id_a, id_b, similarity.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="On a bad record: stop with an error naming file and line, or skip and count it.")
@click.option("--batch-size", type=click.IntRange(min=1), default=2048, show_default=True,
              help="Documents per sketching batch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary.")
def dedup_cmd(inputs, output, method, threshold, ngram, char_ngram, strip_punctuation, num_perm, bands, rows,
              seed, verify, keep, workers, text_field, id_field, clusters_path, pairs_path, on_error,
              batch_size, quiet):
    """Remove near-duplicates from INPUT files (JSONL[.gz|.zst], CSV, Parquet, or a directory of .txt).

    Writes the kept records to OUTPUT; optionally the clusters and the verified pairs.

    \b
    Example:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
    """
    shingling = shingling_option(ngram, char_ngram, strip_punctuation)
    try:
        config = MinHashConfig(threshold=threshold, shingling=shingling, num_perm=num_perm, seed=seed,
                               bands=bands, rows=rows, verify=verify)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    try:
        with _progress(show_progress) as progress:
            result = dedup(inputs, config, keep=keep, workers=workers, batch_size=batch_size,
                           text_field=text_field, id_field=id_field, on_error=on_error,
                           want_pairs=pairs_path is not None, on_batch=progress.advance, on_stage=progress.stage)
            progress.stage("writing")
            t0 = time.perf_counter()
            io.write_kept(inputs, result.keep_mask, output, text_field=text_field, id_field=id_field,
                          on_error=on_error)
            if clusters_path:
                _write_clusters(result, clusters_path)
            if pairs_path:
                _write_pairs(result, pairs_path)
            result.timings["write"] = time.perf_counter() - t0
    except InputError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    except NeardupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        _print_summary(result, time.perf_counter() - started)


for _command in COMMANDS:
    main.add_command(_command)


def _write_clusters(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    io.write_table({"id": ids, "cluster": ids[result.kept], "similarity": result.similarity}, path)


def _write_pairs(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    a, b, sim = result.pairs
    io.write_table({"id_a": ids[a], "id_b": ids[b], "similarity": sim}, path)


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

    progress = Progress(SpinnerColumn(finished_text="[green]done"), TextColumn("{task.description}"),
                        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                        console=Console(stderr=True), transient=True)

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


def _print_summary(result: DedupResult, total: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    rs = result.read_stats
    table = Table(title="neardup dedup", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("documents read", f"{result.n_documents:,}")
    table.add_row("skipped", f"{rs.skipped:,}")
    for reason, count in sorted(rs.reasons.items()):
        table.add_row(f"  {reason}", f"{count:,}")
    table.add_row("empty (no shingles)", f"{result.empty:,}")
    table.add_row("clusters (2+ documents)", f"{result.n_clusters:,}")
    table.add_row("removed", f"{result.n_removed:,}")
    table.add_row("kept", f"{result.n_documents - result.n_removed:,}")
    for label, value in result.stats.items():
        table.add_row(label, value)
    for stage, seconds in result.timings.items():
        table.add_row(f"time {stage}", f"{seconds:.2f} s")
    table.add_row("time total", f"{total:.2f} s")
    console.print(table)
