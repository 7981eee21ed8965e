#!/usr/bin/env python3
"""Peak memory (max RSS) of ``neardup dedup`` on one huge document, case by case (issue 18).

    python scripts/huge_document_memory.py [--mb 200] [--baseline ../neardup-old] [--dir /tmp/huge]

Writes the inputs to ``--dir`` (kept there for later runs): a single-line JSONL document of
``--mb`` MB of random words plus a small one, two near-identical documents of half that size, and
a non-ASCII document of as many characters. Each case runs ``python -m neardup dedup ... -q
--verify exact`` under GNU ``/usr/bin/time`` with ``PYTHONPATH=TREE/src``, for this tree and, with
``--baseline``, the other tree right after it (one line per case: KB of each; each is the second
of two runs, the first having filled numba's cache). The first line is
a small document alone: what the interpreter, numba and Arrow take. Needs GNU time; prints the
load average, as timings on a busy machine mean little (the peaks do not depend on it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ("small document alone", "small", []),
    ("word 5-grams", "big", []),
    ("--sketch oph", "big", ["--sketch", "oph"]),
    ("--char-ngram 5", "big", ["--char-ngram", "5"]),
    ("--char-ngram 5 --sketch oph", "big", ["--char-ngram", "5", "--sketch", "oph"]),
    ("two near-duplicates, half the size each", "pair", []),
    ("the same, --char-ngram 5", "pair", ["--char-ngram", "5"]),
    ("non-ASCII document", "nonascii", []),
    ("-o out.parquet", "big", ["parquet"]),
]


def _text(rng: random.Random, letters: str, chars: int) -> str:
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(20000)]
    return " ".join(rng.choices(words, k=chars // 5))[:chars]


def make_inputs(d: Path, mb: int) -> dict[str, Path]:
    """The inputs (written once: an existing file of the same name is reused)."""
    d.mkdir(parents=True, exist_ok=True)
    size = mb * 1_000_000
    paths = {k: d / f"{k}-{mb}.jsonl" for k in ("big", "pair", "nonascii")}
    paths["small"] = d / "small.jsonl"

    def write(path: Path, texts: list[str]) -> None:
        if not path.exists():
            lines = (json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts))
            path.write_text("".join(lines), encoding="utf-8")

    write(paths["small"], ["small one"])
    write(paths["big"], [_text(random.Random(5), "abcdefghijklmnop", size), "small one"])
    half = _text(random.Random(6), "abcdefghijklmnop", size // 2)
    cut = half.rfind(" ", 0, len(half) // 2)
    write(paths["pair"], [half, half[:cut] + " changed " + half[cut:], "small one"])
    write(paths["nonascii"], [_text(random.Random(7), "abcdefghijklmnopéüßàöç", size), "small one"])
    return paths


def peak_kb(tree: Path, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "neardup", "dedup", *args, "-q", "--verify", "exact"]
    for _ in range(2):  # the second run: the first may compile kernels into numba's cache
        r = subprocess.run(cmd, capture_output=True, env=env)
    if r.returncode:
        return f"failed: {r.stderr.decode().strip().splitlines()[-1:]}"
    return f"{int(r.stderr.decode().strip().splitlines()[-1]):,}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the huge document in MB [200]")
    ap.add_argument("--baseline", type=Path, help="another neardup tree to measure after this one")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/neardup-huge"), help="where the inputs go")
    opts = ap.parse_args()
    paths = make_inputs(opts.dir, opts.mb)
    print(f"load average {os.getloadavg()[0]:.2f}; peak KB (max RSS), --verify exact")
    trees = [ROOT] + ([opts.baseline.resolve()] if opts.baseline else [])
    print("case | " + " | ".join(str(t) for t in trees))
    for label, name, extra in CASES:
        out = opts.dir / ("out.parquet" if extra == ["parquet"] else "out.jsonl")
        args = [str(paths[name]), "-o", str(out), *(a for a in extra if a != "parquet")]
        print(f"{label} | " + " | ".join(peak_kb(t, args) for t in trees), flush=True)


if __name__ == "__main__":
    main()
