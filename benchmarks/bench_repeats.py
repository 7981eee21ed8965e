"""Speed of ``neardup repeats``: spans against the bare library suffix array, lines and paragraphs in MB/s.

One command, every figure measured in the same run on the same corpus (the generated one of
``examples/generate_corpus.py``, written under ``--data``)::

    python benchmarks/bench_repeats.py --docs 100000 --memory 2GB --data /work/bench-data/repeats

Rows, each a separate process under GNU time (wall seconds, peak resident memory):

* ``bare SA``: libdivsufsort (pydivsufsort) alone over the UTF-8 bytes of every text joined by
  ``\\n``, the input read beforehand (the time is the suffix array's only);
* ``spans``: ``neardup repeats --mode spans`` end to end (read, tokenize, suffix arrays, write),
  and its ``read and tokenize`` and ``suffix arrays`` stages from ``--stats``;
* ``lines``, ``paragraphs``, ``lines --bloom``: ``neardup repeats`` end to end.

Ratios: the spans job's finding time (tokenize + suffix arrays) and total over the bare suffix
array; lines and paragraphs as input MB a second, per worker thread (``--workers``, default 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "examples" / "generate_corpus.py"

BARE = r"""
import sys, time, numpy as np, orjson
from pydivsufsort import divsufsort
with open(sys.argv[1], "rb") as f:
    raw = "\n".join(orjson.loads(line)["text"] for line in f).encode()
data = np.frombuffer(raw, dtype=np.uint8).copy()
del raw
t = time.perf_counter()
sa = divsufsort(data)
print(f"{time.perf_counter() - t:.3f} {len(data)}")
"""


CPU: dict[str, float] = {}


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Run ``cmd`` under GNU time: (wall seconds, peak RSS bytes, stdout); its CPU seconds
    (user + system) in ``CPU["last"]``."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        out = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M %U %S", "-o", t.name, *cmd], check=True, capture_output=True, text=True
        )
        wall, kb, user, system = t.read().split()[-4:]
    CPU["last"] = float(user) + float(system)
    return float(wall), int(kb) * 1024, out.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data"), help="folder for the corpus and outputs")
    ap.add_argument("--memory", default="2GB", help="--memory of the spans job (comma-separated: one run each)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--min-length", type=int, default=50)
    args = ap.parse_args()

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    corpus = data / f"repeats-corpus-{args.docs}-s{args.seed}.jsonl"
    if not corpus.exists():
        tmp = corpus.with_suffix(".tmp")
        subprocess.run(
            [sys.executable, str(GENERATOR), "--docs", str(args.docs), "--seed", str(args.seed), "-o", str(tmp)],
            check=True,
        )
        tmp.replace(corpus)
    size = corpus.stat().st_size
    neardup = [sys.executable, "-m", "neardup", "repeats", str(corpus), "--workers", str(args.workers), "-q"]
    print(f"corpus: {corpus} ({args.docs:,} documents, {size / 1e6:.0f} MB); load average {os.getloadavg()[0]:.1f}")

    wall, peak, out = timed([sys.executable, "-c", BARE, str(corpus)])
    bare_s, bare_bytes = out.split()
    bare_s = float(bare_s)
    rows = [("bare SA (pydivsufsort, text bytes)", bare_s, peak, "")]
    print(f"bare suffix array: {bare_s:.1f} s over {int(bare_bytes) / 1e6:.0f} MB, peak {peak / 1e9:.2f} GB")

    stats = data / "repeats-stats.json"
    out_path = data / "repeats-out.jsonl"
    for memory in args.memory.split(","):
        wall, peak, _ = timed(
            [
                *neardup,
                "-o",
                str(out_path),
                "--min-length",
                str(args.min_length),
                "--memory",
                memory,
                "--stats",
                str(stats),
            ]
        )
        st = json.loads(stats.read_text())
        find = st["seconds"]["read and tokenize"] + st["seconds"]["suffix arrays"]
        c = st["counters"]
        rows.append(
            (
                f"spans L={args.min_length} --memory {memory} ({int(c['tokens']):,} tokens, {int(c['shards'])} shard(s))",
                wall,
                peak,
                f"find {find:.1f} s = {find / bare_s:.2f}x bare SA (SA stage {st['seconds']['suffix arrays']:.1f} s); "
                f"total {wall / bare_s:.2f}x; {c['removed_tokens'] / c['tokens']:.1%} of tokens removed",
            )
        )
    for label, extra in (
        ("lines", ["--mode", "lines"]),
        ("paragraphs", ["--mode", "paragraphs"]),
        ("lines --bloom 0.001", ["--mode", "lines", "--bloom", "0.001"]),
    ):
        wall, peak, _ = timed([*neardup, "-o", str(out_path), *extra, "--stats", str(stats)])
        st = json.loads(stats.read_text())
        mbs = size / 1e6 / wall / args.workers
        rows.append(
            (
                label,
                wall,
                peak,
                f"{mbs:.1f} MB/s a worker end to end, {size / 1e6 / CPU['last']:.1f} MB a CPU second "
                f"({CPU['last']:.1f} CPU s, start-up included); {st['counts']['removed_chars'] / st['counts']['chars']:.1%} of characters removed",
            )
        )
    out_path.unlink(missing_ok=True)
    stats.unlink(missing_ok=True)
    print("\n| run | wall s | peak RSS GB | notes |\n|---|---:|---:|---|")
    for label, wall, peak, note in rows:
        print(f"| {label} | {wall:.1f} | {peak / 1e9:.2f} | {note} |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
