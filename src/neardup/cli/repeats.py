"""``neardup repeats``: remove repeated spans, lines or paragraphs inside documents.

Exit codes as ``neardup dedup``: 0 success, 1 data error (the message names the file and line;
also no documents read, and an output that cannot be written), 2 usage error, 130 Ctrl-C, 143
SIGTERM. The outputs (``-o``, ``--spans``, ``--skipped``, ``--stats`` last) are replaced together
when all are written, or not at all.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

import click
import orjson

from .. import __version__
from ..core.errors import NeardupError
from ..io import OutputSet, write_table
from ..io.policy import ReadStats
from ..io.write import write_bytes
from ..repeats import RepeatsConfig
from .common import EXIT_DATA_ERROR, SETTINGS, make_console
from .dedup import nothing_read
from .dedup_outputs import write_skipped
from .engine_options import add_memory_options
from .groups import option
from .progress import input_bytes, job_progress
from .read_options import (
    batch_size_option,
    check_output_path,
    id_field_option,
    input_format_option,
    on_error_option,
    stats_option,
    text_field_option,
)
from .safety import check_output_paths, interrupts, preflight_outputs

SPAN_FIELD = "repeats"


@click.command("repeats", context_settings=SETTINGS)
@click.argument("inputs", nargs=-1, required=True, type=str)
@option(
    "-o",
    "--output",
    "output",
    group="Output",
    required=True,
    callback=check_output_path,
    help="Where to write every record with its text cleaned (other fields as read); the format follows the "
    "extension: .jsonl (.gz/.zst), .csv, .parquet; '-' writes JSON Lines to standard output.",
)
@option(
    "--mode",
    group="Repeats",
    type=click.Choice(["spans", "lines", "paragraphs"]),
    default="spans",
    show_default=True,
    help="What is removed: every span of at least --min-length tokens that occurs --min-count times (a "
    "suffix array), or every line / paragraph (blank-line separated) whose normalized text occurs --min-count times.",
)
@option(
    "--min-length",
    group="Repeats",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Spans: the least length of a removed span, in --unit.",
)
@option(
    "--unit",
    group="Repeats",
    type=click.Choice(["words", "chars", "bytes"]),
    default="words",
    show_default=True,
    help="Spans: what --min-length counts (words and chars compared normalized, bytes as they are).",
)
@option(
    "--min-count",
    group="Repeats",
    type=click.IntRange(min=2, max=255),
    default=2,
    show_default=True,
    help="Remove what occurs at least this many times in the collection.",
)
@option(
    "--keep-first/--keep-none",
    group="Repeats",
    default=True,
    show_default=True,
    help="Lines and paragraphs: keep the first occurrence (in reading order) of a repeated one, or none.",
)
@option(
    "--bloom",
    group="Repeats",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=None,
    metavar="FPR",
    help="Lines and paragraphs: count in a counting Bloom filter of bounded size with this false-positive "
    "rate (a unit seen fewer times wrongly removed) instead of the exact table.",
)
@option(
    "--bloom-items",
    group="Repeats",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="With --bloom: the distinct lines or paragraphs the filter is sized for [default: input bytes / 64, "
    "at least 1,000,000].",
)
@option(
    "--annotate",
    group="Output",
    is_flag=True,
    help=f"Write the text unchanged, with a field {SPAN_FIELD!r}: the removed ranges as [start, end] "
    "character offsets.",
)
@option(
    "--drop-empty/--keep-empty",
    group="Output",
    default=True,
    show_default=True,
    help="Leave out a record whose text is empty (or only whitespace) once cleaned, or keep it.",
)
@option(
    "--spans",
    "spans_path",
    group="Output",
    default=None,
    callback=check_output_path,
    help="Also write each removed range: id, start, end (character offsets), length (in tokens, or lines), "
    "occurrences, other_id (another document that holds it; empty with --bloom).",
)
@stats_option
@option(
    "--skipped",
    "skipped_path",
    group="Output",
    default=None,
    metavar="PATH",
    callback=check_output_path,
    help="With --on-error skip: write file, line, reason and message of every skipped record.",
)
@input_format_option
@text_field_option
@id_field_option
@on_error_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Threads [default: all cores]; results do not depend on it.",
)
@batch_size_option
@option(
    "--allow-empty",
    group="Output",
    is_flag=True,
    help="Succeed when the inputs hold no documents.",
)
@add_memory_options
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary.")
def repeats_cmd(
    inputs,
    output,
    mode,
    min_length,
    unit,
    min_count,
    keep_first,
    bloom,
    bloom_items,
    annotate,
    drop_empty,
    spans_path,
    stats_path,
    skipped_path,
    input_format,
    text_field,
    id_field,
    on_error,
    workers,
    batch_size,
    allow_empty,
    memory,
    tmp_dir,
    quiet,
):
    """Remove what repeats inside the documents of INPUTS (files, folders, globs, '-', as for
    `neardup dedup`): spans of at least --min-length words found --min-count times anywhere
    in the collection (ExactSubstr: a suffix array), or repeated lines or paragraphs.

    Writes every record with its text cleaned (or, with --annotate, unchanged with the removed
    ranges); its output can go straight into `neardup dedup`.

    \b
    Examples:
      neardup repeats examples/news.jsonl -o clean.jsonl --min-length 20 --spans spans.csv
      neardup repeats crawl.jsonl.zst -o clean.jsonl --mode lines --min-count 5
      neardup repeats shards/ -o clean.parquet --mode paragraphs --bloom 0.001 --keep-none
      neardup repeats docs.jsonl -o - --min-length 30 | neardup dedup - --input-format jsonl -o kept.jsonl
    """
    from ..api import default_workers

    if mode != "spans" and any(
        click.get_current_context().get_parameter_source(p) == click.core.ParameterSource.COMMANDLINE
        for p in ("min_length", "unit")
    ):
        raise click.UsageError("--min-length and --unit set the span mode; lines and paragraphs are whole")
    if mode == "spans" and bloom is not None:
        raise click.UsageError("--bloom counts lines and paragraphs (--mode lines or paragraphs)")
    if bloom_items is not None and bloom is None:
        raise click.UsageError("--bloom-items needs --bloom")
    if skipped_path and on_error != "skip":
        raise click.UsageError("--skipped needs --on-error skip (with fail, the first bad record stops the run)")
    if output.endswith("/"):
        raise click.UsageError("-o: give a file (or '-'); a folder of parts is not written by repeats")
    named = {"-o": output, "--spans": spans_path, "--skipped": skipped_path, "--stats": stats_path}
    check_output_paths(list(inputs), named)
    try:
        preflight_outputs(list(inputs), named, ("-o",))
    except NeardupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    from ..repeats import find_repeats  # the job and its kernels, only when the command runs

    config = RepeatsConfig(mode, min_length, unit, min_count, keep_first, bloom, bloom_items)
    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    read_stats = ReadStats()
    total = input_bytes(inputs, input_format)
    try:
        with interrupts() as outcome, job_progress(show_progress, read_stats, total if show_progress else None) as p:
            p.stage("finding repeats")
            result = find_repeats(
                inputs,
                config,
                workers=workers or default_workers(),
                memory=memory,
                tmp_dir=tmp_dir,
                batch_size=batch_size,
                text_field=text_field,
                id_field=id_field,
                on_error=on_error,
                input_format=input_format,
                record_skipped=skipped_path is not None,
                read_stats=read_stats,
                on_batch=lambda n: (outcome.check(), p.advance(n)),
                bloom_items=max(1_000_000, (total or 0) // 64),
            )
            if result.n_documents == 0 and not allow_empty:
                raise NeardupError(nothing_read(inputs, result.read_stats, input_format))
            p.stage("writing")
            outcome.check()
            counts = _write(
                result,
                config,
                inputs,
                named,
                annotate,
                drop_empty,
                text_field,
                id_field,
                on_error,
                input_format,
                started,
                outcome,
            )
    except (NeardupError, OSError) as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        make_console().print(
            f"[bold]{counts['documents']:,}[/] documents: {counts['removed_ranges']:,} ranges removed "
            f"({counts['removed_chars']:,} of {counts['chars']:,} characters) from {counts['changed']:,} documents; "
            f"{counts['written']:,} written, {counts['dropped_empty']:,} left out empty "
            f"({time.perf_counter() - started:.1f}s)"
        )
    if result.read_stats.skipped:
        click.echo(f"neardup: warning: {result.read_stats.skipped:,} bad records skipped", err=True)


def _write(
    result, config, inputs, named, annotate, drop_empty, text_field, id_field, on_error, input_format, started, outcome
) -> dict:
    import pyarrow as pa

    from ..io.rewrite import write_rewritten
    from ..repeats import clean

    counts = dict(
        documents=result.n_documents, chars=0, removed_chars=0, removed_ranges=0, changed=0, written=0, dropped_empty=0
    )
    rows = {"id": [], "start": [], "end": [], "length": [], "occurrences": [], "other_id": []}
    ids = result.ids
    want_spans = named["--spans"] is not None

    def edit_one(number: int, text: str, removed: list):
        counts["chars"] += len(text)
        if removed:
            counts["changed"] += 1
            counts["removed_ranges"] += len(removed)
            counts["removed_chars"] += sum(r.end - r.start for r in removed)
            if want_spans:
                for r in removed:
                    rows["id"].append(ids[number])
                    rows["start"].append(r.start)
                    rows["end"].append(r.end)
                    rows["length"].append(r.length)
                    rows["occurrences"].append(r.occurrences)
                    rows["other_id"].append(ids[r.other] if r.other >= 0 else None)
        if annotate:
            return None, {SPAN_FIELD: [[r.start, r.end] for r in removed]}
        cleaned = clean(text, removed)
        if drop_empty and removed and not cleaned.strip():
            counts["dropped_empty"] += 1
            return None
        return (cleaned if removed else None), {}

    def edit(start: int, texts: list):
        found = result.removed_batch(start, texts)
        return [edit_one(start + k, t, r) for k, (t, r) in enumerate(zip(texts, found))]

    added = {SPAN_FIELD: pa.list_(pa.list_(pa.int64()))} if annotate else None
    outputs = OutputSet()
    stdout_copy = None
    try:
        with outputs, tempfile.TemporaryDirectory(prefix="neardup-out-") as scratch:
            t0 = time.perf_counter()
            target, staged = named["-o"], outputs
            if target == "-":
                target, staged = f"{scratch}/out.jsonl", None
                stdout_copy = target
            counts["written"] = write_rewritten(
                list(inputs),
                target,
                edit,
                result.n_documents,
                text_field=text_field,
                id_field=id_field,
                on_error=on_error,
                input_format=input_format,
                snapshot=result.read_stats.snapshot,
                outputs=staged,
                added=added,
            )
            if want_spans:
                write_table(
                    {
                        "id": pa.array(rows["id"], pa.string()),
                        "start": pa.array(rows["start"], pa.int64()),
                        "end": pa.array(rows["end"], pa.int64()),
                        "length": pa.array(rows["length"], pa.int64()),
                        "occurrences": pa.array(rows["occurrences"], pa.int64()),
                        "other_id": pa.array(rows["other_id"], pa.string()),
                    },
                    named["--spans"],
                    outputs,
                )
            if named["--skipped"]:
                write_skipped(result.read_stats.details or [], named["--skipped"], outputs)
            result.timings["write"] = time.perf_counter() - t0
            if named["--stats"]:
                body = _stats(result, config, inputs, named, counts, time.perf_counter() - started)
                write_bytes(
                    orjson.dumps(body, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n",
                    named["--stats"],
                    outputs,
                )
            outputs.commit()
            if stdout_copy is not None:
                with open(stdout_copy, "rb") as f:
                    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
                sys.stdout.buffer.flush()
    finally:
        if outputs.committed:
            outcome.replaced = True
    return counts


def _stats(result, config, inputs, named, counts, seconds) -> dict:
    from dataclasses import asdict

    rs = result.read_stats
    return {
        "neardup_version": __version__,
        "repeats": asdict(config),
        "inputs": list(inputs),
        "sources": [{"path": p, "format": f, "documents": n} for p, f, n in rs.sources],
        "outputs": {k: v for k, v in named.items() if v is not None},
        "counts": {**counts, "skipped": rs.skipped, "bytes_read": rs.bytes_read},
        "skipped_by_reason": dict(sorted(rs.reasons.items())),
        "counters": {k: float(v) for k, v in result.counters.items()},
        "seconds": {**{k: round(v, 6) for k, v in result.timings.items()}, "total": round(seconds, 6)},
    }
