"""The Parquet scanner: records from Arrow record batches, of only the columns needed (all to write them).

A missing text or id column is the same error on every row: it is reported once and every row is
counted as skipped. Binary text cells are decoded as UTF-8; a row's line is its 1-based row number.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..core.errors import InputError
from .arrow import pa, pq
from .paths import file_size, is_url, local_path, open_binary
from .policy import (
    Chunk,
    Policy,
    bad_utf8,
    empty_id,
    missing_id,
    missing_text,
    text_not_str,
    unreadable,
    unreadable_errors,
)


def _parquet_text(value: Any, path: str, line: int, text_field: str) -> str | InputError:
    """A Parquet text cell as str, or the error to report (binary cells are decoded as UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            return bad_utf8(path, line, exc, "text")
    return text_not_str(path, line, value, text_field)


def _without_utf8(t):
    """``t`` with every string type, at any depth (list items, struct fields, map keys and items,
    union members, dictionary and run-end values, extension storage), replaced by the binary type
    of the same memory layout: string -> binary, large_string -> large_binary, string_view ->
    binary_view. An array viewed as that type (zero-copy) passes ``validate(full=True)`` exactly
    when its offsets, lengths, buffer sizes, null counts and dictionary indices are sound, whatever
    the bytes of its strings: the UTF-8 check that full validation adds for string types is left
    to the per-row check of the scanner (one bad cell is one skipped row, not an unreadable file)."""
    types = pa.types
    if types.is_string(t):
        return pa.binary()
    if types.is_large_string(t):
        return pa.large_binary()
    if hasattr(types, "is_string_view") and types.is_string_view(t):  # pyarrow >= 16
        return pa.binary_view()
    if isinstance(t, pa.BaseExtensionType):
        return _without_utf8(t.storage_type)
    if types.is_dictionary(t):
        return pa.dictionary(t.index_type, _without_utf8(t.value_type), t.ordered)
    if types.is_run_end_encoded(t):
        return pa.run_end_encoded(t.run_end_type, _without_utf8(t.value_type))
    if types.is_map(t):
        return pa.map_(_field_without_utf8(t.key_field), _field_without_utf8(t.item_field), t.keys_sorted)
    if types.is_struct(t):
        return pa.struct([_field_without_utf8(t.field(i)) for i in range(t.num_fields)])
    if types.is_union(t):
        fields = [_field_without_utf8(t.field(i)) for i in range(t.num_fields)]
        return pa.union(fields, t.mode, t.type_codes)
    if types.is_list(t):
        return pa.list_(_field_without_utf8(t.value_field))
    if types.is_large_list(t):
        return pa.large_list(_field_without_utf8(t.value_field))
    if types.is_fixed_size_list(t):
        return pa.list_(_field_without_utf8(t.value_field), t.list_size)
    if hasattr(types, "is_list_view") and types.is_list_view(t):
        return pa.list_view(_field_without_utf8(t.value_field))
    if hasattr(types, "is_large_list_view") and types.is_large_list_view(t):
        return pa.large_list_view(_field_without_utf8(t.value_field))
    return t  # no strings inside (a type unknown here is validated with its UTF-8 check)


def _field_without_utf8(f):
    return f.with_type(_without_utf8(f.type))


class _ArrowFile:
    """An Arrow IPC file or stream (``.arrow``) with the part of ``pq.ParquetFile``'s interface the
    scanner uses: ``schema_arrow``, ``metadata.num_rows``, ``iter_batches``, ``with``.

    Hugging Face ``datasets.save_to_disk`` writes the stream format, ``pyarrow.ipc.new_file`` the
    file format; both are read, one record batch at a time, each re-cut to ``batch_size`` rows.

    pyarrow does not validate the buffers of what it reads from IPC: a damaged byte in the data
    region gives offsets past the end of a buffer, negative lengths or dictionary indices out of
    range, which later crash the process (a segmentation fault) or raise ``SystemError`` when the
    values are read. So every record batch is validated as it is read, all its columns (whatever
    the pass reads: the first pass and the write pass must agree on which records a file has),
    by :func:`_check_structure`; a failure raises ``pa.ArrowInvalid``, an unreadable file.
    """

    def __init__(self, path: str) -> None:
        # a local file is memory-mapped, so the batches map the file instead of copying it
        self._stream = open_binary(path) if is_url(path) else pa.memory_map(local_path(path), "r")
        try:
            try:
                self._reader = pa.ipc.open_file(self._stream)
            except pa.ArrowInvalid:
                self._stream.seek(0)
                self._reader = pa.ipc.open_stream(self._stream)
        except BaseException:  # a damaged file: not left open
            self._stream.close()
            raise
        self.schema_arrow = self._reader.schema
        self.metadata = self  # .num_rows
        self._layouts: list | None = None

    def _batches(self):
        """The record batches, each checked by :func:`_check_structure` before it is handed out."""
        if self._layouts is None:
            self._layouts = _layouts(self.schema_arrow)
        reader = self._reader
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        for batch in batches:
            _check_structure(batch, self._layouts)
            yield batch

    @property
    def num_rows(self) -> int:
        """The rows of all batches (read and checked: a stream says its length nowhere else). A
        stream is read once: ask for ``num_rows`` or ``iter_batches``, not both."""
        return sum(batch.num_rows for batch in self._batches())

    def iter_batches(self, batch_size: int, columns=None):
        for batch in self._batches():
            if columns is not None:
                batch = batch.select(columns)
            for start in range(0, batch.num_rows, batch_size):
                yield batch.slice(start, batch_size)

    def __enter__(self):
        return self

    def close(self) -> None:
        self._stream.close()

    def __exit__(self, *exc) -> None:
        self.close()


def _layouts(schema) -> list:
    """For each field of ``schema``, its type from :func:`_without_utf8`, or None when that is its own."""
    return [None if layout == f.type else layout for f in schema for layout in [_without_utf8(f.type)]]


def _checked(batches):
    """Parquet record batches, each checked by :func:`_check_structure`: the Parquet reader builds
    them while decoding the pages, yet a damaged page can still give a dictionary column whose
    indices point past its dictionary (found by flipping single bytes of a file: reading its
    values raised ``ArrowIndexError`` in the write pass)."""
    layouts = None
    for batch in batches:
        if layouts is None:
            layouts = _layouts(batch.schema)
        _check_structure(batch, layouts)
        yield batch


def _check_structure(batch, layouts: list) -> None:
    """Raise ``pa.ArrowInvalid`` unless ``batch`` is sound: its columns as long as the batch, and
    each column (``layouts[i]``: the column's type from :func:`_without_utf8`, None when that is
    its own type) passing full validation viewed as that type. Full validation of a binary view
    reads offsets and validity bitmaps, not the string bytes: 4-9 ms of CPU a million short records
    in batches of 65,536 rows, 15 ms in batches of 1,000, 1-4% of reading them (docs/design.md,
    "Where a library's default was not enough")."""
    batch.validate()  # lengths and buffer counts: O(columns)
    for column, layout in zip(batch.columns, layouts):
        (column if layout is None else column.view(layout)).validate(full=True)


def open_table(path: str, fmt: str = "parquet"):
    """A Parquet (``pq.ParquetFile``) or Arrow IPC file, local or an fsspec URL. A schema whose
    column names are not UTF-8 (a damaged Parquet footer or Arrow header) raises
    ``pa.ArrowInvalid``, as other damage does, not pyarrow's ``UnicodeDecodeError``."""
    table = None
    try:
        table = (
            _ArrowFile(path)
            if fmt == "arrow"
            else pq.ParquetFile(open_binary(path) if is_url(path) else local_path(path))
        )
        _ = table.schema_arrow.names  # decoded here (an Arrow schema decodes them only when asked)
    except UnicodeDecodeError as exc:
        if table is not None:
            table.close()
        raise pa.ArrowInvalid(f"damaged {fmt} schema: a column name is not UTF-8 ({exc})") from exc
    return table


def read_schema(path: str, fmt: str = "parquet"):
    """The Arrow schema of a Parquet or Arrow file."""
    with open_table(path, fmt) as f:
        return f.schema_arrow


def _check_names(path: str, names: list[str]) -> None:
    """Refuse a schema that names a column twice (whatever on_error says), as for CSV headers."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(
            path,
            None,
            f"the schema names column {repeated[0]!r} {names.count(repeated[0])} times; which one holds "
            "the data is ambiguous: rename the columns so that each name is used once",
            reason="malformed schema",
        )


def _bad_utf8_rows(batch, names: list[str]) -> dict[int, str] | None:
    """Rows of ``batch`` whose string cells in columns ``names`` (the text and id: the same on
    every pass) are not valid UTF-8 (a damaged file: Arrow checks UTF-8 only when asked), as
    row -> column name; None when the damage is not in such a cell."""
    try:
        for name in names:
            batch.column(name).validate(full=True)
        return {}
    except pa.ArrowInvalid:
        pass
    bad: dict[int, str] = {}
    for name in names:
        col = batch.column(name)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            raw = col.cast(pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary())
            for i, v in enumerate(raw.to_pylist()):
                if v is not None and i not in bad:
                    try:
                        v.decode("utf-8")
                    except UnicodeDecodeError:
                        bad[i] = name
    return bad or None


def _values(col, raw: bool) -> list:
    """The cells of a column as Python values; string cells as bytes when ``raw`` (some are not UTF-8)."""
    if raw and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary())
    return col.to_pylist()


def scan_parquet(path: str, pol: Policy, full: bool, rows: int, fmt: str = "parquet") -> Iterator[Chunk]:
    """Parquet or Arrow IPC. payload (full): (record batch with all columns, positions of valid rows or None)."""
    pol.stats.files += 1
    pol.opening(path)
    text_field, id_field = pol.text_field, pol.id_field
    try:
        pf = open_table(path, fmt)
    except unreadable_errors() as exc:
        pol.reject(unreadable(path, exc))
        return
    with pf:
        names = pf.schema_arrow.names
        _check_names(path, names)
        id_col = id_field if id_field is not None else ("id" if "id" in names else None)
        problem = None
        if text_field not in names:
            problem = missing_text(path, 1, names, text_field)
        elif id_col is not None and id_col not in names and pol.id_policy == "line":
            id_col = None
        elif id_col is not None and id_col not in names:
            problem = missing_id(path, 1, names, id_col, False)
        if problem is not None:  # every row has the same problem
            try:
                total = pf.metadata.num_rows
            except unreadable_errors() as exc:
                pol.reject(unreadable(path, exc))
                return
            if total:
                pol.reject(problem)
                pol.stats.skipped += total - 1
                pol.stats.reasons[problem.reason] += total - 1
            return
        columns = None if full else list(dict.fromkeys([text_field, id_col] if id_col else [text_field]))
        batches = pf.iter_batches(batch_size=rows, columns=columns)
        if fmt == "parquet":  # an Arrow IPC file checks its batches as it reads them
            batches = _checked(batches)
        row0 = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except unreadable_errors() as exc:
                pol.reject(unreadable(path, exc))
                return
            bad = _bad_utf8_rows(batch, [text_field, id_col] if id_col else [text_field])
            if bad is None:
                pol.reject(unreadable(path, ValueError("invalid data in the text or id column")))
                return
            values = _values(batch.column(text_field), bool(bad))
            id_values = _values(batch.column(id_col), bool(bad)) if id_col else None
            ids: list[str] = []
            texts: list[str] = []
            valid: list[int] = []
            for k, text in enumerate(values):
                line = row0 + k + 1
                if k in bad:
                    pol.reject(
                        InputError(path, line, f"invalid UTF-8 in string column {bad[k]!r}", reason="invalid UTF-8")
                    )
                    continue
                if type(text) is not str:
                    text = _parquet_text(text, path, line, text_field)
                    if type(text) is not str:
                        pol.reject(text)
                        continue
                if id_values is None:
                    doc_id = f"{path}:{line}" if pol.id_policy == "field" else pol.line_id(None, path, line)
                else:
                    doc_id = id_values[k]
                    if doc_id is None:
                        if id_field is not None and pol.id_policy == "field":
                            pol.reject(missing_id(path, line, names, id_field, True))
                            continue
                        doc_id = f"{path}:{line}" if pol.id_policy == "field" else pol.line_id(None, path, line)
                    else:
                        if type(doc_id) is bytes:  # a binary id column: its UTF-8 text
                            try:
                                doc_id = doc_id.decode("utf-8")
                            except UnicodeDecodeError as exc:
                                pol.reject(bad_utf8(path, line, exc, "id"))
                                continue
                        elif type(doc_id) is not str:  # its JSON text: True -> true, {"a": 1} -> {"a":1}
                            doc_id = orjson.dumps(doc_id, default=str).decode()
                        if pol.id_policy == "line":
                            doc_id = pol.line_id(doc_id, path, line)
                if pol.reject_empty_ids and doc_id == "":
                    pol.reject(empty_id(path, line))
                    continue
                ids.append(doc_id)
                texts.append(text)
                if full:
                    valid.append(k)
            row0 += batch.num_rows
            if ids:
                all_valid = len(ids) == batch.num_rows
                yield Chunk(ids, texts, (batch, None if all_valid else valid) if full else None)
        pol.stats.bytes_read += file_size(path)
