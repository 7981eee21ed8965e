"""Readers and writers of the batch job: documents in, kept records and result tables out.

Inputs (the format is chosen by the path):

* a directory: every ``*.txt``, ``*.html`` and ``*.htm`` file under it (extension in any case),
  recursively, in sorted path order; one document per file, id = the file's path joined from the
  given directory, text = the file decoded as UTF-8; for HTML files, the text is the page's visible
  text (:func:`neardup.html.html_to_text`; the file may also be in the charset its ``<meta>``
  declares when it is not UTF-8);
* ``.jsonl``, ``.ndjson``, ``.json`` (JSON Lines, one object per line), optionally ``.gz``/``.zst``;
* ``.csv`` with a header row, optionally ``.gz``/``.zst``;
* ``.parquet``.

With ``html=True`` the text field of JSONL, CSV and Parquet records holds HTML and is converted
the same way (``main_content=True`` keeps only the main block of each page, for HTML files too).
Only the text the methods see is converted: :func:`write_kept` writes the original records and
files (raw HTML).

Documents are numbered 0, 1, 2, ... in read order across all inputs; a skipped record gets no
number. Ids: the ``id_field`` value if ``id_field`` is given (a record without it is an error);
otherwise the record's ``id`` field if it has one (non-strings become ``str(value)``, so ints become
their decimal string; null, and an empty CSV cell, count as absent), else ``"{path}:{line}"`` with
the 1-based line (the physical line where a CSV record starts, header = line 1; the 1-based row for
Parquet).

Bad records raise :class:`~neardup.errors.InputError` naming the file and line (``on_error="fail"``)
or are skipped and counted by reason in :class:`ReadStats` (``on_error="skip"``). The reasons are
stable keys: ``"malformed JSON"``, ``"not a JSON object"``, ``"missing text field"``, ``"text not a
string"``, ``"missing id field"``, ``"invalid UTF-8"``, ``"malformed CSV row"`` and ``"unreadable
file"`` (a corrupt, truncated or unopenable file: counted once, and reading goes on with the next
file; the records before the damage stay read). Blank JSONL and CSV lines are not records and are
ignored. A path that does not exist or has an unknown extension raises ``InputError`` whatever
``on_error`` says: it is a mistake in the command, not in the data.

Speed: JSONL is read in binary, in 8 MiB blocks split on ``\\n``, and every line parsed with
``orjson``; Parquet in Arrow record batches of only the needed columns. The kept records are
written by re-reading the inputs (:func:`write_kept`), so memory never holds the texts of more than
a few blocks.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import gzip
import importlib
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np
import orjson
import zstandard

from .errors import InputError
from .html import decode_html, html_to_text

__all__ = [
    "DocBatch",
    "ReadStats",
    "input_format",
    "output_format",
    "read_documents",
    "write_kept",
    "write_table",
]

_BLOCK = 1 << 20  # bytes of (decompressed) input split into lines at a time
_TXT_BLOCK_FILES = 256  # .txt/.html files per yielded chunk
_TEXT_SUFFIXES = (".txt",)
_HTML_SUFFIXES = (".html", ".htm")
_WRITE_ROWS = 4096  # Parquet rows per batch when re-reading for write_kept
_PARQUET_ROW_GROUP = 65536  # rows buffered before the Parquet writer emits a row group
_CSV_FIELD_LIMIT = 2**31 - 1  # the csv module's default of 128 KiB is far too small for documents
_BOM = b"\xef\xbb\xbf"
_MISSING = object()
_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_ON_ERROR = ("fail", "skip")
class _Lazy:
    """A module imported on first use: pyarrow costs ~40 MB of memory and 0.3 s of start-up,
    and a JSONL-to-JSONL run never needs it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


pa = _Lazy("pyarrow")
pc = _Lazy("pyarrow.compute")
pacsv = _Lazy("pyarrow.csv")
pq = _Lazy("pyarrow.parquet")


def _unreadable_errors() -> tuple[type[BaseException], ...]:
    return (OSError, EOFError, zlib.error, zstandard.ZstdError, pa.ArrowException)


# --------------------------------------------------------------------------------------------
# Public records


@dataclass(frozen=True)
class DocBatch:
    """Consecutive documents: ``ids[i]`` and ``texts[i]`` are document number ``start + i``.

    >>> b = DocBatch(start=4, ids=["a", "b"], texts=["x", "y"])
    >>> len(b), b.start + 1
    (2, 5)
    """

    start: int
    ids: list[str]
    texts: list[str]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class ReadStats:
    """Counters filled while reading (pass one to :func:`read_documents` to watch progress).

    Attributes:
        files: input files opened (each ``.txt``/``.html`` file of a directory counts).
        documents: documents read (skipped records excluded).
        skipped: records skipped with ``on_error="skip"``; an unreadable file counts once.
        reasons: reason -> number of skipped records, e.g. ``{"malformed JSON": 2}``.
        bytes_read: bytes of input consumed: the decompressed stream for JSONL and CSV, the file
            size for Parquet and ``.txt``/``.html`` files.
    """

    files: int = 0
    documents: int = 0
    skipped: int = 0
    reasons: Counter = field(default_factory=Counter)
    bytes_read: int = 0


# --------------------------------------------------------------------------------------------
# Formats


def _compression(path: str) -> str | None:
    name = path.lower()
    if name.endswith(".gz"):
        return "gz"
    if name.endswith(".zst"):
        return "zst"
    return None


def input_format(path: str | os.PathLike) -> str:
    """The input format of ``path``: ``"jsonl"``, ``"csv"``, ``"parquet"`` or ``"txtdir"``.

    Raises :class:`InputError` (with ``line=None``) if the path does not exist or its extension is
    not one of the supported ones.

    >>> input_format("corpus.jsonl.zst")  # doctest: +SKIP
    'jsonl'
    """
    name = str(path)
    if os.path.isdir(name):
        return "txtdir"
    if not os.path.exists(name):
        raise InputError(name, None, "no such file or directory", reason="unreadable file")
    fmt = _table_format(name)
    if fmt is not None:
        return fmt
    suffix = "".join(Path(name).suffixes[-2:]) or "(none)"
    raise InputError(
        name,
        None,
        f"unknown input format {suffix!r}; expected .jsonl[.gz|.zst], .csv, .parquet "
        "or a directory of .txt/.html files",
        reason="unknown format",
    )


def _table_format(name: str) -> str | None:
    """``"jsonl"``, ``"csv"`` or ``"parquet"`` from a file name's extension (JSONL and CSV may
    end in .gz/.zst), or None."""
    lower = name.lower()
    base = lower[: lower.rfind(".")] if _compression(lower) else lower
    if base.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if base.endswith(".csv"):
        return "csv"
    if lower.endswith(".parquet"):
        return "parquet"
    return None


def output_format(path: str | os.PathLike) -> str:
    """The output format of ``path`` from its extension: ``"jsonl"``, ``"csv"`` or ``"parquet"``.

    JSONL and CSV may end in ``.gz`` or ``.zst`` to be compressed. Raises ``ValueError`` otherwise.

    >>> output_format("out/kept.jsonl.gz")
    'jsonl'
    """
    fmt = _table_format(str(path))
    if fmt is not None:
        return fmt
    raise ValueError(
        f"cannot tell the output format of {str(path)!r} from its extension; use .jsonl "
        "(or .jsonl.gz, .jsonl.zst), .csv (or .csv.gz, .csv.zst) or .parquet"
    )


# --------------------------------------------------------------------------------------------
# Error policy


@dataclass(frozen=True)
class _Policy:
    """How records are read: which fields, what to do with a bad one, where to count."""

    text_field: str
    id_field: str | None
    on_error: str
    stats: ReadStats
    html: bool = False
    """Convert the text field of records from HTML (files of a directory: by extension)."""
    main_content: bool = False
    """Keep only the main block of each HTML page."""

    def reject(self, err: InputError) -> None:
        """Raise ``err`` (fail) or count it as one skipped record (skip)."""
        if self.on_error == "fail":
            raise err
        self.stats.skipped += 1
        self.stats.reasons[err.reason] += 1


def _make_policy(text_field, id_field, on_error, stats, html=False, main_content=False) -> _Policy:
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be 'fail' or 'skip', got {on_error!r}")
    if not isinstance(text_field, str) or not text_field:
        raise ValueError(f"text_field must be a non-empty string, got {text_field!r}")
    if id_field is not None and (not isinstance(id_field, str) or not id_field):
        raise ValueError(f"id_field must be None or a non-empty string, got {id_field!r}")
    return _Policy(text_field, id_field, on_error, stats if stats is not None else ReadStats(), bool(html),
                   bool(main_content))


def _kind(value: Any) -> str:
    """JSON-ish name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _field_list(names: Iterable[str]) -> str:
    names = list(names)
    if not names:
        return "no fields"
    shown = ", ".join(repr(n) for n in names[:20])
    return f"fields {shown}{', ...' if len(names) > 20 else ''}"


def _missing_text(path: str, line: int, names: Iterable[str], text_field: str) -> InputError:
    return InputError(
        path,
        line,
        f"missing text field {text_field!r}; the record has {_field_list(names)}; "
        "use --text-field to name the field that holds the text",
        reason="missing text field",
    )


def _text_not_str(path: str, line: int, value: Any, text_field: str) -> InputError:
    return InputError(
        path,
        line,
        f"text field {text_field!r} must be a string, got {_kind(value)}",
        reason="text not a string",
    )


def _missing_id(path: str, line: int, names: Iterable[str], id_field: str, null: bool) -> InputError:
    what = "is null" if null else f"is missing; the record has {_field_list(names)}"
    return InputError(
        path,
        line,
        f"id field {id_field!r} {what}; use --id-field to name the field that holds the id "
        "(or leave it out to use 'id' when present, else path:line)",
        reason="missing id field",
    )


def _bad_utf8(path: str, line: int | None, exc: UnicodeDecodeError, where: str) -> InputError:
    return InputError(
        path,
        line,
        f"invalid UTF-8 at byte offset {exc.start} of the {where} ({exc.reason}); "
        "inputs must be UTF-8 encoded",
        reason="invalid UTF-8",
    )


def _unreadable(path: str, exc: BaseException) -> InputError:
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return InputError(
        path, None, f"cannot read the file (corrupt or truncated?): {detail}", reason="unreadable file"
    )


# --------------------------------------------------------------------------------------------
# Binary input streams


class _ZstdReader:
    """``read(n)`` over a (multi-frame) zstd file that reports truncation.

    ``zstandard``'s ``stream_reader`` returns end-of-file silently when a file is cut in the
    middle of a frame; this reader raises ``EOFError`` instead.
    """

    def __init__(self, raw):
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._eof = False

    def read(self, size: int) -> bytes:
        out: list[bytes] = []
        got = 0
        while got < size and not self._eof:
            data = self._raw.read(1 << 20)
            if not data:
                self._eof = True
                if self._in_frame:
                    raise EOFError("zstd stream ends in the middle of a frame")
                break
            while data:
                piece = self._obj.decompress(data)
                out.append(piece)
                got += len(piece)
                self._in_frame = True
                if not self._obj.eof:
                    break
                data = self._obj.unused_data
                self._obj = self._dctx.decompressobj()
                self._in_frame = False
        return b"".join(out)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_input(name: str, pol: _Policy):
    """Open a file for binary reading, decompressing by extension; None if skipped."""
    pol.stats.files += 1
    comp = _compression(name)
    try:
        if comp == "gz":
            return gzip.open(name, "rb")
        if comp == "zst":
            return _ZstdReader(open(name, "rb"))
        return open(name, "rb")
    except OSError as exc:
        pol.reject(_unreadable(name, exc))
        return None


def _raw_blocks(stream, name: str, pol: _Policy) -> Iterator[bytes]:
    """Yield a binary stream a few MiB at a time, cut after a ``\\n`` so that every block holds
    whole lines (only the last block may end without one).

    A leading UTF-8 byte order mark is dropped. A read error ends the file (after ``reject``).
    """
    pending: list[bytes] = []
    first = True
    while True:
        try:
            data = stream.read(_BLOCK)
        except _unreadable_errors() as exc:
            pol.reject(_unreadable(name, exc))
            return
        if not data:
            break
        pol.stats.bytes_read += len(data)
        if first:
            first = False
            if data.startswith(_BOM):
                data = data[3:]
        cut = data.rfind(b"\n") + 1
        if not cut:  # part of a long line
            pending.append(data)
            continue
        head = data[:cut] if cut < len(data) else data
        if pending:
            pending.append(head)
            head = b"".join(pending)
            pending = []
        if cut < len(data):
            pending.append(data[cut:])
        yield head
    if pending:
        yield b"".join(pending)


def _line_blocks(stream, name: str, pol: _Policy) -> Iterator[list[bytes]]:
    """The lines of :func:`_raw_blocks`, without their ``\\n``, a block at a time."""
    for block in _raw_blocks(stream, name, pol):
        lines = block.split(b"\n")
        if not lines[-1]:
            lines.pop()
        yield lines


# --------------------------------------------------------------------------------------------
# Scanners: one per input format. Each yields _Chunk's of valid records, numbered implicitly by
# order, so read_documents and write_kept agree on numbering and skipping by construction.


class _Chunk(NamedTuple):
    ids: list[str]
    texts: list[str]
    payload: Any  # the original records, only when scanned with full=True (see each scanner)


def _scan(path: str, fmt: str, pol: _Policy, full: bool, rows: int) -> Iterator[_Chunk]:
    if fmt == "jsonl":
        return _scan_jsonl(path, pol, full)
    if fmt == "csv":
        return _scan_csv(path, pol, full)
    if fmt == "parquet":
        return _scan_parquet(path, pol, full, rows)
    return _scan_txtdir(path, pol, full)


def _json_error(path: str, line: int, raw: bytes, exc: orjson.JSONDecodeError) -> InputError:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return _bad_utf8(path, line, uexc, "line")
    return InputError(
        path,
        line,
        f"malformed JSON at column {exc.colno}: {exc.msg} (expected one JSON object per line)",
        reason="malformed JSON",
    )


def _parse_record(line: bytes, path: str, lineno: int, pol: _Policy) -> tuple[str, str, dict] | None:
    """(id, text, object) of one non-blank JSONL line, or None after ``pol.reject``-ing it."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        pol.reject(_json_error(path, lineno, line, exc))
        return None
    if type(obj) is not dict:
        pol.reject(InputError(path, lineno, f"expected a JSON object per line, got {_kind(obj)}",
                              reason="not a JSON object"))
        return None
    text = obj.get(pol.text_field, _MISSING)
    if type(text) is not str:
        if text is _MISSING:
            pol.reject(_missing_text(path, lineno, obj, pol.text_field))
        else:
            pol.reject(_text_not_str(path, lineno, text, pol.text_field))
        return None
    id_field = pol.id_field
    if id_field is None:
        doc_id = obj.get("id")
        if doc_id is None:
            doc_id = f"{path}:{lineno}"
        elif type(doc_id) is not str:
            doc_id = str(doc_id)
    else:
        doc_id = obj.get(id_field)
        if doc_id is None:
            pol.reject(_missing_id(path, lineno, obj, id_field, id_field in obj))
            return None
        if type(doc_id) is not str:
            doc_id = str(doc_id)
    return doc_id, text, obj


def _scan_jsonl(path: str, pol: _Policy, full: bool) -> Iterator[_Chunk]:
    """JSON Lines. payload (full): (raw line bytes, parsed dicts) of the valid records.

    Without ``full``, each block goes through :func:`neardup.jsonl_scan.scan_block` (one kernel
    call finds and unescapes the text and id of every ordinary line); the lines it declines are
    parsed here with orjson, which also words the errors. Both give the same records.
    """
    stream = _open_input(path, pol)
    if stream is None:
        return
    lineno = 0
    with stream:
        if not full:
            yield from _scan_jsonl_blocks(stream, path, pol)
            return
        for block in _line_blocks(stream, path, pol):
            ids: list[str] = []
            texts: list[str] = []
            raws: list[bytes] = []
            objs: list[dict] = []
            for line in block:
                lineno += 1
                if not line or line.isspace():
                    continue
                record = _parse_record(line, path, lineno, pol)
                if record is not None:
                    ids.append(record[0])
                    texts.append(record[1])
                    raws.append(line)
                    objs.append(record[2])
            if ids:
                yield _Chunk(ids, texts, (raws, objs))


def _scan_jsonl_blocks(stream, path: str, pol: _Policy) -> Iterator[_Chunk]:
    """The records of an open JSONL stream, a block at a time, via the scanning kernel."""
    from .jsonl_scan import FALLBACK, ID_ABSENT_OR_NULL, ID_INTEGER, OK, scan_block

    text_key = pol.text_field.encode("utf-8", "surrogatepass")
    id_key = (pol.id_field or "id").encode("utf-8", "surrogatepass")
    base = 0  # lines before this block
    buffer = None  # the kernel's output buffer, reused block after block
    for block in _raw_blocks(stream, path, pol):
        r = scan_block(block, text_key, id_key, buffer)
        buffer = r.out
        status = r.status
        if pol.id_field is not None:  # a missing id is an error: orjson's path words it
            status = np.where((status == OK) & (r.id_kind == ID_ABSENT_OR_NULL), np.uint8(FALLBACK), status)
        ok = np.flatnonzero(status == OK)
        out, raw = memoryview(r.out), memoryview(block)
        texts = [str(out[s:e], "utf-8") for s, e in zip(r.text_start[ok].tolist(), r.text_end[ok].tolist())]
        kinds = r.id_kind[ok].tolist()
        lines = (ok + (base + 1)).tolist()
        ids = [f"{path}:{line}" if kind == ID_ABSENT_OR_NULL else
               str(raw[s:e] if kind == ID_INTEGER else out[s:e], "utf-8")
               for kind, line, s, e in zip(kinds, lines, r.id_start[ok].tolist(), r.id_end[ok].tolist())]
        declined = np.flatnonzero(status == FALLBACK)
        if len(declined):
            ids, texts = _merge_declined(block, r, ok, declined, ids, texts, path, base, pol)
        base += len(status)
        if ids:
            yield _Chunk(ids, texts, None)


def _merge_declined(block: bytes, r, ok: np.ndarray, declined: np.ndarray, ids: list[str], texts: list[str],
                    path: str, base: int, pol: _Policy) -> tuple[list[str], list[str]]:
    """Parse the lines the kernel declined and put their records among the others, in line order."""
    parsed: dict[int, tuple[str, str]] = {}
    for i in declined.tolist():
        record = _parse_record(block[r.line_start[i]:r.line_end[i]], path, base + i + 1, pol)
        if record is not None:
            parsed[i] = record[:2]
    if not parsed:
        return ids, texts
    order = sorted([*zip(ok.tolist(), ids, texts), *((i, d, t) for i, (d, t) in parsed.items())])
    return [d for _, d, _ in order], [t for _, _, t in order]


def _copy_kept_jsonl(path: str, pol: _Policy, keep: np.ndarray, start: int, sink: "_JsonlSink") -> int:
    """Write the kept lines of a JSON Lines file known to hold only valid records (every
    non-blank line is one, numbered from ``start``); return the next record number."""
    from .line_copy import copy_kept_lines

    stream = _open_input(path, pol)
    if stream is None:
        return start
    out = np.empty(0, dtype=np.uint8)
    with stream:
        for block in _raw_blocks(stream, path, pol):
            if len(out) <= len(block):
                out = np.empty(len(block) + 1, dtype=np.uint8)
            n, start = copy_kept_lines(block, keep, start, out)
            if n:
                sink.write_bytes(memoryview(out)[:n])
    return start


def _allow_large_csv_fields() -> None:
    """Raise the csv module's field size limit (a process-wide setting) so 50 MB texts parse."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)


def _csv_lines(stream, path: str, pol: _Policy, bad_lines: list[int]) -> Iterator[str]:
    """Physical lines decoded for csv.reader; numbers of lines that are not UTF-8 go to bad_lines."""
    lineno = 0
    for block in _line_blocks(stream, path, pol):
        for raw in block:
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                bad_lines.append(lineno)
                line = raw.decode("utf-8", "replace")
            yield line + "\n"


def _csv_rows(reader, path: str, pol: _Policy, bad_lines: list[int]) -> Iterator[tuple[int, list[str], int]]:
    """(first physical line, fields, first non-UTF-8 line or 0) of each non-blank CSV record."""
    prev = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            pol.reject(InputError(path, prev + 1, f"malformed CSV row: {exc}", "malformed CSV row"))
            prev = reader.line_num
            bad_lines.clear()
            continue
        line, prev = prev + 1, reader.line_num
        bad = 0
        if bad_lines:  # lines are decoded lazily, so these all belong to this record
            bad = bad_lines[0]
            bad_lines.clear()
        if row:
            yield line, row, bad


def _scan_csv(path: str, pol: _Policy, full: bool) -> Iterator[_Chunk]:
    """CSV with a header row. payload (full): (header, rows) of the valid records."""
    _allow_large_csv_fields()
    stream = _open_input(path, pol)
    if stream is None:
        return
    bad_lines: list[int] = []
    text_field, id_field = pol.text_field, pol.id_field
    with stream:
        reader = csv.reader(_csv_lines(stream, path, pol, bad_lines))
        records = _csv_rows(reader, path, pol, bad_lines)
        first = next(records, None)
        if first is None:
            return  # empty file
        _, header, bad = first
        if bad:
            pol.reject(InputError(path, bad, "invalid UTF-8 in the CSV header", reason="invalid UTF-8"))
            return
        width = len(header)
        text_col = header.index(text_field) if text_field in header else None
        id_name = id_field if id_field is not None else "id"
        id_col = header.index(id_name) if id_name in header else None
        ids: list[str] = []
        texts: list[str] = []
        rows: list[list[str]] = []
        for line, row, bad in records:
            if bad:
                pol.reject(InputError(path, bad, "invalid UTF-8 in this CSV record", reason="invalid UTF-8"))
                continue
            if len(row) != width:
                pol.reject(
                    InputError(
                        path,
                        line,
                        f"malformed CSV row: expected {width} fields as in the header, got {len(row)}",
                        reason="malformed CSV row",
                    )
                )
                continue
            if text_col is None:
                pol.reject(_missing_text(path, line, header, text_field))
                continue
            if id_col is not None:
                doc_id = row[id_col]
                if not doc_id and id_field is None:
                    doc_id = f"{path}:{line}"
            elif id_field is None:
                doc_id = f"{path}:{line}"
            else:
                pol.reject(_missing_id(path, line, header, id_field, False))
                continue
            ids.append(doc_id)
            texts.append(row[text_col])
            if full:
                rows.append(row)
            if len(ids) >= _WRITE_ROWS:
                yield _Chunk(ids, texts, (header, rows) if full else None)
                ids, texts, rows = [], [], []
        if ids:
            yield _Chunk(ids, texts, (header, rows) if full else None)


def _parquet_text(value: Any, path: str, line: int, text_field: str) -> str | InputError:
    """A Parquet text cell as str, or the error to report (binary cells are decoded as UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _bad_utf8(path, line, exc, "text")
    return _text_not_str(path, line, value, text_field)


def _scan_parquet(path: str, pol: _Policy, full: bool, rows: int) -> Iterator[_Chunk]:
    """Parquet. payload (full): (record batch with all columns, positions of valid rows or None)."""
    pol.stats.files += 1
    text_field, id_field = pol.text_field, pol.id_field
    try:
        pf = pq.ParquetFile(path)
    except _unreadable_errors() as exc:
        pol.reject(_unreadable(path, exc))
        return
    with pf:
        names = pf.schema_arrow.names
        total = pf.metadata.num_rows
        id_col = id_field if id_field is not None else ("id" if "id" in names else None)
        problem = None
        if text_field not in names:
            problem = _missing_text(path, 1, names, text_field)
        elif id_col is not None and id_col not in names:
            problem = _missing_id(path, 1, names, id_col, False)
        if problem is not None:  # every row has the same problem
            if total:
                pol.reject(problem)
                pol.stats.skipped += total - 1
                pol.stats.reasons[problem.reason] += total - 1
            return
        columns = None if full else list(dict.fromkeys([text_field, id_col] if id_col else [text_field]))
        batches = pf.iter_batches(batch_size=rows, columns=columns)
        row0 = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except _unreadable_errors() as exc:
                pol.reject(_unreadable(path, exc))
                return
            values = batch.column(text_field).to_pylist()
            id_values = batch.column(id_col).to_pylist() if id_col else None
            ids: list[str] = []
            texts: list[str] = []
            valid: list[int] = []
            for k, text in enumerate(values):
                line = row0 + k + 1
                if type(text) is not str:
                    text = _parquet_text(text, path, line, text_field)
                    if type(text) is not str:
                        pol.reject(text)
                        continue
                if id_values is None:
                    doc_id = f"{path}:{line}"
                else:
                    doc_id = id_values[k]
                    if doc_id is None:
                        if id_field is not None:
                            pol.reject(_missing_id(path, line, names, id_field, True))
                            continue
                        doc_id = f"{path}:{line}"
                    elif type(doc_id) is not str:
                        doc_id = str(doc_id)
                ids.append(doc_id)
                texts.append(text)
                if full:
                    valid.append(k)
            row0 += batch.num_rows
            if ids:
                all_valid = len(ids) == batch.num_rows
                yield _Chunk(ids, texts, (batch, None if all_valid else valid) if full else None)
        pol.stats.bytes_read += os.path.getsize(path)


def _scan_txtdir(root: str, pol: _Policy, full: bool = False) -> Iterator[_Chunk]:
    """Every ``*.txt`` and ``*.html``/``*.htm`` under ``root``; no payload (the record is
    ``{"id": id, "text": text}``). HTML files are converted to text unless ``full`` (write_kept
    writes the original page)."""
    base = Path(root)
    files = sorted(p for p in base.rglob("*") if p.suffix.lower() in _TEXT_SUFFIXES + _HTML_SUFFIXES
                   and p.is_file())
    ids: list[str] = []
    texts: list[str] = []
    for p in files:
        name = os.path.join(root, str(p.relative_to(base)))
        pol.stats.files += 1
        try:
            data = p.read_bytes()
        except OSError as exc:
            pol.reject(_unreadable(name, exc))
            continue
        pol.stats.bytes_read += len(data)
        if data.startswith(_BOM):
            data = data[3:]
        is_html = p.suffix.lower() in _HTML_SUFFIXES
        try:
            text = decode_html(data) if is_html else data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            pol.reject(_bad_utf8(name, line, exc, "file"))
            continue
        if is_html and not full:
            text = html_to_text(text, main_content=pol.main_content)
        ids.append(name)
        texts.append(text)
        if len(ids) >= _TXT_BLOCK_FILES:
            yield _Chunk(ids, texts, None)
            ids, texts = [], []
    if ids:
        yield _Chunk(ids, texts, None)


# --------------------------------------------------------------------------------------------
# Reading


def _resolve_inputs(paths) -> list[tuple[str, str]]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    sources = [(str(p), input_format(p)) for p in paths]
    if not sources:
        raise ValueError("no input paths given")
    return sources


def read_documents(
    paths,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    batch_size: int = 2048,
    stats: ReadStats | None = None,
    html: bool = False,
    main_content: bool = False,
) -> Iterator[DocBatch]:
    """Stream the documents of ``paths`` (read in the order given) as :class:`DocBatch` es.

    Every batch but the last holds ``batch_size`` documents. Paths are checked before this
    returns (a missing path or unknown extension raises :class:`InputError` at once); records are
    read lazily. ``stats``, if given, is updated as batches are produced.

    ``html=True``: the text field of JSONL, CSV and Parquet records is HTML, converted with
    :func:`neardup.html.html_to_text` (``.html``/``.htm`` files of a directory are always converted,
    ``.txt`` files never). ``main_content=True``: keep only the main block of each HTML page.

    >>> stats = ReadStats()
    >>> for batch in read_documents(["docs.jsonl.gz"], on_error="skip", stats=stats):  # doctest: +SKIP
    ...     print(batch.start, batch.ids[:2])
    0 ['doc-1', 'doc-2']
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    pol = _make_policy(text_field, id_field, on_error, stats, html, main_content)
    sources = _resolve_inputs(paths)
    return _batches(sources, pol, batch_size)


def _batches(sources: list[tuple[str, str]], pol: _Policy, batch_size: int) -> Iterator[DocBatch]:
    start = 0
    ids: list[str] = []
    texts: list[str] = []
    for path, fmt in sources:
        convert = pol.html and fmt != "txtdir"
        for chunk in _scan(path, fmt, pol, False, batch_size):
            pol.stats.documents += len(chunk.ids)
            ids += chunk.ids
            if convert:
                texts += [html_to_text(t, main_content=pol.main_content) for t in chunk.texts]
            else:
                texts += chunk.texts
            while len(ids) >= batch_size:
                yield DocBatch(start, ids[:batch_size], texts[:batch_size])
                del ids[:batch_size], texts[:batch_size]
                start += batch_size
    if ids:
        yield DocBatch(start, ids, texts)


# --------------------------------------------------------------------------------------------
# Output streams


@contextlib.contextmanager
def _atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path next to ``path`` that replaces it only if the block succeeds.

    Also makes writing over one of the inputs safe, and creates missing parent directories.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _open_output(tmp: Path, comp: str | None):
    if comp == "gz":
        return gzip.open(tmp, "wb", compresslevel=6)
    if comp == "zst":
        return zstandard.ZstdCompressor(level=3).stream_writer(open(tmp, "wb"), closefd=True)
    return open(tmp, "wb")


def _json_default(value: Any) -> Any:
    """JSON for values orjson does not know (from Parquet): decimals and bytes become strings."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    return str(value)


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS)


def _cell_text(value: Any) -> str | None:
    """A value as CSV cell text: strings as they are, null as empty, anything else as JSON."""
    if value is None or type(value) is str:
        return value
    return _dumps(value).decode("utf-8")


# --------------------------------------------------------------------------------------------
# write_kept: the output columns, the sinks, the copy loop


def _chunk_records(fmt: str, chunk: _Chunk, sel: list[int]) -> list[dict]:
    """The selected records of a chunk as dicts with all their fields."""
    if fmt == "jsonl":
        objs = chunk.payload[1]
        return [objs[i] for i in sel]
    if fmt == "csv":
        header, rows = chunk.payload
        return [dict(zip(header, rows[i])) for i in sel]
    if fmt == "parquet":
        batch, valid = chunk.payload
        take = sel if valid is None else [valid[i] for i in sel]
        return batch.take(pa.array(take, type=pa.int64())).to_pylist()
    return [{"id": chunk.ids[i], "text": chunk.texts[i]} for i in sel]


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
            merged = pa.unify_schemas(
                [pa.schema([(name, old)]), pa.schema([(name, typ)])], promote_options="permissive"
            ).field(name).type
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
    elif fmt == "parquet":
        with contextlib.suppress(*_unreadable_errors()):
            for f in pq.read_schema(path):
                cols.add(f.name, f.type)
    elif fmt == "csv":
        _allow_large_csv_fields()
        pol = _Policy("text", None, "skip", ReadStats())
        stream = _open_input(path, pol)
        if stream is None:
            return
        with stream, contextlib.suppress(csv.Error):
            for row in csv.reader(_csv_lines(stream, path, pol, [])):
                if row:
                    for name in row:
                        cols.add(name, pa.string())
                    break


def _kept(keep: np.ndarray, start: int, n: int) -> list[int]:
    """Positions in a chunk of ``n`` documents numbered from ``start`` that ``keep`` marks."""
    if start + n > len(keep):
        raise ValueError(
            f"keep has {len(keep)} entries but the inputs hold more documents; were the inputs, "
            "text_field, id_field or on_error changed since the first pass?"
        )
    return np.flatnonzero(keep[start : start + n]).tolist()


def _plan_columns(sources, keep: np.ndarray, pol: _Policy, infer_types: bool) -> _Columns:
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
        for chunk in _scan(path, fmt, pol, fmt in ("jsonl", "txtdir"), _WRITE_ROWS):
            sel = _kept(keep, start, len(chunk.ids))
            start += len(chunk.ids)
            if fmt == "jsonl" and sel:
                cols.add_records(_chunk_records(fmt, chunk, sel), infer_types)
    return cols


class _JsonlSink:
    """JSON Lines out; JSONL input lines are copied byte for byte."""

    def __init__(self, tmp: Path, comp: str | None):
        self._out = _open_output(tmp, comp)

    def write(self, fmt: str, chunk: _Chunk, sel: list[int]) -> None:
        if fmt == "jsonl":
            raws = chunk.payload[0]
            lines = raws if len(sel) == len(raws) else [raws[i] for i in sel]
            self._out.write(b"\n".join(lines) + b"\n")
        else:
            dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
            recs = _chunk_records(fmt, chunk, sel)
            self._out.write(b"".join(dumps(r, default=_json_default, option=opt) for r in recs))

    def write_bytes(self, data) -> None:
        """Write JSON Lines that are ready as bytes."""
        self._out.write(data)

    def close(self) -> None:
        self._out.close()


class _CsvSink:
    """CSV out with the planned header; missing fields are empty, non-strings JSON text."""

    def __init__(self, tmp: Path, comp: str | None, fields: list[str]):
        self._out = _open_output(tmp, comp)
        self._text = _TextOut(self._out)
        self._writer = csv.writer(self._text, lineterminator="\n")
        self._fields = fields
        if fields:  # no header at all when there is nothing to write
            self._writer.writerow(fields)

    def write(self, fmt: str, chunk: _Chunk, sel: list[int]) -> None:
        if fmt == "csv" and chunk.payload[0] == self._fields:
            rows = chunk.payload[1]
            self._writer.writerows(rows[i] for i in sel)
        else:
            fields = self._fields
            self._writer.writerows(
                [_cell_text(r.get(f)) for f in fields] for r in _chunk_records(fmt, chunk, sel)
            )
        self._text.flush()

    def close(self) -> None:
        self._text.flush()
        self._out.close()


class _TextOut:
    """Minimal text sink over a binary stream, buffered, for csv.writer (UTF-8, no newline mangling)."""

    def __init__(self, out):
        self._out = out
        self._parts: list[str] = []
        self._size = 0

    def write(self, s: str) -> None:
        self._parts.append(s)
        self._size += len(s)
        if self._size >= _BLOCK:
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

    def write(self, fmt: str, chunk: _Chunk, sel: list[int]) -> None:
        if fmt == "parquet" and chunk.payload[0].schema.equals(self._schema, check_metadata=False):
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


def _open_sink(out_fmt: str, out_path: str, tmp: Path, sources, keep: np.ndarray, pol: _Policy):
    comp = _compression(out_path)
    if out_fmt == "jsonl":
        return _JsonlSink(tmp, comp)
    plan_pol = _Policy(pol.text_field, pol.id_field, pol.on_error, ReadStats())
    if out_fmt == "csv":
        return _CsvSink(tmp, comp, list(_plan_columns(sources, keep, plan_pol, False).types))
    schemas = []
    if all(fmt == "parquet" for _, fmt in sources):
        with contextlib.suppress(*_unreadable_errors()):
            schemas = [pq.read_schema(path) for path, _ in sources]
    if schemas and all(s.equals(schemas[0], check_metadata=False) for s in schemas):
        return _ParquetSink(tmp, schemas[0], set())  # the input schema, metadata included
    cols = _plan_columns(sources, keep, plan_pol, True)
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
) -> int:
    """Write the records of ``paths`` whose document number is marked in ``keep``; return how many.

    The inputs are re-read with the numbering and skipping of :func:`read_documents` (pass the
    same ``text_field``, ``id_field`` and ``on_error`` as the first pass). Each kept record is
    written with all its original fields in the format of ``out_path``'s extension (see
    :func:`output_format`); missing parent directories are created and the file appears only when
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

    >>> n = write_kept(["docs.jsonl"], keep, "out/kept.jsonl.zst")  # doctest: +SKIP
    """
    pol = _make_policy(text_field, id_field, on_error, None)
    sources = _resolve_inputs(paths)
    keep = np.asarray(keep)
    if keep.ndim != 1 or keep.dtype != np.bool_:
        raise ValueError(f"keep must be a 1-D boolean array, got shape {keep.shape} dtype {keep.dtype}")
    out_fmt = output_format(out_path)
    written = 0
    start = 0
    with _atomic_output(out_path) as tmp:
        sink = _open_sink(out_fmt, str(out_path), tmp, sources, keep, pol)
        try:
            for path, fmt in sources:
                if all_valid and fmt == "jsonl" and out_fmt == "jsonl":
                    end = _copy_kept_jsonl(path, pol, keep, start, sink)
                    written += int(np.count_nonzero(keep[start:end]))
                    start = end
                    continue
                for chunk in _scan(path, fmt, pol, True, _WRITE_ROWS):
                    sel = _kept(keep, start, len(chunk.ids))
                    start += len(chunk.ids)
                    if sel:
                        sink.write(fmt, chunk, sel)
                        written += len(sel)
        finally:
            sink.close()
        if start != len(keep):
            raise ValueError(
                f"keep has {len(keep)} entries but the inputs hold {start} documents; were the "
                "inputs, text_field, id_field or on_error changed since the first pass?"
            )
    return written


# --------------------------------------------------------------------------------------------
# write_table


def write_table(columns: dict[str, np.ndarray | list], path) -> None:
    """Write equal-length columns as a table in the format of ``path`` (.jsonl[.gz|.zst], .csv, .parquet).

    Used for ``--clusters`` (id, cluster, similarity) and ``--pairs`` (id_a, id_b, similarity).
    Floats are written exactly (shortest round-trip form in JSONL and CSV).

    >>> write_table({"id": ["a", "b"], "cluster": np.array([0, 0])}, "out/clusters.csv")  # doctest: +SKIP
    """
    fmt = output_format(path)
    if not columns:
        raise ValueError("write_table needs at least one column")
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns must have equal lengths, got {lengths}")
    table = pa.table(dict(columns))
    with _atomic_output(path) as tmp:
        if fmt == "parquet":
            pq.write_table(table, str(tmp))
            return
        out = _open_output(tmp, _compression(str(path)))
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
