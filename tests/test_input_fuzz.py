"""A fuzz of malformed JSON Lines, CSV and Parquet inputs through the real reader (issue 18).

Every outcome must be a correct run or a clear error: with ``on_error="skip"`` the documents read
are exactly the valid records (ids and texts) and every invalid one is counted; with ``"fail"``
the error is an :class:`~neardup.core.errors.InputError` naming the file and the line of the
first invalid record. Never another exception (a traceback at the command line), never a
silently shortened or merged input; the write pass numbers the records the same way.

The expected records come from an oracle written independently of the reader: ``orjson`` and
the documented record rules for JSON Lines; for CSV, rows written by :mod:`csv` with faults
planted on lines of their own (a wrong number of fields, an unterminated quote, a stray quote,
invalid UTF-8). Quoted fields of the good rows start with a letter, since an open quote followed
by a quoted field that starts with a newline would make a valid (if unintended) CSV file that no
reader can tell apart. For Parquet, the valid rows are those whose text is a string (or UTF-8
binary); a truncated file is an error naming it, and random byte flips may give any data
(Parquet pages carry no checksum unless the writer adds one) but never an exception other than
a clear :class:`~neardup.core.errors.NeardupError`. Arrow IPC files and streams are read without
copying and pyarrow does not check their buffers, so a damaged byte of their data region could
crash the process; each record batch is validated as it is read (``io.parquet._check_structure``;
Parquet batches too), and byte flips there give data or a clear error too.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from neardup.core.errors import InputError, NeardupError
from neardup.io.policy import ReadStats
from neardup.io.read import read_documents
from neardup.io.write import write_kept

# NEARDUP_FUZZ_EXAMPLES=2000 for a longer hunt; 120 keeps CI fast (a few seconds per test)
FUZZ = settings(
    max_examples=int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

MISSING = object()


def _read(path: Path, **kw):
    stats = ReadStats()
    ids, texts = [], []
    for batch in read_documents([str(path)], stats=stats, batch_size=7, **kw):
        assert batch.start == len(ids)
        ids += batch.ids
        texts += batch.texts
    assert stats.documents == len(ids)
    return ids, texts, stats


def _compress(data: bytes, comp: str) -> bytes:
    if comp == "gz":
        return gzip.compress(data)
    if comp == "zst":
        return zstandard.ZstdCompressor().compress(data)
    return data


def _check(path: Path, expected: list[tuple[int, str | None, str]], bad_lines: list[int], **kw) -> None:
    """Read ``path`` both ways and compare with the oracle: (line, id or None to not compare,
    text) of each valid record, and the lines of the invalid ones, in file order."""
    ids, texts, stats = _read(path, on_error="skip", **kw)
    assert texts == [t for _, _, t in expected], "exactly the valid records, none merged or lost"
    assert len(ids) == len(expected)
    for got, (line, want, _) in zip(ids, expected):
        assert got == (want if want is not None else f"{path}:{line}")
    assert stats.skipped == len(bad_lines), stats.reasons
    if bad_lines:
        with pytest.raises(InputError) as e:
            _read(path, **kw)
        assert e.value.path == str(path) and e.value.line == bad_lines[0], str(e.value)
        assert str(e.value).startswith(f"{path}:{bad_lines[0]}: ")
    else:
        assert _read(path, **kw)[:2] == (ids, texts)
    if expected:  # the write pass sees the same records
        keep = np.zeros(len(expected), dtype=bool)
        keep[::2] = True
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "kept.jsonl"
            assert write_kept([str(path)], keep, out, on_error="skip", **kw) == int(keep.sum())
            written = [orjson.loads(line) for line in out.read_bytes().splitlines()]
            field = kw.get("text_field", "text")
            assert [r[field] for r in written] == [t for (_, _, t), k in zip(expected, keep) if k]


# --------------------------------------------------------------------------------------------
# JSON Lines

_text = st.text(st.characters(codec="utf-8"), max_size=30)
_valid = st.fixed_dictionaries(
    {"text": _text},
    optional={
        "id": st.one_of(st.none(), st.text(max_size=8)),
        "n": st.integers(-(2**63), 2**64 - 1),
        "x": st.lists(st.booleans()),
    },
).map(orjson.dumps)
_special = st.sampled_from(
    [
        b"",
        b"   ",
        b"\t\r",
        b'{"text": 5}',
        b'{"text": null}',
        b'{"body": "no text field"}',
        b"[1, 2]",
        b'"just a string"',
        b"{bad json",
        b'{"text": "a", "text": "b"}',
        b'{"text": "dup id", "id": "x", "id": "y"}',
        b'{"text": "bad \xff utf8"}',
        b'{"text": "\\ud800 lone surrogate"}',
        b'{"text": "ok"} trailing',
        b'{"text": "nested", "id": {"a": [1, 2]}}',
        b'{"text": "\\u00e9\\n\\t\\"escapes\\""}',
        b'\xef\xbb\xbf{"text": "bom in the middle"}',
    ]
)


@st.composite
def _mutated(draw) -> bytes:
    line = bytearray(draw(_valid))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        pos = draw(st.integers(0, max(0, len(line) - 1)))
        if op == "flip" and line:
            line[pos] = draw(st.integers(0, 255).filter(lambda b: b != 10))
        elif op == "cut":
            del line[pos:]
        else:
            line[pos:pos] = draw(st.sampled_from([b'"', b"\\", b"{", b"}", b",", b":", b"\xc3", b"\x00"]))
    return bytes(line)


def _jsonl_oracle(path: Path, data: bytes):
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    expected, bad = [], []
    for n, line in enumerate(lines, 1):
        if not line or line.isspace():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad.append(n)
            continue
        text = obj.get("text", MISSING) if type(obj) is dict else MISSING
        if type(text) is not str:
            bad.append(n)
            continue
        doc_id = obj.get("id")
        if doc_id is None:
            want = f"{path}:{n}"
        elif type(doc_id) is str:
            want = doc_id
        else:
            want = orjson.dumps(doc_id).decode() if not isinstance(doc_id, (int, float)) else str(doc_id)
        expected.append((n, want, text))
    return expected, bad


@FUZZ
@given(
    lines=st.lists(st.one_of(_valid, _valid, _special, _mutated()), max_size=25),
    comp=st.sampled_from(["", "gz", "zst"]),
    final_newline=st.booleans(),
)
def test_fuzzed_jsonl(lines, comp, final_newline):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / ("in.jsonl" + (f".{comp}" if comp else ""))
        path.write_bytes(_compress(data, comp))
        expected, bad = _jsonl_oracle(path, data)
        _check(path, expected, bad)


# --------------------------------------------------------------------------------------------
# CSV

_cell = st.text(st.sampled_from('abcé ,"\n\r\x00x€'), max_size=12).map(lambda s: "w" + s)


@st.composite
def _csv_file(draw):
    """(bytes, rows) with rows as (kind, id, text); faults are on lines of their own."""
    extra = draw(st.booleans())
    header = ["id", "text"] + (["n"] if extra else [])
    width = len(header)
    rows = []
    for i in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "width", "open", "stray", "utf8", "blank"]))
        rows.append((kind, f"r{i}", draw(_cell), draw(_cell)))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    data = buf.getvalue().encode()
    line = 2
    out = []
    for kind, rid, text, n in rows:
        if kind == "ok":
            buf = io.StringIO()
            # "\r\n": a writer ending lines in "\n" alone leaves a field's "\r" unquoted (ambiguous)
            csv.writer(buf, lineterminator="\r\n").writerow([rid, text] + ([n] if extra else []))
            raw = buf.getvalue().encode()
        elif kind == "width":
            raw = ",".join([rid] * (width + 1 if width == 2 else 2)).encode() + b"\n"
        elif kind == "open":
            raw = f'{rid},"never closed'.encode() + (b",x" if extra else b"") + b"\n"
        elif kind == "stray":
            raw = f'{rid},"ab"c'.encode() + (b",x" if extra else b"") + b"\n"
        elif kind == "utf8":
            raw = rid.encode() + b",bad \xff\xfe" + (b",x" if extra else b"") + b"\n"
        else:
            raw = b"\n"
        out.append((kind, line, rid, text))
        line += raw.count(b"\n")
        data += raw
    return data, out


@FUZZ
@given(csv_file=_csv_file(), comp=st.sampled_from(["", "gz", "zst"]))
def test_fuzzed_csv(csv_file, comp):
    data, rows = csv_file
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / ("in.csv" + (f".{comp}" if comp else ""))
        path.write_bytes(_compress(data, comp))
        expected = [(line, rid, text) for kind, line, rid, text in rows if kind == "ok"]
        bad = [line for kind, line, _, _ in rows if kind not in ("ok", "blank")]
        _check(path, expected, bad)


# --------------------------------------------------------------------------------------------
# Parquet

_ptext = st.one_of(st.none(), _text, st.binary(max_size=12))


@st.composite
def _table(draw):
    n = draw(st.integers(0, 20))
    binary = draw(st.booleans())
    if binary:
        texts = draw(
            st.lists(st.one_of(st.none(), st.binary(max_size=12), _text.map(str.encode)), min_size=n, max_size=n)
        )
        col = pa.array(texts, pa.binary())
    else:
        texts = draw(st.lists(st.one_of(st.none(), _text), min_size=n, max_size=n))
        col = pa.array(texts, pa.string())
    columns = {"text": col}
    id_kind = draw(st.sampled_from(["none", "str", "int"]))
    if id_kind == "str":
        columns["id"] = pa.array(draw(st.lists(st.one_of(st.none(), st.text(max_size=5)), min_size=n, max_size=n)))
    elif id_kind == "int":
        columns["id"] = pa.array(
            draw(st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), min_size=n, max_size=n))
        )
    return pa.table(columns), texts


@FUZZ
@given(table=_table(), row_group=st.integers(1, 8))
def test_fuzzed_parquet(table, row_group):
    t, texts = table
    ids = t.column("id").to_pylist() if "id" in t.column_names else [None] * len(texts)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "in.parquet"
        pq.write_table(t, path, row_group_size=row_group)
        expected, bad = [], []
        for row, (text, doc_id) in enumerate(zip(texts, ids), 1):
            if isinstance(text, bytes):
                try:
                    text = text.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
            if text is None:
                bad.append(row)
                continue
            expected.append((row, None if doc_id is None else str(doc_id), text))
        _check(path, expected, bad)


@pytest.mark.parametrize("kind", ["parquet", "arrow file", "arrow stream"])
def test_a_column_name_that_is_not_utf8_is_an_unreadable_file(tmp_path, kind):
    """A damaged Parquet footer or Arrow header whose column name is not UTF-8 (found by the
    Parquet fuzz test below: pyarrow raises UnicodeDecodeError while opening): the clear error,
    or one skip with on_error="skip"."""
    table = pa.table({"id": ["a", "b"], "text": ["one two", "three"]})
    buf = io.BytesIO()
    if kind == "parquet":
        pq.write_table(table, buf)
    else:
        with (pa.ipc.new_file if kind == "arrow file" else pa.ipc.new_stream)(buf, table.schema) as w:
            w.write_table(table)
    data = bytearray(buf.getvalue())
    schema_at = len(data) - int.from_bytes(data[-8:-4], "little") - 8 if kind == "parquet" else 0
    if kind == "arrow file":  # the footer's copy of the schema is the one read
        schema_at = data.rindex(b"text")
    at = data.index(b"text", schema_at)
    data[at + 1] = 0x80
    path = tmp_path / ("in.parquet" if kind == "parquet" else "in.arrow")
    path.write_bytes(bytes(data))
    _assert_unreadable(path, "not UTF-8")


def _assert_unreadable(path, says: str) -> None:
    """Reading ``path`` fails with the clear error naming it (reason "unreadable file", saying
    ``says``); with ``on_error="skip"`` the file is one counted skip."""
    with pytest.raises(InputError) as e:
        _read(path)
    assert e.value.path == str(path) and e.value.reason == "unreadable file"
    assert says in str(e.value)
    _, _, stats = _read(path, on_error="skip")
    assert stats.documents == 0 and stats.reasons == {"unreadable file": 1}


@FUZZ
@given(
    table=_table(),
    cut=st.floats(0, 0.999),
    flips=st.lists(st.tuples(st.floats(0, 0.999), st.integers(0, 255)), max_size=4),
)
def test_damaged_parquet_is_a_clear_error_never_a_traceback(table, cut, flips):
    t, texts = table
    t = t.append_column("cat", pa.array([("x", "yy", None)[i % 3] for i in range(len(texts))]).dictionary_encode())
    buf = io.BytesIO()
    pq.write_table(t, buf)
    good = buf.getvalue()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "in.parquet"
        path.write_bytes(good[: int(len(good) * cut)])  # truncated: the footer is gone
        with pytest.raises(InputError) as e:
            _read(path)
        assert e.value.path == str(path) and e.value.reason == "unreadable file"
        _, _, stats = _read(path, on_error="skip")
        assert stats.documents == 0 and stats.reasons == {"unreadable file": 1}
        flipped = bytearray(good)
        for where, byte in flips:
            flipped[int(len(good) * where)] = byte
        path.write_bytes(bytes(flipped))
        for on_error in ("fail", "skip"):
            with contextlib.suppress(NeardupError):  # a clear error, or any data
                ids, _, _ = _read(path, on_error=on_error)
                if ids:  # the write pass reads every column
                    write_kept([str(path)], np.ones(len(ids), dtype=bool), Path(d) / "kept.jsonl", on_error=on_error)


# --------------------------------------------------------------------------------------------
# Arrow IPC: damaged data (record batches), never a SystemError or a crash


def _ipc_bytes(table: pa.Table, kind: str, rows: int | None = None) -> bytes:
    buf = io.BytesIO()
    with (pa.ipc.new_file if kind == "file" else pa.ipc.new_stream)(buf, table.schema) as w:
        for batch in table.to_batches(max_chunksize=rows):
            w.write_batch(batch)
    return buf.getvalue()


def _ipc_data_region(data: bytes, schema: pa.Schema, kind: str) -> tuple[int, int]:
    """[start, end) of the record batches (and dictionaries) of an IPC file or stream: after the
    schema message (and the file's 8-byte magic), before the end-of-stream marker (and the file's
    footer, its length and magic)."""
    schema_len = len(_ipc_bytes(schema.empty_table(), "stream")) - 8  # the schema, then 8 bytes EOS
    if kind == "stream":
        return schema_len, len(data) - 8
    footer = int.from_bytes(data[-10:-6], "little")
    return 8 + schema_len, len(data) - 10 - footer


def _damaged_text_offsets(kind: str, where: int, byte: int) -> bytes:
    """An IPC file or stream of four records whose text column's offsets [0, 3, 6, 9, 12] have
    byte ``where`` set to ``byte``."""
    table = pa.table({"id": ["a", "b", "c", "d"], "text": ["abc", "def", "ghi", "jkl"]})
    data = bytearray(_ipc_bytes(table, kind))
    at = data.index(struct.pack("<5i", 0, 3, 6, 9, 12))
    data[at + where] = byte
    return bytes(data)


@pytest.mark.parametrize("kind", ["file", "stream"])
@pytest.mark.parametrize(
    ("where", "byte"),
    [(11, 0x80), (8, 0xFF)],  # offset 2 negative (-2**31 + 6), offset 2 past the data (255 > 12)
    ids=["negative offset", "offset past the end"],
)
def test_damaged_arrow_offsets_are_an_unreadable_file(tmp_path, kind, where, byte):
    """Before each record batch was validated, these raised SystemError ("Negative size passed
    to PyBytes_FromStringAndSize") on reading and on writing: now the clear error naming the
    file, or one counted skip."""
    path = tmp_path / "in.arrow"
    path.write_bytes(_damaged_text_offsets(kind, where, byte))
    _assert_unreadable(path, "Offset invariant failure")
    with pytest.raises(InputError, match="Offset invariant failure") as e:
        write_kept([str(path)], np.ones(4, dtype=bool), tmp_path / "kept.jsonl")
    assert e.value.reason == "unreadable file"


@pytest.mark.parametrize("output", ["kept.jsonl", "kept.parquet"])
def test_a_damaged_parquet_dictionary_is_an_unreadable_file_on_the_write_pass(tmp_path, output):
    """A dictionary page whose value count is changed from 2 to 0 (found by flipping single bytes):
    pyarrow reads indices that point past an empty dictionary. The first pass reads only the text
    and id, so it reads the file; the write pass reads every column and, before each Parquet batch
    was validated, raised ArrowIndexError (JSON Lines output) or copied the damaged column into
    the output (Parquet): now the clear error naming the file."""
    table = pa.table({"id": ["a", "b", "c", "d"], "text": ["w x", "y z", "w", "q"], "cat": ["one", "two"] * 2})
    table = table.set_column(2, "cat", table.column("cat").dictionary_encode())
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none")
    data = bytearray(buf.getvalue())
    column = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(2)
    # the dictionary page header's dictionary_page_header (a struct, "L") with num_values 2 ("\x15\x04")
    at = data.index(b"L\x15\x04", column.dictionary_page_offset)
    data[at + 2] = 0
    path = tmp_path / "in.parquet"
    path.write_bytes(bytes(data))
    assert _read(path)[1] == ["w x", "y z", "w", "q"]
    with pytest.raises(InputError, match="Dictionary indices invalid") as e:
        write_kept([str(path)], np.ones(4, dtype=bool), tmp_path / output)
    assert e.value.path == str(path) and e.value.reason == "unreadable file"
    assert not (tmp_path / output).exists()


_CRASH_CHECK = """
import sys
from neardup.core.errors import InputError
from neardup.io.read import read_documents
for path in sys.argv[1:]:
    try:
        list(read_documents([path]))
    except InputError as e:
        print(e.reason)
"""


def test_an_arrow_offset_far_past_the_end_is_an_error_not_a_crash(tmp_path):
    """Offset 2 of the text set to 8323078 (a 12-byte data buffer): before the validation, reading
    the memory-mapped file died of SIGBUS, in both formats. In a child process, so that a
    regression fails this test instead of killing the test run."""
    paths = []
    for kind in ("file", "stream"):
        paths.append(tmp_path / f"{kind}.arrow")
        paths[-1].write_bytes(_damaged_text_offsets(kind, 10, 0x7F))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", _CRASH_CHECK, *map(str, paths)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["unreadable", "file", "unreadable", "file"]


@pytest.mark.parametrize("kind", ["file", "stream"])
def test_one_arrow_cell_of_invalid_utf8_skips_only_its_row(tmp_path, kind):
    """The validation of each batch leaves out the UTF-8 check (string columns are validated as
    binary): one bad cell is one skipped row, as for Parquet, not an unreadable file."""
    texts = pa.array([b"a", b"bad \xff", b"c"], pa.binary()).view(pa.string())  # unchecked
    path = tmp_path / "in.arrow"
    path.write_bytes(_ipc_bytes(pa.table({"text": texts, "tags": pa.array([["x"], None, ["z"]])}), kind))
    ids, got, stats = _read(path, on_error="skip")
    assert got == ["a", "c"] and stats.reasons == {"invalid UTF-8": 1}
    with pytest.raises(InputError) as e:
        _read(path)
    assert e.value.line == 2 and "invalid UTF-8 in string column 'text'" in str(e.value)


@FUZZ
@given(
    table=_table(),
    kind=st.sampled_from(["file", "stream"]),
    rows=st.integers(1, 8),
    flips=st.lists(st.tuples(st.floats(0, 0.999), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_damaged_arrow_data_is_a_clear_error_never_a_crash(table, kind, rows, flips):
    """Random bytes of the record batches (message headers and bodies, dictionaries included) of
    an Arrow file or stream changed: any data or a clear error, on reading and on writing."""
    t, texts = table
    n = len(texts)
    t = t.append_column("tags", pa.array([[f"t{i}", None] if i % 2 else None for i in range(n)], pa.list_(pa.string())))
    t = t.append_column("cat", pa.array([("x", "yy", None)[i % 3] for i in range(n)], pa.string()).dictionary_encode())
    good = _ipc_bytes(t, kind, rows)
    start, end = _ipc_data_region(good, t.schema, kind)
    assume(end > start)  # no rows, no batches
    damaged = bytearray(good)
    for where, byte in flips:
        damaged[start + int((end - start) * where)] = byte
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "in.arrow"
        path.write_bytes(bytes(damaged))
        for on_error in ("fail", "skip"):
            with contextlib.suppress(NeardupError):  # a clear error, or any data
                ids, _, _ = _read(path, on_error=on_error)
                if ids:
                    write_kept([str(path)], np.ones(len(ids), dtype=bool), Path(d) / "kept.jsonl", on_error=on_error)
