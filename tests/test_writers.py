"""The writers of the kept records: CSV through pyarrow's writer, Parquet keeping the input schema
(nested columns included), and outputs that do not depend on the worker count."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.io.write import write_kept

ROOT = Path(__file__).resolve().parents[1]

TRICKY = [
    'say "hi", then leave',
    "two\nlines\r\nand a CR\r",
    "",
    "tab\there; semicolon; ünïcödé \u2028 emoji \U0001f600",
    ",leading comma",
    '"quoted"',
]


def nested_table(n: int = 6) -> pa.Table:
    """A table with the column types a real Parquet corpus carries: struct, list of struct, map,
    dictionary strings, timestamps with a zone, dates, decimals, binary and schema metadata."""
    rows = range(n)
    table = pa.table(
        {
            "id": [f"d{i}" for i in rows],
            "text": [f"document number {i} " + TRICKY[i % len(TRICKY)] for i in rows],
            "meta": pa.array(
                [{"url": f"https://x.org/{i}", "lang": {"code": "en", "score": i / 8}} for i in rows],
                pa.struct(
                    [("url", pa.string()), ("lang", pa.struct([("code", pa.string()), ("score", pa.float64())]))]
                ),
            ),
            "spans": pa.array(
                [[{"start": j, "end": j + 2} for j in range(i % 3)] for i in rows],
                pa.list_(pa.struct([("start", pa.int32()), ("end", pa.int32())])),
            ),
            "attrs": pa.array([[("k", i)] for i in rows], pa.map_(pa.string(), pa.int64())),
            "source": pa.array(["web", "books", "web", None, "code", "web"][:n], pa.string()).dictionary_encode(),
            "crawled": pa.array(
                [dt.datetime(2024, 1, 1 + i, 12, 30, tzinfo=dt.timezone.utc) for i in rows],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([dt.date(2024, 2, 1 + i) for i in rows], pa.date32()),
            "price": pa.array([decimal.Decimal(f"{i}.25") for i in rows], pa.decimal128(6, 2)),
            "n": pa.array([i if i % 2 else None for i in rows], pa.int16()),
        }
    )
    return table.replace_schema_metadata({"origin": "crawl-2024", "huggingface": '{"info": {}}'})


KEEP = np.array([True, False, True, True, False, True])


def test_parquet_output_keeps_the_nested_input_schema(tmp_path):
    table = nested_table()
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=4)
    out = tmp_path / "kept.parquet"
    assert write_kept([src], KEEP, out) == 4
    got = pq.read_table(out)
    assert got.schema.equals(pq.read_schema(src), check_metadata=True)  # as the input file holds it
    assert got.to_pylist() == table.filter(pa.array(KEEP)).to_pylist()


def test_parquet_output_of_a_folder_of_nested_shards_via_the_cli(tmp_path):
    table = nested_table()
    shards = tmp_path / "shards"
    shards.mkdir()
    pq.write_table(table.slice(0, 3), shards / "part-0.parquet")
    pq.write_table(table.slice(3), shards / "part-1.parquet")
    out = tmp_path / "kept.parquet"
    run = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", str(shards), "-o", str(out), "--method", "exact", "-q"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    got = pq.read_table(out)
    assert got.schema.equals(pq.read_schema(shards / "part-0.parquet"), check_metadata=True)
    assert got.to_pylist() == table.to_pylist()  # all texts differ: nothing removed


def test_csv_output_of_typed_columns(tmp_path):
    """Timestamps and dates in ISO 8601, decimals as their digits (cells without literal quotes);
    nested values as JSON text; null as an empty cell."""
    table = nested_table()
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    out = tmp_path / "kept.csv"
    assert write_kept([src], KEEP, out) == 4
    raw = out.read_text(encoding="utf-8")
    assert raw.splitlines()[0] == "id,text,meta,spans,attrs,source,crawled,day,price,n"
    got = list(csv.DictReader(io.StringIO(raw, newline="")))
    # temporal values in ISO 8601, as in JSON Lines (one rule per column type); no literal quotes
    assert (got[0]["crawled"], got[0]["day"], got[0]["price"]) == ("2024-01-01T12:30:00+00:00", "2024-02-01", "0.25")
    expected = table.filter(pa.array(KEEP)).to_pylist()
    assert [r["text"] for r in got] == [r["text"] for r in expected]
    assert [orjson.loads(r["meta"]) for r in got] == [r["meta"] for r in expected]
    assert [orjson.loads(r["spans"]) for r in got] == [r["spans"] for r in expected]
    assert [r["source"] for r in got] == ["web", "web", "", "web"]
    assert [r["price"] for r in got] == ["0.25", "2.25", "3.25", "5.25"]
    assert [r["n"] for r in got] == ["", "", "3", "5"]


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "csv.zst"])
def test_csv_output_of_json_lines_reads_back_exactly(tmp_path, suffix):
    records = [
        {"id": f"r{i}", "text": t, "n": i, "f": i / 4, "ok": i % 2 == 0, "tags": ["a", t], "maybe": None}
        for i, t in enumerate(TRICKY)
    ]
    records[2]["late"] = "only here"
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    keep = np.array([True, True, True, False, True, True])
    out = tmp_path / f"kept.{suffix}"
    assert write_kept([src], keep, out) == 5
    from test_io import read_back

    fields = ["id", "text", "n", "f", "ok", "tags", "maybe", "late"]
    cell = lambda v: "" if v is None else v if isinstance(v, str) else orjson.dumps(v).decode()
    expected = [{f: cell(r.get(f)) for f in fields} for r, k in zip(records, keep) if k]
    assert read_back(out) == expected


def test_csv_output_of_csv_input_keeps_every_cell(tmp_path):
    src = tmp_path / "in.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "note"])
        for i, t in enumerate(TRICKY):
            w.writerow([f"c{i}", f"{t} {i}", t])
    keep = np.array([False, True, True, True, True, True])
    out = tmp_path / "kept.csv"
    assert write_kept([src], keep, out) == 5
    with open(src, newline="", encoding="utf-8") as f:
        expected = [r for r, k in zip(csv.DictReader(f), keep) if k]
    with open(out, newline="", encoding="utf-8") as f:
        assert list(csv.DictReader(f)) == expected


def test_outputs_are_byte_identical_for_any_worker_count(tmp_path):
    outs = {}
    for workers in (1, 2, 3):
        d = tmp_path / f"w{workers}"
        args = ["-o", str(d / "kept.csv"), "--clusters", str(d / "clusters.csv"), "--pairs", str(d / "pairs.parquet")]
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup",
                "dedup",
                str(ROOT / "examples/news.jsonl"),
                *args,
                "--workers",
                str(workers),
                "-q",
            ],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        outs[workers] = {p.name: p.read_bytes() for p in sorted(d.iterdir())}
    assert outs[1] == outs[2] == outs[3]
    assert outs[1]["kept.csv"].count(b"\n") > 300


def many_records(n: int, extra_at: int | None = None) -> list[dict]:
    pad = "lorem ipsum dolor sit amet " * 12  # 10,000 records: 3.5 MB, several chunks
    recs = [{"id": f"r{i}", "text": TRICKY[i % len(TRICKY)] + f" {pad}{i}", "n": i, "tags": [i % 3]} for i in range(n)]
    if extra_at is not None:
        recs[extra_at]["late"] = {"k": extra_at}
    return recs


@pytest.mark.parametrize("extra_at", [None, 3, 9_000])
def test_json_lines_to_csv_one_pass_or_two_gives_the_same_bytes(tmp_path, monkeypatch, extra_at):
    """JSON Lines to CSV is written in one pass while the fields are known by the first chunk
    written; a field first seen in a later chunk (9,000 is past the first) makes it write again.
    Either way the output equals the two-pass writer's, byte for byte."""
    from test_io import read_back

    from neardup.io import write as w

    records = many_records(10_000, extra_at)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    keep = np.random.default_rng(1).random(len(records)) < 0.8
    keep[extra_at or 0] = True
    one = tmp_path / "one.csv.gz"
    passes = []
    real_init = w._CsvSink.__init__
    monkeypatch.setattr(w._CsvSink, "__init__", lambda self, *a: passes.append(1) or real_init(self, *a))
    assert write_kept([src], keep, one) == keep.sum()
    assert len(passes) == (1 if extra_at == 9_000 else 0), "a second pass only for a field seen late"
    assert not list(tmp_path.glob(".*")), "no temporary file left"

    def always_two_passes(self, fmt, chunk, sel):
        self.grew = True
        self.fields.update(dict.fromkeys(k for r in w._chunk_records(fmt, chunk, sel) for k in r))

    monkeypatch.setattr(w._CsvOnePassSink, "write", always_two_passes)
    two = tmp_path / "two.csv.gz"
    assert write_kept([src], keep, two) == keep.sum()
    assert one.read_bytes() == two.read_bytes()
    fields = ["id", "text", "n", "tags"] + ([] if extra_at is None else ["late"])
    cell = lambda v: "" if v is None else v if isinstance(v, str) else orjson.dumps(v).decode()
    assert read_back(one) == [{f: cell(r.get(f)) for f in fields} for r, k in zip(records, keep) if k]
