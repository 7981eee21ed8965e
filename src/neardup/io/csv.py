"""The CSV scanner: records of CSV files with a header row (optionally ``.gz``/``.zst``); fields
are separated by commas, or by tabs in ``.tsv`` files.

Lines are decoded as UTF-8 one by one so that an invalid one names its line; a record spans the
physical lines of its quoted newlines, and its line is the first of them (the header is line 1).

Two faults that the ``csv`` module lets through are caught here:

* **An unterminated quote.** A quoted field whose closing quote never comes would take every
  later line of the file into one field (a whole corpus read as one record, without a word).
  The end of the data is marked by a sentinel line that no input holds (a random token): when it
  lands inside a field, the quote opened on the record's first line was never closed. The csv
  module reads in strict mode, so a stray quote later on cannot close the open one quietly
  either (``"a"b`` is refused). Such a record is an error (``malformed CSV row``, naming the line
  where it starts); with ``on_error="skip"`` it is skipped and reading starts again on the next
  physical line, so the records after it are read, not swallowed. In the header it ends the
  file (its columns are unknown).
* **A repeated column name.** Which of two ``text`` columns is the text? The header is refused
  whatever ``on_error`` says (skipping it would drop the whole file).
"""

from __future__ import annotations

import csv
import itertools
import secrets
from collections import Counter
from collections.abc import Iterator

from ..core.errors import InputError
from .formats import csv_delimiter
from .policy import Chunk, Policy, empty_id, missing_id, missing_text
from .streams import WRITE_ROWS, StreamDamage, damaged, line_blocks, open_input

_CSV_FIELD_LIMIT = 2**31 - 1  # the csv module's default of 128 KiB is far too small for documents


def allow_large_csv_fields() -> None:
    """Raise the csv module's field size limit (a process-wide setting) so 50 MB texts parse."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)


def _decoded(stream, path: str, pol: Policy, damage: bool = False) -> Iterator[tuple[int, str, bool]]:
    """(1-based line number, the line decoded with its ``\\n``, True if it is not UTF-8)."""
    lineno = 0
    for block in line_blocks(stream, path, pol, damage):
        for raw in block:
            lineno += 1
            try:
                yield lineno, raw.decode("utf-8") + "\n", False
            except UnicodeDecodeError:
                yield lineno, raw.decode("utf-8", "replace") + "\n", True


def csv_lines(stream, path: str, pol: Policy, bad_lines: list[int]) -> Iterator[str]:
    """Physical lines decoded for csv.reader; numbers of lines that are not UTF-8 go to bad_lines."""
    for lineno, line, bad in _decoded(stream, path, pol):
        if bad:
            bad_lines.append(lineno)
        yield line


class _Feed:
    """The lines given to a ``csv.reader``, remembering those of the record being read
    (``held``: (line number, text, not UTF-8)); after the data comes the sentinel line."""

    def __init__(self, entries: Iterator[tuple[int, str, bool]]) -> None:
        self.entries = entries
        self.held: list[tuple[int, str, bool]] = []
        self.marker = f"neardup-end-of-data-{secrets.token_hex(16)}"

    def lines(self, replay: list[tuple[int, str, bool]]) -> Iterator[str]:
        for entry in itertools.chain(replay, self.entries):
            self.held.append(entry)
            yield entry[1]
        self.held.append((0, self.marker + "\n", False))
        yield self.marker + "\n"


def _bad_record(path: str, held: list, exc: csv.Error, header: bool) -> InputError:
    """The error of a record the csv module refused; an open quote at the end of the data (the
    sentinel line is among the record's lines) says how much it would have swallowed."""
    line = held[0][0] if held and held[0][0] else None
    where = "in the CSV header" if header else "in this CSV record"
    if held and held[-1][0] == 0:
        swallowed = sum(1 for e in held if e[0]) - 1
        return InputError(
            path,
            line,
            f"unterminated quoted field {where}: the quote opened here is never closed, so the "
            f"{swallowed:,} line(s) after it up to the end of the file would be read as one field "
            '(close the quote, or write a quote inside a quoted field as "")',
            reason="malformed CSV row",
        )
    span = f" (lines {line}-{held[-1][0]})" if line and len(held) > 1 else ""
    hint = (
        "; a quoted field must end with a quote followed by a comma or the end of the line (write a quote "
        'inside a quoted field as "")'
        if "expected after" in str(exc)
        else ""
    )
    return InputError(path, line, f"malformed CSV row{span}: {exc}{hint}", reason="malformed CSV row")


def _csv_rows(entries, path: str, pol: Policy) -> Iterator[tuple[int, list[str], int]]:
    """(first physical line, fields, first non-UTF-8 line or 0) of each non-blank CSV record.

    The csv module reads in strict mode: a quote must close a field (``"a"b`` is refused, not
    read as ``ab``), so a stray quote cannot quietly close an earlier open one. A refused record
    is rejected at its first line; reading then starts again on the line after it, so a bad
    record takes no good ones with it (see the module docs). In the header, the file ends.
    """
    feed = _Feed(entries)
    replay: list[tuple[int, str, bool]] = []
    header = True
    while True:
        reader = csv.reader(feed.lines(replay), strict=True, delimiter=csv_delimiter(path))
        replay = []
        while True:
            feed.held = []
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                held = feed.held
                pol.reject(_bad_record(path, held, exc, header))
                if header:
                    return
                replay = [e for e in held[1:] if e[0]]
                break
            held = feed.held
            if not row:
                continue
            if len(row) == 1 and row[0] == feed.marker:
                return
            header = False
            bad = next((e[0] for e in held if e[2]), 0)
            yield held[0][0], row, bad


def _check_header(path: str, line: int, header: list[str]) -> None:
    """Refuse a header that names a column twice (whatever on_error says)."""
    repeated = [name for name, n in Counter(header).items() if n > 1]
    if repeated:
        name = repeated[0]
        cols = [str(i + 1) for i, h in enumerate(header) if h == name]
        raise InputError(
            path,
            line,
            f"the CSV header names column {name!r} {len(cols)} times (columns {', '.join(cols)}); "
            "which one holds the data is ambiguous: rename the columns so that each name is used once",
            reason="malformed CSV header",
        )


def scan_csv(path: str, pol: Policy, full: bool) -> Iterator[Chunk]:
    """CSV with a header row. payload (full): (header, rows) of the valid records."""
    allow_large_csv_fields()
    stream = open_input(path, pol)
    if stream is None:
        return
    records = 0
    with stream:
        try:
            for chunk in _csv_chunks(_csv_rows(_decoded(stream, path, pol, True), path, pol), path, pol, full):
                records += len(chunk.ids)
                yield chunk
        except StreamDamage as exc:  # the records before the damage are read
            pol.reject(damaged(path, exc, records))


def _csv_chunks(records, path: str, pol: Policy, full: bool) -> Iterator[Chunk]:
    """Chunks of the valid records of ``records`` (from :func:`_csv_rows`), the header first."""
    text_field, id_field = pol.text_field, pol.id_field
    first = next(records, None)
    if first is None:
        return  # empty file
    header_line, header, bad = first
    if bad:
        pol.reject(InputError(path, bad, "invalid UTF-8 in the CSV header", reason="invalid UTF-8"))
        return
    _check_header(path, header_line, header)
    width = len(header)
    text_col = header.index(text_field) if text_field in header else None
    id_name = id_field if id_field is not None else "id"
    id_col = header.index(id_name) if id_name in header else None
    ids: list[str] = []
    texts: list[str] = []
    rows: list[list[str]] = []
    damage = None
    try:
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
                pol.reject(missing_text(path, line, header, text_field))
                continue
            if id_col is not None:
                doc_id = row[id_col]
                if not doc_id and id_field is None:
                    doc_id = f"{path}:{line}"
            elif id_field is None:
                doc_id = f"{path}:{line}"
            elif pol.id_policy == "line":
                doc_id = None
            else:
                pol.reject(missing_id(path, line, header, id_field, False))
                continue
            if pol.id_policy == "line":
                doc_id = pol.line_id(doc_id, path, line)
            if pol.reject_empty_ids and doc_id == "":
                pol.reject(empty_id(path, line))
                continue
            ids.append(doc_id)
            texts.append(row[text_col])
            if full:
                rows.append(row)
            if len(ids) >= WRITE_ROWS:
                yield Chunk(ids, texts, (header, rows) if full else None)
                ids, texts, rows = [], [], []
    except StreamDamage as exc:
        damage = exc
    if ids:  # the records before a damaged stream too
        yield Chunk(ids, texts, (header, rows) if full else None)
    if damage is not None:
        raise damage
