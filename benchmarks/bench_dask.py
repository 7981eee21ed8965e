#!/usr/bin/env python3
"""The Dask engine against the local engine on the same cores: wall time, peak memory per
process, bytes moved per stage, and that the answer is the same.

    python benchmarks/bench_dask.py [--docs 100000] [--workers 2] [--repeat 3] [--method minhash]
                                    [--partitions N] [--driver-state] [--verify exact|edit]
                                    [--memory 2GB]

``--docs`` takes several sizes, comma-separated (``--docs 200000,1000000,3000000``), run one
after another; a table across the sizes then shows the driver's and each worker's peak against
its budget. ``--memory SIZE``: the job's budget, as ``neardup dedup --memory`` gives it (the local
engine: the whole; Dask: an eighth to the driver, the rest split between the workers as their
memory limit, which they spill past: ``neardup.engine.dask_engine.split_memory``).

The corpus is ``run_dedup.py``'s generated one (``examples/generate_corpus.py``, seed 1, 20%
planted duplicates; 1M documents, the target size, are about 1.8 GB of JSONL). Each run is its own
subprocess running ``neardup.dedup`` on the file (nothing written), after an untimed warm-up that
fills numba's compile cache:

- ``local``: ``LocalEngine(workers=W)``, W threads in one process;
- ``dask``: ``DaskEngine`` on a LocalCluster of W worker processes with one thread each (cluster
  start-up timed separately, not in the job's time).

Measured: the job's wall time (median of ``--repeat`` runs), the CPU seconds of every process
(driver, with the LocalCluster's scheduler, and workers: less sensitive to a shared machine's
load than wall time), peak resident memory of the driver
(``ru_maxrss``) and of each Dask worker (``ru_maxrss`` read on the worker before it closes), the
payload bytes (array bytes plus text characters) the scans send to and get from the workers,
the bytes of (table, key, document) entries the candidate stage shuffles, and the stage times.
Ratios are dask / local, measured in the same run. Results are printed as markdown and saved to
``benchmarks/_results/dask-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_dedup

RESULTS = Path(__file__).resolve().parent / "_results"


def _cpu_seconds(client) -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process (the driver, and with a
    LocalCluster the scheduler) and by each worker process."""

    def used() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    out = {"driver": used()}
    if client is not None:
        for k, (_, v) in enumerate(sorted(client.run(used).items())):
            out[f"worker {k}"] = v
    return out


def one(
    engine: str,
    corpus: str,
    workers: int,
    method: str,
    partitions: int | None,
    worker_state: bool = True,
    verify: str | None = None,
    memory: str | None = None,
    driver_memory: str | None = None,
) -> dict:
    """Run one job in this process; return its measurements."""
    import numpy as np

    import neardup
    from neardup.methods.registry import get_method

    config = get_method(method)(**({"verify": verify} if verify else {}))
    out: dict = {"engine": engine}
    client = None
    if engine == "dask":
        from neardup.engine.dask_engine import DaskEngine, local_client, split_memory

        driver, limit = (None, None) if memory is None else split_memory(memory, workers)
        if driver_memory is not None:
            from neardup.core.budget import parse_size

            driver = parse_size(driver_memory)
        out["budget_mb"] = {"driver": driver and driver / 1e6, "worker": limit and limit / 1e6}
        t0 = time.perf_counter()
        client = local_client(workers, memory_limit=limit, spill_only=memory is not None)
        out["cluster_start_s"] = time.perf_counter() - t0
        job_engine = DaskEngine(client, partitions=partitions, worker_state=worker_state, memory=driver)
        kwargs = {"engine": job_engine}
    else:
        kwargs = {"workers": workers, "memory": memory}
    # warm-up, untimed: a 2,000-document job loads numba's cached kernels in every process (a
    # long-lived cluster has them loaded; the cluster's start-up is not in the job time either)
    import tempfile

    with open(corpus, "rb") as f, tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as w:
        for _ in range(2000):
            w.write(f.readline())
    neardup.dedup([w.name], config, **kwargs)
    os.unlink(w.name)
    cpu0 = _cpu_seconds(client)
    t0 = time.perf_counter()
    result = neardup.dedup([corpus], config, **kwargs)
    out["wall_s"] = time.perf_counter() - t0
    out["driver_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the checks below
    out["spilled_mb"] = result.job.spilled_bytes / 1e6
    cpu1 = _cpu_seconds(client)
    out["cpu_s"] = {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1}
    out["documents"] = result.n_documents
    out["removed"] = result.n_removed
    out["timings"] = dict(result.timings)
    out["keep_digest"] = hashlib.sha256(np.packbits(result.keep_mask).tobytes()).hexdigest()[:16]
    if client is not None:
        out["scan_bytes"] = dict(job_engine.scan_bytes)
        out["shuffle_bytes"] = dict(job_engine.shuffle_bytes)
        out["row_bytes"] = dict(getattr(job_engine, "row_bytes", {}))
        out["input_partitions"] = getattr(job_engine, "input_partitions", 0)
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        out["worker_peak_mb"] = sorted(peaks.values())
        cluster = client.cluster
        client.close()
        cluster.close()
    return out


def run_child(engine: str, corpus: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--one", engine, "--corpus", str(corpus), "--workers", str(args.workers)]
    cmd += ["--method", args.method] + (["--partitions", str(args.partitions)] if args.partitions else [])
    cmd += ["--driver-state"] if args.driver_state else []
    cmd += ["--verify", args.verify] if args.verify else []
    cmd += ["--memory", args.memory] if args.memory else []
    cmd += ["--driver-memory", args.driver_memory] if args.driver_memory else []
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{engine} run failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default="100000", help="documents (1M is the target size); several sizes comma-separated")
    ap.add_argument("--workers", type=int, default=2, help="threads (local) = worker processes (dask)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--method", default="minhash")
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument(
        "--driver-state",
        action="store_true",
        help="dask: bring the per-document state (signatures) to the driver (DaskEngine(worker_state=False))",
    )
    ap.add_argument(
        "--verify", default=None, help="the method's verify setting (exact, edit, signature; default: its own)"
    )
    ap.add_argument("--memory", default=None, help="the job's budget (2GB), as neardup dedup --memory gives it")
    ap.add_argument("--driver-memory", default=None, help="dask: the driver's budget instead of --memory's eighth")
    ap.add_argument("--no-warm-up", action="store_true", help="skip the untimed local run before each size")
    ap.add_argument("--one", choices=["local", "dask"], help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        found = one(
            args.one,
            args.corpus,
            args.workers,
            args.method,
            args.partitions,
            not args.driver_state,
            args.verify,
            args.memory,
            args.driver_memory,
        )
        print(json.dumps(found))
        return
    sizes = [int(n) for n in args.docs.split(",")]
    found = [bench_size(n, args) for n in sizes]
    if len(found) > 1:
        print(f"\n## bench_dask across sizes: {args.method}, {args.workers} workers, --memory {args.memory or '-'}\n")
        print(
            "| documents | dask wall s | driver peak MB | driver budget MB | worker peaks MB | worker budget MB | local wall s | local peak MB | same kept |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for n, (local, dask) in zip(sizes, found):
            budget = dask.get("budget_mb", {})
            wp = ", ".join(f"{m:.0f}" for m in dask.get("worker_peak_mb", []))
            fmt = lambda v: "-" if v is None else f"{v:.0f}"
            print(
                f"| {n:,} | {dask['wall_s']:.1f} | {dask['driver_peak_mb']:.0f} | {fmt(budget.get('driver'))} | {wp} "
                f"| {fmt(budget.get('worker'))} | {local['wall_s']:.1f} | {local['driver_peak_mb']:.0f} "
                f"| {local['keep_digest'] == dask['keep_digest']} |"
            )
        peaks = [dask["driver_peak_mb"] for _, dask in found]
        print(f"\ndriver peak, largest / smallest size: {max(peaks) / min(peaks):.3f}")


def bench_size(docs: int, args) -> tuple[dict, dict]:
    """The runs at one corpus size (printed); returns the last local and dask runs."""
    corpus, _ = run_dedup.ensure_corpus(docs, 1, 0.2)
    run_dedup.warm_page_cache(corpus)
    if not args.no_warm_up:
        run_child("local", corpus, args)  # warm-up: numba's compile cache
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"local": [], "dask": []}
    for _ in range(args.repeat):
        for engine in ("local", "dask"):
            runs[engine].append(run_child(engine, corpus, args))
    local, dask = runs["local"], runs["dask"]
    if {r["keep_digest"] for r in local} != {r["keep_digest"] for r in dask}:
        raise SystemExit("the engines disagree on which documents to keep")
    med = {e: statistics.median(r["wall_s"] for r in rs) for e, rs in runs.items()}
    verify = f" (verify={args.verify})" if args.verify else ""
    print(f"\n## bench_dask: {args.method}{verify}, {local[0]['documents']:,} documents, {args.workers} cores\n")
    print("| engine | job wall s (median) | driver peak MB | worker peak MB | removed |")
    print("|---|---:|---:|---:|---:|")
    for e, rs in runs.items():
        wp = ", ".join(f"{m:.0f}" for m in rs[-1].get("worker_peak_mb", [])) or "-"
        print(f"| {e} | {med[e]:.2f} | {rs[-1]['driver_peak_mb']:.0f} | {wp} | {rs[-1]['removed']:,} |")
    print(f"\ndask / local wall time: {med['dask'] / med['local']:.2f}x")
    cpu = {e: statistics.median(sum(r["cpu_s"].values()) for r in rs) for e, rs in runs.items()}
    print(
        f"CPU seconds, all processes (median): local {cpu['local']:.1f}, dask {cpu['dask']:.1f} "
        f"({cpu['dask'] / cpu['local']:.2f}x; dask per process, last run: "
        + ", ".join(f"{k} {v:.1f}" for k, v in dask[-1]["cpu_s"].items())
        + ")"
    )
    print(f"dask cluster start-up: {statistics.median(r['cluster_start_s'] for r in dask):.2f} s (not in the job time)")
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before the runs: {load_before}, after: {load_after}")
    print(f"input partitions: {dask[-1].get('input_partitions', '-')}")
    last = dask[-1]
    print("\n| stage | local s | dask s |")
    print("|---|---:|---:|")
    for stage in local[-1]["timings"]:
        print(f"| {stage} | {local[-1]['timings'][stage]:.2f} | {last['timings'].get(stage, float('nan')):.2f} |")
    print("\n| bytes moved (dask) | MB |")
    print("|---|---:|")
    for k, v in last["scan_bytes"].items():
        print(f"| scans, {k} | {v / 1e6:.1f} |")
    for k, v in last["shuffle_bytes"].items():
        print(f"| shuffle of {k} | {v / 1e6:.1f} |")
    for k, v in last.get("row_bytes", {}).items():
        print(f"| signature rows between workers, {k} | {v / 1e6:.1f} |")
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    path = RESULTS / f"dask-{stamp}.json"
    path.write_text(json.dumps({"args": vars(args), "load": [load_before, load_after], "runs": runs}, indent=1))
    print(f"\nsaved {path}")
    return local[-1], dask[-1]


if __name__ == "__main__":
    main()
