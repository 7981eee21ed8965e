#!/usr/bin/env python3
"""LSH index on 1M signatures: build time, memory and query latency of neardup, datasketch and rensa.

    python benchmarks/bench_lsh.py [--n 1000000] [--queries 2000] [--quick]

Every tool indexes the same n sets (``--set-size`` random 64-bit tokens each, seed 1) as
K = 128 MinHash signatures for threshold 0.8, then answers the same queries one at a time:
half are near-duplicates of indexed sets (3 of 32 tokens replaced, Jaccard 29/35 = 0.83),
half are new random sets. Each tool runs in its own subprocess, one after the other, pinned to
one CPU with one numba/BLAS thread:

* **neardup** ``LSHIndex(threshold=0.8, num_perm=128, workers=2)``: signatures from ``MinHasher.sign_hashed``
  (not timed), one ``add(keys, signatures)`` (timed: the build), ``query(row, min_similarity=0.0)``
  per query (every candidate, with its estimate, like the peers' candidate lists); the default
  ``query(row)``, which keeps only candidates whose estimate reaches 0.8, is timed too.
* **datasketch 2.x** ``MinHashLSH(threshold=0.8, num_perm=128)``, filled through
  ``insertion_session`` (its documented bulk path) with ``LeanMinHash`` objects holding the very
  same signature values (built in chunks, not timed; only the inserts are), ``query(m)`` per query
  (candidates, not verified).
* **rensa 0.5** ``RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)`` (the band count must
  divide 128): rensa cannot take signatures made elsewhere, so it sketches the same token sets
  itself (as decimal strings) with ``digest_matrix_from_token_sets`` in chunks (not timed) and
  fills the index with ``insert_matrix`` (timed); ``query(RMinHash)`` per query, the query
  sketch made beforehand (candidates, not verified).

Figures: build seconds; **index MB**, the growth of the process's resident memory over the
build (for neardup it includes its own copy of the signature matrix, 512 bytes a row, which it
keeps to verify candidates); peak RSS of the whole subprocess (``ru_maxrss`` from
``os.wait4``); query latency p50 / p99 / mean in microseconds (``time.perf_counter_ns`` around
each call, with the garbage collector paused as ``timeit`` does); recall, the fraction of
near-duplicate queries whose source set is returned; and **batch us / query**, all the queries
answered by one call after the single ones: neardup's ``query_batch(matrix, min_similarity=0.0)``
(candidates with their estimates, as lists of ``(key, estimate)``) and rensa's
``query_all(minhashes)`` (candidate lists); datasketch has no call that answers many queries
separately.

Results are printed as a markdown table and saved to ``benchmarks/_results/lsh-<n>-<stamp>.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import contextlib
import datetime as dt
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_dedup

K = 128
THRESHOLD = 0.8
CHUNK = 100_000


def make_data(n: int, set_size: int, queries: int, seed: int):
    """Token sets as CSR (tokens uint64, offsets) and query sets (the first half near-duplicates
    of random indexed sets, with their source index; the second half new)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 2**63, size=n * set_size, dtype=np.uint64)
    offsets = np.arange(0, n * set_size + 1, set_size, dtype=np.int64)
    near = queries // 2
    sources = rng.choice(n, size=near, replace=False)
    q_sets, q_source = [], []
    for s in sources:
        t = tokens[s * set_size : (s + 1) * set_size].copy()
        t[rng.choice(set_size, size=3, replace=False)] = rng.integers(1, 2**63, size=3, dtype=np.uint64)
        q_sets.append(t)
        q_source.append(int(s))
    for _ in range(queries - near):
        q_sets.append(rng.integers(1, 2**63, size=set_size, dtype=np.uint64))
        q_source.append(-1)
    return tokens, offsets, q_sets, q_source


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def latency_stats(ns: list[int]) -> dict:
    import numpy as np

    a = np.asarray(ns, dtype=np.float64) / 1e3
    return {
        "p50_us": float(np.percentile(a, 50)),
        "p99_us": float(np.percentile(a, 99)),
        "mean_us": float(a.mean()),
        "max_us": float(a.max()),
    }


@contextlib.contextmanager
def gc_paused():
    """Collect, then keep Python's cyclic garbage collector off (as ``timeit`` does): a full
    collection walks every object of the process (20-40 ms in these workers), and where one
    happens to fall in a timed query says nothing about the tool."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def time_queries(query, queries, q_source, found) -> tuple[dict, float]:
    """Latency stats of ``query(q)`` one query at a time, and the recall (``recall_of``)."""
    lat, results = [], []
    with gc_paused():
        for q in queries:
            t = time.perf_counter_ns()
            results.append(query(q))
            lat.append(time.perf_counter_ns() - t)
    return latency_stats(lat), recall_of(results, q_source, found)


def recall_of(results, q_source, found) -> float:
    """The share of near-duplicate queries (``q_source >= 0``) whose source ``found(result,
    source)`` reports, given one result per query."""
    hits = sum(1 for res, src in zip(results, q_source) if src >= 0 and found(res, src))
    return hits / max(1, sum(s >= 0 for s in q_source))


def in_pairs(res, src) -> bool:
    return any(k == src for k, _ in res)


def in_keys(res, src) -> bool:
    return src in res


# -- workers (one subprocess each) ----------------------------------------------------------


def worker_neardup(args, tokens, offsets, q_sets, q_source) -> dict:
    import numpy as np

    from neardup.index.lsh import LSHIndex
    from neardup.methods.minhash.sketch import MinHasher

    mh = MinHasher.for_sets(K, 1)
    sigs = mh.sign_hashed(tokens, offsets)
    qsigs = [mh.sign_hashed(q, np.array([0, len(q)])) for q in q_sets]
    del tokens
    warm = LSHIndex(threshold=THRESHOLD, num_perm=K, workers=2)  # compile the kernels outside the timing
    warm.add(list(range(1000)), sigs[:1000])
    warm.query(qsigs[0])
    qmatrix = np.vstack([q.values for q in qsigs])
    warm.query_batch(qmatrix[:2], min_similarity=0.0)
    keys = list(range(len(sigs)))
    before = rss_mb()
    t0 = time.perf_counter()
    index = LSHIndex(threshold=THRESHOLD, num_perm=K, workers=2)
    index.add(keys, sigs)
    build = time.perf_counter() - t0
    grown = rss_mb() - before
    every, recall = time_queries(lambda q: index.query(q, min_similarity=0.0), qsigs, q_source, in_pairs)  # as peers
    verified, verified_recall = time_queries(index.query, qsigs, q_source, in_pairs)  # the default: estimate >= 0.8
    with gc_paused():
        t0 = time.perf_counter()
        batch_found = index.query_batch(qmatrix, min_similarity=0.0)
        batch = time.perf_counter() - t0
    batch_recall = recall_of(batch_found, q_source, in_pairs)
    p = index.params
    return {
        "build_s": build,
        "index_mb": grown,
        "banding": f"b={p.bands} r={p.rows}",
        "recall": recall,
        "batch_query_s": batch,
        "batch_recall": batch_recall,
        "query": every,
        "verified_query": verified,
        "verified_recall": verified_recall,
    }


def worker_datasketch(args, tokens, offsets, q_sets, q_source) -> dict:
    import numpy as np
    from datasketch import LeanMinHash, MinHashLSH

    from neardup.methods.minhash.sketch import MinHasher

    mh = MinHasher.for_sets(K, 1)
    n = len(offsets) - 1

    def lean(values):
        return [LeanMinHash(seed=1, hashvalues=row, scheme="affine32") for row in values.astype(np.uint64)]

    queries = lean(np.vstack([mh.sign_hashed(q, np.array([0, len(q)])).values for q in q_sets]))
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=K)
    build = 0.0
    before = rss_mb()
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        chunk = lean(mh.sign_hashed(tokens[offsets[lo] : offsets[hi]], offsets[lo : hi + 1] - offsets[lo]).values)
        t0 = time.perf_counter()
        with lsh.insertion_session() as session:
            for i, m in enumerate(chunk, lo):
                session.insert(i, m, check_duplication=False)
        build += time.perf_counter() - t0
        del chunk
    grown = rss_mb() - before
    stats, recall = time_queries(lsh.query, queries, q_source, in_keys)
    return {"build_s": build, "index_mb": grown, "banding": f"b={lsh.b} r={lsh.r}", "recall": recall, "query": stats}


def worker_rensa(args, tokens, offsets, q_sets, q_source) -> dict:
    from rensa import RMinHash, RMinHashLSH

    seed = 42
    n = len(offsets) - 1
    lsh = RMinHashLSH(THRESHOLD, K, 16)
    queries = RMinHash.from_token_sets([[str(int(x)) for x in q] for q in q_sets], K, seed)
    build = 0.0
    before = rss_mb()
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        flat = tokens[offsets[lo] : offsets[hi]].tolist()
        size = int(offsets[lo + 1] - offsets[lo])
        sets = [[str(x) for x in flat[i : i + size]] for i in range(0, len(flat), size)]
        matrix = RMinHash.digest_matrix_from_token_sets(sets, K, seed)
        del sets, flat
        t0 = time.perf_counter()
        lsh.insert_matrix(matrix, lo)
        build += time.perf_counter() - t0
        del matrix  # the sketches are not part of the index
    grown = rss_mb() - before
    stats, recall = time_queries(lsh.query, queries, q_source, in_keys)
    with gc_paused():
        t0 = time.perf_counter()
        batch_found = lsh.query_all(queries)
        batch = time.perf_counter() - t0
    return {
        "build_s": build,
        "index_mb": grown,
        "banding": "b=16 r=8",
        "recall": recall,
        "query": stats,
        "batch_query_s": batch,
        "batch_recall": recall_of(batch_found, q_source, in_keys),
    }


WORKERS = {"neardup": worker_neardup, "datasketch": worker_datasketch, "rensa": worker_rensa}


def run_worker(args) -> int:
    os.sched_setaffinity(0, {args.cpu})
    try:
        import numba

        numba.set_num_threads(1)
    except ImportError:
        pass
    tokens, offsets, q_sets, q_source = make_data(args.n, args.set_size, args.queries, args.seed)
    result = WORKERS[args.worker](args, tokens, offsets, q_sets, q_source)
    result["queries"] = len(q_sets)
    result["rss_end_mb"] = rss_mb()
    Path(args.out).write_text(json.dumps(result), encoding="utf-8")
    return 0


# -- main -----------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="indexed signatures (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=2000, help="queries, half near-duplicates (default 2000)")
    ap.add_argument("--set-size", type=int, default=32, help="tokens per set (default 32)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tools", default="neardup,datasketch,rensa")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the lowest allowed)")
    ap.add_argument("--quick", action="store_true", help="100,000 signatures, 1000 queries")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.queries = min(args.n, 100_000), min(args.queries, 1000)
    if args.cpu is None:
        args.cpu = min(os.sched_getaffinity(0))
    if args.worker:
        return run_worker(args)

    load_before = os.getloadavg()[0]
    print(
        f"LSH index: {args.n:,} signatures (K={K}, threshold {THRESHOLD}, sets of {args.set_size} tokens), "
        f"{args.queries:,} queries one at a time; CPU {args.cpu} pinned; load average {load_before:.2f}",
        flush=True,
    )
    results = {}
    for tool in args.tools.split(","):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        argv_ = [
            sys.executable,
            __file__,
            "--worker",
            tool,
            "--out",
            out,
            "--n",
            str(args.n),
            "--queries",
            str(args.queries),
            "--set-size",
            str(args.set_size),
            "--seed",
            str(args.seed),
            "--cpu",
            str(args.cpu),
        ]
        r = run_dedup.measure(argv_)
        if r["returncode"] != 0:
            print(f"{tool}: failed (exit {r['returncode']}):\n{r['stderr']}")
            continue
        res = json.loads(Path(out).read_text(encoding="utf-8"))
        os.unlink(out)
        res.update(peak_rss_mb=r["peak_rss_mb"], wall_s=r["wall_s"])
        results[tool] = res
        q = res["query"]
        print(
            f"  {tool:<11} build {res['build_s']:7.2f} s  index {res['index_mb']:7.0f} MB  "
            f"peak RSS {res['peak_rss_mb']:6.0f} MB  query p50 {q['p50_us']:7.1f} us  p99 {q['p99_us']:7.1f} us  "
            f"recall {res['recall']:.3f}",
            flush=True,
        )
    load_after = os.getloadavg()[0]
    print_table(results, args.n)
    print(f"\nload average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")
    run_dedup.RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = run_dedup.RESULTS / f"lsh-{args.n}-{stamp}.json"
    path.write_text(
        json.dumps(
            {
                "created": stamp,
                "args": vars(args),
                "versions": run_dedup.versions(),
                "load_average_1min": {"before": load_before, "after": load_after},
                "results": results,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"saved {path.relative_to(run_dedup.ROOT)}")
    return 0


def print_table(results: dict, n: int) -> None:
    base = results.get("neardup")
    print(f"\n**LSH index, {n:,} signatures, K = {K}, threshold {THRESHOLD}**\n")
    print(
        "| tool | banding | build s | index MB | bytes / signature | peak RSS MB | query p50 us | query p99 us "
        "| batch us / query | recall | build vs neardup | p99 vs neardup | batch vs neardup |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tool, r in results.items():
        q = r["query"]
        nq = r.get("queries", 0)
        batch = r["batch_query_s"] * 1e6 / nq if "batch_query_s" in r and nq else None
        base_batch = base["batch_query_s"] * 1e6 / base["queries"] if base and "queries" in base else None
        rb = f"{r['build_s'] / base['build_s']:.1f}x" if base else "n/a"
        rq = f"{q['p99_us'] / base['query']['p99_us']:.1f}x" if base else "n/a"
        rbq = f"{batch / base_batch:.1f}x" if batch and base_batch else "n/a"
        print(
            f"| {tool} | {r['banding']} | {r['build_s']:.2f} | {r['index_mb']:,.0f} | {r['index_mb'] * 2**20 / n:,.0f} "
            f"| {r['peak_rss_mb']:,.0f} | {q['p50_us']:.1f} | {q['p99_us']:.1f} "
            f"| {f'{batch:.2f}' if batch else 'n/a'} | {r['recall']:.3f} | {rb} | {rq} | {rbq} |"
        )
    if base and "verified_query" in base:
        v = base["verified_query"]
        print(
            f"\nneardup's default query (candidates verified at estimate >= {THRESHOLD}): p50 {v['p50_us']:.1f} us, "
            f"p99 {v['p99_us']:.1f} us, recall {base['verified_recall']:.3f} (the near-duplicates have J = 0.83, "
            f"so some estimates fall below 0.8). Recall is the share of near-duplicate queries whose source is "
            f"among the candidates; it follows each tool's banding."
        )


if __name__ == "__main__":
    sys.exit(main())
