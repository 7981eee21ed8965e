"""One set of counts: clusters, removed documents and verified pairs mean the same in the summary,
``--stats``, the ``--pairs`` table and the report, with or without ``--pairs`` and on every engine."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
NEWS = REPO / "examples" / "news.jsonl"


def _run(tmp_path, name, *extra):
    stats = tmp_path / f"{name}.json"
    res = run_cli("dedup", NEWS, "-o", tmp_path / f"{name}.jsonl", "--stats", stats, *extra)
    return res.output, json.loads(stats.read_text())


def _rows(path) -> int:
    with open(path, newline="") as f:
        return sum(1 for _ in csv.DictReader(f))


def _engines():
    out = [("local", ())]
    try:
        import dask.distributed  # noqa: F401

        out.append(("dask", ("--engine", "dask", "--workers", "2")))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("cluster", ["components", "center"])
def test_counts_agree_with_and_without_pairs_and_across_engines(tmp_path, cluster):
    runs = {}
    for engine, opts in _engines():
        pairs = tmp_path / f"{engine}-pairs.csv"
        out, with_pairs = _run(tmp_path, f"{engine}-p", "--cluster", cluster, "--pairs", pairs, *opts)
        _, without = _run(tmp_path, f"{engine}-n", "--cluster", cluster, *opts)
        counted = with_pairs["counts"]
        assert counted["verified_pairs"] == counted["pairs_written"] == _rows(pairs)
        assert f"{counted['verified_pairs']:,} (every pair" in out
        assert without["counts"]["pairs_written"] is None
        if cluster == "center":  # center clusters need the pairs: counted without --pairs too
            assert without["counts"]["verified_pairs"] == counted["verified_pairs"]
        else:
            assert without["counts"]["verified_pairs"] is None
        for name in ("documents", "clusters", "removed", "kept", "below_threshold"):
            assert counted[name] == without["counts"][name], name
        runs[engine] = counted
        if engine == "local":  # the report counts the rows of the same pairs table
            clusters = tmp_path / "clusters.csv"
            run_cli("dedup", NEWS, "-o", tmp_path / "c.jsonl", "--cluster", cluster, "--clusters", clusters)
            html = tmp_path / "report.html"
            run_cli("report", NEWS, "--clusters", clusters, "--pairs", pairs, "-o", html, "--threshold", "0.8")
            assert f"{counted['verified_pairs']:,}" in html.read_text()
    first = next(iter(runs.values()))
    for engine, counted in runs.items():
        for name in ("clusters", "removed", "verified_pairs", "pairs_written", "below_threshold"):
            assert counted[name] == first[name], (engine, name)
