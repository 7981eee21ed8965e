"""TSV input: ``.tsv`` files (optionally compressed) are read as CSV with tab-separated fields."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

import neardup

from conftest import run_cli

NEWS = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"


def _records():
    return [json.loads(line) for line in NEWS.read_text().splitlines()]


def _write(path: Path, delimiter: str, opener=open) -> Path:
    with opener(path, "wt", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(["id", "text"])
        for r in _records():
            w.writerow([r["id"], r["text"]])
    return path


@pytest.mark.parametrize("name", ["news.tsv", "news.tsv.gz"])
def test_a_tsv_file_gives_what_the_same_csv_gives(tmp_path, name):
    tsv = _write(tmp_path / name, "\t", gzip.open if name.endswith(".gz") else open)
    comma = _write(tmp_path / "news.csv", ",")
    got = neardup.dedup([str(tsv)], id_field="id", workers=1)
    want = neardup.dedup([str(comma)], id_field="id", workers=1)
    assert got.n_documents == 360
    assert list(got.ids) == list(want.ids)
    assert got.kept.tolist() == want.kept.tolist()


def test_cli_reads_tsv_and_tsv_shards_in_a_folder(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    _write(shards / "part-0.tsv", "\t")
    out = tmp_path / "kept.csv"
    run_cli("dedup", shards, "-o", out, "--id-field", "id", "-q")
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 360 - neardup.dedup([str(shards / "part-0.tsv")], id_field="id").n_removed
    assert set(rows[0]) == {"id", "text"}
