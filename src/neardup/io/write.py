"""Writing the batch job's outputs: the kept records (:func:`write_kept`) and result tables (:func:`write_table`).

:func:`write_kept` re-reads the inputs with the numbering and skipping of
:func:`~neardup.io.read.read_documents` and writes each kept record with all its original fields,
so memory never holds the texts of more than a few blocks; JSON Lines to JSON Lines copies the
lines' bytes (without parsing them again when the first pass skipped no record,
:func:`~neardup.io.jsonl.copy_kept_jsonl`). :func:`write_table` writes the ``--clusters`` and
``--pairs`` tables. The format of an output comes from its extension
(:func:`~neardup.io.formats.output_format`: JSON Lines and CSV, optionally ``.gz``/``.zst``, or
Parquet); it is written to a temporary file beside it that replaces it only when complete.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import errno
import gzip
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import zstandard

from ..core.errors import InputChangedError, InputError, NeardupError, OutputError
from ..core.parallel import Threads
from .arrow import pa, pacsv, pc, pq
from .csv import allow_large_csv_fields, csv_lines
from .formats import compression, csv_delimiter, output_format
from .jsonl import copy_kept_jsonl, copy_kept_stream, full_jsonl_chunks
from .jsonl_threads import copy_kept_threaded
from .parquet import read_schema
from .paths import open_binary
from .policy import Chunk, Policy, ReadStats, make_policy, unreadable, unreadable_errors
from .read import resolve_inputs, scan
from .streams import BLOCK, WRITE_ROWS, open_input
from .transaction import OutputSet

_PARQUET_ROW_GROUP = 65536  # rows buffered before the Parquet writer emits a row group


# --------------------------------------------------------------------------------------------
# Output streams
@contextlib.contextmanager
def _atomic_output(path: str | os.PathLike, outputs: OutputSet | None = None) -> Iterator[Path]:
    """A temporary path next to ``path`` that replaces it only if the block succeeds; with
    ``outputs``, one output of that set (replaced with the others by its commit).

    Also makes writing over one of the inputs safe, and creates missing parent directories.
    Errors of the output side (disk full, permission denied) name the output.
    """
    try:
        if outputs is not None:
            yield outputs.stage(path)
            return
        with OutputSet() as one:
            tmp = one.stage(path)
            yield tmp
            one.commit()
    except OSError as exc:
        if isinstance(exc, OutputError) or not _output_side(exc, path):
            raise
        raise OutputError(path, exc) from exc


def _output_side(exc: OSError, path) -> bool:
    """Whether an error inside a writer's block is about the output (not an input re-read
    there): it names the output or its temporary, or it names no file and is an error of the
    writing side (disk full, quota, permission, read-only, file too large)."""
    final = os.path.abspath(path)
    names = [os.path.abspath(n) for n in (exc.filename, exc.filename2) if isinstance(n, (str, bytes, os.PathLike))]
    if names:
        folder, base = os.path.split(final)
        return any(n == final or (os.path.dirname(n) == folder and base in os.path.basename(n)) for n in names)
    found = OutputError(path, exc).errno
    return found in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EFBIG)


class _GzipOut(gzip.GzipFile):
    """A gzip stream whose header holds neither a file name nor a time, so equal runs give equal
    bytes (``gzip.open`` stores the temporary file's name and the clock); closes its file too."""

    def __init__(self, path: Path) -> None:
        self._raw = open(path, "wb")  # noqa: SIM115 (closed by close())
        super().__init__(filename="", mode="wb", fileobj=self._raw, compresslevel=6, mtime=0)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _open_output(tmp: Path, comp: str | None):
    if comp == "gz":
        return _GzipOut(tmp)
    if comp == "zst":
        return zstandard.ZstdCompressor(level=3).stream_writer(open(tmp, "wb"), closefd=True)
    return open(tmp, "wb")


def _json_default(value: Any) -> Any:
    """JSON for values orjson does not know (from Parquet and Arrow), as text: bytes in base64,
    timestamps (pandas ``Timestamp`` for nanoseconds too) in ISO 8601 with a ``T``, decimals as
    their exact digits."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _json_ready(value: Any) -> Any:
    """``value`` with what JSON cannot hold mapped to text, at any depth: NaN and infinities as
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (protobuf's JSON mapping; orjson would write
    ``null``, which would make them indistinguishable from a missing value), bytes as base64."""
    t = type(value)
    if t is float:
        if value != value:
            return "NaN"
        if value in (math.inf, -math.inf):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if t is bytes:
        return base64.b64encode(value).decode("ascii")
    if t is list or t is tuple:
        return [_json_ready(v) for v in value]
    if t is dict:
        return {k: _json_ready(v) for k, v in value.items()}
    return value


def _needs_mapping(typ: pa.DataType) -> bool:
    """True for Arrow types whose values may need :func:`_json_ready` (floats, binary, nested)."""
    if pa.types.is_floating(typ) or pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return True
    if pa.types.is_fixed_size_binary(typ):
        return True
    return any(_needs_mapping(typ.field(i).type) for i in range(typ.num_fields))


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS)


def _cell_text(value: Any) -> str | None:
    """A value as CSV cell text: strings as they are, null as empty, anything else as its JSON
    text (:func:`_json_ready`), without the quotes of a JSON string: ``1.5``, ``true``,
    ``[1,"NaN"]``, ``NaN``, ``2024-01-02T03:04:05``, ``1.50`` (a decimal), base64 of binary."""
    if value is None or type(value) is str:
        return value
    text = _dumps(_json_ready(value))
    if text[:1] == b'"':
        return orjson.loads(text)
    return text.decode("utf-8")


def _text_records(fmt: str, chunk: Chunk, sel: list[int], text_field: str) -> list[dict]:
    """The selected records of a chunk for JSON Lines and CSV outputs, with the values of Parquet
    and Arrow inputs that JSON cannot hold mapped by :func:`_json_ready` (one rule per column
    type, never per value): the text field, read as UTF-8 text, stays text when its column is
    binary; every other binary column is base64."""
    records = _chunk_records(fmt, chunk, sel)
    if fmt not in ("parquet", "arrow"):
        return records  # JSON, CSV and text files hold no NaN or bytes
    mapped = [f.name for f in chunk.payload[0].schema if _needs_mapping(f.type)]
    for r in records:
        for name in mapped:
            value = r[name]
            if name == text_field and type(value) is bytes:
                r[name] = value.decode("utf-8")
            else:
                r[name] = _json_ready(value)
    return records


# --------------------------------------------------------------------------------------------
# write_kept: the output columns, the sinks, the copy loop
def _chunk_records(fmt: str, chunk: Chunk, sel: list[int]) -> list[dict]:
    """The selected records of a chunk as dicts with all their fields."""
    if fmt == "jsonl":
        objs = chunk.payload[1]
        return [objs[i] for i in sel]
    if fmt == "csv":
        header, rows = chunk.payload
        return [dict(zip(header, rows[i])) for i in sel]
    if fmt in ("parquet", "arrow"):
        batch, valid = chunk.payload
        take = sel if valid is None else [valid[i] for i in sel]
        try:
            return batch.take(pa.array(take, type=pa.int64())).to_pylist()
        except UnicodeDecodeError as exc:  # a damaged file: Arrow checks UTF-8 only when asked
            raise NeardupError(
                f"a string column of the input holds invalid UTF-8 ({exc.reason}; a damaged file?); "
                "write to .parquet to copy the records as they are"
            ) from exc
    if fmt == "records":
        return [chunk.payload[i] for i in sel]
    return [{"id": chunk.ids[i], "text": chunk.texts[i]} for i in sel]


# --------------------------------------------------------------------------------------------
# Annotation: added columns (cluster, cluster_size, similarity, kept) on every written record
def _arrow_type(values: np.ndarray) -> pa.DataType:
    if values.dtype == np.bool_:
        return pa.bool_()
    if np.issubdtype(values.dtype, np.integer):
        return pa.int64()
    if np.issubdtype(values.dtype, np.floating):
        return pa.float64()
    return pa.string()


def _refuse_clash(path: str, names, added: dict) -> None:
    clash = [n for n in added if n in names]
    if clash:
        raise InputError(
            path,
            None,
            f"the records have a field {clash[0]!r} already, which the annotation would add; "
            "name the added columns otherwise (--annotate-prefix)",
            reason="annotation clash",
        )


def _json_tail(values: dict[str, list], i: int) -> bytes:
    return b"".join(b"," + orjson.dumps(name) + b":" + _dumps(col[i]) for name, col in values.items())


def _splice(line: bytes, tail: bytes) -> bytes:
    """A JSON object line with ``tail`` (``,"name":value...``) added before its closing brace;
    the original bytes stay as they are."""
    body = line.rstrip()
    if not body.endswith(b"}"):
        raise ValueError("not a JSON object line")
    body = body[:-1].rstrip()
    return body + (tail[1:] if body.endswith(b"{") else tail) + b"}"


def _annotated(path: str, fmt: str, chunk: Chunk, sel: list[int], values: dict[str, np.ndarray]):
    """The selected records of ``chunk`` with the annotation columns added, as ``(format, chunk)``
    whose every record is to be written. ``values[name][k]`` belongs to the ``k``-th document of
    the chunk."""
    ids = [chunk.ids[i] for i in sel]
    texts = [chunk.texts[i] for i in sel]
    picked = {name: col[sel].tolist() for name, col in values.items()}
    if fmt == "jsonl":
        raws, objs = chunk.payload
        for i in sel:
            _refuse_clash(path, objs[i], values)
        lines = [_splice(raws[i], _json_tail(picked, k)) for k, i in enumerate(sel)]
        records = [{**objs[i], **{n: c[k] for n, c in picked.items()}} for k, i in enumerate(sel)]
        return "jsonl", Chunk(ids, texts, (lines, records))
    if fmt == "csv":
        header, rows = chunk.payload
        _refuse_clash(path, header, values)
        cells = [[_cell_text(c[k]) for c in picked.values()] for k in range(len(sel))]
        return "csv", Chunk(ids, texts, (header + list(values), [rows[i] + cells[k] for k, i in enumerate(sel)]))
    if fmt in ("parquet", "arrow"):
        batch, valid = chunk.payload
        _refuse_clash(path, batch.schema.names, values)
        take = sel if valid is None else [valid[i] for i in sel]
        out = batch.take(pa.array(take, type=pa.int64()))
        for name, col in picked.items():
            out = out.append_column(name, pa.array(col, type=_arrow_type(values[name])))
        return fmt, Chunk(ids, texts, (out, None))
    records = _chunk_records(fmt, chunk, sel)
    _refuse_clash(path, records[0] if records else (), values)
    for k, r in enumerate(records):
        r.update({n: c[k] for n, c in picked.items()})
    return "records", Chunk(ids, texts, records)


def _parquet_writable(typ: pa.DataType) -> bool:
    """False for types Parquet cannot store, such as a struct without fields (from ``{}``)."""
    if pa.types.is_struct(typ) and typ.num_fields == 0:
        return False
    return all(_parquet_writable(typ.field(i).type) for i in range(typ.num_fields))


class _Columns:
    """Output columns in first-seen order, each with an Arrow type merged across sources.

    A column whose types cannot be merged (an int here, a string there) becomes a string column of
    JSON text (``as_text``), as in CSV.
    """

    def __init__(self) -> None:
        self.types: dict[str, pa.DataType] = {}
        self.as_text: set[str] = set()

    def add(self, name: str, typ: pa.DataType) -> None:
        old = self.types.get(name)
        if old is None:
            self.types[name] = typ
            return
        if name in self.as_text or old.equals(typ):
            return
        try:
            merged = (
                pa.unify_schemas([pa.schema([(name, old)]), pa.schema([(name, typ)])], promote_options="permissive")
                .field(name)
                .type
            )
        except (pa.ArrowException, TypeError, ValueError):
            self.as_text.add(name)
            merged = pa.large_string()
        self.types[name] = merged

    def add_records(self, records: list[dict], infer_types: bool) -> None:
        names = dict.fromkeys(k for r in records for k in r)
        for name in names:
            if not infer_types:
                self.types.setdefault(name, pa.null())
                continue
            if name in self.as_text:
                continue
            try:
                typ = pa.array([r.get(name) for r in records]).type
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                typ = None
            if typ is None or not _parquet_writable(typ):
                self.as_text.add(name)
                self.types[name] = pa.large_string()
            else:
                self.add(name, typ)

    def schema(self) -> pa.Schema:
        return pa.schema(list(self.types.items()))


def _static_columns(path: str, fmt: str, cols: _Columns) -> None:
    """Add the columns that a CSV header, Parquet schema or text directory declares."""
    if fmt == "txtdir":
        cols.add("id", pa.string())
        cols.add("text", pa.string())
    elif fmt in ("parquet", "arrow"):
        with contextlib.suppress(*unreadable_errors()):
            for f in read_schema(path, fmt):
                cols.add(f.name, f.type)
    elif fmt == "csv":
        allow_large_csv_fields()
        pol = Policy("text", None, "skip", ReadStats())
        stream = open_input(path, pol)
        if stream is None:
            return
        with stream, contextlib.suppress(csv.Error):
            for row in csv.reader(csv_lines(stream, path, pol, []), delimiter=csv_delimiter(path)):
                if row:
                    for name in row:
                        cols.add(name, pa.string())
                    break


def _kept(keep: np.ndarray, start: int, n: int) -> list[int]:
    """Positions in a chunk of ``n`` documents numbered from ``start`` that ``keep`` marks."""
    if start + n > len(keep):
        raise InputChangedError(
            f"keep has {len(keep)} entries but the inputs hold more documents; were the inputs, "
            "text_field, id_field or on_error changed since the first pass?"
        )
    return np.flatnonzero(keep[start : start + n]).tolist()


def _plan_columns(sources, keep: np.ndarray, pol: Policy, infer_types: bool) -> _Columns:
    """The columns of a CSV or Parquet output: union of the kept records' fields, first seen first.

    JSONL fields are only known by reading the records, so with JSONL inputs this makes one extra
    pass over the inputs (numbering exactly as the write pass does).
    """
    cols = _Columns()
    if not any(fmt == "jsonl" for _, fmt in sources):
        for path, fmt in sources:
            _static_columns(path, fmt, cols)
        return cols
    start = 0
    for path, fmt in sources:
        if fmt != "jsonl":
            _static_columns(path, fmt, cols)
        for chunk in scan(path, fmt, pol, fmt in ("jsonl", "txtdir"), WRITE_ROWS):
            sel = _kept(keep, start, len(chunk.ids))
            start += len(chunk.ids)
            if fmt == "jsonl" and sel:
                cols.add_records(_chunk_records(fmt, chunk, sel), infer_types)
    return cols


class JsonlSink:
    """JSON Lines out; JSONL input lines are copied byte for byte."""

    def __init__(self, tmp: Path, comp: str | None, text_field: str = "text"):
        self._out = _open_output(tmp, comp)
        self._text_field = text_field

    def write(self, fmt: str, chunk: Chunk, sel: list[int]) -> None:
        if fmt == "jsonl":
            raws = chunk.payload[0]
            lines = raws if len(sel) == len(raws) else [raws[i] for i in sel]
            self._out.write(b"\n".join(lines) + b"\n")
        else:
            dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
            recs = _text_records(fmt, chunk, sel, self._text_field)
            self._out.write(b"".join(dumps(r, default=_json_default, option=opt) for r in recs))

    def write_bytes(self, data) -> None:
        """Write JSON Lines that are ready as bytes."""
        self._out.write(data)

    def close(self) -> None:
        self._out.close()


class _CsvSink:
    """CSV out through pyarrow's CSV writer, under the planned header (written once, by :mod:`csv`).

    Each chunk becomes an Arrow table of the header's columns and is written by
    :func:`pyarrow.csv.write_csv` (strings quoted, numbers, timestamps and decimals as Arrow
    formats them, unquoted; null empty): Parquet and Arrow columns keep their type, a missing
    field is null, nested and binary values are JSON text. Records of JSON Lines and CSV inputs
    give string columns (values that are not strings as JSON text). Python's :mod:`csv` writer,
    value by value, was 25x slower than this on 120 MB.
    """

    def __init__(self, tmp: Path, comp: str | None, fields: list[str], text_field: str = "text"):
        self._out = _open_output(tmp, comp)
        self._text_field = text_field
        self._fields = fields
        self._options = pacsv.WriteOptions(include_header=False, batch_size=WRITE_ROWS)
        if fields:  # no header at all when there is nothing to write
            text = _TextOut(self._out)
            csv.writer(text, lineterminator="\n").writerow(fields)
            text.flush()

    def write(self, fmt: str, chunk: Chunk, sel: list[int]) -> None:
        if fmt in ("parquet", "arrow"):
            batch, valid = chunk.payload
            take = sel if valid is None else [valid[i] for i in sel]
            columns = self._arrow_columns(batch.take(pa.array(take, type=pa.int64())))
        elif fmt == "csv":
            header, rows = chunk.payload
            picked = [rows[i] for i in sel]
            where = {name: j for j, name in enumerate(header)}  # the last of equal names, as in a dict
            columns = [
                pa.array([r[where[f]] for r in picked], pa.string())
                if f in where
                else pa.nulls(len(picked), pa.string())
                for f in self._fields
            ]
        else:
            records = _text_records(fmt, chunk, sel, self._text_field)
            columns = [_text_column([r.get(f) for r in records]) for f in self._fields]
        table = pa.Table.from_arrays(columns, names=[f"c{i}" for i in range(len(columns))])
        pacsv.write_csv(table, self._out, self._options)

    def _arrow_columns(self, batch: pa.RecordBatch) -> list[pa.Array]:
        names = batch.schema.names
        out = []
        for f in self._fields:
            if f not in names:
                out.append(pa.nulls(batch.num_rows, pa.string()))
                continue
            col = batch.column(names.index(f))
            t = col.type
            if pa.types.is_float32(t):  # the exact double it stands for, as in write_table
                col = pc.cast(col, pa.float64())
            elif pa.types.is_dictionary(t):
                col = pc.cast(col, t.value_type)
            if _needs_mapping(col.type) or pa.types.is_temporal(col.type):
                # one rule per column type, the JSON Lines one (NaN, base64, ISO 8601): see write_kept
                values = col.to_pylist()
                if f == self._text_field and (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
                    values = [v if v is None else v.decode("utf-8") for v in values]
                col = pa.array([_cell_text(v) for v in values], pa.string())
            elif not _csv_native(col.type):
                col = _text_column(col.to_pylist())
            out.append(col)
        return out

    def close(self) -> None:
        self._out.close()


class _CsvOnePassSink:
    """CSV out of JSON Lines records in one pass when the kept records' fields are all known by
    the first chunk written (the usual case: every record has the same fields).

    The rows go to a body file beside the output while the header grows from the records; at
    ``close`` the header and the body become the output. If a later chunk brings a new field,
    the rows written so far lack its column: the sink stops writing, keeps collecting the fields
    (``grew``; ``fields`` in first-seen order, as :func:`_plan_columns` finds them) and
    :func:`write_kept` writes the output again through a :class:`_CsvSink` with them. So the
    output is the same either way, and JSON Lines to CSV parses the input once instead of twice
    (a pass to find the fields, a pass to write) unless fields vary between records.
    """

    def __init__(self, tmp: Path, comp: str | None):
        self._tmp, self._comp = tmp, comp
        self._body_path = tmp.with_name(tmp.name + ".body")
        self._body = open(self._body_path, "wb")  # noqa: SIM115 (closed by close())
        self._options = pacsv.WriteOptions(include_header=False, batch_size=WRITE_ROWS)
        self.fields: dict[str, None] = {}
        self.grew = False
        self._rows = 0

    def write(self, fmt: str, chunk: Chunk, sel: list[int]) -> None:
        records = _chunk_records(fmt, chunk, sel)
        known = len(self.fields)
        for r in records:
            for name in r:
                self.fields.setdefault(name)
        if self._rows and len(self.fields) != known:
            self.grew = True
        if self.grew:
            return
        columns = [_text_column([r.get(f) for r in records]) for f in self.fields]
        table = pa.Table.from_arrays(columns, names=[f"c{i}" for i in range(len(columns))])
        pacsv.write_csv(table, self._body, self._options)
        self._rows += len(records)

    def close(self) -> None:
        try:
            self._body.close()
            if self.grew:
                return
            out = _open_output(self._tmp, self._comp)
            try:
                if self.fields:
                    text = _TextOut(out)
                    csv.writer(text, lineterminator="\n").writerow(list(self.fields))
                    text.flush()
                with open(self._body_path, "rb") as body:
                    shutil.copyfileobj(body, out, BLOCK)
            finally:
                out.close()
        finally:
            with contextlib.suppress(OSError):
                self._body_path.unlink()


def _csv_native(typ: pa.DataType) -> bool:
    """Whether pyarrow's CSV writer writes values of ``typ`` as the CSV cells we want."""
    return (
        pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_integer(typ)
        or pa.types.is_floating(typ)
        or pa.types.is_boolean(typ)
        or pa.types.is_decimal(typ)
        or (pa.types.is_temporal(typ) and not pa.types.is_duration(typ))
        or pa.types.is_null(typ)
    )


def _text_column(values: list) -> pa.Array:
    """A string column of Python values: strings as they are, null as null, anything else as JSON text."""
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowException, TypeError, ValueError):
        return pa.array([_cell_text(v) for v in values], pa.string())


class _TextOut:
    """Minimal text sink over a binary stream, buffered, for csv.writer (UTF-8, no newline mangling)."""

    def __init__(self, out):
        self._out = out
        self._parts: list[str] = []
        self._size = 0

    def write(self, s: str) -> None:
        self._parts.append(s)
        self._size += len(s)
        if self._size >= BLOCK:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            self._out.write("".join(self._parts).encode("utf-8"))
            self._parts = []
            self._size = 0


class _ParquetSink:
    """Parquet out with the planned schema; Parquet batches of that schema are copied as they are."""

    def __init__(self, tmp: Path, schema: pa.Schema, as_text: set[str]):
        self._schema = schema
        self._as_text = as_text
        self._writer = pq.ParquetWriter(str(tmp), schema)
        self._pending: list[pa.RecordBatch] = []
        self._rows = 0

    def write(self, fmt: str, chunk: Chunk, sel: list[int]) -> None:
        if fmt in ("parquet", "arrow") and chunk.payload[0].schema.equals(self._schema, check_metadata=False):
            batch, valid = chunk.payload
            take = sel if valid is None else [valid[i] for i in sel]
            out = batch.take(pa.array(take, type=pa.int64()))
        else:
            out = self._from_records(_chunk_records(fmt, chunk, sel))
        self._pending.append(out)
        self._rows += out.num_rows
        if self._rows >= _PARQUET_ROW_GROUP:
            self._flush()

    def _from_records(self, records: list[dict]) -> pa.RecordBatch:
        arrays = []
        for f in self._schema:
            values = [r.get(f.name) for r in records]
            if f.name in self._as_text:
                values = [_cell_text(v) for v in values]
            try:
                arrays.append(pa.array(values, type=f.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                raise ValueError(
                    f"cannot write field {f.name!r} as Parquet type {f.type}: {exc}; "
                    "write to .jsonl to keep every record as it is"
                ) from exc
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.Table.from_batches(self._pending, schema=self._schema))
            self._pending = []
            self._rows = 0

    def close(self) -> None:
        try:
            self._flush()
        finally:
            self._writer.close()


def _open_sink(out_fmt: str, out_path: str, tmp: Path, sources, keep: np.ndarray, pol: Policy, added=None):
    """The sink of ``out_fmt``; ``added`` (name -> Arrow type) are annotation columns after the
    records' own."""
    added = added or {}
    comp = compression(out_path)
    if out_fmt == "jsonl":
        return JsonlSink(tmp, comp, pol.text_field)
    plan_pol = Policy(pol.text_field, pol.id_field, pol.on_error, ReadStats())
    if out_fmt == "csv":
        if all(fmt == "jsonl" for _, fmt in sources):
            return _CsvOnePassSink(tmp, comp)
        fields = list(_plan_columns(sources, keep, plan_pol, False).types)
        return _CsvSink(tmp, comp, fields + [n for n in added if n not in fields], pol.text_field)
    schemas = []
    if all(fmt in ("parquet", "arrow") for _, fmt in sources):
        with contextlib.suppress(*unreadable_errors()):
            schemas = [read_schema(path, fmt) for path, fmt in sources]
    if schemas and all(s.equals(schemas[0], check_metadata=False) for s in schemas):
        schema = schemas[0]  # the input schema, metadata included
        for name, typ in added.items():
            if name not in schema.names:
                schema = schema.append(pa.field(name, typ))
        return _ParquetSink(tmp, schema, set())
    cols = _plan_columns(sources, keep, plan_pol, True)
    for name, typ in added.items():
        cols.add(name, typ)
    return _ParquetSink(tmp, cols.schema(), cols.as_text)


def write_kept(
    paths,
    keep,
    out_path,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    all_valid: bool = False,
    input_format: str | None = None,
    annotate: dict[str, Any] | None = None,
    outputs: OutputSet | None = None,
    id_policy: str = "field",
    snapshot: dict | None = None,
    workers: int = 1,
) -> int:
    """Write the records of ``paths`` whose document number is marked in ``keep``; return how many.

    The inputs are re-read with the numbering and skipping of :func:`~neardup.io.read.read_documents` (pass the
    same ``text_field``, ``id_field``, ``on_error`` and ``id_policy`` as the first pass, and its
    ``ReadStats.snapshot`` as ``snapshot`` to refuse a file that changed since). Each kept record is
    written with all its original fields in the format of ``out_path``'s extension (see
    :func:`~neardup.io.formats.output_format`); missing parent directories are created and the file appears only when
    complete.

    * JSONL -> JSONL copies the original line bytes verbatim. With ``all_valid`` (the first pass
      skipped no record, so every non-blank line is a record) the lines are not parsed again.
    * Parquet -> Parquet keeps the input schema (when all inputs share one).
    * A directory of ``.txt``/``.html`` files gives records ``{"id": path, "text": text}`` with the
      file's text as it is (an HTML file's markup included).
    * CSV and Parquet outputs of JSON records have the union of the kept records' fields, in
      first-seen order (one extra pass over the inputs finds them); a missing field is empty/null.
      In CSV, values that are not strings are written as JSON text (``3``, ``true``, ``[1,2]``);
      in Parquet, a field whose types disagree between records becomes such a JSON-text column.
    * Parquet/Arrow values in JSON Lines and CSV, one rule per column type: NaN and infinities
      as ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (null stays null), binary as base64 (the text
      field of a binary column as its UTF-8 text), timestamps in ISO 8601 (``T``, every
      precision, the offset when zoned), decimals as their exact digits in a string; a CSV cell
      holds that text without JSON quotes (``NaN``, ``1.50``, ``2024-01-02T03:04:05``).

    ``annotate`` (name -> array with one value per document, such as ``{"cluster": ...,
    "kept": ...}``) adds those columns to every written record, after its own fields (JSONL lines
    keep their bytes, the fields are added before the closing brace); a record that has such a
    field already is an :class:`~neardup.core.errors.InputError`. ``outputs``: write as one output
    of that :class:`~neardup.io.transaction.OutputSet` (it replaces the file on its commit).
    Errors of the output side are :class:`~neardup.core.errors.OutputError` naming ``out_path``.
    ``workers``: threads that find and copy the kept lines of JSONL -> JSONL copies
    (:func:`~neardup.io.jsonl_threads.copy_kept_threaded`); the bytes do not depend on it.

    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(f"{folder}/docs.jsonl", "w") as f:
    ...     for key, text in zip("abc", ["x y", "x y", "z"]):
    ...         print(json.dumps({"id": key, "text": text}), file=f)
    >>> write_kept([f"{folder}/docs.jsonl"], np.array([True, False, True]), f"{folder}/out/kept.jsonl")
    2
    >>> print(open(f"{folder}/out/kept.jsonl").read(), end="")
    {"id": "a", "text": "x y"}
    {"id": "c", "text": "z"}
    >>> import shutil; shutil.rmtree(folder)
    """
    pol = make_policy(text_field, id_field, on_error, None, id_policy=id_policy, snapshot=snapshot)
    sources = resolve_inputs(paths, input_format)
    keep = np.asarray(keep)
    if keep.ndim != 1 or keep.dtype != np.bool_:
        raise ValueError(f"keep must be a 1-D boolean array, got shape {keep.shape} dtype {keep.dtype}")
    out_fmt = output_format(out_path)
    values = {name: np.asarray(col) for name, col in (annotate or {}).items()}
    for name, col in values.items():
        if col.shape != keep.shape:
            raise ValueError(f"annotate[{name!r}] has {len(col)} values for {len(keep)} documents")
    added = {name: _arrow_type(col) for name, col in values.items()}

    def copy(sink) -> tuple[int, int]:
        """Write the kept records into ``sink``: (records written, documents read)."""
        written = start = 0
        try:
            for path, fmt in sources:
                if all_valid and fmt == "jsonl" and out_fmt == "jsonl" and not values:
                    if threads.workers > 1:
                        end = copy_kept_threaded(path, pol, keep, start, sink, threads)
                    else:
                        end = copy_kept_jsonl(path, pol, keep, start, sink)
                    written += int(np.count_nonzero(keep[start:end]))
                    start = end
                    continue
                n, start = _copy_chunks(scan(path, fmt, pol, True, WRITE_ROWS), path, fmt, keep, start, values, sink)
                written += n
        finally:
            sink.close()
        return written, start

    with _atomic_output(out_path, outputs) as tmp, Threads(workers) as threads:
        sink = _open_sink(out_fmt, str(out_path), tmp, sources, keep, pol, added)
        written, start = copy(sink)
        if isinstance(sink, _CsvOnePassSink) and sink.grew:  # the columns are known now: write again
            written, start = copy(_CsvSink(tmp, compression(str(out_path)), list(sink.fields), pol.text_field))
        if start != len(keep):
            raise InputChangedError(
                f"keep has {len(keep)} entries but the inputs hold {start} documents; were the "
                "inputs, text_field, id_field or on_error changed since the first pass?"
            )
    return written


def _copy_chunks(chunks, path: str, fmt: str, keep: np.ndarray, start: int, values: dict, sink) -> tuple[int, int]:
    """Write the kept records of ``chunks`` (documents numbered from ``start``) into ``sink``, with
    the annotation ``values`` when there are any: (records written, the next document number)."""
    written = 0
    for chunk in chunks:
        n = len(chunk.ids)
        sel = _kept(keep, start, n)
        if sel and values:
            part = {name: col[start : start + n] for name, col in values.items()}
            kind, chunk = _annotated(path, fmt, chunk, sel, part)
            sink.write(kind, chunk, list(range(len(sel))))
        elif sel:
            sink.write(fmt, chunk, sel)
        start += n
        written += len(sel)
    return written, start


class _Given(OutputSet):
    """An output set whose one output's temporary was named elsewhere (by the driver's
    :class:`~neardup.io.transaction.OutputSet`, which commits it): the writer writes there."""

    def __init__(self, tmp: str | os.PathLike) -> None:
        super().__init__()
        self._tmp = Path(tmp)

    def stage(self, path: str | os.PathLike) -> Path:
        return self._tmp


def write_kept_part(
    part,
    keep,
    out_path,
    tmp,
    *,
    all_valid: bool = False,
    annotate: dict[str, Any] | None = None,
    snapshot: dict | None = None,
) -> int:
    """Write the kept records of one input partition as JSON Lines to ``tmp``; return how many.

    ``part`` is a :class:`~neardup.io.partitions.FilePart` (a whole file, or a byte range of an
    uncompressed JSONL file), read with its own options; ``keep`` (and each ``annotate`` column)
    has one entry per document of the partition; ``out_path`` names the output (a ``.jsonl``
    file), ``tmp`` is the file written (opened anew, so a second attempt replaces the first's
    bytes; whoever named it commits it). The bytes are those :func:`write_kept` writes for these
    records: the partitions' outputs, concatenated in order, are the kept output of the whole
    input. ``snapshot``: the first pass's, to refuse a file that changed since."""
    from .partitions import _Limited

    o = part.options
    if output_format(out_path) != "jsonl" or compression(str(out_path)) is not None:
        raise ValueError(f"a partition's kept records are written as uncompressed JSON Lines, not {out_path}")
    if part.end is None:
        return write_kept(
            [part.path],
            keep,
            out_path,
            text_field=o.text_field,
            id_field=o.id_field,
            on_error=o.on_error,
            all_valid=all_valid,
            input_format=None if part.fmt == "txtdir" else part.fmt,
            annotate=annotate,
            outputs=_Given(tmp),
            id_policy=o.id_policy,
            snapshot=snapshot,
        )
    pol = make_policy(o.text_field, o.id_field, o.on_error, None, id_policy=o.id_policy, snapshot=snapshot)
    keep = np.asarray(keep, dtype=bool)
    values = {name: np.asarray(col) for name, col in (annotate or {}).items()}
    bom = part.begin == 0
    # lines before the range: ids FILE:LINE are not written, so an uncounted range (None) may say 0
    base = 0 if part.first_line is None else part.first_line - 1
    written = start = 0
    sink = JsonlSink(Path(tmp), None, o.text_field)
    try:
        pol.opening(part.path)
        try:
            raw = open_binary(part.path)
        except OSError as exc:  # as the first pass: an error, or (skip) a file without records
            pol.reject(unreadable(part.path, exc))
            raw = None
        if raw is not None:
            with _Limited(raw, part.end - part.begin) as stream:
                raw.seek(part.begin)
                if all_valid and not values:
                    start = copy_kept_stream(stream, part.path, pol, keep, 0, sink, bom)
                    written = int(np.count_nonzero(keep[:start]))
                else:
                    chunks = full_jsonl_chunks(stream, part.path, pol, base, bom)
                    written, start = _copy_chunks(chunks, part.path, "jsonl", keep, 0, values, sink)
    finally:
        sink.close()
    if start != len(keep):
        raise InputChangedError(
            f"{part.describe()}: {len(keep)} documents when first read and {start} when read again for writing; "
            "did the input change?"
        )
    return written


def write_bytes(data: bytes, path, outputs: OutputSet | None = None) -> None:
    """Write ``data`` as the file ``path`` (such as the ``--stats`` JSON), replaced when complete
    (or as one output of ``outputs``)."""
    with _atomic_output(path, outputs) as tmp, open(tmp, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------------------------
# write_table
def write_table(columns: dict[str, np.ndarray | list], path, outputs: OutputSet | None = None) -> None:
    """Write equal-length columns as a table in the format of ``path`` (.jsonl[.gz|.zst], .csv, .parquet).

    Used for ``--clusters`` (id, cluster, similarity) and ``--pairs`` (id_a, id_b, similarity).
    Floats are written exactly (shortest round-trip form in JSONL and CSV). ``outputs``: write
    as one output of that :class:`~neardup.io.transaction.OutputSet`.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "clusters.csv")
    >>> write_table({"id": ["a", "b"], "cluster": np.array([0, 0]), "similarity": [1.0, 0.75]}, path)
    >>> print(open(path).read(), end="")
    "id","cluster","similarity"
    "a",0,1
    "b",0,0.75
    >>> import shutil; shutil.rmtree(os.path.dirname(path))
    """
    fmt = output_format(path)
    if not columns:
        raise ValueError("write_table needs at least one column")
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns must have equal lengths, got {lengths}")
    table = pa.table(dict(columns))
    with _atomic_output(path, outputs) as tmp:
        if fmt == "parquet":
            pq.write_table(table, str(tmp))
            return
        out = _open_output(tmp, compression(str(path)))
        try:
            if fmt == "csv":
                pacsv.write_csv(_csv_ready(table), out)
            else:
                _write_table_jsonl(table, out)
        finally:
            out.close()


def _csv_ready(table: pa.Table) -> pa.Table:
    """float32 columns as the exact doubles they stand for; nested columns as JSON text."""
    for i, f in enumerate(table.schema):
        if pa.types.is_float32(f.type):
            table = table.set_column(i, f.name, pc.cast(table.column(i), pa.float64()))
        elif pa.types.is_nested(f.type):
            values = [None if v is None else _dumps(v).decode() for v in table.column(i).to_pylist()]
            table = table.set_column(i, f.name, pa.array(values, pa.string()))
    return table


def _json_values(col: pa.Array) -> pa.Array:
    """Each value of an Arrow array as JSON text (a string array), vectorised for plain types.

    Strings without characters that need escaping are quoted as they are; integers, booleans and
    floats are formatted by Arrow (floats in the shortest form that reads back to the same double,
    ``1.0`` not ``1``; NaN and infinities become ``null`` as orjson writes them). Anything else goes
    through orjson value by value.
    """
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not pc.any(pc.match_substring_regex(col, r'["\\\x00-\x1f]')).as_py():
            out = pc.binary_join_element_wise('"', col, '"', "")
            return pc.fill_null(pc.cast(out, pa.string()), "null")
    elif pa.types.is_integer(t) or pa.types.is_boolean(t):
        return pc.fill_null(pc.cast(col, pa.string()), "null")
    elif pa.types.is_floating(t):
        col = pc.cast(col, pa.float64())  # a float32 is written as the exact double it stands for
        text = pc.cast(col, pa.string())
        integral = pc.match_substring_regex(text, r"^-?[0-9]+$")
        text = pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)
        text = pc.if_else(pc.is_finite(col), text, pa.scalar(None, pa.string()))
        return pc.fill_null(text, "null")
    dumps = orjson.dumps
    opt = orjson.OPT_NON_STR_KEYS
    values = [dumps(v, default=_json_default, option=opt).decode() for v in col.to_pylist()]
    return pa.array(values, pa.string())


def _write_table_jsonl(table: pa.Table, out) -> None:
    keys = [orjson.dumps(name).decode() + ":" for name in table.column_names]
    step = 1 << 16
    for lo in range(0, table.num_rows, step):
        part = table.slice(lo, step).combine_chunks()  # one chunk per column
        pieces: list[Any] = []
        for i, key in enumerate(keys):
            pieces += [("{" if i == 0 else ",") + key, _json_values(part.column(i).chunk(0))]
        lines = pc.binary_join_element_wise(*pieces, "}\n", "")
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
        first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
        out.write(memoryview(lines.buffers()[2])[first:last])
