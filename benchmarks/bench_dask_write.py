"""Writing the kept records of a Dask job: the driver re-reading the input (``write_kept``)
against the workers writing one part per input partition (``neardup.io.dask_write``), and
for a one-file output those parts concatenated by the driver (a byte copy).

One dedup job (MinHash defaults) on a LocalCluster of ``--workers`` processes, then each way of
writing ``--repeat`` times, interleaved; every output is checked byte for byte against the
driver's. Reports wall seconds, CPU seconds of this process and of all processes (this one and
the workers: the load-robust measure on a shared machine), and the load average.

    python benchmarks/bench_dask_write.py /tmp/dask-data/corpus-200000-s1-f0.2-v1.jsonl --out /tmp/bench-write
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path


def concatenate(paths: list[str], out: str | os.PathLike) -> int:
    """Write the files ``paths`` one after the other into ``out`` (a byte copy, in the kernel
    where it can: ``copy_file_range``); return the bytes written."""
    total = 0
    with open(out, "wb", buffering=0) as dst:
        for path in paths:
            with open(path, "rb") as src:
                size = os.fstat(src.fileno()).st_size
                total += size
                if hasattr(os, "copy_file_range"):
                    left = size
                    while left > 0:
                        n = os.copy_file_range(src.fileno(), dst.fileno(), left)
                        if n == 0:
                            break
                        left -= n
                    if left == 0:
                        continue
                    src.seek(size - left)
                shutil.copyfileobj(src, dst, 1 << 20)
    return total


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--out", required=True, help="a scratch folder (removed first)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--annotate", action="store_true", help="write every record with the annotation columns")
    args = ap.parse_args()

    import neardup
    from neardup.cli.dedup_outputs import annotation
    from neardup.engine.dask_engine import DaskEngine, local_client
    from neardup.io import write_kept
    from neardup.io.dask_write import file_partitions, part_name, write_partitions

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    client = local_client(args.workers, memory_limit=None)
    try:
        engine = DaskEngine(client)
        t0 = time.perf_counter()
        result = neardup.dedup([args.corpus], engine=engine)
        print(f"dedup: {time.perf_counter() - t0:.1f} s, {result.n_documents:,} documents, load {_load()}")
        keep = result.keep_mask
        annotate = annotation(result, keep, None, "") if args.annotate else None
        if annotate is not None:
            keep = keep | True
        partitions = file_partitions(engine, len(keep))
        all_valid = result.read_stats.skipped == 0
        snapshot = result.read_stats.snapshot
        print(f"{len(partitions)} partitions, {int(keep.sum()):,} records written, annotate={args.annotate}")

        def driver() -> str:
            path = os.path.join(args.out, "driver.jsonl")
            write_kept([args.corpus], keep, path, all_valid=all_valid, annotate=annotate, snapshot=snapshot,
                       workers=args.workers)  # fmt: skip
            return path

        def parts() -> list[str]:
            folder = os.path.join(args.out, "parts")
            os.makedirs(folder, exist_ok=True)
            targets = [(os.path.join(folder, part_name(k)),) * 2 for k in range(len(partitions))]
            write_partitions(engine, partitions, keep, targets, annotate=annotate, all_valid=all_valid,
                             snapshot=snapshot)  # fmt: skip
            return [t for _, t in targets]

        def parts_then_file() -> str:
            path = os.path.join(args.out, "concat.jsonl")
            concatenate(parts(), path)
            return path

        def cpu() -> tuple[float, float]:
            here = time.process_time()
            return here, here + sum(client.run(time.process_time).values())

        ways = {"driver re-reads (today)": driver, "workers' parts": parts, "parts + concatenation": parts_then_file}
        times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
        expected = None
        for r in range(args.repeat):
            for name, fn in ways.items():
                w0, (c0, t0) = time.perf_counter(), cpu()
                got = fn()
                c1, t1 = cpu()
                times[name].append((time.perf_counter() - w0, c1 - c0, t1 - t0))
                data = b"".join(Path(p).read_bytes() for p in (got if isinstance(got, list) else [got]))
                if expected is None:
                    expected = data
                assert data == expected, f"{name} wrote other bytes"
                wall, here, total = times[name][-1]
                print(f"  run {r + 1} {name}: {wall:.2f} s wall, CPU {here:.2f} s here, {total:.2f} s in all, "
                      f"load {_load()}")  # fmt: skip
        for name, found in times.items():
            wall, here, total = (statistics.median(x[i] for x in found) for i in range(3))
            print(f"{name}: median {wall:.2f} s wall, CPU {here:.2f} s here, {total:.2f} s in all")
    finally:
        client.close()
        shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
