#!/usr/bin/env python3
"""Peak memory, wall time and temporary disk of ``neardup dedup`` with and without a memory budget.

    python benchmarks/bench_memory.py [--docs 100000,1000000,3000000] [--memory 2GB] [--workers 2]
    python benchmarks/bench_memory.py --docs 1000000 --corpus C.jsonl --method simhash --memory 300MB

For every size of the generated corpus (``examples/generate_corpus.py``, cached under
``benchmarks/_data/``) the same job runs twice, in its own subprocess: without ``--memory`` (the
default budget, half the available memory: in memory on a machine that has it) and with
``--memory SIZE``, spilling to ``--tmp-dir`` past it. Both write the kept records, which must be
byte-identical.

Peak RSS: ``ru_maxrss`` of the job's process (``os.wait4``). Temporary disk: the used space of
the spill folder's file system, sampled every 20 ms, less what it was before the job and what
the job's outputs take at that moment, and the job's own count of its spill files at their peak
(``spilled_bytes`` in ``--stats``). After each run the file system must be back where it was:
spill files have no names and vanish with the process. The table gives each run's wall per
document and the spilled bytes against what the signatures and band keys of the documents the
method saw take (the bound the issue sets is 1.5x). Results are saved as JSON under
``benchmarks/_results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from run_dedup import ROOT, ensure_corpus

RESULTS = ROOT / "benchmarks" / "_results"


def _used(path: str) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _size(folder: Path) -> int:
    """Bytes the files under ``folder`` (the job's outputs, and their temporaries) take on disk."""
    total = 0
    for base, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(base, name)).st_size  # blocks lag behind (delayed allocation)
    return total


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_job(corpus: Path, out: Path, workers: int, memory: str | None, tmp_dir: str, method: str = "minhash") -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out / "kept.jsonl"), "--method", method]
    cmd += ["--stats", str(out / "stats.json"), "--workers", str(workers), "-q", "--no-space-check"]
    if memory is not None:
        cmd += ["--memory", memory, "--tmp-dir", tmp_dir]
    before = _used(tmp_dir)
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], _used(tmp_dir) - before - _size(out))

    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    stderr = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit {code}:\n{stderr}")
    settle = time.monotonic() + 10  # a removed file's blocks may be freed a moment after its last close
    while (left := _used(tmp_dir) - before - _size(out)) > 64e6 and time.monotonic() < settle:
        time.sleep(0.2)
    stats = json.loads((out / "stats.json").read_text())
    counts = stats["counts"]
    return {
        "memory": memory,
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss * 1024 / 1e6,
        "spilled_mb": counts.get("spilled_bytes", 0) / 1e6,
        "disk_peak_mb": peak[0] / 1e6,
        "disk_left_mb": left / 1e6,
        "documents": counts["documents"],
        "removed": counts["removed"],
        "exact_duplicates": stats["counters"].get("exact_duplicates", 0),
        "kept_sha256": _digest(out / "kept.jsonl"),
        "seconds": stats["seconds"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="100000,1000000,3000000", help="corpus sizes, comma-separated")
    ap.add_argument("--memory", default="2GB", help="the budget of the bounded runs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tmp-dir", default=tempfile.gettempdir(), help="where the bounded runs spill")
    ap.add_argument("--dup-fraction", type=float, default=0.2)
    ap.add_argument("--method", default="minhash", help="the job's method (its defaults)")
    ap.add_argument(
        "--corpus", default=None, help="a JSON Lines corpus of --docs documents to use instead of generating one"
    )
    args = ap.parse_args()
    sizes = [int(x) for x in args.docs.split(",")]
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-memory-", dir=ROOT / "benchmarks"))
    try:
        for n in sizes:
            corpus = Path(args.corpus) if args.corpus else ensure_corpus(n, 1, args.dup_fraction)[0]
            for memory in (None, args.memory):
                row = run_job(corpus, scratch / f"{n}-{memory}", args.workers, memory, args.tmp_dir, args.method)
                row["docs"] = n
                seen = row["documents"] - row["exact_duplicates"]
                minhash = args.method == "minhash"  # the default MinHash: K = 128, 17 bands
                row["sig_keys_mb"] = seen * (128 * 4 + 17 * 8) / 1e6 if minhash else 0.0
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "kept_sha256"}), flush=True)
                (scratch / f"{n}-{memory}" / "kept.jsonl").unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    head = ("docs", "--memory", "wall s", "us/doc", "peak RSS MB", "spilled MB", "disk peak MB", "x sig+keys", "same")
    head += ("read+sketch s", "verify+cluster s", "write s")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    by_size = {}
    for r in rows:
        by_size.setdefault(r["docs"], []).append(r)
    for n, (free, bounded) in by_size.items():
        same = free["kept_sha256"] == bounded["kept_sha256"]
        for r in (free, bounded):
            ratio = r["spilled_mb"] / r["sig_keys_mb"] if r["spilled_mb"] and r["sig_keys_mb"] else 0.0
            print(
                f"{n:,} | {r['memory'] or 'none'} | {r['wall_s']:.1f} | {1e6 * r['wall_s'] / n:.1f} | "
                f"{r['peak_rss_mb']:,.0f} | {r['spilled_mb']:,.0f} | {r['disk_peak_mb']:,.0f} | {ratio:.2f} | "
                f"{'yes' if same else 'NO'} | {r['seconds'].get('read + sketch', 0):.1f} | "
                f"{r['seconds'].get('verify + cluster', 0):.1f} | {r['seconds'].get('write', 0):.1f}"
            )
    leftover = [r for r in rows if r["disk_left_mb"] > 64]
    for r in leftover:
        print(f"warning: {r['disk_left_mb']:.0f} MB more used in {args.tmp_dir} after the run of {r['docs']:,}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"memory-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps({"args": vars(args), "cpus": os.cpu_count(), "runs": rows}, indent=2) + "\n")
    print(f"\nsaved {path.relative_to(ROOT)}")
    bad = [n for n, (free, bounded) in by_size.items() if free["kept_sha256"] != bounded["kept_sha256"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
