#!/usr/bin/env python3
"""SpotSigs all-pairs: partitions + pruned inverted index against the same search without them,
and the whole SpotSigs job beside the MinHash-LSH job, on one generated corpus.

    python benchmarks/bench_spotsigs.py [--docs 100000] [--seed 1] [--threshold 0.85]
                                        [--workers N] [--idf-band LO HI] [--skip-baseline]

The corpus comes from ``examples/generate_corpus.py`` and is cached under ``benchmarks/_data/``
(the same file ``benchmarks/run_dedup.py`` uses). Spot signatures are extracted once with the
default scheme (English antecedents, d = 1, c = 2, antecedent-prefixed keys), optionally filtered
by an IDF band; then the exact all-pairs search runs three ways on the same signatures:

- ``partitions + pruning``: ``neardup.methods.spotsigs.pairs.all_pairs`` (length partitions,
  pruned inverted index);
- ``pruning only``: the same without partitions (the paper's "No-Partitions" row);
- ``no partitions, no pruning``: ``neardup.methods.spotsigs.pairs.all_pairs_unpruned``, every
  pair of documents that shares a signature is compared once (the paper's
  "No-Pruning/No-Partitions" row).

All three must return the same pairs (checked). The last one is slow: about 20 minutes for
100,000 documents on 2 cores without an IDF band (``--skip-baseline`` leaves it out). Similarity
computations are counted by the search itself; wall time is ``time.perf_counter`` around each
call, after a warm-up that compiles the numba kernels. Then the end-to-end jobs (read, extract or
sketch, search, cluster; nothing written) ``neardup.api.dedup(paths, SpotSigsConfig(threshold))``
and ``neardup.api.dedup(paths, MinHashConfig(threshold=threshold))`` are timed the same way.

Results are printed as a table and saved as JSON under ``benchmarks/_results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data"
RESULTS = ROOT / "benchmarks" / "_results"
GENERATOR = ROOT / "examples" / "generate_corpus.py"

sys.path.insert(0, str(ROOT / "src"))

from neardup import io
from neardup.api import dedup
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.spotsigs.config import SpotSigsConfig
from neardup.methods.spotsigs.pairs import all_pairs, all_pairs_unpruned
from neardup.methods.spotsigs.signatures import (
    extract,
    idf_filter,
)


def generator_version() -> int:
    for line in GENERATOR.read_text(encoding="utf-8").splitlines():
        if line.startswith("GENERATOR_VERSION"):
            return int(line.split("=")[1])
    raise RuntimeError(f"no GENERATOR_VERSION in {GENERATOR}")


def ensure_corpus(docs: int, seed: int, dup_fraction: float = 0.2) -> Path:
    stem = f"corpus-{docs}-s{seed}-f{dup_fraction:g}-v{generator_version()}"
    corpus, truth = DATA / f"{stem}.jsonl", DATA / f"{stem}.truth.jsonl"
    if corpus.exists() and truth.exists():
        print(f"corpus: reusing {corpus.relative_to(ROOT)}")
        return corpus
    DATA.mkdir(parents=True, exist_ok=True)
    tmp_corpus, tmp_truth = corpus.with_suffix(".tmp"), truth.with_suffix(".tmp")
    print(f"corpus: generating {docs:,} documents (seed {seed}) ...", flush=True)
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--docs",
            str(docs),
            "--seed",
            str(seed),
            "--dup-fraction",
            str(dup_fraction),
            "-o",
            str(tmp_corpus),
            "--truth",
            str(tmp_truth),
        ],
        check=True,
    )
    tmp_truth.replace(truth)
    tmp_corpus.replace(corpus)
    return corpus


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def warm_up(texts: list[str], config: SpotSigsConfig, workers: int, tmp: Path) -> None:
    """Compile every kernel once so that no timing below includes JIT compilation."""
    sigs = extract(texts[:300], config.scheme)
    for fn in (all_pairs, all_pairs_unpruned):
        fn(sigs, config.threshold, workers=workers)
    all_pairs(sigs, config.threshold, workers=workers, partitions=False)
    if config.idf_band:
        idf_filter(sigs, config.idf_band)
    tmp.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:300]), encoding="utf-8")
    dedup([str(tmp)], config, workers=workers)
    dedup([str(tmp)], MinHashConfig(threshold=config.threshold), workers=workers)
    tmp.unlink()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threshold", type=float, default=0.85)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--idf-band", type=float, nargs=2, metavar=("LO", "HI"), default=None)
    ap.add_argument(
        "--skip-baseline",
        action="store_true",
        help="leave out the search without partitions and pruning (the slow one)",
    )
    args = ap.parse_args(argv)
    tau, workers = args.threshold, args.workers
    config = SpotSigsConfig(threshold=tau, idf_band=tuple(args.idf_band) if args.idf_band else None)

    corpus = ensure_corpus(args.docs, args.seed)
    texts = [t for batch in io.read_documents([str(corpus)]) for t in batch.texts]
    warm_up(texts, config, workers, DATA / "_bench_spotsigs_warmup.jsonl")

    sigs, t_extract = timed(extract, texts, config.scheme)
    if config.idf_band:
        sigs, t_idf = timed(idf_filter, sigs, config.idf_band)
        t_extract += t_idf
    lengths = sigs.lengths
    print(
        f"{len(texts):,} documents, {int(lengths.sum()):,} spot signatures "
        f"({np.count_nonzero(lengths == 0):,} documents without any), extracted in {t_extract:.2f} s; "
        f"threshold {tau}, {workers} worker thread(s)",
        flush=True,
    )

    rows = []
    variants = [("partitions + pruning", dict()), ("pruning only (no partitions)", dict(partitions=False))]
    if not args.skip_baseline:
        variants.append(("no partitions, no pruning", dict(partitions=False, pruning=False)))
    reference = None
    for name, kw in variants:
        print(f"  running: {name} ...", flush=True)
        res, secs = timed(all_pairs, sigs, tau, workers=workers, **kw)
        if reference is None:
            reference = res
        same = np.array_equal(res.a, reference.a) and np.array_equal(res.b, reference.b)
        if not same:
            raise SystemExit(f"{name}: pair set differs from partitions + pruning")
        rows.append({"search": name, "seconds": secs, **res.counters.__dict__})

    print("  running: end-to-end jobs ...", flush=True)
    spot, t_spot = timed(dedup, [str(corpus)], config, workers=workers)
    mh, t_mh = timed(dedup, [str(corpus)], MinHashConfig(threshold=tau), workers=workers)

    base = rows[-1]
    print()
    print(
        f"all pairs at weighted Jaccard >= {tau} over spot signatures ({reference.counters.pairs:,} pairs, "
        f"identical in every row)"
    )
    head = f"{'search':<30} {'similarity computations':>24} {'wall s':>9} {'computations ratio':>19} {'time ratio':>11}"
    print(head)
    print("-" * len(head))
    for r in rows:
        if args.skip_baseline:
            ratios = f"{'-':>19} {'-':>11}"
        else:
            ratios = f"{base['computed'] / max(r['computed'], 1):>18,.1f}x {base['seconds'] / r['seconds']:>10,.1f}x"
        print(f"{r['search']:<30} {r['computed']:>24,} {r['seconds']:>9.2f} {ratios}")
    c = rows[0]
    print(
        f"(partitions + pruning: {c['partitions']} partitions, {c['pruned']:,} list entries pruned by the "
        f"length bound, {c['lists_cut']:,} lists cut short, {c['lists_skipped']:,} never opened)"
    )
    print()
    print(f"end to end, api.dedup at threshold {tau} (read + featurize + search + cluster)")
    print(f"{'job':<30} {'wall s':>9} {'removed':>9} {'clusters':>9}")
    for name, res, secs in (("SpotSigs (exact all pairs)", spot, t_spot), ("MinHash-LSH (K=128)", mh, t_mh)):
        print(f"{name:<30} {secs:>9.2f} {res.n_removed:>9,} {res.n_clusters:>9,}")
    print(f"SpotSigs / MinHash-LSH time: {t_spot / t_mh:.2f}")
    for name, res in (("SpotSigs", spot), ("MinHash-LSH", mh)):
        print(f"  {name} stages: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items()))

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"spotsigs-{args.docs}-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(
        json.dumps(
            {
                "docs": len(texts),
                "threshold": tau,
                "workers": workers,
                "idf_band": args.idf_band,
                "signatures": int(lengths.sum()),
                "extract_seconds": t_extract,
                "searches": rows,
                "end_to_end": {
                    "spotsigs": {"seconds": t_spot, "removed": spot.n_removed, "timings": spot.timings},
                    "minhash": {"seconds": t_mh, "removed": mh.n_removed, "timings": mh.timings},
                },
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                },
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    print(f"saved {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
