"""Parquet and Arrow values written to JSON Lines and CSV: one documented mapping per column type,
nothing changed silently (issue 18).

NaN and infinities stay distinguishable from null (``"NaN"``, ``"Infinity"``, ``"-Infinity"``),
every binary column but the text field is base64 (never a mix of base64 and plain text),
timestamps are ISO 8601 at every precision, decimals keep their digits, and CSV cells hold these
texts without literal JSON quotes.
"""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.io.write import write_kept


def _table() -> pa.Table:
    return pa.table(
        {
            "text": ["alpha beta", "gamma delta", "eps zeta", "eta theta"],
            "f": [1.5, float("nan"), float("inf"), None],
            "g": pa.array([-math.inf, 2.0, 0.1, 3.0], pa.float32()),
            "b": pa.array([b"plain", b"\xff\xfe", None, b""], pa.binary()),
            "ts": pa.array(
                [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), None, datetime.datetime(2024, 1, 2), None],
                pa.timestamp("us"),
            ),
            "tsn": pa.array([1_700_000_000_123_456_789, 0, 5, None], pa.timestamp("ns", tz="UTC")),
            "d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.00"), None, decimal.Decimal("0.01")]),
            "lf": pa.array([[1.0, float("nan")], [], None, [float("-inf")]], pa.list_(pa.float64())),
            "s": pa.array([{"k": b"\x00"}, {"k": None}, None, {"k": b"ok"}], pa.struct([("k", pa.binary())])),
        }
    )


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


EXPECTED = [
    {
        "text": "alpha beta",
        "f": 1.5,
        "g": "-Infinity",
        "b": _b64(b"plain"),
        "ts": "2024-01-02T03:04:05.123456",
        "tsn": "2023-11-14T22:13:20.123456789+00:00",
        "d": "1.50",
        "lf": [1.0, "NaN"],
        "s": {"k": _b64(b"\x00")},
    },
    {
        "text": "gamma delta",
        "f": "NaN",
        "g": 2.0,
        "b": _b64(b"\xff\xfe"),
        "ts": None,
        "tsn": "1970-01-01T00:00:00+00:00",
        "d": "-2.00",
        "lf": [],
        "s": {"k": None},
    },
    {
        "text": "eps zeta",
        "f": "Infinity",
        "g": 0.10000000149011612,
        "b": None,
        "ts": "2024-01-02T00:00:00",
        "tsn": "1970-01-01T00:00:00.000000005+00:00",
        "d": None,
        "lf": None,
        "s": None,
    },
    {
        "text": "eta theta",
        "f": None,
        "g": 3.0,
        "b": "",
        "ts": None,
        "tsn": None,
        "d": "0.01",
        "lf": ["-Infinity"],
        "s": {"k": _b64(b"ok")},
    },
]


@pytest.fixture()
def parquet(tmp_path):
    pytest.importorskip("pandas")  # nanosecond timestamps come back as pandas Timestamps
    path = tmp_path / "v.parquet"
    pq.write_table(_table(), path)
    return path


def test_parquet_to_jsonl_keeps_nan_apart_from_null_and_one_encoding_per_column(parquet, tmp_path):
    out = tmp_path / "o.jsonl"
    assert write_kept([str(parquet)], np.ones(4, dtype=bool), out) == 4
    got = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert got == EXPECTED
    back = [float(v) if isinstance(v, str) else v for v in (r["f"] for r in got)]
    assert back[0] == 1.5 and math.isnan(back[1]) and back[2] == math.inf and back[3] is None


def test_parquet_to_csv_cells_have_no_literal_quotes(parquet, tmp_path):
    out = tmp_path / "o.csv"
    assert write_kept([str(parquet)], np.ones(4, dtype=bool), out) == 4
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, (dict, list)):
            return json.dumps(v, separators=(",", ":"))
        return v if isinstance(v, str) else json.dumps(v)

    assert rows == [{k: cell(v) for k, v in r.items()} for r in EXPECTED]
    assert rows[0]["ts"] == "2024-01-02T03:04:05.123456" and rows[0]["d"] == "1.50" and rows[1]["f"] == "NaN"
    assert not any(v.startswith('"') for r in rows for v in r.values())


def test_a_binary_text_column_stays_text(tmp_path):
    path = tmp_path / "bin.parquet"
    pq.write_table(
        pa.table({"body": pa.array([b"caf\xc3\xa9 au lait", b"tea"], pa.binary()), "raw": [b"x", b"y"]}), path
    )
    out = tmp_path / "o.jsonl"
    write_kept([str(path)], np.ones(2, dtype=bool), out, text_field="body")
    assert [json.loads(line) for line in out.read_bytes().splitlines()] == [
        {"body": "café au lait", "raw": _b64(b"x")},
        {"body": "tea", "raw": _b64(b"y")},
    ]
