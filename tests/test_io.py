"""Tests of neardup.io: every input format, numbering, ids, errors (fail and skip), writers."""

from __future__ import annotations

import csv
import gzip
import io
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.documents import DocBatch
from neardup.core.errors import InputError
from neardup.io import streams as nio
from neardup.io.formats import input_format, output_format
from neardup.io.policy import ReadStats
from neardup.io.read import read_documents
from neardup.io.write import write_kept, write_table

# --------------------------------------------------------------------------------------------
# helpers


def read_all(paths, **kw):
    """All documents of paths as (ids, texts, stats), checking the batches' numbering on the way."""
    stats = kw.pop("stats", None) or ReadStats()
    ids, texts = [], []
    for batch in read_documents(paths, stats=stats, **kw):
        assert isinstance(batch, DocBatch)
        assert batch.start == len(ids), "batches must be numbered contiguously"
        assert len(batch.ids) == len(batch.texts)
        ids += batch.ids
        texts += batch.texts
    assert stats.documents == len(ids)
    return ids, texts, stats


def write_lines(path, lines: list[bytes], compress=None):
    data = b"".join(line + b"\n" for line in lines)
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def write_jsonl(path, records, compress=None):
    return write_lines(path, [orjson.dumps(r) for r in records], compress)


def write_csv(path, header, rows, compress=None):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    data = buf.getvalue().encode()
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def read_back(path):
    """The records of an output file as a list of dicts."""
    fmt = output_format(path)
    raw = path.read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    elif str(path).endswith(".zst"):
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    if fmt == "jsonl":
        return [orjson.loads(line) for line in raw.splitlines() if line]
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(raw.decode(), newline="")))
    return pq.read_table(path).to_pylist()


RECORDS = [
    {"id": "a", "text": "alpha beta", "n": 1, "tags": ["x", "y"]},
    {"id": 7, "text": "", "n": 2, "tags": []},
    {"text": "no id here", "n": 3, "tags": ["z"], "extra": True},
    {"id": "d", "text": "dé\nlta \u2028 ünïcode", "n": 4, "tags": ["x"]},
    {"id": "e", "text": "epsilon", "n": 5, "tags": None},
]


# --------------------------------------------------------------------------------------------
# formats


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("a.jsonl", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.json", "jsonl"),
        ("a.JSONL.GZ", "jsonl"),
        ("a.jsonl.zst", "jsonl"),
        ("a.csv", "csv"),
        ("a.csv.gz", "csv"),
        ("a.parquet", "parquet"),
    ],
)
def test_input_format_by_extension(tmp_path, name, fmt):
    (tmp_path / name).write_bytes(b"")
    assert input_format(tmp_path / name) == fmt


def test_input_format_directory_unknown_and_missing(tmp_path):
    assert input_format(tmp_path) == "txtdir"
    (tmp_path / "a.xml").write_text("<a/>")
    with pytest.raises(InputError) as e:
        input_format(tmp_path / "a.xml")
    assert e.value.line is None and "unknown input format '.xml'" in str(e.value)
    assert ".jsonl[.gz|.zst], .csv, .parquet or a directory of .txt/.html files" in str(e.value)
    with pytest.raises(InputError, match="no such file or directory") as e:
        read_documents([tmp_path / "nope.jsonl"])  # raised at call time, before iterating
    assert e.value.path == str(tmp_path / "nope.jsonl")


def test_output_format():
    assert output_format("x/y.jsonl") == "jsonl"
    assert output_format("y.jsonl.zst") == "jsonl"
    assert output_format("y.csv") == "csv"
    assert output_format("y.parquet") == "parquet"
    with pytest.raises(ValueError, match=r"\.jsonl.*\.csv.*\.parquet"):
        output_format("y.xlsx")


# --------------------------------------------------------------------------------------------
# round trips of every input format


@pytest.mark.parametrize("compress", [None, "gz", "zst"])
def test_jsonl_round_trip(tmp_path, compress):
    suffix = {None: "", "gz": ".gz", "zst": ".zst"}[compress]
    path = write_jsonl(tmp_path / f"d.jsonl{suffix}", RECORDS, compress)
    ids, texts, stats = read_all([path])
    assert texts == [r["text"] for r in RECORDS]
    assert ids == ["a", "7", f"{path}:3", "d", "e"]  # int id -> decimal string; no id -> path:line
    assert stats.files == 1 and stats.skipped == 0
    assert stats.bytes_read == len(b"".join(orjson.dumps(r) + b"\n" for r in RECORDS))


@pytest.mark.parametrize("compress", [None, "gz", "zst"])
def test_csv_round_trip_with_multiline_fields(tmp_path, compress):
    suffix = {None: "", "gz": ".gz", "zst": ".zst"}[compress]
    rows = [["a", "one, with comma"], ["", 'two\nlines "quoted"'], ["c", ""], ["", "four"]]
    path = write_csv(tmp_path / f"d.csv{suffix}", ["id", "text"], rows, compress)
    ids, texts, _ = read_all([path])
    assert texts == [r[1] for r in rows]
    # physical line numbers: header = 1; row 2 spans lines 3-4, so the last row starts on line 6
    assert ids == ["a", f"{path}:3", "c", f"{path}:6"]


def test_parquet_round_trip_reads_only_needed_columns(tmp_path):
    path = tmp_path / "d.parquet"
    table = pa.table(
        {
            "id": pa.array([10, None, 12]),
            "text": ["x", "y", ""],
            "big": [b"\0" * 10, b"", b""],
        }
    )
    pq.write_table(table, path, row_group_size=2)
    ids, texts, stats = read_all([path], batch_size=1)
    assert texts == ["x", "y", ""]
    assert ids == ["10", f"{path}:2", "12"]  # 1-based row number when the id is null
    assert stats.bytes_read == os.path.getsize(path)


def test_txt_directory_recursive_sorted(tmp_path):
    root = tmp_path / "docs"
    (root / "b").mkdir(parents=True)
    (root / "b" / "z.txt").write_text("zed")
    (root / "a.txt").write_bytes(b"\xef\xbb\xbfalpha\n")  # BOM dropped
    (root / "b" / "c.txt").write_text("")
    (root / "ignored.md").write_text("not text")
    ids, texts, stats = read_all([str(root)])
    assert ids == [os.path.join(str(root), p) for p in ["a.txt", "b/c.txt", "b/z.txt"]]
    assert texts == ["alpha\n", "", "zed"]
    assert stats.files == 3


def test_numbering_across_files_and_formats(tmp_path):
    j = write_jsonl(tmp_path / "a.jsonl", [{"text": f"j{i}"} for i in range(5)])
    c = write_csv(tmp_path / "b.csv", ["text"], [[f"c{i}"] for i in range(4)])
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": [f"p{i}" for i in range(3)]}), p)
    d = tmp_path / "txt"
    d.mkdir()
    (d / "1.txt").write_text("t0")
    batches = list(read_documents([j, c, p, d], batch_size=4))
    assert [b.start for b in batches] == [0, 4, 8, 12]
    assert [len(b) for b in batches] == [4, 4, 4, 1]
    texts = [t for b in batches for t in b.texts]
    assert texts == [f"j{i}" for i in range(5)] + [f"c{i}" for i in range(4)] + ["p0", "p1", "p2", "t0"]
    # the same inputs in another order are numbered in that order
    texts2 = [t for b in read_documents([p, j]) for t in b.texts]
    assert texts2 == ["p0", "p1", "p2"] + [f"j{i}" for i in range(5)]


def test_single_path_string_is_accepted(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "x"}])
    ids, _, _ = read_all(str(path))
    assert ids == [f"{path}:1"]


# --------------------------------------------------------------------------------------------
# ids


def test_id_rules_jsonl(tmp_path):
    lines = [
        b'{"id": "s", "text": "1"}',
        b"",
        b'{"id": 42, "text": "2"}',
        b'{"id": null, "text": "3"}',
        b"   \t",
        b'{"text": "4", "key": "k4"}',
    ]
    path = write_lines(tmp_path / "a.jsonl", lines)
    ids, _, _ = read_all([path])
    assert ids == ["s", "42", f"{path}:4", f"{path}:6"]  # blank lines still count as lines
    # an explicit id_field is required on every record
    with pytest.raises(InputError) as e:
        read_all([path], id_field="key")
    assert e.value.path == str(path) and e.value.line == 1 and e.value.reason == "missing id field"
    assert "'key'" in str(e.value) and "'id', 'text'" in str(e.value)
    ids, _, stats = read_all([path], id_field="key", on_error="skip")
    assert ids == ["k4"]
    assert stats.skipped == 3 and stats.reasons == {"missing id field": 3}


def test_id_rules_csv_and_parquet(tmp_path):
    c = write_csv(tmp_path / "a.csv", ["key", "text"], [["k1", "x"], ["k2", "y"]])
    assert read_all([c])[0] == [f"{c}:2", f"{c}:3"]
    assert read_all([c], id_field="key")[0] == ["k1", "k2"]
    with pytest.raises(InputError, match=r"a\.csv:2: id field 'nope' is missing"):
        read_all([c], id_field="nope")
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"key": ["k1", None, "k3"], "text": ["x", "y", "z"]}), p)
    with pytest.raises(InputError, match=r"a\.parquet:2: id field 'key' is null"):
        read_all([p], id_field="key")
    ids, _, stats = read_all([p], id_field="key", on_error="skip")
    assert ids == ["k1", "k3"] and stats.reasons == {"missing id field": 1}


# --------------------------------------------------------------------------------------------
# errors, in fail and skip mode

GOOD = b'{"id": "g%d", "text": "good %d"}'


def jsonl_with(tmp_path, bad: bytes, name="a.jsonl"):
    """Three good records with ``bad`` as line 2 of 4."""
    lines = [GOOD % (0, 0), bad, GOOD % (1, 1), GOOD % (2, 2)]
    return write_lines(tmp_path / name, lines)


@pytest.mark.parametrize(
    "bad, reason, expect",
    [
        (b'{"text": "x"', "malformed JSON", ["malformed JSON at column", "unexpected end of data"]),
        (b"not json", "malformed JSON", ["malformed JSON", "expected one JSON object per line"]),
        (b'["text"]', "not a JSON object", ["expected a JSON object per line, got an array"]),
        (b'"text"', "not a JSON object", ["got a str"]),
        (
            b'{"body": "x", "id": 1}',
            "missing text field",
            ["missing text field 'text'", "'body', 'id'", "--text-field"],
        ),
        (b'{"text": null}', "text not a string", ["must be a string, got null"]),
        (b'{"text": 12}', "text not a string", ["got a number"]),
        (b'{"text": ["a"]}', "text not a string", ["got an array"]),
        (b'{"text": "caf\xe9"}', "invalid UTF-8", ["invalid UTF-8 at byte offset 13 of the line"]),
    ],
)
def test_bad_jsonl_record(tmp_path, bad, reason, expect):
    path = jsonl_with(tmp_path, bad)
    with pytest.raises(InputError) as e:
        read_all([path])
    err = e.value
    assert (err.path, err.line, err.reason) == (str(path), 2, reason)
    assert str(err).startswith(f"{path}:2: ")
    for piece in expect:
        assert piece in str(err)
    ids, texts, stats = read_all([path], on_error="skip")
    assert ids == ["g0", "g1", "g2"] and texts == ["good 0", "good 1", "good 2"]
    assert stats.skipped == 1 and stats.reasons == {reason: 1}


def test_skip_counts_several_reasons_and_files(tmp_path):
    a = write_lines(tmp_path / "a.jsonl", [GOOD % (0, 0), b"{", b"{", b'{"text": 1}', b"[]"])
    b = write_lines(tmp_path / "b.jsonl", [b'{"x": 1}', GOOD % (1, 1)])
    ids, _, stats = read_all([a, b], on_error="skip")
    assert ids == ["g0", "g1"]
    assert stats.skipped == 5 and stats.files == 2
    assert stats.reasons == {
        "malformed JSON": 2,
        "text not a string": 1,
        "not a JSON object": 1,
        "missing text field": 1,
    }


def test_blank_lines_empty_file_and_empty_text(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [b"", b"  ", GOOD % (0, 0), b"\r", b'{"text": ""}', b"\t"])
    ids, texts, stats = read_all([path])
    assert texts == ["good 0", ""] and ids == ["g0", f"{path}:5"]
    assert stats.skipped == 0 and not stats.reasons
    for name in ["e.jsonl", "e.jsonl.gz", "e.csv", "e.jsonl.zst"]:
        (tmp_path / name).write_bytes(b"")
        assert read_all([tmp_path / name])[:2] == ([], [])
    (tmp_path / "e2.jsonl.gz").write_bytes(gzip.compress(b""))
    assert read_all([tmp_path / "e2.jsonl.gz"])[0] == []
    c = write_csv(tmp_path / "h.csv", ["id", "text"], [])  # header only
    assert read_all([c])[0] == []


def test_crlf_csv(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b'\xef\xbb\xbfid,text\r\n1,"x\r\ny"\r\n\r\n,z\r\n')
    ids, texts, _ = read_all([path])
    assert texts == ["x\r\ny", "z"] and ids == ["1", f"{path}:5"]


def test_crlf_and_bom_jsonl(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "a"}\r\n{"text": "b"}\r\n\r\n{"text": "c"}')  # no final newline
    ids, texts, _ = read_all([path])
    assert texts == ["a", "b", "c"] and ids[-1] == f"{path}:4"


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_line_splitting_independent_of_block_size(tmp_path, monkeypatch, block):
    lines = [b'{"text": "%s"}' % (b"x" * (i * 5)) for i in range(30)] + [b"", b'{"text": "\xc3\xa9"}']
    path = write_lines(tmp_path / "a.jsonl.zst", lines, "zst")
    expected = read_all([path])
    monkeypatch.setattr(nio, "BLOCK", block)
    assert read_all([path])[:2] == expected[:2]
    assert expected[1][-1] == "é" and expected[0][-1] == f"{path}:32"


def test_bad_utf8_in_txt_and_csv(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.txt").write_text("fine")
    (root / "b.txt").write_bytes(b"line one\nbad \xff byte")
    with pytest.raises(InputError) as e:
        read_all([root])
    assert e.value.path == os.path.join(str(root), "b.txt") and e.value.line == 2
    assert e.value.reason == "invalid UTF-8" and "invalid UTF-8 at byte offset 13 of the file" in str(e.value)
    ids, _, stats = read_all([root], on_error="skip")
    assert ids == [os.path.join(str(root), "a.txt")] and stats.reasons == {"invalid UTF-8": 1}

    c = tmp_path / "a.csv"
    c.write_bytes(b'id,text\n1,ok\n2,"multi\nline \xff"\n3,fine\n')
    with pytest.raises(InputError) as e:
        read_all([c])
    assert (e.value.line, e.value.reason) == (4, "invalid UTF-8")
    assert str(e.value).startswith(f"{c}:4: invalid UTF-8")
    ids, _, stats = read_all([c], on_error="skip")
    assert ids == ["1", "3"] and stats.reasons == {"invalid UTF-8": 1}


def test_malformed_csv_row_and_missing_text_column(tmp_path):
    c = tmp_path / "a.csv"
    c.write_bytes(b"id,text\n1,ok\n2,too,many\n\n3,fine\n4\n")
    with pytest.raises(InputError) as e:
        read_all([c])
    assert (e.value.line, e.value.reason) == (3, "malformed CSV row")
    assert "expected 2 fields as in the header, got 3" in str(e.value)
    ids, _, stats = read_all([c], on_error="skip")
    assert ids == ["1", "3"] and stats.reasons == {"malformed CSV row": 2}

    with pytest.raises(InputError) as e:
        read_all([c], text_field="body")
    assert e.value.line == 2 and "missing text field 'body'" in str(e.value) and "'id', 'text'" in str(e.value)


def test_parquet_text_errors(tmp_path):
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": ["a", None, "c"]}), p)
    with pytest.raises(InputError, match=r"a\.parquet:2: text field 'text' must be a string, got null"):
        read_all([p])
    ids, texts, stats = read_all([p], on_error="skip")
    assert texts == ["a", "c"] and ids == [f"{p}:1", f"{p}:3"]
    assert stats.reasons == {"text not a string": 1}

    q = tmp_path / "b.parquet"
    pq.write_table(pa.table({"body": ["a", "b"], "n": [1, 2]}), q)
    with pytest.raises(InputError, match=r"b\.parquet:1: missing text field 'text'.*'body', 'n'"):
        read_all([q])
    _, _, stats = read_all([q], on_error="skip")
    assert stats.skipped == 2 and stats.reasons == {"missing text field": 2}
    assert read_all([q], text_field="n", on_error="skip")[2].reasons == {"text not a string": 2}

    r = tmp_path / "c.parquet"  # binary column: decoded as UTF-8
    pq.write_table(pa.table({"text": pa.array([b"ok", b"\xff"], type=pa.binary())}), r)
    ids, texts, stats = read_all([r], on_error="skip")
    assert texts == ["ok"] and stats.reasons == {"invalid UTF-8": 1}


def corrupt_inputs(tmp_path):
    """Unreadable files: (path, number of good records read before the damage)."""
    data = b"".join(GOOD % (i, i) + b"\n" for i in range(5000))
    out = []
    gz = tmp_path / "trunc.jsonl.gz"
    gz.write_bytes(gzip.compress(data)[:-100])
    out.append(gz)
    zs = tmp_path / "trunc.jsonl.zst"
    zs.write_bytes(zstandard.ZstdCompressor().compress(data)[:-100])
    out.append(zs)
    garbage = tmp_path / "garbage.jsonl.gz"
    garbage.write_bytes(b"this is not gzip data at all" * 10)
    out.append(garbage)
    zgarbage = tmp_path / "garbage.csv.zst"
    zgarbage.write_bytes(b"not zstd" * 10)
    out.append(zgarbage)
    pqbad = tmp_path / "garbage.parquet"
    pqbad.write_bytes(b"PAR1 not really parquet")
    out.append(pqbad)
    return out


def test_unreadable_files_fail_and_skip(tmp_path):
    good = write_lines(tmp_path / "good.jsonl", [GOOD % (9, 9)])
    for bad in corrupt_inputs(tmp_path):
        truncated = "trunc" in bad.name
        reason = "truncated file" if truncated else "unreadable file"
        with pytest.raises(InputError) as e:
            read_all([bad, good])
        assert e.value.path == str(bad) and e.value.line is None and e.value.reason == reason
        assert ("truncated compressed stream after" if truncated else "cannot read the file") in str(e.value)
        ids, _, stats = read_all([bad, good], on_error="skip")
        assert ids[-1] == "g9"
        assert ids[:-1] == [f"g{i}" for i in range(len(ids) - 1)], "a good prefix, then the next file"
        assert stats.skipped == 1 and stats.reasons == {reason: 1}, bad
        assert stats.file_errors == [str(e.value)], "the summary names the file and what was lost"


# --------------------------------------------------------------------------------------------
# big documents, throughput


def test_50mb_document(tmp_path):
    big = "ab cd " * (50_000_000 // 6)
    j = tmp_path / "big.jsonl.gz"
    with gzip.open(j, "wb", compresslevel=1) as f:
        f.write(b'{"text": "small"}\n' + orjson.dumps({"id": "big", "text": big}) + b"\n" + b'{"text": "after"}\n')
    ids, texts, _ = read_all([j])
    assert ids[1] == "big" and texts[1] == big and texts[2] == "after"
    c = tmp_path / "big.csv"
    c.write_text('text,id\n"' + big + '",big\nafter,x\n')
    ids, texts, _ = read_all([c])
    assert ids == ["big", "x"] and len(texts[0]) == len(big) and texts[0] == big
    out = tmp_path / "out.jsonl"
    assert write_kept([j], np.array([False, True, False]), out) == 1
    assert out.read_bytes() == orjson.dumps({"id": "big", "text": big}) + b"\n"


def test_jsonl_read_throughput(tmp_path):
    """~25 MB of JSONL parse at well over 25 MB/s of CPU time (measured ~400 MB/s): a guard against
    a fall to a per-record Python path, not a benchmark (benchmarks/ measure the speed).

    The clock is the process's CPU time (every thread), which other processes' load does not
    inflate, and it starts after a warm-up read: a cold numba cache compiles the scanner inside the
    first read (24.5 MB took 3.9 s when that fell in the timed read)."""
    text = "lorem ipsum dolor sit amet " * 90
    path = write_jsonl(tmp_path / "t.jsonl", [{"id": i, "text": text} for i in range(10_000)])
    warm = write_jsonl(tmp_path / "warm.jsonl", [{"id": i, "text": text} for i in range(100)])
    assert len(read_all([warm])[0]) == 100
    t = time.process_time()
    ids, _, stats = read_all([path])
    cpu = time.process_time() - t
    assert len(ids) == 10_000
    assert stats.bytes_read / max(cpu, 1e-3) > 25e6


# --------------------------------------------------------------------------------------------
# write_kept


def make_input(tmp_path, fmt):
    """An input of 5 documents in ``fmt`` and its records as the source represents them."""
    if fmt in ("jsonl", "jsonl.gz"):
        path = write_jsonl(tmp_path / f"in.{fmt}", RECORDS, "gz" if fmt.endswith("gz") else None)
        return path, [dict(r) for r in RECORDS]
    if fmt == "csv":
        rows = [[str(r.get("id", "")), r["text"], str(r["n"])] for r in RECORDS]
        path = write_csv(tmp_path / "in.csv", ["id", "text", "n"], rows)
        return path, [dict(zip(["id", "text", "n"], row)) for row in rows]
    if fmt == "parquet":
        table = pa.table(
            {
                "id": [str(r.get("id", "")) for r in RECORDS],
                "text": [r["text"] for r in RECORDS],
                "n": pa.array([r["n"] for r in RECORDS], type=pa.int16()),
                "tags": [r["tags"] for r in RECORDS],
            }
        ).replace_schema_metadata({"origin": "test"})
        path = tmp_path / "in.parquet"
        pq.write_table(table, path, row_group_size=2)
        return path, table.to_pylist()
    root = tmp_path / "txt"
    root.mkdir()
    recs = []
    for i, r in enumerate(RECORDS):
        (root / f"{i}.txt").write_text(r["text"], encoding="utf-8", newline="")
        recs.append({"id": os.path.join(str(root), f"{i}.txt"), "text": r["text"]})
    return root, recs


def as_csv_cell(v):
    if v is None:
        return ""
    return v if isinstance(v, str) else orjson.dumps(v).decode()


INPUTS = ["jsonl", "jsonl.gz", "csv", "parquet", "txtdir"]
OUTPUTS = ["jsonl", "jsonl.gz", "jsonl.zst", "csv", "parquet"]


@pytest.mark.parametrize("out_fmt", OUTPUTS)
@pytest.mark.parametrize("in_fmt", INPUTS)
def test_write_kept_every_combination(tmp_path, in_fmt, out_fmt):
    path, records = make_input(tmp_path, in_fmt)
    keep = np.array([True, False, True, True, False])
    expected = [r for r, k in zip(records, keep) if k]
    out = tmp_path / "sub" / f"kept.{out_fmt}"
    assert write_kept([path], keep, out) == 3
    got = read_back(out)
    if out_fmt.startswith("jsonl"):
        assert got == expected
    elif out_fmt == "csv":
        fields = list(dict.fromkeys(k for r in expected for k in r))  # union, first seen first
        if in_fmt.startswith("jsonl"):
            assert fields == ["id", "text", "n", "tags", "extra"]
        assert list(got[0]) == fields
        assert got == [{f: as_csv_cell(r.get(f)) for f in fields} for r in expected]
    else:
        fields = list(dict.fromkeys(k for r in records for k in r)) if in_fmt != "jsonl" else None
        fields = fields or list(dict.fromkeys(k for r in expected for k in r))
        assert got == [{f: r.get(f) for f in fields} for r in expected]
        if in_fmt == "parquet":  # schema preserved, metadata included
            assert pq.read_schema(out).equals(pq.read_schema(path), check_metadata=True)


def test_write_kept_jsonl_lines_are_byte_identical(tmp_path):
    lines = [
        b'{"text": "a",   "id":1, "x": 1.50}',
        b'{ "text" : "\\u00e9\\n", "z": [1, {"k": null}] }\r',
        b"",
        b'{"text": "c"}',
    ]
    src = write_lines(tmp_path / "a.jsonl", lines)
    out = tmp_path / "o.jsonl"
    assert write_kept([src], np.array([True, True, False]), out) == 2
    assert out.read_bytes() == lines[0] + b"\n" + lines[1] + b"\n"


def test_write_kept_skipped_records_consistent(tmp_path):
    a = write_lines(tmp_path / "a.jsonl", [GOOD % (0, 0), b"{bad", GOOD % (1, 1), b'{"text": 5}', GOOD % (2, 2)])
    b = write_csv(tmp_path / "b.csv", ["id", "text"], [["c0", "x"], ["c1", "y"]])
    (tmp_path / "b.csv").write_bytes(b.read_bytes() + b"c2,too,many\nc3,z\n")
    c = corrupt_inputs(tmp_path)[0]  # truncated gz: a prefix of good records, then skipped
    paths = [a, b, c]
    batches = list(read_documents(paths, on_error="skip"))
    ids = [i for bt in batches for i in bt.ids]
    keep = np.zeros(len(ids), dtype=bool)
    keep[::2] = True
    for out_name in ["o.jsonl", "o.csv", "o.parquet"]:
        out = tmp_path / out_name
        n = write_kept(paths, keep, out, on_error="skip")
        got = read_back(out)
        assert n == len(got) == keep.sum()
        assert [r["id"] for r in got] == [i for i, k in zip(ids, keep) if k]
    # the wrong on_error (or changed inputs) is caught instead of writing the wrong records
    with pytest.raises(InputError):
        write_kept(paths, keep, tmp_path / "x.jsonl", on_error="fail")
    with pytest.raises(ValueError, match="keep has"):
        write_kept(paths, keep[:-1], tmp_path / "x.jsonl", on_error="skip")
    with pytest.raises(ValueError, match="keep has"):
        write_kept(paths, np.append(keep, True), tmp_path / "x.jsonl", on_error="skip")
    assert not (tmp_path / "x.jsonl").exists(), "no partial output on failure"
    with pytest.raises(ValueError, match="boolean"):
        write_kept(paths, keep.astype(int), tmp_path / "x.jsonl", on_error="skip")


def test_write_kept_heterogeneous_json_to_parquet(tmp_path):
    recs = [
        {"text": "a", "n": 1, "v": "s"},
        {"text": "b", "n": 2.5, "v": 3, "obj": {"k": 1}},
        {"text": "c", "w": None, "empty": {}},
    ]
    src = write_jsonl(tmp_path / "a.jsonl", recs)
    out = tmp_path / "o.parquet"
    assert write_kept([src], np.ones(3, dtype=bool), out) == 3
    table = pq.read_table(out)
    assert table.column_names == ["text", "n", "v", "obj", "w", "empty"]
    assert table.schema.field("n").type == pa.float64()  # int and float merge to float
    got = table.to_pylist()
    assert [r["n"] for r in got] == [1.0, 2.5, None]
    assert [r["v"] for r in got] == ["s", "3", None]  # str and int disagree: JSON text
    assert got[1]["obj"] == {"k": 1} and got[0]["obj"] is None
    assert got[2]["empty"] == "{}"  # Parquet cannot store a struct without fields: JSON text


def test_write_kept_mixed_inputs_and_overwriting_an_input(tmp_path):
    j = write_jsonl(tmp_path / "a.jsonl", [{"id": "j1", "text": "x", "n": 1}])
    c = write_csv(tmp_path / "b.csv", ["id", "text", "note"], [["c1", "y", "hi"]])
    out = tmp_path / "o.csv"
    assert write_kept([j, c], np.array([True, True]), out) == 2
    assert read_back(out) == [
        {"id": "j1", "text": "x", "n": "1", "note": ""},
        {"id": "c1", "text": "y", "n": "", "note": "hi"},
    ]
    assert write_kept([j], np.array([True]), j) == 1  # written aside, then moved over the input
    assert read_back(j) == [{"id": "j1", "text": "x", "n": 1}]


# --------------------------------------------------------------------------------------------
# write_table


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz", "t.jsonl.zst", "t.csv", "t.parquet"])
def test_write_table_round_trip(tmp_path, name):
    rng = np.random.default_rng(0)
    n = 2000
    sims = np.round(rng.random(n) * 128) / 128  # dyadic values such as 0.8515625
    sims[:3] = [0.8515625, 0.1, 1 / 3]
    cols = {
        "id": [f"doc-{i}" for i in range(n)],
        "cluster": rng.integers(0, 50, n),
        "similarity": sims,
    }
    path = tmp_path / "deep" / name
    write_table(cols, path)
    got = read_back(path)
    assert len(got) == n
    assert [r["id"] for r in got] == cols["id"]
    assert [int(r["cluster"]) for r in got] == cols["cluster"].tolist()
    assert np.array_equal(np.array([float(r["similarity"]) for r in got]), sims), "floats written exactly"
    if name.endswith(".parquet"):
        assert pq.read_schema(path).field("cluster").type == pa.int64()


def test_write_table_checks_and_speed(tmp_path):
    with pytest.raises(ValueError, match="equal lengths"):
        write_table({"a": [1, 2], "b": [1]}, tmp_path / "x.csv")
    with pytest.raises(ValueError, match="output format"):
        write_table({"a": [1]}, tmp_path / "x.txt")
    write_table({"a": np.array([], dtype=np.int64)}, tmp_path / "empty.jsonl")
    assert (tmp_path / "empty.jsonl").read_bytes() == b""
    n = 300_000
    cols = {"id_a": np.arange(n).astype(str), "id_b": np.arange(n), "similarity": np.full(n, 0.75)}
    write_table({k: v[:100] for k, v in cols.items()}, tmp_path / "warm.jsonl")  # kernels compiled before the clock
    t = time.process_time()  # CPU time: other processes' load does not inflate it
    write_table(cols, tmp_path / "p.jsonl")
    assert time.process_time() - t < 5  # a loose guard against a per-row Python path: ~1M rows in a couple of seconds
    lines = (tmp_path / "p.jsonl").read_bytes().splitlines()
    assert len(lines) == n and orjson.loads(lines[-1]) == {"id_a": str(n - 1), "id_b": n - 1, "similarity": 0.75}


def test_argument_checks(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "x"}])
    with pytest.raises(ValueError, match="on_error"):
        read_documents([path], on_error="ignore")
    with pytest.raises(ValueError, match="batch_size"):
        read_documents([path], batch_size=0)
    with pytest.raises(ValueError, match="no input paths"):
        read_documents([])


def test_write_table_jsonl_tricky_values(tmp_path):
    cols = {
        "s": ["plain", 'quo"te', "back\\slash", "new\nline", "\x00ctl", "é ü 中", None, ""],
        "f": [1.0, -0.0, float("nan"), float("inf"), 1e20, 5e-324, None, 0.1],
        "f32": np.array([0.1, 1, 2, 3, 4, 5, 6, 7], dtype=np.float32),
        "b": [True, False, None, True, True, False, False, True],
        "l": [[1], [], None, [2, 3], [4], [5], [6], [7]],
    }
    path = tmp_path / "t.jsonl"
    write_table(cols, path)
    got = read_back(path)
    assert [r["s"] for r in got] == cols["s"]
    assert [r["f"] for r in got] == [1.0, -0.0, None, None, 1e20, 5e-324, None, 0.1]
    assert isinstance(got[0]["f"], float), "1.0 is written as a float"
    assert [r["f32"] for r in got] == [float(x) for x in cols["f32"]], "float32 written as its exact double"
    assert [r["b"] for r in got] == cols["b"] and [r["l"] for r in got] == cols["l"]
    write_table(cols, tmp_path / "t.csv")
    assert [float(r["f32"]) for r in read_back(tmp_path / "t.csv")] == [float(x) for x in cols["f32"]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(),
            st.floats(allow_nan=False, allow_infinity=False),
            st.integers(-(2**63), 2**63 - 1),
        ),
        max_size=40,
    )
)
def test_write_table_jsonl_matches_json_semantics(rows):
    """Property: whatever the strings and doubles, the JSONL written reads back to the same values."""
    cols = {"s": [r[0] for r in rows], "x": [r[1] for r in rows], "i": [r[2] for r in rows]}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        types = {"s": pa.string(), "x": pa.float64(), "i": pa.int64()}
        write_table({k: pa.array(v, type=types[k]) for k, v in cols.items()}, path)
        got = read_back(path)
    assert [r["s"] for r in got] == cols["s"]
    assert [r["x"] for r in got] == cols["x"]
    assert [r["i"] for r in got] == cols["i"]


# --------------------------------------------------------------------------------------------
# HTML input


PAGE = "<html><head><title>T</title><script>x()</script></head><body><h1>Head</h1><p>caf&eacute; <b>au</b> lait</p></body></html>"


def test_html_files_in_a_directory(tmp_path):
    root = tmp_path / "site"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("<p>plain text, not converted</p>")
    (root / "b.html").write_text(PAGE)
    (root / "sub" / "c.HTM").write_bytes(b"\xef\xbb\xbf<div>upper-case extension</div>")
    (root / "sub" / "d.htm").write_bytes('<meta charset="iso-8859-1"><p>caf\xe9</p>'.encode("latin-1"))
    (root / "e.xhtml").write_text("<p>not an input</p>")
    (root / "f.html").mkdir()  # a directory with an HTML name is not a file
    ids, texts, stats = read_all([str(root)])
    assert ids == [os.path.join(str(root), p) for p in ["a.txt", "b.html", "sub/c.HTM", "sub/d.htm"]]
    assert texts == ["<p>plain text, not converted</p>", "Head\ncafé au lait", "upper-case extension", "café"]
    assert stats.files == 4 and stats.bytes_read == sum(
        os.path.getsize(root / p) for p in ["a.txt", "b.html", "sub/c.HTM", "sub/d.htm"]
    )
    # html=True changes nothing for a directory: .html files are always converted, .txt never
    assert read_all([str(root)], html=True)[1] == texts


def test_html_directory_bad_encoding_and_main_content(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "a.html").write_bytes(b"<p>line one</p>\n<p>caf\xe9</p>")  # not UTF-8, no declaration
    (root / "b.html").write_text(
        "<nav><a href=/1>Home</a> <a href=/2>News</a> <a href=/3>Sport</a></nav>"
        "<article><p>" + "The main story text goes here. " * 5 + "</p></article>"
    )
    with pytest.raises(InputError, match="invalid UTF-8") as e:
        read_all([str(root)])
    assert e.value.path == os.path.join(str(root), "a.html") and e.value.line == 2
    ids, texts, stats = read_all([str(root)], on_error="skip")
    assert ids == [os.path.join(str(root), "b.html")] and stats.reasons == {"invalid UTF-8": 1}
    assert texts[0].startswith("Home News Sport\nThe main story")
    _, main, _ = read_all([str(root)], on_error="skip", main_content=True)
    assert main[0].startswith("The main story") and "Home" not in main[0]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_html_field_of_records(tmp_path, fmt):
    pages = [PAGE, "<p>a &amp; b</p>", "plain", ""]
    if fmt == "jsonl":
        path = write_jsonl(tmp_path / "p.jsonl", [{"id": str(i), "body": p} for i, p in enumerate(pages)])
    elif fmt == "csv":
        path = write_csv(tmp_path / "p.csv", ["id", "body"], [[str(i), p] for i, p in enumerate(pages)])
    else:
        path = tmp_path / "p.parquet"
        pq.write_table(pa.table({"id": [str(i) for i in range(4)], "body": pages}), path)
    _, raw, _ = read_all([path], text_field="body")
    assert raw == pages
    ids, texts, _ = read_all([path], text_field="body", html=True, batch_size=3)
    assert ids == ["0", "1", "2", "3"]
    assert texts == ["Head\ncafé au lait", "a & b", "plain", ""]


def test_write_kept_writes_the_original_html(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "a.html").write_text(PAGE)
    (root / "b.txt").write_text("text")
    (root / "c.html").write_text("<p>other</p>")
    for name in ["k.jsonl", "k.csv", "k.parquet"]:
        out = tmp_path / name
        assert write_kept([str(root)], np.array([True, False, True]), out) == 2
        assert [r["text"] for r in read_back(out)] == [PAGE, "<p>other</p>"]
    src = write_jsonl(tmp_path / "r.jsonl", [{"text": PAGE, "n": 1}, {"text": "<p>x</p>"}])
    out = tmp_path / "o.jsonl"
    assert write_kept([src], np.array([True, True]), out) == 2
    assert out.read_bytes() == src.read_bytes()  # records are copied, not their stripped text
    # mixed with JSONL, the column plan pass reads the directory without converting it
    assert write_kept([src, str(root)], np.array([True, False, True, False, True]), tmp_path / "m.csv") == 3
    assert [r["text"] for r in read_back(tmp_path / "m.csv")] == [PAGE, PAGE, "<p>other</p>"]


def test_write_kept_all_valid_fast_path_copies_the_same_lines(tmp_path):
    """all_valid (no record skipped in the first pass) copies JSONL lines without parsing them,
    with the same result as the parsing path; blank lines are still not records."""
    lines = [orjson.dumps({"id": i, "text": f"text {i}"}) for i in range(50)]
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines[:20]) + b"\n\n   \n" + b"\n".join(lines[20:]) + b"\n")
    keep = np.zeros(50, dtype=bool)
    keep[::3] = True
    n1 = write_kept([src], keep, tmp_path / "a.jsonl")
    n2 = write_kept([src], keep, tmp_path / "b.jsonl", all_valid=True)
    assert n1 == n2 == 17
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    with pytest.raises(ValueError, match="inputs hold"):
        write_kept([src], keep[:-1], tmp_path / "c.jsonl", all_valid=True)
