#!/usr/bin/env python3
"""Where each second of the batch job goes with one and with two workers: wall time per stage
and CPU time per thread, and the two-worker time that the CPU split predicts.

    python benchmarks/bench_workers.py CORPUS.jsonl [--workers 1,2] [--repeat 3] [--extra '...']
                                       [--switch-interval S]

Each run is ``neardup dedup CORPUS -o OUT.jsonl --workers W`` in its own subprocess (an untimed
warm-up first fills numba's cache; the earlier runs' output is flushed to disk before each run,
:func:`run_dedup.settle_writes`), the runs of the worker counts alternating (1, 2, 1, 2, ...).
Inside the run the job is the CLI's own, with probes added from outside (no change to the code
measured): ``time.thread_time`` around every task the job's :class:`~neardup.core.parallel.Threads`
runs (by task: ``parse`` = a JSONL block scanned and decoded, ``prepare`` = normalized + exact
keys, ``sketch``, and the candidate stage's tasks), around the GIL-releasing kernels inside
them (JSONL scan and the packing of its text spans, exact keys and ASCII lowering, MinHash signing,
the band sort and verification, the copy of kept
lines), and the calling thread's CPU and the wall clock
at each stage change (``read + sketch``, ``band``, ``verify + cluster``, writing).

The CPU split predicts the two-worker time on an idle 2-core machine:

* ``calling + max worker``: the calling thread's CPU plus the busiest worker's, as if the calling
  thread never overlapped the workers (the pessimistic bound);
* ``pipelined``: per stage, the largest of the calling thread's CPU, the busiest worker's CPU and
  the CPU spent holding the GIL (task time outside the GIL-releasing kernels plus the calling
  thread's), summed over stages (what overlapped streaming reaches);
* ``balanced``: the same with the workers' CPU shared evenly (on a loaded machine the pool hands
  more tasks to the thread the OS runs more often; on an idle one they share the work).

Measured wall times come with the 1-minute load average before each run; on a machine shared with
other work the predicted figures, from CPU time, are the ones to compare. Prints markdown.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_dedup

_LABELS = {
    "_read_block": "parse",
    "_prepared": "prepare",
    "_finished": "sketch",
    "_whole": "sketch",
    "_map": "scan",
    "_count_block": "write: count lines",
    "_copy_block": "write: copy kept",
}


def _task_label(fn) -> str:
    inner = getattr(fn, "func", fn)
    name = getattr(inner, "__name__", type(inner).__name__)
    return _LABELS.get(name, name)


def _probe_run(argv: list[str]) -> dict:
    """Run the CLI in this process with probes; return the figures."""
    from neardup.cli import dedup as cli_dedup
    from neardup.cli.main import main
    from neardup.core import parallel
    from neardup.engine import local
    from neardup.io import jsonl as io_jsonl
    from neardup.io import jsonl_scan
    from neardup.methods.minhash import candidates as mh_cand
    from neardup.methods.minhash import plan as mh_plan
    from neardup.methods.minhash.sketch import MinHasher

    main_ident = threading.get_ident()
    lock = threading.Lock()
    task_cpu: dict[tuple[int, str, str], float] = defaultdict(float)  # (thread, stage, task) -> s
    kernel_cpu: dict[tuple[int, str], float] = defaultdict(float)  # (thread, stage) -> s in nogil kernels
    marks: list[tuple[str, float, float]] = []  # (stage, wall, calling thread CPU) at each change
    stage = ["start"]

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter(), time.thread_time()))
        stage[0] = name

    def timed(fn, label):
        def run(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.thread_time() - t0
                with lock:
                    task_cpu[(threading.get_ident(), stage[0], label)] += dt

        return run

    def kernel(fn):
        def run(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.thread_time() - t0
                with lock:
                    kernel_cpu[(threading.get_ident(), stage[0])] += dt

        return run

    orig_submit, orig_map, orig_stream = parallel.Threads.submit, parallel.Threads.map, parallel.Threads.stream
    parallel.Threads.submit = lambda self, fn, *a: orig_submit(self, timed(fn, _task_label(fn)), *a)
    parallel.Threads.map = lambda self, fn, items: orig_map(self, timed(fn, _task_label(fn)), items)
    parallel.Threads.stream = lambda self, fn, items: orig_stream(self, timed(fn, _task_label(fn)), items)
    jsonl_scan.scan = kernel(jsonl_scan.scan)
    for name in ("connect_band", "pairs_band", "radix_sort_with"):
        setattr(mh_cand, name, kernel(getattr(mh_cand, name)))
    io_jsonl.copy_kept = kernel(io_jsonl.copy_kept)
    try:  # a version that copies kept lines on the workers
        from neardup.io import jsonl_threads as io_threads

        io_threads.copy_kept = kernel(io_threads.copy_kept)
    except ImportError:
        pass
    mh_plan.keys_from_encoded = kernel(mh_plan.keys_from_encoded)
    for name in ("lower_ascii_inplace", "lowered_keys_kernel"):  # the pre-pass's other nogil kernels
        setattr(mh_plan, name, kernel(getattr(mh_plan, name)))
    from neardup._kernels import jsonl as jsonl_kernels

    if hasattr(jsonl_kernels, "gather_spans"):  # a version that packs the scanner's text spans
        jsonl_kernels.gather_spans = kernel(jsonl_kernels.gather_spans)
    MinHasher.sign_encoded = kernel(MinHasher.sign_encoded)

    orig_run = local.LocalEngine.run

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        def stage(self, name):
            mark(name)
            self.inner.stage(name)

        def advance(self, n):
            self.inner.advance(n)

    def run(self, plan, source, *, progress=None, **kw):
        try:
            return orig_run(self, plan, source, progress=Spy(progress) if progress else None, **kw)
        finally:
            mark("finish job")

    local.LocalEngine.run = run
    orig_write_all = cli_dedup.write_all

    def write_all(*a, **kw):
        mark("write")
        try:
            return orig_write_all(*a, **kw)
        finally:
            mark("end")

    cli_dedup.write_all = write_all
    mark("start")
    try:
        main.main(argv, standalone_mode=False)
    finally:
        mark("end")
    stages: dict[str, dict] = {}
    for (name, w0, c0), (_, w1, c1) in itertools.pairwise(marks):
        s = stages.setdefault(name, {"wall": 0.0, "calling_all": 0.0})
        s["wall"] += w1 - w0
        s["calling_all"] += c1 - c0
    threads: dict[int, str] = {}
    for (ident, name, label), cpu in task_cpu.items():
        s = stages.setdefault(name, {"wall": 0.0, "calling_all": 0.0})
        who = "calling" if ident == main_ident else threads.setdefault(ident, f"w{len(threads) + 1}")
        s.setdefault("tasks", {}).setdefault(who, {})
        s["tasks"][who][label] = s["tasks"][who].get(label, 0.0) + cpu
    for (ident, name), cpu in kernel_cpu.items():
        who = "calling" if ident == main_ident else threads.setdefault(ident, f"w{len(threads) + 1}")
        stages.setdefault(name, {"wall": 0.0, "calling_all": 0.0}).setdefault("nogil", {})[who] = cpu
    return {"stages": stages, "cpu_total": time.process_time()}


def _summarize(stages: dict) -> dict:
    """Per stage: wall, calling thread's own CPU (outside pool tasks), CPU per worker, GIL-held
    CPU, and the two predictions."""
    rows = {}
    for name, s in stages.items():
        tasks = s.get("tasks", {})
        nogil = s.get("nogil", {})
        inline = sum(tasks.get("calling", {}).values())
        calling_own = max(s["calling_all"] - inline, 0.0)
        per_thread = {who: sum(t.values()) for who, t in tasks.items() if who != "calling"}
        task_total = inline + sum(per_thread.values())
        gil = calling_own + task_total - sum(nogil.values())
        busiest = max(per_thread.values(), default=0.0)
        balanced = sum(per_thread.values()) / max(len(per_thread), 1)
        rows[name] = {
            "wall": s["wall"],
            "calling_own": calling_own,
            "inline_tasks": inline,
            "workers": per_thread,
            "by_task": {
                label: sum(t.get(label, 0.0) for t in tasks.values())
                for label in {k for t in tasks.values() for k in t}
            },
            "gil": gil,
            "serial_sum": calling_own + inline + busiest,
            "pipelined": max(calling_own + inline, busiest, gil),
            "balanced": max(calling_own + inline, balanced, gil),
        }
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--extra", default="", help="more `neardup dedup` options")
    ap.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval in the runs (CPython's default 0.005 s: how long a thread back "
        "from a GIL-releasing kernel may wait for one that holds the GIL)",
    )
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if args.switch_interval:
            sys.setswitchinterval(args.switch_interval)
        argv = ["dedup", args.corpus, "-o", args.out, "--workers", str(args.one), *args.extra.split()]
        print(json.dumps(_probe_run(argv)), file=sys.__stdout__)
        return
    counts = [int(w) for w in args.workers.split(",")]
    runs: dict[int, list] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        out = os.path.join(tmp, "kept.jsonl")

        def one(w: int) -> dict:
            load = os.getloadavg()[0]
            cmd = [sys.executable, __file__, args.corpus, "--one", str(w), "--out", out, "--extra", args.extra]
            if args.switch_interval:
                cmd += ["--switch-interval", str(args.switch_interval)]
            run_dedup.settle_writes()
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, check=True)
            wall = time.perf_counter() - t0
            data = json.loads(p.stdout.strip().splitlines()[-1])
            return {"load": load, "process_wall": wall, **data}

        one(counts[0])  # warm-up: numba's cache, the page cache
        for _ in range(args.repeat):
            for w in counts:
                runs[w].append(one(w))
    _report(runs)


def _median(values) -> float:
    return statistics.median(values) if values else 0.0


def _report(runs: dict[int, list]) -> None:
    summaries = {w: [_summarize(r["stages"]) for r in rs] for w, rs in runs.items()}
    names = [n for n in summaries[min(summaries)][0] if n not in ("start", "end")]
    print("| workers | stage | wall s | calling thread s | per worker s | by task s | GIL held s |")
    print("|---:|---|---:|---:|---|---|---:|")
    for w, ss in summaries.items():
        for name in names:
            rows = [s[name] for s in ss if name in s]
            if not rows:
                continue
            own = _median([r["calling_own"] + r["inline_tasks"] for r in rows])
            workers = sorted({k for r in rows for k in r["workers"]})
            per = ", ".join(f"{k} {_median([r['workers'].get(k, 0.0) for r in rows]):.2f}" for k in workers) or "-"
            labels = sorted({k for r in rows for k in r["by_task"]})
            tasks = ", ".join(f"{k} {_median([r['by_task'].get(k, 0.0) for r in rows]):.2f}" for k in labels) or "-"
            wall = _median([r["wall"] for r in rows])
            gil = _median([r["gil"] for r in rows])
            print(f"| {w} | {name} | {wall:.2f} | {own:.2f} | {per} | {tasks} | {gil:.2f} |")
    print()
    print(
        "| workers | measured job wall s (median) | loads | process CPU s "
        "| predicted: calling + max worker | predicted: pipelined | predicted: balanced |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|")
    for w, ss in summaries.items():
        walls = [sum(r["wall"] for n, r in s.items() if n not in ("start", "end")) for s in ss]
        serial = _median([sum(r["serial_sum"] for n, r in s.items() if n not in ("start", "end")) for s in ss])
        piped = _median([sum(r["pipelined"] for n, r in s.items() if n not in ("start", "end")) for s in ss])
        even = _median([sum(r["balanced"] for n, r in s.items() if n not in ("start", "end")) for s in ss])
        loads = ", ".join(f"{r['load']:.1f}" for r in runs[w])
        cpu = _median([r["cpu_total"] for r in runs[w]])
        print(f"| {w} | {_median(walls):.2f} | {loads} | {cpu:.2f} | {serial:.2f} | {piped:.2f} | {even:.2f} |")


if __name__ == "__main__":
    main()
