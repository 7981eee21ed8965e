"""Parts of bench_index.py measured alone, with CPU times (meaningful on a shared, loaded machine).

    python benchmarks/bench_index_parts.py open PATH             # open an index in this process, then one query
    python benchmarks/bench_index_parts.py query PATH            # queries from text against a kept index
    python benchmarks/bench_index_parts.py build --docs 100000 --workers 2 [--corpus-dir /tmp]

``open`` reports the wall and CPU time of ``neardup.Index.open`` after ``import neardup``, the RSS
it added, the first query's time and whether the lookup snapshot was used; it runs against any
neardup version (``PYTHONPATH`` picks it), so the same file can be opened by the code before and
after a change. ``query`` opens a kept index (``bench_index.py --keep DIR`` leaves ``DIR/w1.ndx``)
and times ``Index.query`` of one text of about 2 KB, text to matches in this process, for 2,000
texts (half new, half among the index's first documents), and ``Index.query_batch`` of 100 texts
per call: p50 and p99 per text, the CPU time per query, the load average. ``build`` adds bench_index's generated texts in batches of 10,000 and reports the
wall rate, the CPU time per document of all threads and of the calling thread, and the rate an
idle machine with ``workers`` cores could reach at best: documents / max(calling thread's CPU,
all CPU / workers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from bench_index import THRESHOLD, K, cached_corpus, corpus, rss_mb


def measure_open(path: str) -> None:
    import neardup

    base = rss_mb()
    c0, t0 = time.process_time(), time.perf_counter()
    index = neardup.Index.open(path)
    wall, cpu, mb = time.perf_counter() - t0, time.process_time() - c0, rss_mb() - base
    t1 = time.perf_counter()
    index.query("hello world " * 30)
    first = time.perf_counter() - t1
    status = getattr(index, "snapshot_status", "no snapshots in this version")
    print(
        f"open {len(index):,} documents: {wall:.2f} s wall, {cpu:.2f} s CPU, +{mb:.0f} MB; "
        f"first query {first * 1e3:.0f} ms; snapshot: {status[:40]}; load {os.getloadavg()[0]:.1f}"
    )


def measure_query(path: str, rounds: int) -> None:
    import neardup

    # half new texts, half stored ones: every bench corpus starts with corpus(1000)'s texts
    queries = corpus(2000, seed=1)[:1000] + corpus(1000)
    index = neardup.Index.open(path)
    index.query(queries[0])  # the query path compiled once
    for _ in range(rounds):
        single = []
        c0 = time.process_time()
        for q in queries:
            t = time.perf_counter()
            index.query(q)
            single.append(time.perf_counter() - t)
        cpu = (time.process_time() - c0) / len(queries)
        batched = []
        for lo in range(0, len(queries), 100):
            t = time.perf_counter()
            index.query_batch(queries[lo : lo + 100])
            batched.append((time.perf_counter() - t) / 100)
        one, many = np.asarray(single) * 1e6, np.asarray(batched) * 1e6
        print(
            f"query {len(index):,} documents from text in process: one text p50 {np.percentile(one, 50):.1f} us, "
            f"p99 {np.percentile(one, 99):.1f} us ({cpu * 1e6:.1f} us CPU per query); batches of 100: p50 "
            f"{np.percentile(many, 50):.1f} us, p99 {np.percentile(many, 99):.1f} us per text; "
            f"load {os.getloadavg()[0]:.1f}"
        )


def measure_build(docs: int, workers: int, corpus_dir: str | None) -> None:
    texts = cached_corpus(docs, corpus_dir)
    folder = tempfile.mkdtemp(prefix="bench-index-parts-")
    try:
        _build(texts, os.path.join(folder, "x.ndx"), docs, workers)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # 1.4 GB at 1M documents: not left behind


def _build(texts: list[str], path: str, docs: int, workers: int) -> None:
    import neardup

    config = neardup.MinHashConfig(threshold=THRESHOLD, num_perm=K)
    with neardup.Index.create(path, config, workers=workers) as index:
        index.add(["warm-up"], ["the kernels load before the clock starts " * 5])
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        for lo in range(0, docs, 10000):
            index.add([f"doc-{i:08d}" for i in range(lo, min(lo + 10000, docs))], texts[lo : lo + 10000])
        wall, cpu, own = time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0
    bound = docs / max(own, cpu / workers)
    print(
        f"build {docs:,} documents, {workers} worker(s): {docs / wall:,.0f} docs/s wall; CPU {cpu / docs * 1e6:.1f} us "
        f"per document in all, {own / docs * 1e6:.1f} us on the calling thread; at best {bound:,.0f} docs/s on "
        f"{workers} idle core(s); load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("open")
    o.add_argument("path")
    q = sub.add_parser("query")
    q.add_argument("path")
    q.add_argument("--rounds", type=int, default=3)
    b = sub.add_parser("build")
    b.add_argument("--docs", type=int, default=100_000)
    b.add_argument("--workers", type=int, default=2)
    b.add_argument("--corpus-dir", default=None)
    args = ap.parse_args()
    if args.what == "open":
        measure_open(args.path)
    elif args.what == "query":
        measure_query(args.path, args.rounds)
    else:
        measure_build(args.docs, args.workers, args.corpus_dir)


if __name__ == "__main__":
    main()
