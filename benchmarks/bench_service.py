"""Load on `neardup serve` over loopback, against datasketch MinHashLSH on Redis behind FastAPI.

    python benchmarks/bench_service.py                    # 100k-document index, bounded load
    python benchmarks/bench_service.py --docs 1000000 --corpus-dir /tmp --index /tmp/svc-1m.ndx
    python benchmarks/bench_service.py --redis-workers 2  # also neardup's index in Redis, 2 server processes

Both servers run as their own processes on 127.0.0.1 and hold the same generated documents
(MinHash K=128, threshold 0.8). For each of 1, 16 and 200 concurrent clients: latency p50/p99
and throughput of queries and of inserts, single documents and batches of 100, each bounded by
``--requests`` requests (a twentieth of that for batches) and ``--seconds`` seconds. The inserts
are near-duplicates of the query texts, so the queries of later loads find the documents inserted
by earlier ones (a few matches each); a kept ``--index`` is served from a copy, so that every run
starts from the same index.

The load generator is light so that it measures the server, not itself: one asyncio process
(uvloop when installed) with one keep-alive connection per client (TCP_NODELAY) sending requests
encoded before the clock starts and reading each answer by its Content-Length. Next to each
latency it prints the server's CPU time per request (user + system of the server process, its
workers and the redis-server behind it, if any, from psutil, over the load): robust under a loaded machine, and its inverse is the
throughput ceiling of one core. The client's own CPU time per request is printed too (it shares
the machine's cores with the server on loopback).

The peer holds ``--peer-docs`` documents (its build is slow); its query cost does not depend
much on the index size. With ``--redis-workers N``, the same documents also go into neardup's
index in a redis-server of its own (``appendonly yes``, ``appendfsync everysec``) served by
``neardup serve redis://... --workers N``, and get the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_index import THRESHOLD, K, cached_corpus, corpus, shingles, start_redis

TOKEN = "bench-token"
AUTH = f"Authorization: Bearer {TOKEN}"
LEVELS = (1, 16, 200)
LOADS = ("query", "query-100", "insert", "insert-100")
BATCH = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen, seconds: float = 1800) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def wait_workers(url: str, n: int, seconds: float = 600) -> None:
    """Until ``n`` server processes answer (``/healthz`` says which; each new connection may go to any)."""
    import httpx

    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while len(seen) < n and time.monotonic() < deadline:
        with httpx.Client(timeout=5) as c:
            seen.add(c.get(url + "/healthz").json()["pid"])
    if len(seen) < n:
        raise RuntimeError(f"only {len(seen)} of {n} workers answered in {seconds:g} s")


def peer_app(redis_port: int, docs: int, corpus_dir: str | None):
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
        for i, t in enumerate(cached_corpus(docs, corpus_dir)):
            session.insert(f"doc-{i:08d}", sketch(t))
    app = FastAPI()

    @app.get("/healthz")
    def healthz():
        return {"status": "ok", "pid": os.getpid()}

    @app.post("/v1/query")
    def query(body: dict):
        return {"results": [{"id": d.get("id"), "matches": lsh.query(sketch(d["text"]))} for d in body["documents"]]}

    @app.post("/v1/documents")
    def add(body: dict):
        for d in body["documents"]:
            lsh.insert(d["id"], sketch(d["text"]))
        return {"added": [d["id"] for d in body["documents"]], "duplicates": []}

    return app


# ---------------------------------------------------------------------------- the load generator


def http_post(path: str, body: dict, auth: bool) -> bytes:
    """One HTTP/1.1 request, encoded once."""
    data = json.dumps(body).encode()
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
    ]
    if auth:
        head.append(AUTH)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


async def _load(port: int, requests: list[bytes], clients: int, seconds: float, on_start) -> tuple[list[float], float]:
    """Send each of ``requests`` once over ``clients`` keep-alive connections, each client waiting
    for its answer before the next (closed loop), until all are sent or ``seconds`` passed.
    Every answer must be 200. ``on_start()`` is called when every client is connected, just
    before the clock starts. The latencies (s) and the wall time."""
    latencies: list[float] = []
    todo = iter(requests)
    connected, go = [0], asyncio.Event()
    clock = {"start": 0.0, "deadline": 0.0}

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            # one untimed round trip, so that the server has accepted every connection before
            # the clock starts (else the first requests of 200 new connections wait in its
            # accept queue, and their latency is the connection's setup)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            at = head.lower().index(b"content-length:") + 15
            await reader.readexactly(int(head[at : head.index(b"\r\n", at)]))
            connected[0] += 1
            if connected[0] == clients:
                on_start()
                clock.update(start=time.perf_counter(), deadline=time.monotonic() + seconds)
                go.set()
            await go.wait()
            for request in todo:
                if time.monotonic() > clock["deadline"]:
                    return
                t = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                at = head.lower().index(b"content-length:") + 15
                body = await reader.readexactly(int(head[at : head.index(b"\r\n", at)]))
                latencies.append(time.perf_counter() - t)
                if head[9:12] != b"200":
                    raise RuntimeError(f"answered {head[9:12].decode()}: {body[:300]!r}")
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, time.perf_counter() - clock["start"]


def server_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of the processes ``pids`` and their children (uvicorn's workers)."""
    import psutil

    total = 0.0
    procs = [psutil.Process(pid) for pid in pids]
    for p in [q for proc in procs for q in (proc, *proc.children(recursive=True))]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def measure(port: int, pids: list[int], requests: list[bytes], clients: int, seconds: float, docs: int) -> dict:
    """One bounded load; latencies, throughput, and server and client CPU per request."""
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    at_start = {}

    def start() -> None:
        at_start.update(server=server_cpu(pids), client=time.process_time())

    latencies, wall = run(_load(port, requests, clients, seconds, start))
    server, client = server_cpu(pids) - at_start["server"], time.process_time() - at_start["client"]
    a = np.asarray(latencies) * 1e3
    n = len(a)
    return {
        "requests": n,
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "rps": n / wall,
        "docs_per_s": n * docs / wall,
        "server_cpu_us": server / n * 1e6,
        "client_cpu_us": client / n * 1e6,
    }


def run_levels(name: str, port: int, pids: list[int], args, queries: list[str]) -> list[dict]:
    """Every load on one server: for each client count, queries and inserts, single and batched."""
    nq = len(queries)

    def query(k: int, size: int) -> bytes:
        return http_post("/v1/query", {"documents": [{"text": queries[(k * size + j) % nq]} for j in range(size)]}, 0)

    def insert(tag: str, k: int, size: int) -> bytes:
        docs = [{"id": f"{tag}-{k}-{j}", "text": f"{queries[(k * size + j) % nq]} {tag} {k} {j}"} for j in range(size)]
        return http_post("/v1/documents", {"documents": docs}, True)

    measure(port, pids, [query(k, 1) for k in range(200)], 4, 30, 1)  # warm up (the first query loads kernels)
    batches = max(20, args.requests // 20)
    rows = []
    for clients in args.clients:
        tag = f"{name}-{clients}-{time.monotonic_ns()}"
        loads = {
            "query": ([query(k, 1) for k in range(args.requests)], 1),
            "query-100": ([query(k, BATCH) for k in range(batches)], BATCH),
            "insert": ([insert(tag, k, 1) for k in range(args.requests // 2)], 1),
            "insert-100": ([insert(tag + "b", k, BATCH) for k in range(batches // 2)], BATCH),
        }
        for kind, (requests, size) in loads.items():
            if kind not in args.loads:
                continue
            row = {"server": name, "clients": clients, "load": kind, "load_avg": os.getloadavg()[0]}
            row.update(measure(port, pids, requests, clients, args.seconds, size))
            rows.append(row)
            print(
                f"{name:10s} {clients:4d} clients {kind:10s} | p50 {row['p50_ms']:8.2f} ms p99 {row['p99_ms']:8.2f} ms | "
                f"{row['rps']:7.0f} req/s {row['docs_per_s']:8.0f} docs/s | server CPU {row['server_cpu_us']:7.0f} µs/req, "
                f"client {row['client_cpu_us']:5.0f} µs/req | load {row['load_avg']:.1f}",
                flush=True,
            )
    return rows


# ---------------------------------------------------------------------------- the servers


def build_index(path: str, texts: list[str], workers: int) -> None:
    import neardup

    t0 = time.perf_counter()
    step = 100_000
    with neardup.Index.create(path, neardup.MinHashConfig(threshold=THRESHOLD, num_perm=K), workers=workers) as index:
        for lo in range(0, len(texts), step):
            index.add([f"doc-{i:08d}" for i in range(lo, min(lo + step, len(texts)))], texts[lo : lo + step])
    print(
        f"index of {len(texts):,} documents built in {time.perf_counter() - t0:.1f} s at {path}; "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def served_copy(path: str, tmp: str) -> str:
    """A copy of the kept index ``path`` (and its lookup snapshot) in ``tmp``, to serve: the run's
    inserts are near-duplicates of the query texts, so had they stayed in the kept index, every
    later run's queries would find more matches (each run adds about 18,000) and cost more."""
    t0 = time.perf_counter()
    copy = os.path.join(tmp, "served.ndx")
    for suffix in ("", ".lookup"):
        if os.path.exists(path + suffix):
            shutil.copyfile(path + suffix, copy + suffix)
    print(f"serving a copy of {path} ({time.perf_counter() - t0:.1f} s to copy)", flush=True)
    return copy


def serve(procs: list, cmd: list[str]) -> tuple[int, int]:
    """Start ``cmd`` (listening on the port appended to it); its port and pid once it answers."""
    port = free_port()
    procs.append(subprocess.Popen([*cmd, "--port", str(port)], env={**os.environ, "NEARDUP_TOKEN": TOKEN}))
    wait_up(f"http://127.0.0.1:{port}", procs[-1])
    return port, procs[-1].pid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--peer-docs", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=2000, help="most requests per load (batches: a twentieth)")
    ap.add_argument("--seconds", type=float, default=15, help="most seconds per load")
    ap.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--neardup", action=argparse.BooleanOptionalAction, default=True, help="neardup's SQLite server")
    ap.add_argument(
        "--redis-workers", type=int, default=0, help="also serve neardup's index in Redis with N processes (0: not)"
    )
    ap.add_argument(
        "--clients",
        type=lambda v: [int(c) for c in v.split(",")],
        default=list(LEVELS),
        help="concurrent clients of each load, comma-separated",
    )
    ap.add_argument(
        "--loads",
        type=lambda v: v.split(","),
        default=list(LOADS),
        help=f"which loads, comma-separated, of {','.join(LOADS)}",
    )
    ap.add_argument("--corpus-dir", default=None, help="generate the texts once and keep them here (e.g. /tmp)")
    ap.add_argument(
        "--index",
        default=None,
        help="the index file: built and kept there, or reused when it exists; each run serves a copy, so "
        "every run starts from the same index",
    )
    ap.add_argument("--build-workers", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--serve-peer", nargs=3, metavar=("PORT", "REDIS_PORT", "DOCS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_peer:
        import uvicorn

        port, redis_port, docs = map(int, args.serve_peer)
        app = peer_app(redis_port, docs, args.corpus_dir)
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return

    import neardup

    tmp = tempfile.mkdtemp(prefix="bench-service-")
    procs: list[subprocess.Popen] = []
    rows: list[dict] = []
    queries = corpus(3000, seed=1)
    serve_cmd = [sys.executable, "-m", "neardup", "serve", "--log-level", "warning"]
    try:
        path = args.index or os.path.join(tmp, "i.ndx")
        texts = None
        if not args.neardup:
            pass
        elif not os.path.exists(path):
            texts = cached_corpus(args.docs, args.corpus_dir)
            build_index(path, texts, args.build_workers)
        else:
            with neardup.Index.open(path) as index:
                if len(index) != args.docs:
                    raise SystemExit(
                        f"{path} holds {len(index):,} documents, not --docs {args.docs:,} (an index that kept "
                        "the inserts of earlier runs makes queries find more matches: delete it to rebuild)"
                    )
            print(f"reusing {path}", flush=True)
        if args.neardup:
            if args.index:
                path = served_copy(path, tmp)
            port, pid = serve(procs, [*serve_cmd, path])
            rows += run_levels("neardup", port, [pid], args, queries)
        if args.redis_workers:
            redis, redis_port, why = start_redis("--appendonly", "yes", "--appendfsync", "everysec", "--dir", tmp)
            if redis is None:
                print(f"skipping neardup over Redis: {why}")
            else:
                procs.append(redis)
                index_url = f"redis://127.0.0.1:{redis_port}/0/bench"
                build_index(index_url, texts or cached_corpus(args.docs, args.corpus_dir), args.build_workers)
                port, pid = serve(procs, [*serve_cmd, index_url, "--workers", str(args.redis_workers)])
                wait_workers(f"http://127.0.0.1:{port}", args.redis_workers)
                rows += run_levels(f"redis-w{args.redis_workers}", port, [pid, redis.pid], args, queries)
        del texts
        if args.peer:
            redis, redis_port, why = start_redis()
            if redis is None:
                print(f"skipping the datasketch + Redis peer: {why}")
            else:
                procs.append(redis)
                peer = [sys.executable, __file__, "--serve-peer", "0", str(redis_port), str(args.peer_docs)]
                if args.corpus_dir:
                    peer += ["--corpus-dir", args.corpus_dir]
                port = free_port()
                peer[peer.index("--serve-peer") + 1] = str(port)
                procs.append(subprocess.Popen(peer))
                wait_up(f"http://127.0.0.1:{port}", procs[-1])
                rows += run_levels("datasketch", port, [procs[-1].pid, redis.pid], args, queries)
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        if args.json and rows:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
