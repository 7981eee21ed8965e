"""``neardup dedup``: remove near-duplicates from files.

Exit codes: 0 success, 1 data error (the message names the file and line; also no documents
read, and an output that cannot be written), 2 usage error, 130 Ctrl-C, 143 SIGTERM. The outputs
are written by :mod:`neardup.cli.dedup_outputs`, as one set.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import click
import numpy as np

from .._kernels.precompile import plan_for, precompiled
from ..api import dedup, default_workers
from ..core.errors import NeardupError
from ..incremental import match_against
from ..index.durable import DurableIndex
from ..io import output_format
from ..io.policy import ReadStats
from .common import EXIT_DATA_ERROR, SETTINGS, empty_id_records, make_console, require_extras
from .config_file import config_option
from .dedup_outputs import Outputs, ReadOptions, stats_document, write_all
from .engine_options import add_engine_options, add_memory_options, chosen_engine
from .groups import option
from .options import (
    MethodCommand,
    add_method_options,
    build_config,
    reject_foreign_options,
)
from .progress import compile_notice, input_bytes, job_progress, print_summary, sources_bytes
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


@click.command("dedup", cls=MethodCommand, context_settings=SETTINGS)
@click.argument("inputs", nargs=-1, required=True, type=str)
@option(
    "-o",
    "--output",
    "output",
    group="Output",
    required=True,
    callback=check_output_path,
    help="Where to write the kept records, with all their fields; the format follows the "
    "extension: .jsonl (.gz/.zst), .csv, .parquet; '-' writes JSON Lines to standard output; a folder "
    "ending in '/' gets one JSON Lines part per input file (OUT/part-00000.jsonl, ...), in reading order; with "
    "--engine dask, one part per input partition (byte ranges of large JSONL files), written by the workers "
    "(the folder must be on a filesystem they share); in order, the parts are the one-file output.",
)
@input_format_option
@click.option(
    "--keep",
    type=click.Choice(["first", "longest"]),
    default="first",
    show_default=True,
    help="Which document of each cluster is kept.",
)
@click.option(
    "--cluster",
    type=click.Choice(["components", "center"]),
    default="components",
    show_default=True,
    help="How verified pairs make clusters: connected components (a removed document may be below the "
    "threshold to its kept one, joined through others; the summary counts them), or greedy centers in --keep "
    "order (every removed document is at or above the threshold to its kept one).",
)
@option(
    "--clusters",
    "clusters_path",
    group="Output",
    default=None,
    callback=check_output_path,
    help="Also write one row per document: id, cluster (id of its kept document), similarity.",
)
@option(
    "--pairs",
    "pairs_path",
    group="Output",
    default=None,
    callback=check_output_path,
    help="Also write every verified pair: id_a, id_b, similarity.",
)
@option(
    "--removed",
    "removed_path",
    group="Output",
    default=None,
    metavar="PATH",
    callback=check_output_path,
    help="Also write the removed records, with all their fields, like -o (format by extension).",
)
@option(
    "--annotate",
    group="Output",
    is_flag=True,
    help="Write every record to -o (none removed) with added columns: cluster (id of its cluster's kept "
    "document), cluster_size, similarity (to the kept document) and kept (true/false).",
)
@option(
    "--annotate-prefix",
    group="Output",
    default="",
    metavar="PREFIX",
    show_default=True,
    help="With --annotate: put this before the added column names (e.g. 'dedup_' gives dedup_cluster, ...).",
)
@stats_option
@option(
    "--skipped",
    "skipped_path",
    group="Output",
    default=None,
    metavar="PATH",
    callback=check_output_path,
    help="With --on-error skip: write file, line, reason and message of every skipped record "
    "(.jsonl, .csv or .parquet).",
)
@add_method_options
@text_field_option
@id_field_option
@option(
    "--id-policy",
    group="Input",
    type=click.Choice(["field", "line"]),
    default="field",
    show_default=True,
    help="With --id-field: 'field' uses its values (a missing one is a bad record); 'line' gives "
    "FILE:LINE to a record whose id is missing or repeats an earlier record's.",
)
@option(
    "--html",
    group="Input",
    is_flag=True,
    help="The text field holds HTML: remove markup before comparing (.html/.htm files in a directory always are).",
)
@option(
    "--main-content",
    group="Input",
    is_flag=True,
    help="With HTML, keep only each page's main content block (needs resiliparse: pip install 'neardup[html]').",
)
@option(
    "--main-content-heuristic",
    group="Input",
    is_flag=True,
    help="With --main-content and without resiliparse: use neardup's own main-content heuristic (other results) "
    "instead of stopping.",
)
@on_error_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Threads [default: all cores] (with --engine dask: worker processes of the LocalCluster); "
    "results do not depend on it.",
)
@batch_size_option
@option(
    "--against",
    "against_path",
    group="Index",
    default=None,
    help="Also remove documents that are near-duplicates of anything in this index (`neardup index create`); "
    "the index's method settings are used.",
)
@option(
    "--update",
    group="Index",
    is_flag=True,
    help="With --against: add the kept documents to the index (after the outputs are written).",
)
@option(
    "--allow-empty",
    group="Output",
    is_flag=True,
    help="Succeed when the inputs hold no documents (by default that is an error: a wrong path or format?).",
)
@option(
    "--no-space-check",
    group="Output",
    is_flag=True,
    help="Do not refuse to start when the free space looks too small for the outputs.",
)
@add_engine_options
@add_memory_options
@config_option
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress bars and no summary (errors, and a warning on skips, remain)."
)
@click.pass_context
def dedup_cmd(
    ctx,
    inputs,
    output,
    input_format,
    method,
    keep,
    cluster,
    clusters_path,
    pairs_path,
    removed_path,
    annotate,
    annotate_prefix,
    stats_path,
    skipped_path,
    text_field,
    id_field,
    id_policy,
    html,
    main_content,
    main_content_heuristic,
    on_error,
    workers,
    batch_size,
    engine,
    scheduler,
    partitions,
    memory,
    tmp_dir,
    against_path,
    update,
    allow_empty,
    no_space_check,
    quiet,
    **method_params,
):
    """Remove near-duplicates from INPUTS: JSONL (.gz/.zst), CSV, Parquet or Arrow files; folders of
    such shards (read recursively, in sorted order) or of .txt/.html files; quoted globs; '-' for
    standard input (with --input-format); fsspec URLs (s3://, gs://, https://, hf://) where the
    filesystem package is installed.

    Writes the kept records to OUTPUT (with --annotate: every record, with its cluster); optionally
    the removed records, the clusters, the verified pairs, the skipped records and a JSON summary.
    All outputs are replaced together when all are written, or not at all. Options of a method
    other than --method are refused.

    \b
    Examples:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup dedup pages/ -o kept.parquet --threshold 0.7 --char-ngram 5
      neardup dedup crawl.jsonl.zst -o exact.jsonl --method exact --html
      neardup dedup 'shards/**/*.parquet' -o kept.parquet
      neardup dedup shards/ -o all.parquet --annotate --stats run.json
      neardup dedup crawl.jsonl -o kept.jsonl --removed removed.jsonl --on-error skip --skipped bad.csv
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
    if annotate_prefix and not annotate:
        raise click.UsageError("--annotate-prefix needs --annotate")
    if skipped_path and on_error != "skip":
        raise click.UsageError("--skipped needs --on-error skip (with fail, the first bad record stops the run)")
    if id_policy != "field" and id_field is None:
        raise click.UsageError("--id-policy needs --id-field")
    if main_content_heuristic and not main_content:
        raise click.UsageError("--main-content-heuristic needs --main-content")
    require_extras(
        *([("edit", "--verify edit")] if getattr(config, "verify", None) == "edit" else []),
        *([("html", "--main-content")] if main_content and not main_content_heuristic else []),
        *([("dask", "--engine dask")] if engine == "dask" else []),
    )
    outs = Outputs(output, clusters_path, pairs_path, removed_path, skipped_path, stats_path, annotate, annotate_prefix)
    check_output_paths(list(inputs) + ([against_path] if against_path else []), outs.named())
    try:
        preflight_outputs(list(inputs), outs.named(), () if no_space_check else ("-o", "--removed"))
    except NeardupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    copy_workers = workers or default_workers()  # threads that copy kept JSONL lines, here whatever the engine
    read = ReadOptions(tuple(inputs), text_field, id_field, on_error, input_format, id_policy, copy_workers)
    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    against = None
    read_stats = ReadStats()
    total_bytes = input_bytes(inputs, input_format) if show_progress else None
    try:
        with (
            interrupts() as outcome,
            against_index(against_path, update, method, config) as index,
            chosen_engine(engine, scheduler, partitions, workers, memory, tmp_dir) as job_engine,
            job_progress(show_progress, read_stats, total_bytes) as progress,
            compile_notice(method, progress if show_progress else None, None if quiet else _echo_err) as clock,
            precompiled(() if job_engine is not None or index is not None else job_kernels(config, read, outs)),
        ):
            config = index.config if index is not None else config
            result = dedup(
                inputs,
                config,
                keep=keep,
                cluster=cluster,
                workers=workers if job_engine is None else None,
                engine=job_engine,
                memory=memory if job_engine is None else None,
                tmp_dir=tmp_dir if job_engine is None else None,
                batch_size=batch_size,
                text_field=text_field,
                id_field=id_field,
                id_policy=id_policy,
                on_error=on_error,
                html=html,
                main_content=main_content,
                input_format=input_format,
                want_pairs=pairs_path is not None,
                record_skipped=skipped_path is not None,
                on_batch=lambda n: (outcome.check(), progress.advance(n)),
                on_stage=lambda name: (outcome.check(), progress.stage(name), setattr(clock, "stage", name)),
                read_stats=read_stats,
                progress=False,  # the command's own display and compile notice, above
            )
            clock.apart(result.timings)  # first-run compile time on its own line, not in the stages'
            clock.stage = None
            if result.n_documents == 0 and not allow_empty:
                raise NeardupError(nothing_read(inputs, result.read_stats, input_format))
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
                if update and "" in against.kept_ids:  # the batch job accepts an empty id, an index cannot
                    found = empty_id_records(
                        inputs, text_field=text_field, id_field=id_field, input_format=input_format, html=html
                    )
                    where = f"{found[0][0]}:{found[0][1]}" if found else "an input"
                    raise NeardupError(
                        f"{where}: a kept document has an empty id, which the index cannot hold; nothing was "
                        "written or added (give it an id, or use --id-policy line)"
                    )
            progress.stage("writing")
            removed = int(len(keep_mask) - np.count_nonzero(keep_mask))
            settings = {
                "keep": keep,
                "cluster": cluster,
                "text_field": text_field,
                "id_field": id_field,
                "id_policy": id_policy,
                "on_error": on_error,
                "html": html,
                "main_content": main_content,
                "input_format": input_format,
                "batch_size": batch_size,
                "workers": workers,
                "engine": engine,
                "memory": memory,
                "against": against_path,
                "update": update,
            }

            def stats_body():
                return stats_document(
                    result,
                    removed=removed,
                    settings=settings,
                    inputs=list(inputs),
                    outputs=outs,
                    total_seconds=time.perf_counter() - started,
                    against=against,
                    added_to_index=len(against.kept_ids) if update else None,
                )

            outcome.check()  # an interrupt swallowed while a kernel compiled: before any output is replaced
            write_all(result, keep_mask, outs, read, against, stats_body, outcome, job_engine)
            if update:
                t0 = time.perf_counter()
                against.add_kept_to(index)
                result.timings["index update"] = time.perf_counter() - t0
    except (NeardupError, OSError) as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        labels = {"-o": "annotated records" if annotate else "kept records", "--removed": "removed records"}
        written = [(labels.get(option, option.lstrip("-")), path) for option, path in outs.named().items() if path]
        print_summary(make_console(), result, config.name, time.perf_counter() - started, written, against, update)
    elif result.read_stats.skipped:
        rs = result.read_stats
        where = f"listed in {skipped_path}" if skipped_path else "--skipped PATH lists them"
        click.echo(f"neardup: warning: {rs.skipped:,} bad records skipped ({_by_reason(rs)}); {where}", err=True)


def _by_reason(rs) -> str:
    """``reason: count, ...`` of the records skipped."""
    return ", ".join(f"{reason}: {n:,}" for reason, n in sorted(rs.reasons.items()))


def job_kernels(config, read: ReadOptions, outs: Outputs) -> tuple:
    """The kernels the job will call, as far as :func:`~neardup._kernels.precompile.plan_for`
    knows them, for compiling them ahead on a cold cache."""
    from ..io.read import resolve_inputs

    try:
        sources = resolve_inputs(list(read.inputs), read.input_format)
        out = str(outs.output)
        jsonl_output = out == "-" or out.endswith("/") or output_format(out) == "jsonl"
    except Exception:  # the job itself reports bad inputs or outputs
        return ()
    jsonl_input = bool(sources) and all(fmt == "jsonl" for _, fmt in sources)
    return plan_for(
        config,
        jsonl_input=jsonl_input,
        jsonl_output=jsonl_output and not outs.annotate,
        pairs=outs.pairs is not None,
        input_bytes=sources_bytes(sources),
    )


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


def nothing_read(inputs, rs, input_format) -> str:
    """Why a run read no document: every record skipped, or no records in the inputs (and what
    was expected)."""
    if rs.skipped:
        return (
            f"every record was skipped ({rs.skipped:,} skipped: {_by_reason(rs)}); nothing written "
            "(--skipped PATH lists them, --on-error fail stops at the first with its file and line)"
        )
    found = []
    for path, fmt, _ in rs.sources:
        if fmt == "txtdir":
            found.append(f"{path} (a folder with no .jsonl/.csv/.parquet/.arrow shards and no .txt/.html files)")
        else:
            found.append(f"{path} (no records as {fmt})")
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    expected = (
        f"--input-format {input_format}"
        if input_format
        else ".jsonl/.ndjson/.json (optionally .gz/.zst), .csv, .parquet, .arrow files, folders of those, "
        "or folders of .txt/.html files"
    )
    return (
        f"no documents in the inputs: {shown or ', '.join(inputs)}; expected {expected}; "
        "nothing written (--allow-empty accepts empty inputs)"
    )


@contextmanager
def against_index(path: str | None, update: bool, method: str, config):
    """The index of ``--against`` (open for writing with ``--update``), or None. Its settings rule:
    method options that differ from both the defaults and the index's are a usage error."""
    if path is None:
        yield None
        return
    from ..methods.registry import config_to_dict, get_method

    ctx = click.get_current_context(silent=True)
    chosen = ctx is not None and ctx.get_parameter_source("method") not in (None, click.core.ParameterSource.DEFAULT)
    with DurableIndex.open(path, "a" if update else "r") as index:
        if chosen and method != index.config.name:
            raise click.UsageError(
                f"--method {method} disagrees with the index {index.path}, made with {index.config.name}; "
                f"leave --method out (or give --method {index.config.name}) to match against it"
            )
        given = config_to_dict(config)
        if given != config_to_dict(get_method(method)()) and given != config_to_dict(index.config):
            raise click.UsageError(
                f"the method options disagree with the index {index.path} (made with "
                f"{index.config.name} {index.config.to_json()}); leave them out to use the index's"
            )
        yield index
