"""``neardup index``: a durable index that grows (create, add, query, remove, stats, compact, check).

Exit codes: 0 success, 1 data error (bad input, a damaged or locked index, a failed check),
2 usage error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import contextmanager

import click
import orjson

from ..core.errors import InputError, NeardupError
from ..index.durable import DurableIndex
from ..index.redis_store import shown_path
from ..io import ReadStats, output_format, read_documents, write_table
from ..io.paths import INPUT_FORMATS
from ..io.policy import empty_id
from .common import EXIT_DATA_ERROR, SETTINGS, emit_json, empty_id_records
from .engine_options import add_memory_options
from .options import MethodCommand, add_method_options, build_config, reject_foreign_options

INDEX_METHODS = ("minhash", "simhash", "exact")


@contextmanager
def index_errors(after: Callable[[], str | None] = lambda: None):
    """A damaged, locked or missing index, bad input, a refused id: one line on stderr (and the
    line ``after()`` returns, if any), exit 1."""
    try:
        yield
    except (NeardupError, KeyError, ValueError, OSError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        click.echo(f"neardup: error: {shown_path(str(text))}", err=True)
        more = after()
        if more:
            click.echo(f"neardup: {more}", err=True)
        sys.exit(EXIT_DATA_ERROR)


@click.group("index", context_settings=SETTINGS)
def index_group() -> None:
    """A durable near-duplicate index in one SQLite file, or in Redis for several processes or
    machines (PATH = redis://HOST:PORT/DB/NAME): create it with a method's settings, add documents
    as they come, ask which stored documents are like new ones.

    \b
    Example:
      neardup index create news.ndx --method minhash --threshold 0.8
      neardup index add news.ndx examples/news.jsonl
      neardup index query news.ndx --text "some new article text ..."
      neardup dedup new.jsonl --against news.ndx --update -o kept.jsonl
    """


@index_group.command("create", cls=MethodCommand, context_settings=SETTINGS)
@click.argument("path")
@add_method_options
@click.option("--store-text", is_flag=True, help="Keep each document's text in the index too (for `get`).")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
@click.pass_context
def create_cmd(ctx, path, method, store_text, quiet, **method_params):
    """Create an empty index at PATH for --method (minhash, simhash or exact) with its options
    (the defaults are `dedup`'s)."""
    if method not in INDEX_METHODS:
        raise click.UsageError(f"--method {method} has no index; use one of {', '.join(INDEX_METHODS)}")
    reject_foreign_options(ctx, method)
    config = build_config(ctx, method, method_params)
    if method == "simhash" and config.weighting == "idf":
        raise click.UsageError(
            "an index of SimHash fingerprints needs --weighting count (IDF needs the whole collection)"
        )
    with index_errors(), DurableIndex.create(path, config, store_text=store_text) as index:
        if not quiet:
            click.echo(f"created {index.path}: {method}, threshold {index.threshold:g}", err=True)


def _read_options(command):
    for decorator in reversed(
        [
            click.option("--text-field", default="text", show_default=True, help="Field holding the text."),
            click.option(
                "--id-field",
                default=None,
                help="Field holding the document id [default: 'id' when present, else FILE:LINE].",
            ),
            click.option(
                "--input-format",
                type=click.Choice(list(INPUT_FORMATS)),
                default=None,
                help="Read every input as this format, whatever its extension.",
            ),
            click.option("--html", is_flag=True, help="The text field holds HTML: remove markup first."),
            click.option(
                "--on-error",
                type=click.Choice(["fail", "skip"]),
                default="fail",
                show_default=True,
                help="On a bad record: stop with an error naming file and line, or skip and count it.",
            ),
            click.option(
                "--batch-size", type=click.IntRange(min=1), default=4096, show_default=True, help="Documents per batch."
            ),
        ]
    ):
        command = decorator(command)
    return command


def _batches(inputs, stats, text_field, id_field, input_format, html, on_error, batch_size):
    return read_documents(
        inputs,
        text_field=text_field,
        id_field=id_field,
        on_error=on_error,
        batch_size=batch_size,
        stats=stats,
        html=html,
        input_format=input_format,
    )


@index_group.command("add", context_settings=SETTINGS)
@click.argument("path")
@click.argument("inputs", nargs=-1, required=True)
@_read_options
@click.option("--replace", is_flag=True, help="An id already in the index is replaced (else it is an error).")
@click.option("-q", "--quiet", is_flag=True, help="No summary.")
@add_memory_options
def add_cmd(
    path, inputs, text_field, id_field, input_format, html, on_error, batch_size, replace, quiet, memory, tmp_dir
):
    """Add the documents of INPUTS (the formats of `dedup`) to the index at PATH.

    Each batch of --batch-size documents is one transaction: when the command fails, the batches
    before the failure are in the index (the message says how many documents) and the rest is not.
    The in-memory lookup grows in memory up to --memory, and in unnamed files under --tmp-dir past
    it (the index answers the same).
    """
    from ..core.budget import using
    from ..engine.local import LocalEngine

    with index_errors():
        spill = LocalEngine(memory=memory, tmp_dir=tmp_dir).budget()
    with using(spill):
        _add(path, inputs, text_field, id_field, input_format, html, on_error, batch_size, replace, quiet)


def _add(path, inputs, text_field, id_field, input_format, html, on_error, batch_size, replace, quiet):
    stats = ReadStats()
    added = empty = 0
    before = lambda: f"{added:,} documents were added before the error" if added else None
    read = {"text_field": text_field, "id_field": id_field, "input_format": input_format, "html": html}
    repeated: dict[int, tuple[str, str, str]] = {}  # record number -> (id, text, reason) skipped
    with index_errors(before), DurableIndex.open(path, "a") as index:
        for batch in _batches(inputs, stats, text_field, id_field, input_format, html, on_error, batch_size):
            ids, texts = batch.ids, batch.texts
            numbers = range(batch.start, batch.start + len(ids))
            if "" in ids:  # a record the batch job accepts, an index cannot hold
                if on_error == "fail":
                    found = empty_id_records(inputs, **read)
                    if found:
                        raise empty_id(*found[0])
                    raise NeardupError(f"a record of {', '.join(inputs)} has an empty id, which an index cannot hold")
                keep = [k for k, doc_id in enumerate(ids) if doc_id]
                empty += len(ids) - len(keep)
                ids, texts, numbers = [ids[k] for k in keep], [texts[k] for k in keep], [numbers[k] for k in keep]
            if ids:
                try:
                    index.add(ids, texts, replace=replace)
                except KeyError:  # a repeated or stored id (nothing of the batch stored): find the records
                    keep = _good_ids(ids, texts, numbers, index, replace, on_error, inputs, read, repeated)
                    ids, texts = [ids[k] for k in keep], [texts[k] for k in keep]
                    if ids:
                        index.add(ids, texts, replace=replace)
            added += len(ids)
        size = len(index)
    if repeated:  # skipped, counted and named as the readers' bad records are
        stats.documents -= len(repeated)
        stats.skipped += len(repeated)
        named = dict(sorted(repeated.items())[:_NAMED])
        places = record_places(inputs, read, {n: t for n, (_, t, _) in named.items()})
        for shown, (n, (doc_id, _, reason)) in enumerate(sorted(repeated.items())):
            stats.reasons["repeated id" if "earlier" in reason else "id in the index"] += 1
            if shown < _NAMED:
                stats.file_errors.append(f"{places.get(n, f'record {n + 1}')}: id {doc_id!r} {reason}")
        if len(repeated) > _NAMED:
            stats.file_errors.append(f"... ({len(repeated) - _NAMED:,} more records with a repeated or stored id)")
    if empty:  # skipped, counted and named as the readers' bad records are
        stats.documents -= empty
        stats.skipped += empty
        stats.reasons["empty id"] += empty
        named = [f"{where}:{line}" for where, line in empty_id_records(inputs, **read)]
    if stats.documents == 0:
        click.echo(f"neardup: error: no documents read from {', '.join(inputs)}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        skipped = f", {stats.skipped:,} records skipped" if stats.skipped else ""
        click.echo(f"added {added:,} documents to {shown_path(path)} (now {size:,}){skipped}", err=True)
        for message in stats.file_errors:
            click.echo(f"skipped: {message}", err=True)
    if empty:
        shown = "; ".join(named[:_NAMED]) + (f"; ... ({len(named) - _NAMED:,} more)" if len(named) > _NAMED else "")
        click.echo(f"neardup: warning: {empty:,} records with an empty id skipped: {shown}", err=True)


_NAMED = 10  # records with an empty id named in the warning of `index add --on-error skip`


def _good_ids(ids, texts, numbers, index, replace, on_error, inputs, read, skipped) -> list[int]:
    """The positions of the batch's records that can be stored: not an id repeated within the batch
    nor (without ``replace``) one the index holds (earlier batches of this add included). The
    others stop the add with ``FILE:LINE`` (``on_error="fail"``) or go into ``skipped``."""
    seen: set[str] = set()
    keep = []
    for k, doc_id in enumerate(ids):
        if doc_id in seen:
            reason = "repeats an earlier record's id in this add"
        elif not replace and doc_id in index:
            reason = "is in the index already (--replace overwrites)"
        else:
            seen.add(doc_id)
            keep.append(k)
            continue
        if on_error == "fail":
            where = record_places(inputs, read, {numbers[k]: texts[k]}).get(numbers[k])
            raise InputError(where or f"record {numbers[k] + 1}", None, f"id {doc_id!r} {reason}")
        skipped[numbers[k]] = (doc_id, texts[k], reason)
    return keep


def record_places(inputs, read: dict, records: dict[int, str]) -> dict[int, str]:
    """``FILE:LINE`` of each record number of ``records`` (record number -> its text, checked so
    that a record skipped by one read and not the other names nothing rather than a wrong line):
    the inputs read again with every id made ``FILE:LINE`` (an id field no record has)."""
    out: dict[int, str] = {}
    last = max(records)
    places = read_documents(
        list(inputs),
        text_field=read["text_field"],
        id_field="\x00no id field",
        id_policy="line",
        on_error="skip",
        input_format=read["input_format"],
        html=read["html"],
    )
    for batch in places:
        for k, place in enumerate(batch.ids):
            n = batch.start + k
            if n in records and batch.texts[k] == records[n]:
                out[n] = place
        if batch.start + len(batch) > last:
            break
    return out


@index_group.command("query", context_settings=SETTINGS)
@click.argument("path")
@click.argument("inputs", nargs=-1)
@click.option("--text", "text", default=None, help="Query this one text and print its matches as JSON.")
@click.option(
    "-o",
    "--output",
    default=None,
    help="Where to write one row per query document (.jsonl: id and matches [{id, similarity}] best first; "
    ".parquet: matches as a list of structs; .csv: one row per match: query_id, id, similarity).",
)
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most this many matches per document.")
@click.option(
    "--min-similarity",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Matches at least this similar [default: the index's threshold].",
)
@_read_options
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
def query_cmd(
    path,
    inputs,
    text,
    output,
    limit,
    min_similarity,
    text_field,
    id_field,
    input_format,
    html,
    on_error,
    batch_size,
    quiet,
):
    """Find the stored documents like each document of INPUTS (or like --text)."""
    if (text is None) == (not inputs):
        raise click.UsageError("give INPUTS (with -o) or --text, not both")
    if inputs and output is None:
        raise click.UsageError("querying INPUTS needs -o OUTPUT")
    if output is not None:
        try:
            fmt = output_format(output)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="-o") from None
    with index_errors(), DurableIndex.open(path) as index:
        if text is not None:
            matches = index.query(text, min_similarity=min_similarity, limit=limit)
            emit_json([{"id": m, "similarity": s} for m, s in matches])
            return
        stats = ReadStats()
        ids: list[str] = []
        found: list[list[tuple[str, float]]] = []
        for batch in _batches(inputs, stats, text_field, id_field, input_format, html, on_error, batch_size):
            ids += batch.ids
            found += index.query_batch(batch.texts, min_similarity=min_similarity, limit=limit)
        if not ids:
            raise NeardupError(f"no documents read from {', '.join(inputs)}")
        _write_matches(ids, found, output, fmt)
    hits = sum(1 for f in found if f)
    if not quiet:
        click.echo(f"{len(ids):,} documents queried, {hits:,} with matches: {output}", err=True)


def _write_matches(ids: list[str], found: list[list[tuple[str, float]]], output: str, fmt: str) -> None:
    import pyarrow as pa

    if fmt == "csv":
        rows = [(q, m, s) for q, matches in zip(ids, found) for m, s in matches]
        write_table(
            {
                "query_id": [r[0] for r in rows],
                "id": [r[1] for r in rows],
                "similarity": pa.array([r[2] for r in rows], pa.float64()),
            },
            output,
        )
        return
    match_type = pa.list_(pa.struct([("id", pa.string()), ("similarity", pa.float64())]))
    matches = pa.array([[{"id": m, "similarity": s} for m, s in f] for f in found], match_type)
    write_table({"id": pa.array(ids, pa.string()), "matches": matches}, output)


@index_group.command("remove", context_settings=SETTINGS)
@click.argument("path")
@click.option(
    "--ids",
    "ids_file",
    required=True,
    type=click.File("r", encoding="utf-8"),
    help="File with one id per line ('-': standard input).",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
def remove_cmd(path, ids_file, quiet):
    """Remove documents from the index at PATH, in one transaction (an unknown id: nothing is removed)."""
    ids = [line.rstrip("\r\n") for line in ids_file if line.strip()]
    with index_errors(), DurableIndex.open(path, "a") as index:
        index.remove(ids)
        if not quiet:
            click.echo(f"removed {len(ids):,} documents from {index.path} (now {len(index):,})", err=True)


@index_group.command("stats", context_settings=SETTINGS)
@click.argument("path")
def stats_cmd(path):
    """Print the size, settings and file facts of the index at PATH as JSON."""
    with index_errors(), DurableIndex.open(path) as index:
        emit_json(index.stats())


@index_group.command("compact", context_settings=SETTINGS)
@click.argument("path")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
def compact_cmd(path, quiet):
    """Drop removed documents' traces and free space in the index at PATH."""
    with index_errors(), DurableIndex.open(path, "a") as index:
        before = index.stats()["file_bytes"]
        index.compact()
        after = index.stats()["file_bytes"]
    if not quiet:
        click.echo(f"compacted {shown_path(path)}: {before:,} -> {after:,} bytes", err=True)


@index_group.command("check", context_settings=SETTINGS)
@click.argument("path")
def check_cmd(path):
    """Check the index at PATH (SQLite integrity, metadata, every sketch's size and checksum);
    exit 1 and list what is wrong."""
    problems = DurableIndex.check_file(path)
    if problems:
        for p in problems:
            click.echo(f"neardup: {shown_path(path)}: {p}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    with index_errors(), DurableIndex.open(path) as index:
        click.echo(orjson.dumps({"path": index.path, "documents": len(index), "ok": True}).decode())
