"""Progress, the first run's compile notice and the summary of ``neardup dedup``.

The terminal display is driven with a rich console writing to a string (as a terminal would
get it); the summary, the notice and the cold cache are checked on real processes."""

from __future__ import annotations

import ast
import csv
import gzip
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from rich.console import Console

from neardup.cli.progress import JobProgress, compile_message, compile_notice, input_bytes, removed_share
from neardup.io.policy import ReadStats

from conftest import news_removed_by_brute_force

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"


def fake_terminal() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=140, color_system=None, legacy_windows=False), buf


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def shown(display: JobProgress, buf: io.StringIO) -> str:
    """What the terminal shows now: the last frame rich drew."""
    display.progress.refresh()
    frames = re.split(r"\x1b\[\?25l|\r|\x1b\[2K|\x1b\[1A", buf.getvalue())
    return "\n".join(f for f in frames if f.strip())[-2000:]


def test_terminal_progress_shows_percentage_and_eta_by_bytes_then_by_documents():
    console, buf = fake_terminal()
    stats, clock = ReadStats(), Clock()
    with JobProgress(console, stats, total_bytes=4000, clock=clock) as display:
        display.stage("read + sketch")
        clock.now += 10
        stats.bytes_read, stats.documents = 1000, 50
        display.advance(50)
        text = shown(display, buf)
        assert "read + sketch" in text and "25%" in text and "ETA 0:00:30" in text  # 10 s for a quarter
        assert "50 documents, 5/s" in text
        clock.now += 30
        stats.bytes_read, stats.documents = 4000, 200
        display.advance(150)
        assert "100%" in shown(display, buf) and "ETA 0:00:00" in shown(display, buf)
        display.stage("verify")  # a later pass: documents out of those read
        clock.now += 2
        display.advance(50)
        text = shown(display, buf)
        assert "verify" in text and "25%" in text and "ETA 0:00:06" in text


def test_unknown_input_size_shows_counts_without_a_percentage():
    console, buf = fake_terminal()
    stats, clock = ReadStats(), Clock()
    with JobProgress(console, stats, total_bytes=None, clock=clock) as display:
        display.stage("read + sketch")
        clock.now += 4
        stats.bytes_read = 10_000
        display.advance(2000)
        text = shown(display, buf)
        assert "2,000 documents, 500/s" in text and "%" not in text and "ETA" not in text


def test_input_bytes_counts_local_uncompressed_files_only(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text('{"text": "one two three"}\n')
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "x.jsonl").write_text('{"text": "four five"}\n' * 3)
    (shards / "y.csv").write_text("text\nsix seven\n")
    expected = a.stat().st_size + (shards / "x.jsonl").stat().st_size + (shards / "y.csv").stat().st_size
    assert input_bytes([str(a), str(shards)]) == expected
    z = tmp_path / "z.jsonl.gz"
    z.write_bytes(gzip.compress(b'{"text": "x"}\n'))
    assert input_bytes([str(a), str(z)]) is None  # the reader counts decompressed bytes
    assert input_bytes(["memory://x/a.jsonl"]) is None  # remote: not listed twice
    assert input_bytes([str(tmp_path / "missing.jsonl")]) is None


def test_compile_notice_on_a_terminal_names_the_kernel_being_compiled():
    @numba.njit(cache=False)
    def fresh_kernel_for_the_notice(x):
        return x * 3 + 1

    console, buf = fake_terminal()
    seen = []

    class Spy(JobProgress):
        def compiling(self, message, seconds, kernel):
            seen.append(kernel)
            super().compiling(message, seconds, kernel)
            seen.append(shown(self, buf))

    with Spy(console, ReadStats()) as display, compile_notice("minhash", display):
        display.stage("read + sketch")
        assert fresh_kernel_for_the_notice(2) == 7
        assert fresh_kernel_for_the_notice(5) == 16  # compiled already: no second notice
    assert seen[0] == "fresh_kernel_for_the_notice" and len(seen) == 2
    assert f"{compile_message('minhash')}: fresh_kernel_for_the_notice" in seen[1]
    assert compile_message("minhash").startswith("compiling kernels (first run only, about ")


def test_compile_notice_without_a_terminal_is_one_line():
    @numba.njit(cache=False)
    def one(x):
        return x + 1

    @numba.njit(cache=False)
    def two(x):
        return one(x) * 2

    lines = []
    with compile_notice("exact", echo=lines.append):
        assert two(1) == 4 and one(2.5) == 3.5
    assert lines == [f"neardup: {compile_message('exact')}"]
    with compile_notice("exact"):  # -q: nothing at all
        assert one(1j) == 1 + 1j


def test_removed_share():
    assert removed_share(46, 360) == "46 of 360 (12.8%)"
    assert removed_share(0, 0) == "0 of 0 (0.0%)"
    assert removed_share(1234, 5000) == "1,234 of 5,000 (24.7%)"


def dedup(tmp_path, *args, env=None):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(NEWS), "-o", str(out / "kept.jsonl"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path), out


def test_summary_names_the_outputs_and_the_share_removed(tmp_path):
    clusters = tmp_path / "out" / "clusters.csv"
    run, out = dedup(tmp_path, "--clusters", str(clusters), "--pairs", str(tmp_path / "out" / "pairs.parquet"))
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""  # all human-readable output goes to stderr
    with open(clusters, newline="") as f:
        rows = list(csv.DictReader(f))
    removed = sum(r["id"] != r["cluster"] for r in rows)
    share = removed_share(removed, len(rows))
    assert removed == news_removed_by_brute_force() and len(rows) == len(NEWS.read_text().splitlines())
    assert re.search(rf"removed\s+{re.escape(share)}", run.stderr)
    last = run.stderr.splitlines()[-1]
    assert (
        last
        == f"removed {share}; kept records: {out / 'kept.jsonl'}; clusters: {clusters}; pairs: {out / 'pairs.parquet'}"
    )
    assert "%|" not in run.stderr and "ETA" not in run.stderr  # no live display without a terminal
    quiet, _ = dedup(tmp_path, "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.slow
def test_three_processes_on_a_cold_cache_all_succeed_and_say_they_compile(tmp_path):
    """NUMBA_CACHE_DIR is honoured: three runs start at once on an empty cache directory, each
    compiles (and says so), all succeed with the same output; the next run finds the cache."""
    cache = tmp_path / "numba-cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    procs = []
    for i in range(3):
        out = tmp_path / f"run{i}"
        cmd = [sys.executable, "-m", "neardup", "dedup", str(NEWS), "-o", str(out / "kept.jsonl"), "--method", "exact"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for rc, _, err in results:
        assert rc == 0, err
        assert "compiling kernels (first run only, about" in err
    kept = [(tmp_path / f"run{i}" / "kept.jsonl").read_bytes() for i in range(3)]
    assert kept[0] == kept[1] == kept[2] and kept[0].count(b"\n") > 300
    assert any(cache.rglob("*.nbi")), "the kernels were cached where NUMBA_CACHE_DIR says"
    warm = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", str(NEWS), "-o", str(tmp_path / "warm.jsonl"), "--method", "exact"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert warm.returncode == 0 and "compiling kernels" not in warm.stderr
    assert (tmp_path / "warm.jsonl").read_bytes() == kept[0]


LISTEN = """
import sys
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__module__.rsplit(".", 1)[-1])
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
from neardup.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    print(sorted(set(compiled)), file=sys.stderr)
"""


@pytest.mark.slow
def test_kernels_compile_lazily_only_those_the_job_uses(tmp_path):
    """On a cold cache, importing neardup compiles nothing and an exact job of the small example
    compiles the line copier and the exact kernels (and what they call), no MinHash, SimHash or
    SpotSigs kernel, and not the JSON Lines scanner (behind its warm-up: orjson reads so small
    an input)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    args = ["dedup", str(NEWS), "-o", str(tmp_path / "kept.jsonl"), "--method", "exact", "-q"]
    run = subprocess.run([sys.executable, "-c", LISTEN, *args], env=env, capture_output=True, text=True)
    modules = set(ast.literal_eval(run.stderr.strip().splitlines()[-1]))
    assert {"lines", "exact"} <= modules
    assert not modules & {"jsonl", "minhash", "oph", "lsh", "candidates", "simhash", "hamming", "spotsigs", "imatch"}
    imported = subprocess.run(
        [sys.executable, "-c", LISTEN.replace("main(sys.argv[1:])", "import neardup; sys.exit(0)")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert imported.stderr.strip().splitlines()[-1] == "[]"
