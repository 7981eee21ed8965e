"""Outputs are never destroyed: refused overwrites, deterministic gzip, interrupts and kills."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import run_cli as run
from crash_points import start_at


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """About 30k generated documents with near-duplicates: a run takes a second or two."""
    path = tmp_path_factory.mktemp("data") / "in.jsonl"
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(5000)])
    with open(path, "w") as f:
        for i in range(30000):
            words = vocab[rng.integers(0, 5000, 120 if i % 7 else 60)]
            f.write(json.dumps({"id": f"d{i}", "text": " ".join(words)}) + "\n")
    return path


def test_outputs_that_would_overwrite_inputs_or_each_other_are_refused(tmp_path, corpus):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps({"id": f"s{i}", "text": f"text {i} " * 10}) + "\n" for i in range(5)))
    before = small.read_bytes()
    assert "is the input" in run("dedup", small, "-o", small, code=2).output
    assert "is the input" in run("dedup", small, "-o", tmp_path / "k.jsonl", "--clusters", small, code=2).output
    res = run("dedup", small, "-o", tmp_path / "k.jsonl", "--pairs", tmp_path / "k.jsonl", code=2)
    assert "same file" in res.output
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(before)
    assert "inside the input folder" in run("dedup", folder, "-o", folder / "kept.jsonl", code=2).output
    assert "is the input" in run("dedup", str(tmp_path / "sm*.jsonl"), "-o", small, code=2).output
    assert small.read_bytes() == before and not (tmp_path / "k.jsonl").exists()


def test_gzip_outputs_are_the_same_bytes_for_the_same_run(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"some text number {i % 4} " * 8}) + "\n" for i in range(40))
    )
    outs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        out.mkdir()
        run("dedup", src, "-o", out / "kept.jsonl.gz", "--clusters", out / "c.csv.gz", "-q")
        time.sleep(1.1)  # a header with a time would differ now
        outs.append(((out / "kept.jsonl.gz").read_bytes(), (out / "c.csv.gz").read_bytes()))
    assert outs[0] == outs[1]


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_run_leaves_the_previous_outputs_and_no_temporaries(tmp_path, corpus, sig, code):
    """The signal at each point of a run (tests/crash_points.py holds the run there until it comes):
    during the job and with every output written but none replaced, the previous set stays; between
    two renames of the commit and after it, the complete new set is in place. Each time: no
    temporary file is left, one clean line, the exit status of the signal."""
    out = tmp_path / "out"
    out.mkdir()
    args = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out / "kept.jsonl"),
            "--clusters", str(out / "clusters.csv"), "-q", "--workers", "1"]  # fmt: skip
    subprocess.run(args, check=True)  # the complete set, for reference
    complete = {p.name: p.read_bytes() for p in out.iterdir()}
    for name in complete:
        (out / name).write_bytes(b"previous\n")
    previous = {p.name: p.read_bytes() for p in out.iterdir()}
    forced = {"work": previous, "commit": previous, "rename": complete, "committed": complete}
    for point, expected in forced.items():
        proc = start_at(args, point, tmp_path, stderr=subprocess.PIPE, text=True)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == code, (point, err)
        assert "Traceback" not in err and err.strip().count("\n") == 0, err  # one clean line
        assert _temporaries(out) == [] and not any(p.name.startswith(".") for p in out.iterdir())
        state = {p.name: p.read_bytes() for p in out.iterdir()}
        assert state == expected, point
        for name in complete:  # back to the previous set for the next trial
            (out / name).write_bytes(previous[name])


def test_a_killed_run_leaves_its_temporary_file_and_the_next_run_removes_it(tmp_path, corpus):
    out = tmp_path / "out"
    out.mkdir()
    args = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out / "kept.jsonl"), "-q"]
    proc = subprocess.Popen(args)
    proc.wait()
    stale = out / ".kept.jsonl.999999999.tmp"  # a process that cannot exist
    stale.write_bytes(b"half-written")
    live = out / f".kept.jsonl.{os.getpid()}.tmp"  # a live process's file stays
    live.write_bytes(b"in use")
    subprocess.run(args, check=True)
    assert not stale.exists() and live.exists()


def test_non_string_ids_keep_their_json_text(tmp_path):
    """true stays true (not True), a large integer keeps its digits (not a rounded float), an
    object is written compactly: distinct ids stay distinct."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = [
        '{"id": true, "text": "alpha beta gamma delta epsilon zeta"}',
        '{"id": 12345678901234567890123, "text": "red green blue yellow purple orange"}',
        '{"id": 12345678901234567890124, "text": "cat dog mouse horse cow sheep goat"}',
        '{"id": {"a": 1}, "text": "sun moon star comet planet galaxy"}',
        '{"id": 1.50, "text": "one two three four five six seven"}',
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    run("dedup", src, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "c.jsonl", "-q")
    ids = [json.loads(line)["id"] for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert ids == ["true", "12345678901234567890123", "12345678901234567890124", '{"a":1}', "1.50"]
    table = pa.table({"id": [True, False], "text": ["alpha beta gamma delta", "one two three four"]})
    pq.write_table(table, tmp_path / "in.parquet")
    run("dedup", tmp_path / "in.parquet", "-o", tmp_path / "k2.jsonl", "--clusters", tmp_path / "c2.jsonl", "-q")
    ids = [json.loads(line)["id"] for line in (tmp_path / "c2.jsonl").read_text().splitlines()]
    assert ids == ["true", "false"]


def test_sigterm_while_kernels_compile_ends_the_run_with_one_line(tmp_path):
    """SIGTERM while numba compiles (a cold cache): the handler's exception raised inside numba's
    callback into Python is swallowed by ctypes, so it is kept and raised at the next check; the
    run ends with exit 143, one line and no traceback, before any output is written."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"words of document {i} " * 9}) + "\n" for i in range(50))
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cold-cache")}
    out = tmp_path / "out" / "kept.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup", "dedup", str(src), "-o", str(out), "--workers", "1"],
        stderr=subprocess.PIPE,
        env=env,
    )
    first = proc.stderr.readline().decode()  # the compile notice: the first kernel is compiling now
    assert "compiling kernels" in first, first
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 143, rest
    assert "terminated (SIGTERM)" in rest and "Traceback" not in rest and "Exception ignored" not in rest, rest
    assert not out.exists()


def test_an_interrupt_swallowed_by_a_native_callback_is_raised_at_the_next_check(capsys):
    """A SIGTERM whose handler raises inside a callback from native code (as numba's compiler
    calls back into Python) is swallowed by ctypes; it is kept and ends the block at the next
    check: exit 143 and one line, not a printed traceback and a run that carries on."""
    import ctypes

    from neardup.cli.safety import interrupts

    def deliver() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)  # the handler runs here, inside the callback

    callback = ctypes.CFUNCTYPE(None)(deliver)
    went_on = []
    with pytest.raises(SystemExit) as exit_info, interrupts():
        callback()
        went_on.append(True)
    assert exit_info.value.code == 143 and went_on == [True]
    err = capsys.readouterr().err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err and "Exception ignored" not in err
