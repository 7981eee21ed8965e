#!/usr/bin/env python3
"""SimHash benchmarks: Hamming all-pairs on 1M fingerprints, and text fingerprinting vs `simhash`.

    python benchmarks/bench_simhash.py [--n 1000000] [--docs 2000] [--repeats 3] [--quality]

Everything runs on one core: the process is pinned to one CPU and numba/BLAS threads are
limited to 1 before anything is imported. Times are wall-clock medians of ``--repeats`` runs
after a warm-up (numba compilation is not timed). Sections:

1. **all-pairs**: ``neardup.methods.simhash.search.all_pairs(fps, 3)`` on n random 64-bit fingerprints with
   planted near pairs (10,000 at distance 0-3, which must all be found, and 5,000 decoys at
   4-6, which must not be); every reported distance is re-checked. Also ``HammingIndex``
   build + 10,000 queries.
2. **peer index**: the `simhash` package's ``SimhashIndex`` (k = 3) built on the first
   ``--peer-n`` fingerprints and queried with each of them (its all-pairs), against
   ``all_pairs`` on the same fingerprints.
3. **text**: fingerprinting ``--docs`` documents from ``examples/generate_corpus.py`` with
   ``SimHasher.sign`` against ``simhash.Simhash`` on the same texts: its own tokenizer (char
   4-grams of word characters) vs ours with char 4-grams, and given word-bigram features
   (built beforehand, not timed) vs ours with word 2-grams (text -> fingerprint, all included).
4. ``--quality``: the shingling separation table of docs/simhash.md (Hamming distance of
   planted light/medium/heavy variants to their original, unrelated pairs within small
   distances) on the cached 100k-document corpus.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import itertools

import numpy as np

from neardup.index.hamming import HammingIndex
from neardup.methods.simhash.search import (
    all_pairs,
    unique_pairs,
)
from neardup.methods.simhash.sketch import SimHasher
from neardup.text.shingles import Shingling

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data"
GENERATOR = ROOT / "examples" / "generate_corpus.py"


def median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def row(cells, widths):
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def table(title, header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print(f"\n{title}")
    print(row(header, widths))
    print(row(["-" * w for w in widths], widths))
    for r in rows:
        print(row(r, widths))


# -- data -------------------------------------------------------------------------------------


def planted_fingerprints(n: int, seed: int = 2024):
    """n random fingerprints; 10,000 planted pairs at distance 0..3 and 5,000 decoys at 4..6."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    slots = rng.permutation(n)[:30_000].reshape(-1, 2)
    near, decoys = slots[:10_000], slots[10_000:15_000]

    def plant(pairs, lo, hi):
        dist = rng.integers(lo, hi + 1, size=len(pairs))
        for (i, j), d in zip(pairs, dist):
            flips = np.uint64(0)
            for b in rng.choice(64, d, replace=False):
                flips |= np.uint64(1) << np.uint64(b)
            fps[j] = fps[i] ^ flips
        return {(min(i, j), max(i, j)) for i, j in pairs.tolist()}

    near_set = plant(near, 0, 3)
    decoy_set = plant(decoys, 4, 6)
    return fps, near_set, decoy_set


def generator_version() -> int:
    for line in GENERATOR.read_text(encoding="utf-8").splitlines():
        if line.startswith("GENERATOR_VERSION"):
            return int(line.split("=")[1])
    return 0


def corpus(docs: int, seed: int = 1) -> tuple[Path, Path]:
    """The generated corpus, cached under benchmarks/_data/ (same names as run_dedup.py)."""
    stem = f"corpus-{docs}-s{seed}-f0.2-v{generator_version()}"
    path, truth = DATA / f"{stem}.jsonl", DATA / f"{stem}.truth.jsonl"
    if not (path.exists() and truth.exists()):
        DATA.mkdir(parents=True, exist_ok=True)
        print(f"generating {docs:,} documents ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(GENERATOR),
                "--docs",
                str(docs),
                "--seed",
                str(seed),
                "--dup-fraction",
                "0.2",
                "-o",
                str(path),
                "--truth",
                str(truth),
            ],
            check=True,
        )
    return path, truth


def load(path: Path, limit: int | None = None, field: str = "text") -> list:
    import json

    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if limit is not None and len(out) >= limit:
                break
            out.append(json.loads(line)[field] if field else json.loads(line))
    return out


# -- sections ---------------------------------------------------------------------------------


def bench_all_pairs(n: int, repeats: int) -> None:
    fps, near, decoys = planted_fingerprints(n)
    all_pairs(fps[:5000], 3)  # compile
    HammingIndex(bits=64, max_distance=3).add(range(100), fps[:100])
    HammingIndex(bits=64, max_distance=3, blocks=5).add(range(100), fps[:100])
    seconds, (a, b, d) = median_time(lambda: all_pairs(fps, 3), repeats)
    found = set(zip(a.tolist(), b.tolist()))
    real = np.bitwise_count(fps[a] ^ fps[b])
    assert (real == d).all() and (d <= 3).all(), "a reported distance is wrong"
    assert near <= found, f"{len(near - found)} planted pairs missed"
    assert not (decoys & found), "a decoy beyond distance 3 was reported"
    up = unique_pairs(fps, 3)
    index_build, index = median_time(lambda: _build_index(fps), repeats)
    queries = fps[np.random.default_rng(1).choice(n, 10_000, replace=False)]
    query_s, _ = median_time(lambda: index.query_batch(queries), repeats)
    rows = [
        [
            "all_pairs(fps, 3)",
            f"{n:,}",
            f"{seconds:.2f} s",
            f"{n / seconds / 1e6:.2f} M fps/s",
            f"{len(a):,} pairs ({len(near):,} planted found, {len(found - near)} other), m={up.plan.blocks}, "
            f"{len(up.plan.tables)} tables, {up.checked:,} candidates",
        ],
        [
            "HammingIndex.add (one batch)",
            f"{n:,}",
            f"{index_build:.2f} s",
            f"{n / index_build / 1e6:.2f} M fps/s",
            f"m={index.plan.blocks}, {len(index.plan.tables)} tables",
        ],
        ["HammingIndex.query_batch", "10,000", f"{query_s * 1e3:.0f} ms", f"{query_s / 1e4 * 1e6:.1f} us/query", ""],
    ]
    table(
        f"Hamming search within distance 3, 64-bit, one core (median of {repeats}); target all_pairs <= 3 s",
        ["operation", "n", "time", "rate", "notes"],
        rows,
    )


def _build_index(fps):
    index = HammingIndex(bits=64, max_distance=3)
    index.add(np.arange(len(fps)), fps)
    return index


def bench_peer_index(peer_n: int, repeats: int) -> None:
    try:
        from simhash import Simhash, SimhashIndex
    except ImportError:
        print("\n(simhash package not installed: pip install simhash)")
        return
    import logging

    logging.getLogger("simhash").setLevel(logging.WARNING)
    fps, _, _ = planted_fingerprints(1_000_000)
    sub = fps[:peer_n]
    ours, (a, _, _) = median_time(lambda: all_pairs(sub, 3), repeats)

    def peer():
        objs = [(str(i), Simhash(int(v))) for i, v in enumerate(sub.tolist())]
        index = SimhashIndex(objs, k=3)
        return sum(len(index.get_near_dups(s)) - 1 for _, s in objs) // 2

    theirs, peer_pairs = median_time(peer, repeats)
    assert peer_pairs == len(a), (peer_pairs, len(a))
    table(
        f"All pairs within distance 3 among {peer_n:,} fingerprints, one core (median of {repeats})",
        ["tool", "time", "pairs", "ratio"],
        [
            ["neardup all_pairs", f"{ours:.3f} s", f"{len(a):,}", "1.0"],
            [
                "simhash SimhashIndex (build + query each)",
                f"{theirs:.2f} s",
                f"{peer_pairs:,}",
                f"{theirs / ours:.0f}x slower",
            ],
        ],
    )


def bench_text(docs: int, repeats: int) -> None:
    path, _ = corpus(100_000)
    texts = load(path, docs)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    ours_char = SimHasher(bits=64, shingling=Shingling("char", 4))
    ours_word = SimHasher(bits=64, shingling=Shingling("word", 2))
    ours_char.sign(texts[:10]), ours_word.sign(texts[:10])
    rows = []
    t_char, _ = median_time(lambda: ours_char.sign(texts), repeats)
    t_word, _ = median_time(lambda: ours_word.sign(texts), repeats)
    peer = None
    try:
        from simhash import Simhash

        from neardup.text.normalize import tokenize

        bigrams = [[" ".join(p) for p in itertools.pairwise(toks)] or [" ".join(toks)] for toks in map(tokenize, texts)]
        t_peer_text, _ = median_time(lambda: [Simhash(t) for t in texts], repeats)
        t_peer_feat, _ = median_time(lambda: [Simhash(f) for f in bigrams], repeats)
        peer = (t_peer_text, t_peer_feat)
    except ImportError:
        print("\n(simhash package not installed: pip install simhash)")
    rows.append(
        [
            "neardup SimHasher.sign, char 4-grams",
            f"{t_char:.3f} s",
            f"{docs / t_char:,.0f}",
            f"{mb / t_char:.1f}",
            "1.0",
        ]
    )
    if peer:
        rows.append(
            [
                "simhash Simhash(text) (char 4-grams)",
                f"{peer[0]:.2f} s",
                f"{docs / peer[0]:,.0f}",
                f"{mb / peer[0]:.2f}",
                f"{peer[0] / t_char:.0f}x slower",
            ]
        )
    rows.append(
        [
            "neardup SimHasher.sign, word 2-grams",
            f"{t_word:.3f} s",
            f"{docs / t_word:,.0f}",
            f"{mb / t_word:.1f}",
            "1.0",
        ]
    )
    if peer:
        rows.append(
            [
                "simhash Simhash(word-bigram features)*",
                f"{peer[1]:.2f} s",
                f"{docs / peer[1]:,.0f}",
                f"{mb / peer[1]:.2f}",
                f"{peer[1] / t_word:.0f}x slower",
            ]
        )
    table(
        f"Fingerprinting {docs:,} generated documents ({mb:.1f} MB), 64-bit, one core (median of {repeats})",
        ["tool", "time", "docs/s", "MB/s", "ratio"],
        rows,
    )
    if peer:
        print("* features tokenized beforehand and not timed; neardup's times include normalization and shingling")


def bench_quality() -> None:
    """Separation of planted variants from unrelated documents by Hamming distance (docs/simhash.md)."""
    path, truth_path = corpus(100_000)
    texts = load(path)
    truth = load(truth_path, field=None)
    gid: dict = {}
    group = np.array([gid.setdefault(t["group"], len(gid)) for t in truth])
    orig = {t["group"]: i for i, t in enumerate(truth) if t["edit"] == "original"}
    pairs: dict = {}
    for i, t in enumerate(truth):
        if t["edit"] in ("exact", "light", "medium", "heavy"):
            pairs.setdefault(t["edit"], []).append((orig[t["group"]], i))
    positives = np.array(pairs["exact"] + pairs["light"])
    rows = []
    for sh in [
        Shingling("word", 1),
        Shingling("word", 2),
        Shingling("word", 3),
        Shingling("word", 5),
        Shingling("char", 4),
        Shingling("char", 5),
    ]:
        for bits, ks in [(64, [3, 6]), (128, [6, 12])]:
            hasher = SimHasher(bits=bits, shingling=sh)
            fps = np.concatenate([hasher.sign(texts[i : i + 5000]).values for i in range(0, len(texts), 5000)])
            words = fps.reshape(len(fps), -1)

            def dist(p):
                p = np.asarray(p)
                return np.bitwise_count(words[p[:, 0]] ^ words[p[:, 1]]).sum(axis=1)

            light, medium, pos = dist(pairs["light"]), dist(pairs["medium"]), dist(positives)
            if sh == Shingling("word", 1):
                a, b, d = all_pairs(fps, ks[0])
            else:
                a, b, d = all_pairs(fps, ks[1])
            unrelated = group[a] != group[b]
            cells = [f"{sh.kind} {sh.n}", bits, f"{light.mean():.1f}"]
            for k in ks:
                sel = d <= k
                recall = float(np.mean(pos <= k))
                precision = float(np.sum(sel & ~unrelated) / max(1, np.sum(sel)))
                f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
                fp = int(np.sum(sel & unrelated)) if k <= ks[0] or sh != Shingling("word", 1) else "-"
                cells += [
                    f"{np.mean(light <= k):.2f}",
                    f"{np.mean(medium <= k):.2f}",
                    f"{fp:,}" if fp != "-" else fp,
                    f"{f1:.3f}" if fp != "-" else "-",
                ]
            rows.append(cells)
    table(
        f"Separation on {len(texts):,} generated documents ({len(pairs['light']):,} light, "
        f"{len(pairs['medium']):,} medium variants; F1 of exact+light vs everything)",
        [
            "shingles",
            "bits",
            "light mean d",
            "light<=k1",
            "medium<=k1",
            "unrelated<=k1",
            "F1@k1",
            "light<=k2",
            "medium<=k2",
            "unrelated<=k2",
            "F1@k2",
        ],
        rows,
    )
    print("k1, k2 = 3, 6 for 64 bits and 6, 12 for 128 bits")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000, help="fingerprints for all-pairs (default 1M)")
    p.add_argument("--peer-n", type=int, default=100_000, help="fingerprints for the SimhashIndex comparison")
    p.add_argument("--docs", type=int, default=2000, help="documents for the text comparison")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quality", action="store_true", help="also print the shingling separation table")
    p.add_argument("--only", choices=["pairs", "peer", "text", "quality"], default=None)
    args = p.parse_args(argv)
    import numba

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"{platform.processor() or platform.machine()}, pinned to CPU {sorted(os.sched_getaffinity(0))}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.only in (None, "pairs"):
        bench_all_pairs(args.n, args.repeats)
    if args.only in (None, "peer"):
        bench_peer_index(args.peer_n, args.repeats)
    if args.only in (None, "text"):
        bench_text(args.docs, args.repeats)
    if args.quality or args.only == "quality":
        bench_quality()
    return 0


if __name__ == "__main__":
    sys.exit(main())
