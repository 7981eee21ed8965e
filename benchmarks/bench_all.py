#!/usr/bin/env python3
"""The speed suite in one command: sketch throughput, LSH index, batch-job scaling.

    python benchmarks/bench_all.py [--quick] [--profile]

Runs, one after the other (each prints its markdown tables and saves JSON under
``benchmarks/_results/``):

1. ``bench_sketch.py``  -- sketch throughput per core, neardup vs datasketch and rensa;
2. ``bench_lsh.py``     -- LSH index on 1M signatures: build, memory, query p50/p99;
3. ``bench_scaling.py`` -- the batch job from 10k to 1.4M documents (2.5 GB), 1 and 2 workers, slope.

``--quick`` passes ``--quick`` to each (under a minute instead of about 15 on a 2-core machine;
the full run also generates the 1M- and 1.4M-document corpora the first time, about 35 s and
60 s with two processes).
``--profile`` adds the py-spy profile of the largest batch run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    quick = ["--quick"] if args.quick else []
    steps = [
        ["bench_sketch.py", *quick],
        ["bench_lsh.py", *quick],
        ["bench_scaling.py", *quick, *(["--profile"] if args.profile else [])],
    ]
    failed = 0
    for step in steps:
        print(f"\n===== {' '.join(step)} =====\n", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, str(HERE / step[0]), *step[1:]]).returncode
        print(f"\n({step[0]}: exit {rc}, {time.perf_counter() - t0:.0f} s)", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
