#!/usr/bin/env python3
"""The batch job end to end from 10,000 to 1,400,000 documents: wall time, peak memory, slope.

    python benchmarks/bench_scaling.py [--sizes 10000,30000,100000,300000,1000000,1400000] [--workers 1,2]
                                       [--repeat 1] [--quick] [--profile]

For each size the generated corpus (``run_dedup.py``'s cache: ``examples/generate_corpus.py``,
seed 1, 20% planted duplicates; 1M documents are about 1.8 GB of JSONL and 1.4M about 2.5 GB,
made with two processes the first time) is deduplicated by the command a user runs::

    neardup dedup CORPUS -o OUT.jsonl --workers W

(defaults: word 5-grams, K = 128, threshold 0.8, signature verification, exact pre-pass), each
run in its own subprocess after the corpus is read once into the page cache and an untimed
warm-up run has filled numba's compile cache. Measured: wall time (``time.perf_counter`` around
the subprocess, start-up and imports included), CPU time and peak resident memory
(``ru_maxrss`` from ``os.wait4``), and the stage times of the job's own summary (read+sketch,
band, verify+cluster, write). The slope of log(time) and log(peak memory) against log(documents)
is a least-squares fit over the sizes from 30,000 up (10,000 documents are dominated by the
0.8 s start-up), for the wall time and for the job's own total (start-up excluded); 1.0 is
linear.

``--profile`` samples the largest run with py-spy (100 Hz, all threads) and prints where the
time goes, by the neardup function on the stack. Results are printed as markdown and saved to
``benchmarks/_results/scaling-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_dedup

STAGE = re.compile(r"^time (\S+(?: \S+)*?)\s+([0-9.]+) s$")


def parse_summary(stderr: str) -> dict[str, float]:
    stages = {}
    for line in stderr.splitlines():
        m = STAGE.match(line.strip())
        if m:
            stages[m.group(1)] = float(m.group(2))
    return stages


def slope(xs: list[float], ys: list[float]) -> float | None:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def profile(cmd: list[str]) -> dict:
    """py-spy samples of one run, attributed to the innermost neardup function on each stack
    (numba kernels release the GIL and show as the Python function that called them)."""
    spy = shutil.which("py-spy", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not spy:
        return {"error": "py-spy not found"}
    raw = run_dedup.DATA / "out" / "scaling-profile.txt"
    r = subprocess.run(
        [spy, "record", "--format", "raw", "--rate", "100", "--output", str(raw), "--", *cmd],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 or not raw.exists():
        return {"error": r.stderr[-2000:]}
    by_func: collections.Counter = collections.Counter()
    by_thread_kind: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        worker = "_worker (concurrent/futures/thread.py" in stack
        if worker and frames[-1].startswith("_worker (concurrent/futures/thread.py"):
            by_func["(worker thread waiting for a batch: queue.get)"] += n
            by_thread_kind["worker threads, waiting"] += n
            continue
        ours = [f for f in frames if "neardup/" in f or "neardup\\" in f]
        leaf = ours[-1] if ours else frames[-1]
        name = leaf.split(" (")[0]
        where = leaf[leaf.find("(") + 1 : leaf.rfind(")")] if "(" in leaf else ""
        module = where.split("neardup/")[-1].split(":")[0] if "neardup/" in where else where.split(":")[0]
        by_func[f"{module}:{name}" + (" (worker)" if worker else "")] += n
        by_thread_kind["worker threads, working" if worker else "main thread"] += n
    return {
        "samples": total,
        "by_function": by_func.most_common(25),
        "by_thread": dict(by_thread_kind),
        "raw": str(raw.relative_to(run_dedup.ROOT)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,30000,100000,300000,1000000,1400000")
    ap.add_argument("--workers", default="1,2", help="neardup --workers values (default 1,2)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size and worker count (median)")
    ap.add_argument("--extra", default="", help="more options for neardup dedup, e.g. '--sketch oph'")
    ap.add_argument("--quick", action="store_true", help="sizes 10000,30000,100000")
    ap.add_argument("--profile", action="store_true", help="py-spy profile of the largest run")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes = "10000,30000,100000"
    sizes = [int(s) for s in args.sizes.split(",")]
    workers = [int(w) for w in args.workers.split(",")]
    extra = args.extra.split()

    cmd = run_dedup.find_neardup()
    if cmd is None:
        print("neardup dedup is not available")
        return 1
    out_dir = run_dedup.DATA / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    corpora = {n: run_dedup.ensure_corpus(n, 1, 0.2)[0] for n in sizes}
    warm = out_dir / "scaling-warmup.jsonl"
    run_dedup.head(corpora[sizes[0]], 2000, warm)
    run_dedup.measure([*cmd, "dedup", str(warm), "-o", str(out_dir / "scaling-warmup-kept.jsonl"), "--quiet", *extra])

    load_before = os.getloadavg()[0]
    print(
        f"batch job scaling: sizes {sizes}, workers {workers}, {args.repeat} run(s) each; "
        f"load average {load_before:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    rows = []
    for n in sizes:
        corpus = corpora[n]
        run_dedup.warm_page_cache(corpus)
        mb = corpus.stat().st_size / 1e6
        for w in workers:
            runs = []
            for _ in range(args.repeat):
                argv_ = [
                    *cmd,
                    "dedup",
                    str(corpus),
                    "-o",
                    str(out_dir / "scaling-kept.jsonl"),
                    "--workers",
                    str(w),
                    *extra,
                ]
                r = run_dedup.measure(argv_)
                if r["returncode"] != 0:
                    print(f"failed: {' '.join(argv_)}\n{r['stderr']}")
                    return 1
                r["stages"] = parse_summary(r["stderr"])
                r["load"] = os.getloadavg()[0]
                runs.append(r)
            best = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
            row = {
                "docs": n,
                "mb": mb,
                "workers": w,
                "wall_s": best["wall_s"],
                "cpu_s": best["cpu_s"],
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                "stages": best["stages"],
                "runs_s": [r["wall_s"] for r in runs],
                "load": best["load"],
            }
            rows.append(row)
            st = best["stages"]
            print(
                f"  {n:>9,} docs {mb:8.1f} MB  workers {w}  wall {row['wall_s']:7.2f} s  CPU {row['cpu_s']:7.2f} s  "
                f"peak {row['peak_rss_mb']:6.0f} MB  "
                + "  ".join(f"{k} {v:.2f}" for k, v in st.items())
                + f"  (load {row['load']:.1f})",
                flush=True,
            )

    fits = {}
    for w in workers:
        sel = [r for r in rows if r["workers"] == w and r["docs"] >= 30_000]
        fits[w] = {
            "time": slope([r["docs"] for r in sel], [r["wall_s"] for r in sel]),
            "job": slope([r["docs"] for r in sel], [r["stages"].get("total", 0.0) for r in sel]),
            "cpu": slope([r["docs"] for r in sel], [r["cpu_s"] for r in sel]),
            "memory": slope([r["docs"] for r in sel], [r["peak_rss_mb"] for r in sel]),
        }
    load_after = os.getloadavg()[0]
    print_tables(rows, fits, workers)
    print(f"\nload average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")

    prof = None
    if args.profile:
        n, w = sizes[-1], workers[-1]
        print(f"\nprofiling {n:,} documents with --workers {w} (py-spy, 100 Hz) ...", flush=True)
        prof = profile(
            [
                *cmd,
                "dedup",
                str(corpora[n]),
                "-o",
                str(out_dir / "scaling-kept.jsonl"),
                "--workers",
                str(w),
                "--quiet",
                *extra,
            ]
        )
        print_profile(prof)

    run_dedup.RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = run_dedup.RESULTS / f"scaling-{stamp}.json"
    path.write_text(
        json.dumps(
            {
                "created": stamp,
                "args": vars(args),
                "versions": run_dedup.versions(),
                "load_average_1min": {"before": load_before, "after": load_after},
                "rows": rows,
                "slopes": fits,
                "profile": prof,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"saved {path.relative_to(run_dedup.ROOT)}")
    return 0


def print_tables(rows: list[dict], fits: dict, workers: list[int]) -> None:
    stage_names = []
    for r in rows:
        for k in r["stages"]:
            if k not in stage_names and k != "total":
                stage_names.append(k)
    print(
        "\n| documents | MB | workers | wall s | CPU s | peak RSS MB | docs/s | MB/s | "
        + " | ".join(f"{s} s" for s in stage_names)
        + " | vs 1 worker |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(stage_names) + "---:|")
    one = {r["docs"]: r for r in rows if r["workers"] == 1}
    for r in rows:
        speedup = f"{one[r['docs']]['wall_s'] / r['wall_s']:.2f}x" if r["docs"] in one else "n/a"
        print(
            f"| {r['docs']:,} | {r['mb']:,.0f} | {r['workers']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} "
            f"| {r['peak_rss_mb']:,.0f} | {r['docs'] / r['wall_s']:,.0f} | {r['mb'] / r['wall_s']:.1f} | "
            + " | ".join(f"{r['stages'].get(s, float('nan')):.2f}" for s in stage_names)
            + f" | {speedup} |"
        )
    print("\nslope of log(cost) against log(documents), sizes >= 30,000 (1.0 = linear):\n")
    print("| workers | wall time | job time (summary total, no start-up) | CPU time | peak memory |")
    print("|---:|---:|---:|---:|---:|")
    for w in workers:
        f = fits[w]
        fmt = lambda x: "n/a" if x is None else f"{x:.2f}"
        print(f"| {w} | {fmt(f['time'])} | {fmt(f['job'])} | {fmt(f['cpu'])} | {fmt(f['memory'])} |")


def print_profile(prof: dict) -> None:
    if "error" in prof:
        print(f"profile failed: {prof['error']}")
        return
    total = prof["samples"] or 1
    print(
        f"\n{prof['samples']:,} samples ({prof['raw']}); by thread: "
        + ", ".join(f"{k} {v / total:.0%}" for k, v in prof["by_thread"].items())
    )
    print("\n| innermost neardup function (or leaf) | share of samples |")
    print("|---|---:|")
    for name, n in prof["by_function"]:
        if n / total >= 0.005:
            print(f"| `{name}` | {n / total:.1%} |")


if __name__ == "__main__":
    sys.exit(main())
