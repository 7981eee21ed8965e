"""Audit tools: ``neardup compare DATA ID_A ID_B`` with its verdict line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import run_cli

NEWS = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"


def test_compare_by_id_gives_the_similarity_dedup_verified(tmp_path):
    pairs = tmp_path / "pairs.csv"
    run_cli("dedup", NEWS, "-o", tmp_path / "k.jsonl", "--pairs", pairs, "-q")
    with open(pairs, newline="") as f:
        rows = list(csv.DictReader(f))
    row = min(rows, key=lambda r: float(r["similarity"]))  # the least similar verified pair
    res = run_cli("compare", NEWS, row["id_a"], row["id_b"], "--json")
    verdict = json.loads(res.output)["verdict"]
    assert verdict["near_duplicate"] is True
    assert abs(verdict["similarity"] - float(row["similarity"])) < 1e-9
    line = run_cli("compare", NEWS, row["id_a"], row["id_b"]).output.strip().splitlines()[-1]
    assert line.startswith(f"near-duplicate at 0.8 under these settings: yes ({float(row['similarity']):.3f}")


def test_compare_by_id_says_no_below_the_threshold_and_names_a_missing_id():
    res = run_cli("compare", NEWS, "doc-000054", "doc-000145", "--verify", "exact")
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("near-duplicate at 0.8 under these settings: no (0.")
    assert "exact Jaccard" in last
    res = run_cli("compare", NEWS, "doc-000054", "no-such-id", code=1)
    assert "no record with id 'no-such-id'" in res.output
    run_cli("compare", NEWS, "doc-000054", "doc-000145", "--text", code=2)


def test_report_from_the_stats_file_needs_no_retyping(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_cli("dedup", NEWS, "-o", "k.jsonl", "--clusters", "c.csv", "--pairs", "p.csv", "--stats", "run.json", "-q")
    run_cli("report", "--stats", "run.json", "-o", "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "threshold 0.8" in page and "not given" not in page
    run_cli("dedup", NEWS, "-o", "k2.jsonl", "--stats", "bare.json", "-q")
    res = run_cli("report", "--stats", "bare.json", "-o", "r2.html", code=2)
    assert "no --clusters table" in res.output
    res = run_cli("report", "-o", "r3.html", code=2)
    assert "--stats" in res.output


def test_tune_on_data_counts_what_a_run_at_each_threshold_removes(tmp_path):
    res = run_cli("tune", "--data", NEWS, "--threshold", "0.8", "--json", "-q")
    r = json.loads(res.output)
    at = {row["threshold"]: row for row in r["thresholds"]}
    for t in (0.8, 0.9):
        stats = tmp_path / f"s{t}.json"
        run_cli(
            "dedup",
            NEWS,
            "-o",
            tmp_path / "k.jsonl",
            "--threshold",
            t,
            "--pairs",
            tmp_path / "p.csv",
            "--stats",
            stats,
            "-q",
        )
        counts = json.loads(stats.read_text())["counts"]
        assert at[t]["pairs"] == counts["verified_pairs"]
        assert at[t]["removed_components"] == counts["removed"]
    assert sum(r["histogram"]["counts"]) == r["pairs"]
    assert r["samples"] and all(abs(p["similarity"] - 0.8) <= 0.05 for p in r["samples"])
    assert all(p["text_a"] and p["text_b"] for p in r["samples"])
    pytest.importorskip("matplotlib")
    run_cli("tune", "--data", NEWS, "--plot", tmp_path / "h.png", "-q")
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
