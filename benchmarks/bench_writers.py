#!/usr/bin/env python3
"""Time of writing the kept records (``write_kept``) in each output format.

    python benchmarks/bench_writers.py CORPUS.jsonl [--repeat 3]

Writes 90 % of the records of CORPUS (a JSON Lines file, e.g. from ``examples/generate_corpus.py``)
to .jsonl, .csv and .parquet, from the JSON Lines file itself and from a Parquet copy of it
(made once, beside the outputs in a temporary directory), and prints the median wall time of
``--repeat`` runs of each. The page cache is warmed by a first untimed read. Run it from two
source trees (``PYTHONPATH=TREE/src``) to compare a change with the code before it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.json as pajson
import pyarrow.parquet as pq

from neardup.io.write import write_kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-writers-") as tmp:
        out = Path(tmp)
        parquet = out / "corpus.parquet"
        pq.write_table(pajson.read_json(args.corpus), parquet)
        n = pq.read_metadata(parquet).num_rows
        keep = np.random.default_rng(0).random(n) < 0.9
        size = args.corpus.stat().st_size / 1e6
        print(f"{args.corpus} ({size:.0f} MB, {n:,} records), keeping {keep.sum():,}; median of {args.repeat}")
        for src, label in ((args.corpus, "jsonl"), (parquet, "parquet")):
            write_kept([src], keep, out / "warm.jsonl", all_valid=True)
            for fmt in ("jsonl", "csv", "parquet"):
                times = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    write_kept([src], keep, out / f"kept.{fmt}", all_valid=True)
                    times.append(time.perf_counter() - t0)
                print(
                    f"{label:>8} -> {fmt:<8} {statistics.median(times):6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in times)})"
                )


if __name__ == "__main__":
    main()
