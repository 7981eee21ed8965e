#!/usr/bin/env python3
"""The durable index at scale, from the command line: ``neardup index add`` of a generated corpus,
then opening it and querying it in a new process.

    python benchmarks/bench_index_scale.py --docs 1000000,3000000 --data /work/bench-data/x [--keep-corpus]

For every size: the corpus (``examples/generate_corpus.py``, one JSON Lines file, about 1.8 KB a
document) is generated under ``--data`` unless it is there; ``neardup index create IDX`` (MinHash,
the defaults) and ``neardup index add IDX CORPUS`` run in their own process, whose peak RSS
(``ru_maxrss`` from ``os.wait4``) and wall are recorded, with the sizes of the SQLite file and of
the lookup snapshot. Then a new process imports neardup, opens the index (wall, CPU and RSS
growth, from the first to the last line of ``Index.open``: the first open loads the query
kernels too), closes it and opens it again (the open itself), and answers ``--queries`` texts one
call at a time (half of them stored documents, half new ones; the first call is left out: it
compiles), p50 and p99 in process, then the same queries again (their pages of the snapshot
resident), with the p99 of each call's CPU time (``time.thread_time``), which a loaded machine
does not inflate. The index and, without ``--keep-corpus``, the corpus are
removed afterwards. Results: one table, and JSON under ``benchmarks/_results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "examples" / "generate_corpus.py"
RESULTS = ROOT / "benchmarks" / "_results"

_OPEN = r"""
import json, os, resource, sys, time
import numpy as np
import neardup
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
path, corpus, nq = sys.argv[1], sys.argv[2], int(sys.argv[3])
stored = []
with open(corpus, "rb") as f:
    for line in f:
        stored.append(json.loads(line)["text"])
        if len(stored) == nq // 2:
            break
new = [" ".join(t.split()[::-1]) for t in stored]  # the same words in another order: no 5-gram in common
queries = [q for pair in zip(stored, new) for q in pair]
base, c0, t0 = rss(), time.process_time(), time.perf_counter()
index = neardup.Index.open(path)
open_s, open_cpu_s, open_mb = time.perf_counter() - t0, time.process_time() - c0, (rss() - base) / 1e6
index.query(queries[0])
index.close()
base2, t1 = rss(), time.perf_counter()
index = neardup.Index.open(path)  # again, its kernels loaded: the open itself
reopen_s, reopen_mb = time.perf_counter() - t1, (rss() - base2) / 1e6
index.query(queries[0])
lat = []
found = 0
for q in queries:
    t = time.perf_counter()
    found += bool(index.query(q))
    lat.append(time.perf_counter() - t)
a = np.asarray(lat) * 1e6
warm, cpu = [], []  # again, the pages they touch now resident; and the thread's CPU time (what load does not change)
for q in queries:
    c, t = time.thread_time(), time.perf_counter()
    index.query(q)
    warm.append(time.perf_counter() - t)
    cpu.append(time.thread_time() - c)
w, cp = np.asarray(warm) * 1e6, np.asarray(cpu) * 1e6
print(json.dumps({"open_s": open_s, "open_cpu_s": open_cpu_s, "open_mb": open_mb, "documents": len(index),
    "reopen_s": reopen_s, "reopen_mb": reopen_mb,
    "snapshot": index.snapshot_status, "query_p50_us": float(np.percentile(a, 50)),
    "query_p99_us": float(np.percentile(a, 99)), "queries": len(queries), "answered": found,
    "warm_p50_us": float(np.percentile(w, 50)), "warm_p99_us": float(np.percentile(w, 99)),
    "warm_p99_cpu_us": float(np.percentile(cp, 99)),
    "serving_rss_mb": rss() / 1e6}))
"""


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MB, output) of ``cmd`` in its own process (``ru_maxrss`` from
    ``os.wait4``); a failure ends the run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    chunks = []
    while True:
        block = proc.stdout.read(1 << 16)
        if not block:
            break
        chunks.append(block)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    text = b"".join(chunks).decode("utf-8", "replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit {proc.returncode}:\n{text}")
    return wall, usage.ru_maxrss / 1e3, text


def one_size(docs: int, data: Path, queries: int, keep_corpus: bool, extra: list[str]) -> dict:
    corpus = data / f"index-corpus-{docs}.jsonl"
    if not corpus.exists():
        print(f"generating {docs:,} documents ...", flush=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--docs", str(docs), "--seed", "0", "-o", f"{corpus}.tmp"], check=True
        )
        os.replace(f"{corpus}.tmp", corpus)
    index = data / f"index-{docs}.ndx"
    for suffix in ("", "-wal", "-shm", ".lock", ".lookup"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    try:
        neardup = [sys.executable, "-m", "neardup"]
        subprocess.run([*neardup, "index", "create", str(index)], check=True)
        print(f"index add {docs:,} ...", flush=True)
        wall, peak, _ = run_child([*neardup, "index", "add", str(index), str(corpus), "-q", *extra])
        lookup = Path(f"{index}.lookup")
        row = {
            "documents": docs,
            "add_wall_s": wall,
            "add_docs_per_s": docs / wall,
            "add_peak_rss_mb": peak,
            "sqlite_mb": sum(os.path.getsize(f"{index}{s}") for s in ("", "-wal") if os.path.exists(f"{index}{s}"))
            / 1e6,
            "snapshot_mb": lookup.stat().st_size / 1e6 if lookup.exists() else 0.0,
        }
        _, open_peak, text = run_child([sys.executable, "-c", _OPEN, str(index), str(corpus), str(queries)])
        row.update(json.loads(text.strip().splitlines()[-1]))
        row["open_process_peak_mb"] = open_peak
        return row
    finally:
        for suffix in ("", "-wal", "-shm", ".lock", ".lookup"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        if not keep_corpus:
            corpus.unlink(missing_ok=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="1000000", help="corpus sizes, comma-separated")
    ap.add_argument("--data", required=True, help="folder for the corpora and indexes (outside git; large)")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--keep-corpus", action="store_true")
    ap.add_argument("--add-args", default="", help="more arguments for `neardup index add`, space-separated")
    args = ap.parse_args()
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    rows = []
    for docs in [int(d) for d in args.docs.split(",")]:
        rows.append(one_size(docs, data, args.queries, args.keep_corpus, args.add_args.split()))
        print(json.dumps(rows[-1]), flush=True)
    load = os.getloadavg()
    print(f"\n{os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(
        "| documents | add wall (s) | add docs/s | add peak RSS (MB) | SQLite (MB) | snapshot (MB) "
        "| first open (s, MB) | open (s, MB) | query p50 / p99 (us) | warm p50 / p99 (us) | p99 CPU (us) "
        "| open process peak (MB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['documents']:,} | {r['add_wall_s']:.1f} | {r['add_docs_per_s']:,.0f} | {r['add_peak_rss_mb']:,.0f} "
            f"| {r['sqlite_mb']:,.0f} | {r['snapshot_mb']:,.0f} | {r['open_s']:.2f}, {r['open_mb']:.0f} "
            f"| {r['reopen_s']:.3f}, {r['reopen_mb']:.1f} | {r['query_p50_us']:.0f} / {r['query_p99_us']:.0f} "
            f"| {r['warm_p50_us']:.0f} / {r['warm_p99_us']:.0f} | {r['warm_p99_cpu_us']:.0f} "
            f"| {r['open_process_peak_mb']:,.0f} |"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"index_scale-{stamp}.json"
    out.write_text(json.dumps({"rows": rows, "load": load, "cpu_count": os.cpu_count()}, indent=2))
    print(f"saved {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
