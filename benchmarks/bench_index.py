"""The durable index (neardup.Index) against datasketch MinHashLSH (in memory and on Redis) and rensa.

    python benchmarks/bench_index.py                  # 100k documents (a few minutes on 2 cores)
    python benchmarks/bench_index.py --docs 1000000   # the issue's size (about 2 GB of generated text)
    python benchmarks/bench_index.py --tools neardup,neardup-redis --docs 50000   # the file against Redis

Every tool indexes the same generated texts (about 2 KB each, with planted near-duplicates),
MinHash K=128 at threshold 0.8, from text: neardup sketches word 5-grams in its kernels; the peers
get the same word 5-grams as Python strings (datasketch ``MinHash.update_batch``, rensa
``RMinHash.update``) and the time to make them is counted. Each tool runs in its own process, so
peak memory (``ru_maxrss``) is its own.

Measured for neardup: build rate (documents/s) with 1 and 2 worker threads, the size on disk
against the raw signatures plus ids, time and memory to open an index in a new process, query
latency from text (p50/p99, one document per call and batches of 100), memory while serving.
Peers are measured on at most ``--peer-docs`` documents (their build is slow); their rates are
per document, so the ratios hold. ``neardup-redis`` measures the same for neardup's index in Redis
(a redis-server of its own with ``appendonly yes``, ``appendfsync everysec``; its size is Redis's
``used_memory`` growth); every query then includes the round trip that checks for others' writes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import pickle
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

K = 128
THRESHOLD = 0.8


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20000)])
    texts = []
    for i in range(n):
        if i % 10 == 9:
            words = texts[int(rng.integers(len(texts)))].split()
            words[int(rng.integers(len(words)))] = "edited"
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(vocab[rng.integers(0, len(vocab), 300)]))
    return texts


def cached_corpus(n: int, folder: str | None, seed: int = 0) -> list[str]:
    """``corpus(n, seed)``, generated once and kept in ``folder`` (a pickle) when one is given:
    at 1M documents generating takes minutes, and every measuring process needs the texts."""
    if folder is None:
        return corpus(n, seed)
    path = os.path.join(folder, f"neardup-bench-corpus-{n}-{seed}.pkl")
    if not os.path.exists(path):
        texts = corpus(n, seed)
        with open(path + ".tmp", "wb") as f:
            pickle.dump(texts, f, protocol=5)
        os.replace(path + ".tmp", path)
        return texts
    with open(path, "rb") as f:
        return pickle.load(f)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(samples: list[float]) -> dict:
    a = np.asarray(samples) * 1e6
    return {"p50_us": float(np.percentile(a, 50)), "p99_us": float(np.percentile(a, 99))}


def shingles(text: str, n: int = 5) -> list[bytes]:
    w = text.split()
    return [" ".join(w[i : i + n]).encode() for i in range(max(1, len(w) - n + 1))]


def run_neardup(args, path: str, workers: int, out) -> None:
    import neardup

    texts = cached_corpus(args.docs, args.corpus_dir)
    config = neardup.MinHashConfig(threshold=THRESHOLD, num_perm=K)
    t0 = time.perf_counter()
    with neardup.Index.create(path, config, workers=workers) as index:
        for lo in range(0, len(texts), 10000):
            index.add([f"doc-{i:08d}" for i in range(lo, min(lo + 10000, len(texts)))], texts[lo : lo + 10000])
        t1 = time.perf_counter()
    build = time.perf_counter() - t0
    out.put(
        {
            "build_s": build,
            "docs_per_s": len(texts) / build,
            "close_s": time.perf_counter() - t1,  # writing the lookup snapshot, counted in build_s
            "peak_mb": peak_mb(),
        }
    )


def run_neardup_open(args, path: str, out) -> None:
    """Open in a new process: time and memory to the first query (imports of neardup's kernels
    included; the interpreter, numpy and ``import neardup`` are the baseline)."""
    import neardup

    query = corpus(1, seed=1)[0]
    base = rss_mb()
    c0 = time.process_time()
    t0 = time.perf_counter()
    index = neardup.Index.open(path)
    open_s = time.perf_counter() - t0
    open_cpu_s = time.process_time() - c0  # CPU time: what the open costs on an idle machine
    open_mb = rss_mb() - base
    t1 = time.perf_counter()
    index.query(query)
    out.put(
        {
            "open_s": open_s,
            "open_cpu_s": open_cpu_s,
            "open_mb": open_mb,
            "first_query_s": time.perf_counter() - t1,
            "snapshot": index.snapshot_status,
            "documents": len(index),
        }
    )


def run_neardup_serve(args, path: str, out) -> None:
    import neardup

    stored = cached_corpus(args.docs, args.corpus_dir)[:1000]
    queries = corpus(2000, seed=1)[:1000] + stored  # half new, half stored
    base = rss_mb()
    t0 = time.perf_counter()
    index = neardup.Index.open(path)
    open_s = time.perf_counter() - t0
    open_mb = rss_mb() - base
    index.query(queries[0])  # compile the query path once
    single = []
    for q in queries:
        t = time.perf_counter()
        index.query(q)
        single.append(time.perf_counter() - t)
    batched = []
    for lo in range(0, len(queries), 100):
        t = time.perf_counter()
        index.query_batch(queries[lo : lo + 100])
        batched.append((time.perf_counter() - t) / 100)
    n = len(index)
    raw = n * (K * 4) + sum(len(i) for i in index)
    out.put(
        {
            "open_s": open_s,
            "open_mb": open_mb,
            "query": percentiles(single),
            "query_batched_per_doc": percentiles(batched),
            "serving_rss_mb": rss_mb(),
            "disk_bytes": 0
            if path.startswith("redis://")
            else os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0),
            "snapshot_bytes": os.path.getsize(path + ".lookup") if os.path.exists(path + ".lookup") else 0,
            "snapshot_disk_bytes": os.stat(path + ".lookup").st_blocks * 512 if os.path.exists(path + ".lookup") else 0,
            "raw_bytes": raw,
        }
    )


def run_datasketch(args, storage: dict | None, out) -> None:
    from datasketch import MinHash, MinHashLSH

    texts = cached_corpus(args.docs, args.corpus_dir)[: args.peer_docs]
    queries = corpus(2000, seed=1)[:200] + texts[:200]
    kw = {"storage_config": storage} if storage else {}
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=K, **kw)
    t0 = time.perf_counter()
    with lsh.insertion_session() as session:
        for i, t in enumerate(texts):
            m = MinHash(num_perm=K, seed=1)
            m.update_batch(shingles(t))
            session.insert(f"doc-{i:08d}", m)
    build = time.perf_counter() - t0
    lat = []
    for q in queries:
        t = time.perf_counter()
        m = MinHash(num_perm=K, seed=1)
        m.update_batch(shingles(q))
        lsh.query(m)
        lat.append(time.perf_counter() - t)
    out.put({"docs": len(texts), "docs_per_s": len(texts) / build, "query": percentiles(lat), "peak_mb": peak_mb()})


def run_rensa(args, out) -> None:
    from rensa import RMinHash, RMinHashLSH

    texts = cached_corpus(args.docs, args.corpus_dir)[: args.peer_docs]
    queries = corpus(2000, seed=1)[:200] + texts[:200]
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=K, num_bands=16)
    t0 = time.perf_counter()
    for i, t in enumerate(texts):
        m = RMinHash(num_perm=K, seed=1)
        m.update([s.decode() for s in shingles(t)])
        lsh.insert(i, m)
    build = time.perf_counter() - t0
    lat = []
    for q in queries:
        t = time.perf_counter()
        m = RMinHash(num_perm=K, seed=1)
        m.update([s.decode() for s in shingles(q)])
        lsh.query(m)
        lat.append(time.perf_counter() - t)
    out.put({"docs": len(texts), "docs_per_s": len(texts) / build, "query": percentiles(lat), "peak_mb": peak_mb()})


def in_process(target, *args) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    result = q.get()
    p.join()
    return result


def start_redis(*persistence: str) -> tuple[subprocess.Popen | None, int, str]:
    exe = shutil.which("redis-server")
    if exe is None:
        return None, 0, "redis-server is not installed (apt install redis-server)"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *(persistence or ("--appendonly", "no"))],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port, ""
        except OSError:
            time.sleep(0.05)
    proc.kill()
    return None, 0, "redis-server did not start"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--peer-docs", type=int, default=20_000)
    ap.add_argument("--tools", default="neardup,neardup-redis,datasketch,datasketch-redis,rensa")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--corpus-dir", default=None, help="generate the texts once and keep them here (e.g. /tmp)")
    ap.add_argument("--workers", default="1,2", help="the build's worker counts to measure")
    ap.add_argument("--keep", default=None, help="keep the built indexes in this folder (else a temporary one)")
    args = ap.parse_args()
    tools = args.tools.split(",")
    results: dict = {"docs": args.docs, "cpu_count": os.cpu_count(), "load": os.getloadavg()}
    tmp = args.keep or tempfile.mkdtemp(prefix="bench-index-")
    os.makedirs(tmp, exist_ok=True)
    if args.corpus_dir:
        cached_corpus(args.docs, args.corpus_dir)  # once, before the measuring processes
    try:
        if "neardup" in tools:
            built = None
            for workers in [int(w) for w in args.workers.split(",")]:
                path = os.path.join(tmp, f"w{workers}.ndx")
                for suffix in ("", "-wal", "-shm", ".lock", ".lookup"):
                    if os.path.exists(path + suffix):
                        os.unlink(path + suffix)
                results[f"neardup_build_{workers}w"] = in_process(run_neardup, args, path, workers)
                built = built or path
            results["neardup_open"] = in_process(run_neardup_open, args, built)
            os.replace(built + ".lookup", built + ".lookup.aside")
            try:
                results["neardup_open_rebuild"] = in_process(run_neardup_open, args, built)
            finally:
                os.replace(built + ".lookup.aside", built + ".lookup")
            results["neardup_serve"] = in_process(run_neardup_serve, args, built)
        if "neardup-redis" in tools:
            results.update(bench_neardup_redis(args, tmp))
        if "datasketch" in tools:
            results["datasketch_memory"] = in_process(run_datasketch, args, None)
        if "datasketch-redis" in tools:
            proc, port, why = start_redis()
            if proc is None:
                print(f"skipping datasketch with Redis: {why}", file=sys.stderr)
            else:
                try:
                    storage = {"type": "redis", "redis": {"host": "127.0.0.1", "port": port}}
                    results["datasketch_redis"] = in_process(run_datasketch, args, storage)
                finally:
                    proc.terminate()
                    proc.wait()
        if "rensa" in tools:
            results["rensa"] = in_process(run_rensa, args)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def bench_neardup_redis(args, tmp: str) -> dict:
    """Build, open and query neardup's index in a redis-server of its own (AOF, fsync every second)."""
    proc, port, why = start_redis("--appendonly", "yes", "--appendfsync", "everysec", "--dir", tmp)
    if proc is None:
        print(f"skipping neardup with Redis: {why}", file=sys.stderr)
        return {}
    try:
        import redis

        client = redis.Redis(port=port)
        before = client.info("memory")["used_memory"]
        url = f"redis://127.0.0.1:{port}/0/bench"
        build = in_process(run_neardup, args, url, 1)
        used = client.info("memory")["used_memory"] - before
        serve = in_process(run_neardup_serve, args, url)
        serve["disk_bytes"] = used
        return {"neardup_redis_build": build, "neardup_redis_serve": serve}
    finally:
        proc.terminate()
        proc.wait()


def report(r: dict) -> None:
    print(f"documents: {r['docs']:,}  (load average {r['load'][0]:.1f})")
    if "neardup_serve" in r:
        s = r["neardup_serve"]
        for w in (1, 2):
            if f"neardup_build_{w}w" not in r:
                continue
            b = r[f"neardup_build_{w}w"]
            print(
                f"neardup build, {w} worker(s): {b['docs_per_s']:,.0f} docs/s ({b['build_s']:.1f} s, peak {b['peak_mb']:.0f} MB)"
            )
        print(
            f"neardup disk: {s['disk_bytes'] / 2**20:.1f} MB = {s['disk_bytes'] / s['raw_bytes']:.2f}x raw signatures + ids"
        )
        print(
            f"neardup lookup snapshot: {s['snapshot_bytes'] / 2**20:.1f} MB "
            f"({s['snapshot_disk_bytes'] / 2**20:.1f} MB allocated on disk)"
        )
        for key, what in (("neardup_open", "with the snapshot"), ("neardup_open_rebuild", "rebuilt from SQLite")):
            o = r[key]
            print(
                f"neardup open, {what} ({o['snapshot'][:40]}): {o['open_s']:.2f} s "
                f"({o['open_cpu_s']:.2f} s CPU), +{o['open_mb']:.0f} MB; "
                f"first query {o['first_query_s'] * 1e3:.0f} ms"
            )
        print(
            f"neardup serving: open {s['open_s']:.2f} s, +{s['open_mb']:.0f} MB; serving RSS {s['serving_rss_mb']:.0f} MB"
        )
        q, qb = s["query"], s["query_batched_per_doc"]
        print(f"neardup query from text: p50 {q['p50_us']:.0f} us, p99 {q['p99_us']:.0f} us; "
              f"batched per doc p50 {qb['p50_us']:.0f} us, p99 {qb['p99_us']:.0f} us")  # fmt: skip
    if "neardup_redis_serve" in r:
        b, s = r["neardup_redis_build"], r["neardup_redis_serve"]
        q, qb = s["query"], s["query_batched_per_doc"]
        print(f"neardup on Redis: build {b['docs_per_s']:,.0f} docs/s; Redis memory {s['disk_bytes'] / 2**20:.1f} MB = "
              f"{s['disk_bytes'] / s['raw_bytes']:.2f}x raw; open {s['open_s']:.2f} s, +{s['open_mb']:.0f} MB; "
              f"query p50 {q['p50_us']:.0f} us, p99 {q['p99_us']:.0f} us; "
              f"batched per doc p50 {qb['p50_us']:.0f} us, p99 {qb['p99_us']:.0f} us")  # fmt: skip
    ours = r.get("neardup_build_1w", {}).get("docs_per_s")
    ours_q = r.get("neardup_serve", {}).get("query", {}).get("p50_us")
    for name in ("datasketch_memory", "datasketch_redis", "rensa"):
        if name in r:
            p = r[name]
            ratio = (
                f"; neardup build {ours / p['docs_per_s']:.1f}x, query p50 {p['query']['p50_us'] / ours_q:.1f}x faster"
                if ours
                else ""
            )
            print(f"{name} ({p['docs']:,} docs): {p['docs_per_s']:,.0f} docs/s, query p50 {p['query']['p50_us']:.0f} us, "
                  f"p99 {p['query']['p99_us']:.0f} us, peak {p['peak_mb']:.0f} MB{ratio}")  # fmt: skip


if __name__ == "__main__":
    main()
