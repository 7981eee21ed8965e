"""Load on `neardup serve` over loopback, against datasketch MinHashLSH on Redis behind FastAPI.

    python benchmarks/bench_service.py                    # 100k-document index, bounded load
    python benchmarks/bench_service.py --docs 1000000     # the issue's size
    python benchmarks/bench_service.py --redis-workers 2  # also neardup's index in Redis, 2 server processes

Both servers run as their own processes on 127.0.0.1 and hold the same generated documents
(MinHash K=128, threshold 0.8); clients are asyncio + httpx. For each of 1, 16 and 200 concurrent
clients: query latency p50/p99 and throughput for single documents and for batches of 100, and
insert latency for single documents. Every level is bounded by ``--requests`` requests and
``--seconds`` seconds. The peer holds ``--peer-docs`` documents (its build is slow); its query
cost does not depend much on the index size. With ``--redis-workers N``, the same documents also go
into neardup's index in a redis-server of its own (``appendonly yes``, ``appendfsync everysec``)
served by ``neardup serve redis://... --workers N``, and get the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_index import THRESHOLD, K, corpus, shingles, start_redis

TOKEN = "bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen) -> None:
    import httpx

    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def wait_workers(url: str, n: int, seconds: float = 120) -> None:
    """Until ``n`` server processes answer (``/healthz`` says which; each new connection may go to any)."""
    import httpx

    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while len(seen) < n and time.monotonic() < deadline:
        with httpx.Client(timeout=5) as c:
            seen.add(c.get(url + "/healthz").json()["pid"])
    if len(seen) < n:
        raise RuntimeError(f"only {len(seen)} of {n} workers answered in {seconds:g} s")


def peer_app(redis_port: int, docs: int):
    """A minimal FastAPI wrapper around datasketch MinHashLSH with Redis storage (the peer)."""
    from datasketch import MinHash, MinHashLSH
    from fastapi import FastAPI

    lsh = MinHashLSH(
        threshold=THRESHOLD,
        num_perm=K,
        storage_config={"type": "redis", "redis": {"host": "127.0.0.1", "port": redis_port}},
    )

    def sketch(text):
        m = MinHash(num_perm=K, seed=1)
        m.update_batch(shingles(text))
        return m

    with lsh.insertion_session() as session:
        for i, t in enumerate(corpus(docs)):
            session.insert(f"doc-{i:08d}", sketch(t))
    app = FastAPI()

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.post("/v1/query")
    def query(body: dict):
        return {"results": [{"id": d.get("id"), "matches": lsh.query(sketch(d["text"]))} for d in body["documents"]]}

    @app.post("/v1/documents")
    def add(body: dict):
        for d in body["documents"]:
            lsh.insert(d["id"], sketch(d["text"]))
        return {"added": [d["id"] for d in body["documents"]], "duplicates": []}

    return app


async def load(url: str, make_body, path: str, clients: int, requests: int, seconds: float, headers=None) -> dict:
    import httpx

    latencies: list[float] = []
    counter = iter(range(requests))
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits, headers=headers) as client:

        async def worker():
            for k in counter:
                if time.monotonic() > deadline:
                    return
                t = time.perf_counter()
                r = await client.post(path, json=make_body(k))
                latencies.append(time.perf_counter() - t)
                r.raise_for_status()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - t0
    a = np.asarray(latencies) * 1e3
    return {
        "requests": len(a),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "rps": len(a) / wall,
    }


def run_levels(name: str, url: str, args, headers) -> None:
    queries = corpus(3000, seed=1)
    for clients in (1, 16, 200):
        single = asyncio.run(
            load(
                url,
                lambda k: {"documents": [{"text": queries[k % 3000]}]},
                "/v1/query",
                clients,
                args.requests,
                args.seconds,
            )
        )
        batch = asyncio.run(
            load(
                url,
                lambda k: {"documents": [{"text": queries[(k * 100 + j) % 3000]} for j in range(100)]},
                "/v1/query",
                clients,
                max(20, args.requests // 20),
                args.seconds,
            )
        )
        tag = f"{name}-{clients}-{time.monotonic_ns()}"
        insert = asyncio.run(
            load(
                url,
                lambda k: {"documents": [{"id": f"{tag}-{k}", "text": queries[k % 3000] + f" {k}"}]},
                "/v1/documents",
                clients,
                args.requests // 4,
                args.seconds,
                headers,
            )
        )
        print(
            f"{name:10s} {clients:4d} clients | query p50 {single['p50_ms']:7.1f} ms p99 {single['p99_ms']:7.1f} ms "
            f"{single['rps']:7.0f} req/s | batch-100 p99 {batch['p99_ms']:7.1f} ms {batch['rps'] * 100:8.0f} docs/s "
            f"| insert p50 {insert['p50_ms']:6.1f} ms p99 {insert['p99_ms']:7.1f} ms {insert['rps']:6.0f} req/s",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--peer-docs", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=2000, help="most requests per level")
    ap.add_argument("--seconds", type=float, default=15, help="most seconds per level")
    ap.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--redis-workers", type=int, default=0, help="also serve neardup's index in Redis with N processes (0: not)"
    )
    ap.add_argument("--serve-peer", nargs=3, type=int, metavar=("PORT", "REDIS_PORT", "DOCS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_peer:
        import uvicorn

        port, redis_port, docs = args.serve_peer
        uvicorn.run(peer_app(redis_port, docs), host="127.0.0.1", port=port, log_level="warning")
        return

    import neardup

    tmp = tempfile.mkdtemp(prefix="bench-service-")
    procs = []
    try:
        path = os.path.join(tmp, "i.ndx")
        t0 = time.perf_counter()
        with neardup.Index.create(path, neardup.MinHashConfig(threshold=THRESHOLD, num_perm=K)) as index:
            texts = corpus(args.docs)
            for lo in range(0, len(texts), 10000):
                index.add([f"doc-{i:08d}" for i in range(lo, min(lo + 10000, len(texts)))], texts[lo : lo + 10000])
        print(
            f"index of {args.docs:,} documents built in {time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}"
        )
        port = free_port()
        env = {**os.environ, "NEARDUP_TOKEN": TOKEN}
        cmd = [sys.executable, "-m", "neardup", "serve", path, "--port", str(port), "--log-level", "warning"]
        procs.append(subprocess.Popen(cmd, env=env))
        url = f"http://127.0.0.1:{port}"
        wait_up(url, procs[-1])
        run_levels("neardup", url, args, {"Authorization": f"Bearer {TOKEN}"})
        if args.redis_workers:
            redis, redis_port, why = start_redis("--appendonly", "yes", "--appendfsync", "everysec", "--dir", tmp)
            if redis is None:
                print(f"skipping neardup over Redis: {why}")
            else:
                procs.append(redis)
                index_url = f"redis://127.0.0.1:{redis_port}/0/bench"
                with neardup.Index.create(index_url, neardup.MinHashConfig(threshold=THRESHOLD, num_perm=K)) as index:
                    for lo in range(0, len(texts), 10000):
                        ids = [f"doc-{i:08d}" for i in range(lo, min(lo + 10000, len(texts)))]
                        index.add(ids, texts[lo : lo + 10000])
                port = free_port()
                cmd = [
                    sys.executable,
                    "-m",
                    "neardup",
                    "serve",
                    index_url,
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                ]
                procs.append(subprocess.Popen([*cmd, "--workers", str(args.redis_workers)], env=env))
                url = f"http://127.0.0.1:{port}"
                wait_up(url, procs[-1])
                wait_workers(url, args.redis_workers)
                run_levels(f"redis-w{args.redis_workers}", url, args, {"Authorization": f"Bearer {TOKEN}"})
        if args.peer:
            redis, redis_port, why = start_redis()
            if redis is None:
                print(f"skipping the datasketch + Redis peer: {why}")
            else:
                procs.append(redis)
                port = free_port()
                cmd = [sys.executable, __file__, "--serve-peer", str(port), str(redis_port), str(args.peer_docs)]
                procs.append(subprocess.Popen(cmd))
                url = f"http://127.0.0.1:{port}"
                wait_up(url, procs[-1])
                run_levels("datasketch", url, args, None)
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
