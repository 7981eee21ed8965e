#!/usr/bin/env python3
"""Check that two neardup source trees write byte-identical outputs for every method.

    python scripts/check_identical.py --baseline ../neardup-old [--corpus FILE ...] [--quick]

Each tree is run as ``python -m neardup dedup`` with ``PYTHONPATH=TREE/src`` (so neither needs to
be installed), on every corpus and every configuration of ``CONFIGS`` (each method with its
defaults, and the options that change its code path), writing the kept records (JSONL, and CSV
and Parquet once), the clusters and the pairs. The SHA-256 of every output file is compared; the
script prints one line per run and exits 1 if any file differs or any run fails.

Without ``--corpus`` it uses ``examples/news.jsonl`` and the 100,000-document benchmark corpus of
``benchmarks/run_dedup.py`` when it has been generated. A restructuring that changes no
behaviour must pass this check against the tree before it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_CORPUS = ROOT / "benchmarks" / "_data" / "corpus-100000-s1-f0.2-v1.jsonl"

# name -> extra options of `neardup dedup`
CONFIGS: dict[str, list[str]] = {
    "minhash": [],
    "minhash-verify-exact": ["--verify", "exact"],
    "minhash-oph-char": ["--sketch", "oph", "--char-ngram", "5", "--threshold", "0.7"],
    "minhash-no-prepass-longest": ["--no-exact-prepass", "--keep", "longest", "--bands", "20", "--rows", "5"],
    "simhash": ["--method", "simhash"],
    "simhash-idf-64": ["--method", "simhash", "--weighting", "idf", "--bits", "64", "--max-distance", "3"],
    "spotsigs": ["--method", "spotsigs"],
    "spotsigs-idf": ["--method", "spotsigs", "--idf-band", "0.2", "0.9", "--threshold", "0.7"],
    "exact": ["--method", "exact"],
    "exact-raw": ["--method", "exact", "--raw"],
    "imatch": ["--method", "imatch"],
    "imatch-lexicons": ["--method", "imatch", "--lexicons", "3", "--min-terms", "5"],
}
# configurations that also write kept records as CSV and Parquet (the writers' code paths)
ALL_FORMATS = {"minhash"}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def run(tree: Path, corpus: Path, name: str, options: list[str], out: Path, workers: int) -> dict[str, str]:
    """Run one configuration with one tree; returns output file name -> SHA-256."""
    out.mkdir(parents=True, exist_ok=True)
    outputs = {"kept.jsonl": "-o", "clusters.csv": "--clusters", "pairs.jsonl": "--pairs"}
    argv = [sys.executable, "-m", "neardup", "dedup", str(corpus), "--quiet", "--workers", str(workers), *options]
    for file, flag in outputs.items():
        argv += [flag, str(out / file)]
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    runs = [argv]
    if name in ALL_FORMATS:
        for fmt in ("csv", "parquet"):
            runs.append(
                [
                    sys.executable,
                    "-m",
                    "neardup",
                    "dedup",
                    str(corpus),
                    "--quiet",
                    "--workers",
                    str(workers),
                    *options,
                    "-o",
                    str(out / f"kept.{fmt}"),
                ]
            )
    for cmd in runs:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{tree}: {' '.join(cmd[2:])} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return {p.name: sha256(p) for p in sorted(out.iterdir())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the other source tree (its src/ is used)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree under test [default: this one]")
    ap.add_argument("--corpus", type=Path, action="append", help="input JSONL (repeatable)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    corpora = args.corpus or [ROOT / "examples" / "news.jsonl"] + ([BENCH_CORPUS] if BENCH_CORPUS.exists() else [])
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown:
        ap.error(f"unknown configurations: {', '.join(unknown)}")
    differ = 0
    with tempfile.TemporaryDirectory(prefix="neardup-identical-") as tmp:
        for corpus in corpora:
            for name in names:
                t0 = time.perf_counter()
                try:
                    old = run(args.baseline, corpus, name, CONFIGS[name], Path(tmp) / "old" / name, args.workers)
                    new = run(args.tree, corpus, name, CONFIGS[name], Path(tmp) / "new" / name, args.workers)
                except RuntimeError as exc:
                    print(f"FAIL  {corpus.name:<40} {name:<28} {exc}")
                    differ += 1
                    continue
                bad = sorted(f for f in old.keys() | new.keys() if old.get(f) != new.get(f))
                status = "same" if not bad else "DIFF"
                differ += bool(bad)
                detail = f"{len(old)} files identical" if not bad else "differ: " + ", ".join(bad)
                print(
                    f"{status:<5} {corpus.name:<40} {name:<28} {detail} ({time.perf_counter() - t0:.1f} s)", flush=True
                )
    print("all outputs identical" if not differ else f"{differ} configuration(s) differ or failed")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
