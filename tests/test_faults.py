"""Fault injection on real `neardup dedup` processes: kill -9 and SIGTERM at each point of a run, and a
full disk at several points. Whatever happens, the outputs are the previous set or the complete
new set (never a mix, never a part), an error is one line, and no temporary file outlives the
next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from neardup.io.transaction import recover

from conftest import wait_until_handling
from crash_points import start_at

OUTPUTS = ("kept.jsonl", "removed.jsonl", "clusters.csv", "pairs.parquet", "skipped.csv", "stats.json")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """1,500 documents, a fifth of them near-copies, and one bad line (for --skipped)."""
    path = tmp_path_factory.mktemp("faults") / "in.jsonl"
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(3000)])
    originals = []
    with open(path, "w") as f:
        for i in range(1500):
            if i % 5 == 4:
                words = list(originals[int(rng.integers(0, len(originals)))])
                words[int(rng.integers(0, len(words)))] = "changed"
            else:
                words = list(vocab[rng.integers(0, 3000, 60)])
                originals.append(words)
            f.write(json.dumps({"id": f"d{i}", "text": " ".join(words)}) + "\n")
            if i == 700:
                f.write('{"text": broken}\n')
    return path


def command(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "neardup", "dedup", str(corpus), "-q", "--workers", "1", "--on-error", "skip",
        "-o", str(out / "kept.jsonl"), "--removed", str(out / "removed.jsonl"),
        "--clusters", str(out / "clusters.csv"), "--pairs", str(out / "pairs.parquet"),
        "--skipped", str(out / "skipped.csv"), "--stats", str(out / "stats.json"), *extra,
    ]  # fmt: skip


def state(out: Path) -> dict[str, bytes]:
    """The outputs present, the stats without their timings (they differ between runs)."""
    found = {}
    for name in OUTPUTS:
        p = out / name
        if p.exists():
            data = p.read_bytes()
            if name == "stats.json" and data.startswith(b"{"):
                s = json.loads(data)
                s.pop("seconds"), s.pop("outputs")
                data = json.dumps(s, sort_keys=True).encode()
            found[name] = data
    return found


def leftovers(out: Path) -> list[str]:
    """Temporaries and commit journals."""
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


# where a signal lands -> the set it leaves (after recover() where a SIGKILL left a journal)
FORCED = {
    "startup": "previous",
    "work": "previous",
    "commit": "previous",
    "rename": "complete",
    "committed": "complete",
}


@pytest.mark.slow
def test_kill_and_sigterm_at_each_point_leave_the_previous_or_the_complete_set(tmp_path, corpus):
    """SIGKILL and SIGTERM at each point of a run (tests/crash_points.py stops the run there until
    the signal comes, so each outcome is forced): before the handlers (the signal kills), during
    the job, with every output written but none replaced, between two renames of the commit (a
    SIGKILL leaves the journal, recover() finishes it; SIGTERM finishes the renames itself) and
    after the commit. Then 6 signals at random times over the run, where only the invariant is
    asserted: the previous set or the complete one, never a mix."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to see when the command is past its start-up")
    out = tmp_path / "out"
    out.mkdir()
    args = command(corpus, out)
    proc = subprocess.Popen(args)
    assert wait_until_handling(proc, signal.SIGTERM)
    t1 = time.perf_counter()
    assert proc.wait() == 0
    work = time.perf_counter() - t1
    complete = state(out)
    assert set(complete) == set(OUTPUTS)
    previous = {name: f"previous {name}\n".encode() for name in OUTPUTS}

    def reset():
        for name, data in previous.items():
            (out / name).write_bytes(data)

    def outcome_of(proc, sig) -> str:
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        assert proc.returncode in (0, -signal.SIGKILL, -signal.SIGTERM, 143), (proc.returncode, err)
        if proc.returncode == 143:
            assert err.strip().count("\n") == 0, err  # one clean line
            # SIGTERM: the process removed its own temporaries (a SIGKILLed one's wait for the next run)
            assert [n for n in leftovers(out) if f".{proc.pid}." in n] == []
        if any(name.startswith(".neardup-commit.") for name in leftovers(out)):
            assert sig == signal.SIGKILL, leftovers(out)  # only a killed commit leaves its journal
            recover(out)  # killed between two renames: what the next run does first
        now = state(out)
        assert now in (previous, complete), "a mixed or partial set"
        if now == complete:
            reset()
        return "previous" if now == previous else "complete"

    reset()
    for point, expected in FORCED.items():
        for sig in (signal.SIGKILL, signal.SIGTERM):
            proc = start_at(args, point, tmp_path, stderr=subprocess.PIPE, text=True)
            proc.send_signal(sig)
            got = outcome_of(proc, sig)
            assert got == expected, (point, sig, got)
            handled = point != "startup" and sig == signal.SIGTERM
            assert proc.returncode == (143 if handled else -sig), (point, sig, proc.returncode)
    rng = np.random.default_rng(42)
    for trial in range(6):
        sig = signal.SIGKILL if trial % 2 == 0 else signal.SIGTERM
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        wait_until_handling(proc, signal.SIGTERM)
        time.sleep(float(rng.uniform(0.0, work * 1.1)))
        proc.send_signal(sig)
        outcome_of(proc, sig)
    # the next run removes what kill -9 left behind
    subprocess.run(args, check=True)
    assert state(out) == complete and leftovers(out) == []


def _mount_small(folder: Path, size: str) -> None:
    folder.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")


@pytest.mark.slow
def test_disk_full_at_several_points_is_one_line_and_leaves_the_previous_set(tmp_path, corpus):
    """On a 2 MB file system filled to leave less room than the outputs need, at several levels so
    that the disk fills during each of the outputs in turn."""
    ref = tmp_path / "ref"
    ref.mkdir()
    subprocess.run(command(corpus, ref), check=True)
    sizes = [(ref / n).stat().st_size for n in OUTPUTS]
    total = sum(sizes)
    small = tmp_path / "small"
    _mount_small(small, "2m")
    try:
        out = small / "out"
        out.mkdir()
        previous = dict.fromkeys(OUTPUTS, b"p\n")
        for name, data in previous.items():
            (out / name).write_bytes(data)
        # free space that ends inside each output in turn (cumulative sizes in commit order)
        cumulative = np.cumsum(sizes)
        levels = sorted({int(c - s / 2) for c, s in zip(cumulative, sizes)} | {total // 10})
        failures = 0
        failed_on = set()
        for free in levels:
            filler = small / "filler"
            filler.unlink(missing_ok=True)
            room = os.statvfs(small).f_bavail * os.statvfs(small).f_frsize
            with open(filler, "wb") as f:
                f.write(b"\0" * max(room - free, 0))
            res = subprocess.run(command(corpus, out, "--no-space-check"), capture_output=True, text=True)
            assert "Traceback" not in res.stderr, res.stderr
            assert leftovers(out) == [], (free, leftovers(out))
            if res.returncode == 0:
                assert state(out) == state(ref)
                for name, data in previous.items():
                    (out / name).write_bytes(data)
                continue
            failures += 1
            assert res.returncode == 1, res.stderr
            line = res.stderr.strip()
            assert line.count("\n") == 0 and "no space left on device" in line, line
            named = [n for n in OUTPUTS if f"cannot write {out / n}:" in line]
            assert len(named) == 1, line  # names the output
            failed_on.add(named[0])
            assert state(out) == previous
        assert failures >= 3 and len(failed_on) >= 3, (levels, failed_on)
        print(f"disk full: {failures} of {len(levels)} levels failed, on {sorted(failed_on)}")
        # with the room back, the same run succeeds and leaves nothing behind
        (small / "filler").unlink()
        subprocess.run(command(corpus, out, "--no-space-check"), check=True)
        assert state(out) == state(ref) and leftovers(out) == []
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_an_output_folder_that_turns_read_only_during_the_run_is_one_line(tmp_path, corpus):
    """Past the pre-flight checks (the command's handlers are installed), the output file system is
    remounted read-only: the run ends with exit 1 and one line naming the output, the previous
    outputs untouched."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to see when the command is past its start-up")
    folder = tmp_path / "fs"
    _mount_small(folder, "4m")
    try:
        out = folder / "out"
        out.mkdir()
        for name in OUTPUTS:
            (out / name).write_bytes(b"previous\n")
        proc = subprocess.Popen(command(corpus, out), stderr=subprocess.PIPE, text=True)
        assert wait_until_handling(proc, signal.SIGTERM)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err
        line = err.strip()
        assert line.count("\n") == 0 and "Traceback" not in line, line
        assert f"cannot write {out / 'kept.jsonl'}: read-only file system" in line, line
        assert all((out / n).read_bytes() == b"previous\n" for n in OUTPUTS)
    finally:
        subprocess.run(["umount", str(folder)], check=False)
