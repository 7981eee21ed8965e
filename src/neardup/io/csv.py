"""The CSV scanner: records of CSV files with a header row (optionally ``.gz``/``.zst``).

Lines are decoded as UTF-8 one by one so that an invalid one names its line; a record spans the
physical lines of its quoted newlines, and its line is the first of them (the header is line 1).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from ..core.errors import InputError
from .policy import Chunk, Policy, missing_id, missing_text
from .streams import WRITE_ROWS, line_blocks, open_input

_CSV_FIELD_LIMIT = 2**31 - 1  # the csv module's default of 128 KiB is far too small for documents


def allow_large_csv_fields() -> None:
    """Raise the csv module's field size limit (a process-wide setting) so 50 MB texts parse."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)


def csv_lines(stream, path: str, pol: Policy, bad_lines: list[int]) -> Iterator[str]:
    """Physical lines decoded for csv.reader; numbers of lines that are not UTF-8 go to bad_lines."""
    lineno = 0
    for block in line_blocks(stream, path, pol):
        for raw in block:
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                bad_lines.append(lineno)
                line = raw.decode("utf-8", "replace")
            yield line + "\n"


def _csv_rows(reader, path: str, pol: Policy, bad_lines: list[int]) -> Iterator[tuple[int, list[str], int]]:
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


def scan_csv(path: str, pol: Policy, full: bool) -> Iterator[Chunk]:
    """CSV with a header row. payload (full): (header, rows) of the valid records."""
    allow_large_csv_fields()
    stream = open_input(path, pol)
    if stream is None:
        return
    bad_lines: list[int] = []
    text_field, id_field = pol.text_field, pol.id_field
    with stream:
        reader = csv.reader(csv_lines(stream, path, pol, bad_lines))
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
            ids.append(doc_id)
            texts.append(row[text_col])
            if full:
                rows.append(row)
            if len(ids) >= WRITE_ROWS:
                yield Chunk(ids, texts, (header, rows) if full else None)
                ids, texts, rows = [], [], []
        if ids:
            yield Chunk(ids, texts, (header, rows) if full else None)
