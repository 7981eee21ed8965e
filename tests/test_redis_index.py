"""The index in Redis: what only a store shared by processes does, against a real redis-server.

The contract tests of the durable index run on Redis too (tests/test_durable_index.py, through
the ``index_path`` fixture of tests/conftest.py); here: several handles and processes writing at
once, atomic check-and-add across processes, ``serve`` with several processes, the command line,
damage, an unreachable or restarted server, a missing redis-py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from click.testing import CliRunner

try:
    import httpx
except ImportError:  # the service tests skip
    httpx = None

redis = pytest.importorskip("redis", reason="redis-py is not installed (pip install 'neardup[redis]')")

import neardup  # noqa: E402
from neardup.cli.main import main  # noqa: E402
from neardup.core.errors import IncompatibleSketchError  # noqa: E402
from neardup.index.durable import DurableIndex, IndexCorruptError, IndexUnavailableError  # noqa: E402
from neardup.index.redis_store import parse_redis_url  # noqa: E402
from neardup.methods.exact.config import ExactConfig  # noqa: E402
from neardup.methods.minhash.config import MinHashConfig  # noqa: E402

from conftest import start_redis  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
_count = iter(range(10**9))


@pytest.fixture
def url(redis_server):
    """A fresh index name in the session's Redis."""
    return f"{redis_server.url}/0/r{next(_count)}"


def texts(n: int, seed: int = 0, words: int = 40) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(5000)}" for _ in range(words)) for _ in range(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- paths and errors


def test_url_forms_and_the_password_never_shown():
    connect, name, shown = parse_redis_url("redis://:s3cret@db.example:6380/2/news-2024")
    assert (connect, name, shown) == (
        "redis://:s3cret@db.example:6380/2",
        "news-2024",
        "redis://:***@db.example:6380/2/news-2024",
    )
    for bad in (
        "redis://h:1/news",
        "redis://h:1/x/news",
        "redis://h:1/0/bad name",
        "redis:///0/x",
        "redis://h:1/0/a/b",
    ):
        with pytest.raises(ValueError, match=r"redis://HOST:PORT/DB/NAME"):
            parse_redis_url(bad)
    with pytest.raises(ValueError) as info:
        parse_redis_url("redis://:s3cret@h:1/news")
    assert "s3cret" not in str(info.value)


def test_unreachable_redis_is_one_clear_line_naming_the_url():
    port = free_port()  # nothing listens there
    url = f"redis://127.0.0.1:{port}/0/news"
    with pytest.raises(IndexUnavailableError, match=rf"^redis://127\.0\.0\.1:{port}/0/news: cannot reach Redis"):
        neardup.Index.open(url)  # the first call imports redis-py (about 1 s): not timed
    # a refused connection is answered at once (2 ms measured): no retries and no wait for the 5 s
    # connect timeout; 4 s (under one such timeout) is a bound load does not reach
    t0 = time.monotonic()
    with pytest.raises(IndexUnavailableError, match=rf"^redis://127\.0\.0\.1:{port}/0/news: cannot reach Redis"):
        neardup.Index.open(url)
    with pytest.raises(IndexUnavailableError, match="cannot reach Redis"):
        neardup.Index.create(url, MinHashConfig())
    assert time.monotonic() - t0 < 4
    secret = f"redis://:hunter2@127.0.0.1:{port}/0/news"
    for args in (["index", "query", secret, "--text", "hello"], ["index", "create", secret, "--method", "exact"]):
        proc = subprocess.run(
            [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, env=ENV, timeout=60
        )
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"neardup: error: redis://:***@127.0.0.1:{port}/0/news: cannot reach Redis"
        )
        assert "hunter2" not in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "neardup", "index", "stats", "redis://127.0.0.1:1/news"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert (
        proc.returncode == 1 and "expected redis://HOST:PORT/DB/NAME" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_missing_redis_py_names_the_extra():
    code = "import sys; sys.modules['redis'] = None; sys.argv = ['neardup', 'index', 'stats', 'redis://127.0.0.1:1/0/x']; from neardup.__main__ import run; run()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 1
    assert (
        proc.stderr.strip() == "neardup: error: an index in Redis needs the redis package: pip install 'neardup[redis]'"
    )


def test_other_settings_refused_naming_both_and_create_refuses_an_existing_name(url):
    neardup.Index.create(url, MinHashConfig(threshold=0.7)).close()
    with pytest.raises(IncompatibleSketchError) as info:
        neardup.Index.open(url, config=MinHashConfig(threshold=0.9))
    assert '"threshold": 0.7' in str(info.value) and '"threshold": 0.9' in str(info.value) and url in str(info.value)
    with pytest.raises(FileExistsError, match="exists there already"):
        neardup.Index.create(url, ExactConfig())
    with pytest.raises(FileNotFoundError, match="no index named 'nothing-here'"):
        neardup.Index.open(url.rsplit("/", 1)[0] + "/nothing-here")


def test_damage_is_found_by_check_and_refused_by_open(url, redis_server):
    with neardup.Index.create(url, MinHashConfig()) as index:
        index.add(["a", "b", "c"], texts(3))
    name = url.rsplit("/", 1)[1]
    client = redis.Redis(port=redis_server.port)
    docs = f"neardup:{{{name}}}:docs"
    seq_b = client.hget(f"neardup:{{{name}}}:ids", "b")
    record = bytearray(client.hget(docs, seq_b))
    record[-3] ^= 0xFF
    client.hset(docs, seq_b, bytes(record))
    problems = DurableIndex.check_file(url)
    assert len(problems) == 1 and "'b'" in problems[0] and "checksum" in problems[0]
    with pytest.raises(IndexCorruptError, match=r"'b'.*checksum"):
        neardup.Index.open(url)
    client.hdel(docs, client.hget(f"neardup:{{{name}}}:ids", "c"))  # a row listed but not stored
    assert any("disagree" in p for p in DurableIndex.check_file(url))
    client.hset(f"neardup:{{{name}}}:ids", "a", 999)  # the id map points elsewhere
    assert any("'a'" in p and "id map does not point at this row" in p for p in DurableIndex.check_file(url))
    client.delete(f"neardup:{{{name}}}:meta")
    client.set(f"neardup:{{{name}}}:meta", "junk")
    with pytest.raises(IndexCorruptError, match="holds other data"):
        neardup.Index.open(url)


# ---------------------------------------------------------------------------- several writers


def test_handles_see_each_others_adds_removes_replaces_and_compaction(url):
    """Two writers and a reader, each with its own connection (as separate processes would be):
    every answer reflects every write acknowledged before it, without calling refresh()."""
    t = texts(6)
    a = neardup.Index.create(url, MinHashConfig(threshold=0.6), store_text=True)
    b = neardup.Index.open(url, "a")
    reader = neardup.Index.open(url)
    try:
        a.add(["x", "y"], t[:2])
        assert len(b) == 2 and "x" in b and b.query(t[0]) == [("x", 1.0)] and sorted(reader) == ["x", "y"]
        b.add(["z"], t[2:3])
        a.add(["w"], t[3:4])  # a's own rows after b's: a catches up on z on the way
        assert list(a) == ["x", "y", "z", "w"] and a.query(t[2]) == [("z", 1.0)]
        b.remove(["x"])
        assert "x" not in a and a.query(t[0]) == [] and reader.query(t[0]) == []
        a.add(["y"], t[4:5], replace=True)
        assert b.get("y") == {"id": "y", "empty": False, "text": t[4]}
        assert b.query(t[1]) == [] and b.query(t[4]) == [("y", 1.0)]
        assert reader.stats()["pending_tombstones"] == 2
        b.compact()
        assert sorted(a) == ["w", "y", "z"] and a.stats()["pending_tombstones"] == 0
        a.remove(["w"])
        a.add(["v"], t[5:6])
        assert sorted(b) == sorted(reader) == ["v", "y", "z"]
        assert reader.query(t[5]) == [("v", 1.0)] and reader.check() == []
        with pytest.raises(PermissionError, match="read-only"):
            reader.add(["q"], ["q"])
        with pytest.raises(KeyError, match="'z' is in the index already"):
            a.add(["new", "z"], t[:2])  # refused whole, though another handle added z
        assert "new" not in b
    finally:
        for ix in (a, b, reader):
            ix.close()


def test_check_and_add_checks_again_when_another_writer_adds_in_between(url):
    """The race made deterministic: another writer adds a near-duplicate after this one checked
    and before it adds; the store refuses the add and the second check sees the other's document."""
    base = " ".join(f"w{i}" for i in range(60))
    a = neardup.Index.create(url, MinHashConfig(threshold=0.8))
    b = neardup.Index.open(url, "a")
    checks = []
    original = a._unique_rows

    def check_then_race(*args, **kwargs):
        out = original(*args, **kwargs)
        if not checks:
            b.add(["theirs"], [base + " theirs"])  # after a's check, before a's add
        checks.append(out[0])
        return out

    a._unique_rows = check_then_race
    try:
        result = a.add_if_unique(["mine"], [base + " mine"])
        assert checks == [[0], []]  # accepted by the first check, refused by the second
        assert result.added == [] and result.duplicates[0][0] == "mine" and result.duplicates[0][1][0][0] == "theirs"
        assert sorted(a) == sorted(b) == ["theirs"]
    finally:
        a.close()
        b.close()


WRITER = textwrap.dedent(
    """
    import json, sys, time
    import neardup
    url, me, other, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    texts = json.loads(sys.stdin.readline())
    with neardup.Index.open(url, "a") as index:
        for lo in range(0, n, 10):
            index.add([f"{me}-{i}" for i in range(lo, lo + 10)], texts[me][lo : lo + 10])
        deadline = time.monotonic() + 60
        while len(index) < 2 * n and time.monotonic() < deadline:
            time.sleep(0.01)
        found = [index.query(t, limit=1) for t in texts[other]]
        print(json.dumps({"ids": sorted(index), "found": found}))
    """
)


def test_two_processes_write_and_read_each_others_writes(url, tmp_path):
    n = 60
    neardup.Index.create(url, MinHashConfig(threshold=0.7)).close()
    corpus = {"p": texts(n, seed=1), "q": texts(n, seed=2)}
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), url, me, other, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for me, other in (("p", "q"), ("q", "p"))
    ]
    for p in procs:
        p.stdin.write(json.dumps(corpus) + "\n")
        p.stdin.flush()
    outs = [json.loads(p.communicate(timeout=180)[0]) for p in procs]
    every = sorted(f"{k}-{i}" for k in "pq" for i in range(n))
    for out, other in zip(outs, "qp"):
        assert out["ids"] == every
        assert out["found"] == [[[f"{other}-{i}", 1.0]] for i in range(n)]


CHECK_AND_ADD = textwrap.dedent(
    """
    import json, sys
    import neardup
    from neardup.index.store import WriteConflict
    url, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    index = neardup.Index.open(url, "a")
    conflicts = 0
    insert = index._store.insert

    def counting_insert(*args, **kwargs):
        global conflicts
        try:
            return insert(*args, **kwargs)
        except WriteConflict:
            conflicts += 1
            raise

    index._store.insert = counting_insert
    index.query("warm up the kernels")
    print("ready", flush=True)
    sys.stdin.readline()  # go
    added, duplicates = [], {}
    for r in range(rounds):
        base = " ".join(f"r{r}w{i}" for i in range(60))
        result = index.add_if_unique([f"{me}-{r}"], [base + f" tail-{me}"])
        added += result.added
        duplicates.update({d: m[0][0] for d, m in result.duplicates})
    print(json.dumps({"added": added, "duplicates": duplicates, "conflicts": conflicts}))
    index.close()
    """
)


def test_concurrent_check_and_add_from_two_processes_adds_exactly_one(url, tmp_path):
    """Two processes race through the same rounds of near-identical texts: in every round exactly
    one of them adds its text and the other gets it back as the near-duplicate."""
    rounds = 40
    neardup.Index.create(url, MinHashConfig(threshold=0.8)).close()
    script = tmp_path / "check_and_add.py"
    script.write_text(CHECK_AND_ADD)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), url, me, str(rounds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for me in ("p", "q")
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [json.loads(p.communicate(timeout=180)[0]) for p in procs]
    finally:
        for p in procs:
            p.kill()
    added = sorted(outs[0]["added"] + outs[1]["added"])
    assert len(added) == rounds and sorted(int(a.split("-")[1]) for a in added) == list(range(rounds))
    for me, other, out in (("p", "q", outs[0]), ("q", "p", outs[1])):
        for dup, match in out["duplicates"].items():
            assert dup.startswith(me) and match == f"{other}-{dup.split('-')[1]}"
    with neardup.Index.open(url) as index:
        assert sorted(index) == added
    print(json.dumps({"rounds": rounds, "conflicts_retried": outs[0]["conflicts"] + outs[1]["conflicts"]}))


# ---------------------------------------------------------------------------- Redis itself


def test_acknowledged_adds_survive_a_killed_redis_with_fsync_always(tmp_path):
    """kill -9 of redis-server (append-only file, fsync per write): every acknowledged add is there
    after a restart; while it is down a query is a clear error, and the same handle works again after."""
    server = start_redis(tmp_path / "redis")
    url = f"{server.url}/0/durable"
    t = texts(50)
    try:
        index = neardup.Index.create(url, ExactConfig())
        for lo in range(0, 50, 5):
            index.add([f"d{i}" for i in range(lo, lo + 5)], t[lo : lo + 5])
        server.stop(kill=True)
        with pytest.raises(IndexUnavailableError, match=rf"{url}: cannot reach Redis"):
            index.query(t[0])
        server.start()
        assert len(index) == 50 and index.query(t[7]) == [("d7", 1.0)]
        index.close()
        assert DurableIndex.check_file(url) == []
    finally:
        server.stop()


# ---------------------------------------------------------------------------- command line


def cli(*args, code=0):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res


def test_cli_round_trip_and_dedup_against_redis(url, tmp_path):
    docs = texts(30, seed=3)
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"id": f"a{i}", "text": t}) + "\n" for i, t in enumerate(docs)))
    cli("index", "create", url, "--method", "minhash", "--threshold", "0.7", "--store-text")
    assert "exists there already" in cli("index", "create", url, "--method", "exact", code=1).output
    cli("index", "add", url, src)
    assert json.loads(cli("index", "query", url, "--text", docs[4]).output) == [{"id": "a4", "similarity": 1.0}]
    stats = json.loads(cli("index", "stats", url).output)
    assert stats["store"] == "redis" and stats["documents"] == 30 and stats["threshold"] == 0.7 and stats["path"] == url
    ids = tmp_path / "ids.txt"
    ids.write_text("a1\na2\n")
    cli("index", "remove", url, "--ids", ids)
    assert json.loads(cli("index", "check", url).output) == {"path": url, "documents": 28, "ok": True}
    cli("index", "compact", url)
    assert json.loads(cli("index", "stats", url).output)["pending_tombstones"] == 0
    # dedup a new batch against the index: copies of stored documents go, the rest is added
    new = tmp_path / "new.jsonl"
    fresh = texts(5, seed=9)
    rows = [{"id": "n0", "text": docs[5]}, {"id": "n1", "text": docs[1]}] + [
        {"id": f"f{i}", "text": t} for i, t in enumerate(fresh)
    ]
    new.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli("dedup", new, "--against", url, "--update", "-o", tmp_path / "kept.jsonl")
    kept = [json.loads(line)["id"] for line in (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert kept == ["n1"] + [f"f{i}" for i in range(5)]  # n0 copies a5; a1 was removed, so n1 stays
    with neardup.Index.open(url) as index:
        assert len(index) == 34 and index.query(fresh[2]) == [("f2", 1.0)] and index.get("n1")["text"] == docs[1]


# ---------------------------------------------------------------------------- the service

TOKEN = "redis-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Serve:
    """``neardup serve URL`` in a process of its own on a free port of 127.0.0.1."""

    def __init__(self, url: str, *args: str) -> None:
        if httpx is None:
            pytest.skip("httpx is not installed (pip install 'neardup[test]')")
        pytest.importorskip("fastapi")
        pytest.importorskip("uvicorn")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**ENV, "NEARDUP_TOKEN": TOKEN}
        cmd = [sys.executable, "-m", "neardup", "serve", url, "--port", str(self.port), "--log-level", "warning", *args]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read()}")
            try:
                if httpx.get(self.base + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not start in 90 s")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def test_two_servers_share_one_index_and_check_and_add_stays_atomic_across_them(url):
    neardup.Index.create(url, MinHashConfig(threshold=0.8), store_text=True).close()
    a, b = Serve(url), Serve(url)
    try:
        ca, cb = a.client(), b.client()
        t = texts(3, seed=5)
        r = ca.post("/v1/documents", json={"documents": [{"id": "one", "text": t[0]}]}, headers=AUTH)
        assert r.status_code == 200 and r.json()["added"] == ["one"]
        q = cb.post("/v1/query", json={"documents": [{"text": t[0]}]})
        assert q.json()["results"][0]["matches"] == [{"id": "one", "similarity": 1.0}]
        assert cb.get("/v1/documents/one").json()["text"] == t[0]
        assert cb.delete("/v1/documents/one", headers=AUTH).status_code == 204
        assert ca.get("/v1/documents/one").status_code == 404
        assert ca.post("/v1/query", json={"documents": [{"text": t[0]}]}).json()["results"][0]["matches"] == []
        # near-identical texts sent at once through both servers: exactly one is added
        base = " ".join(f"s{i}" for i in range(60))
        answers: list[dict] = []

        def send(k: int) -> None:
            with (a if k % 2 else b).client() as c:
                body = {"documents": [{"id": f"c{k}", "text": base + f" v{k}"}], "if_unique": True}
                answers.append(c.post("/v1/documents", json=body, headers=AUTH).json())

        threads = [threading.Thread(target=send, args=(k,)) for k in range(12)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        added = [x for ans in answers for x in ans["added"]]
        assert len(added) == 1 and sum(len(ans["duplicates"]) for ans in answers) == 11
        assert ca.get("/v1/stats").json()["documents"] == cb.get("/v1/stats").json()["documents"] == 1
    finally:
        assert a.stop() == 0 and b.stop() == 0


def test_serve_with_two_workers_over_redis(url):
    """``--workers 2``: a write answered by one worker process is seen by a query answered by the other."""
    neardup.Index.create(url, MinHashConfig(threshold=0.8)).close()
    server = Serve(url, "--workers", "2")
    try:
        clients: dict[int, httpx.Client] = {}
        for _ in range(200):  # a new connection each time: the kernel hands it to either worker
            c = server.client()
            pid = c.get("/healthz").json()["pid"]
            if pid in clients:
                c.close()
            else:
                clients[pid] = c
            if len(clients) == 2:
                break
        assert len(clients) == 2, "every connection went to one worker"
        (p1, c1), (p2, c2) = clients.items()
        t = texts(4, seed=11)
        for i, (writer, reader) in enumerate(((c1, c2), (c2, c1))):
            assert (
                writer.post(
                    "/v1/documents", json={"documents": [{"id": f"d{i}", "text": t[i]}]}, headers=AUTH
                ).status_code
                == 200
            )
            found = reader.post("/v1/query", json={"documents": [{"text": t[i]}]}).json()["results"][0]["matches"]
            assert found == [{"id": f"d{i}", "similarity": 1.0}]
            assert writer.get("/healthz").json()["pid"] != reader.get("/healthz").json()["pid"]
        assert c1.get("/v1/stats").json()["documents"] == c2.get("/v1/stats").json()["documents"] == 2
        for c in clients.values():
            c.close()
    finally:
        assert server.stop() == 0


def test_serve_refuses_workers_on_a_sqlite_index(tmp_path):
    path = tmp_path / "x.ndx"
    neardup.Index.create(path, ExactConfig()).close()
    res = CliRunner().invoke(main, ["serve", str(path), "--workers", "2"])
    assert res.exit_code == 2 and "an index in Redis (redis://HOST:PORT/DB/NAME)" in res.output


def test_a_server_answers_503_while_redis_is_down_and_recovers(tmp_path):
    redis_server = start_redis(tmp_path / "redis")
    url = f"{redis_server.url}/0/svc"
    t = texts(2, seed=13)
    try:
        with neardup.Index.create(url, ExactConfig()) as index:
            index.add(["a"], t[:1])
        server = Serve(url)
        try:
            with server.client() as c:
                assert c.post("/v1/query", json={"documents": [{"text": t[0]}]}).status_code == 200
                redis_server.stop(kill=True)
                for r in (
                    c.post("/v1/query", json={"documents": [{"text": t[0]}]}),
                    c.post("/v1/documents", json={"documents": [{"id": "b", "text": t[1]}]}, headers=AUTH),
                    c.get("/readyz"),
                ):
                    assert r.status_code == 503 and r.json() == {
                        "detail": "the index's store is unavailable; try again later"
                    }
                assert c.get("/healthz").status_code == 200  # the process itself is fine
                redis_server.start()
                assert (
                    c.post("/v1/documents", json={"documents": [{"id": "b", "text": t[1]}]}, headers=AUTH).status_code
                    == 200
                )
                assert c.get("/readyz").json()["documents"] == 2
        finally:
            assert server.stop() == 0
        assert "Traceback" not in server.proc.stderr.read()
    finally:
        redis_server.stop()


def test_a_write_retried_after_a_lost_reply_is_not_applied_twice(url, monkeypatch):
    """redis-py sends a script again when the connection broke before the reply came; the second
    send finds the answer of the first (under its operation key) instead of adding again."""
    import neardup.index.redis_store as redis_store

    class FixedUUID:
        hex = "same-operation"

    with neardup.Index.create(url, ExactConfig()) as index:
        store = index._store
        monkeypatch.setattr(redis_store.uuid, "uuid4", lambda: FixedUUID)
        first = store.insert(["a", "b"], [b"\x00" * 16, b"\x01" * 16], [False, False])
        again = store.insert(["a", "b"], [b"\x00" * 16, b"\x01" * 16], [False, False])  # not "a is in the index"
        assert first == again == [1, 2] and store.version()[1] == 2
        monkeypatch.undo()
        with pytest.raises(KeyError, match="'a' is in the index already"):
            store.insert(["a"], [b"\x02" * 16], [False])  # a new operation: refused as usual


def test_check_and_add_gives_up_with_a_clear_error_when_others_keep_adding(url, monkeypatch):
    import neardup.index.durable as durable

    monkeypatch.setattr(durable, "CHECK_AND_ADD_TIMEOUT_S", 0.2)
    a = neardup.Index.create(url, ExactConfig())
    b = neardup.Index.open(url, "a")
    original = a._unique_rows
    rounds = []

    def others_keep_adding(*args, **kwargs):
        out = original(*args, **kwargs)
        rounds.append(1)
        b.add([f"other-{len(rounds)}"], [f"some other text {len(rounds)}"])  # between every check and add
        time.sleep(0.05)
        return out

    a._unique_rows = others_keep_adding
    try:
        with pytest.raises(
            durable.IndexLockedError,
            match=r"other writers kept adding documents for 0\.2 s; the check-and-add did not get in",
        ):
            a.add_if_unique(["mine"], ["my text"])
        assert rounds and "mine" not in b and len(b) == len(rounds)  # every round lost to another add
    finally:
        a.close()
        b.close()


def test_serve_exits_with_one_line_when_redis_is_unreachable():
    port = free_port()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup",
            "serve",
            f"redis://127.0.0.1:{port}/0/x",
            "--workers",
            "2",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith(f"neardup: error: redis://127.0.0.1:{port}/0/x: cannot reach Redis")
    )
