"""The service under faults: each expected failure of the store answered with its own status and a
one-line reason (never ``500 internal error`` with a stack trace in the log), nothing acknowledged
lost, writes working again once the cause is gone; and the HTTP edges (ids of any characters,
over-limit bodies, slow clients, strict JSON types, the Host header, tokens, start-up mistakes).

Real ``neardup serve`` processes on 127.0.0.1, a real redis-server, real file systems (a small
tmpfs that fills; skipped where ``mount`` is refused), bounded loops. docs/reliability.md
("The service under faults") lists what each test shows.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import neardup  # noqa: E402
from neardup.methods.minhash.config import MinHashConfig  # noqa: E402

from conftest import wait_healthy  # noqa: E402

TOKEN = "fault-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def text(i: int, words: int = 60) -> str:
    return " ".join(f"t{i}w{k}" for k in range(words))


class Server:
    """``neardup serve PATH`` on a free port of 127.0.0.1, its log (stderr) in a file."""

    def __init__(self, path, *args, token=TOKEN, log_dir: Path, host="127.0.0.1", wait=True):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / f"serve-{self.port}.log"
        env = {**ENV}
        env.pop("NEARDUP_TOKEN", None)
        if token:
            env["NEARDUP_TOKEN"] = token
        cmd = [sys.executable, "-m", "neardup", "serve", str(path), "--host", host, "--port", str(self.port)]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([*cmd, "--log-level", "warning", *args], env=env, stderr=log)
        if wait:
            self.wait_ready()
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def wait_ready(self) -> None:
        wait_healthy(self.url, self.proc, self.log.read_text, self.stop)

    def add(self, ids, **extra) -> httpx.Response:
        docs = [{"id": i, "text": text(hash(i) % 100_000)} for i in ids]
        return self.client.post("/v1/documents", json={"documents": docs, **extra}, headers=AUTH)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def assert_no_traceback(server: Server) -> str:
    log = server.log_text()
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    return log


def new_index(path) -> None:
    neardup.Index.create(path, MinHashConfig(threshold=0.8), store_text=True).close()


def stored_ids(path) -> set[str]:
    with neardup.Index.open(path) as index:
        return set(index)


@pytest.fixture
def tmpfs(tmp_path):
    """A 16 MB tmpfs (unmounted afterwards); skips where ``mount`` is refused."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ---------------------------------------------------------------------------- the index file


def test_disk_full_is_507_with_one_line_and_writes_resume_once_there_is_room(tmpfs, tmp_path):
    path = tmpfs / "i.ndx"
    new_index(path)
    server = Server(path, log_dir=tmp_path)
    acknowledged: list[str] = []
    try:
        for batch in range(3):
            ids = [f"a{batch}-{k}" for k in range(20)]
            assert server.add(ids).status_code == 200
            acknowledged += ids
        filler = tmpfs / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        statuses = []
        for batch in range(6):  # bounded: each add is refused whole or stored whole
            ids = [f"f{batch}-{k}" for k in range(40)]
            r = server.add(ids)
            statuses.append(r.status_code)
            if r.status_code == 200:
                acknowledged += ids
            else:
                assert r.status_code == 507, r.text
                assert "full" in r.json()["detail"] and "nothing of it was stored" in r.json()["detail"]
        assert 507 in statuses
        q = server.client.post("/v1/query", json={"documents": [{"text": text(1)}]})
        assert q.status_code == 200  # reads go on
        filler.unlink()
        r = server.add(["after-room"])
        assert r.status_code == 200, r.text
        acknowledged.append("after-room")
    finally:
        assert server.stop() == 0
    log = assert_no_traceback(server)
    assert "with 507" in log and "disk full" in log
    assert set(acknowledged) <= stored_ids(path)
    assert not any(i.startswith("f") for i in stored_ids(path) - set(acknowledged))


def test_an_index_file_removed_or_replaced_under_the_server_is_410_until_it_is_back(tmp_path):
    path = tmp_path / "i.ndx"
    new_index(path)
    server = Server(path, log_dir=tmp_path)
    try:
        assert server.add(["a"]).status_code == 200
        os.rename(path, tmp_path / "moved.ndx")
        r = server.add(["b"])
        assert r.status_code == 410 and "removed" in r.json()["detail"]
        assert server.client.get("/readyz").status_code == 410
        assert server.client.delete("/v1/documents/a", headers=AUTH).status_code == 410
        os.rename(tmp_path / "moved.ndx", path)  # back under its name: writes resume
        assert server.add(["c"]).status_code == 200
        assert server.client.get("/readyz").status_code == 200
        shutil.copy(path, tmp_path / "copy.ndx")
        os.replace(tmp_path / "copy.ndx", path)  # another file under the name
        assert server.add(["d"]).status_code == 410
    finally:
        assert server.stop() == 0
    assert_no_traceback(server)


def test_an_immutable_or_read_only_index_is_refused_by_serve_with_one_line(tmp_path):
    path = tmp_path / "i.ndx"
    new_index(path)
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        server = Server(path, log_dir=tmp_path, wait=False)
        assert server.proc.wait(60) == 1
        log = server.log_text().strip()
        assert "Traceback" not in log and len(log.splitlines()) == 1, log
        assert "cannot open the index for writing" in log
        done = subprocess.run(
            [sys.executable, "-m", "neardup", "index", "check", str(path)], env=ENV, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_an_index_on_read_only_media_is_read_by_query_and_check(tmpfs, tmp_path):
    path = tmpfs / "i.ndx"
    with neardup.Index.create(path, MinHashConfig(threshold=0.8), store_text=True) as index:
        index.add(["a", "b"], [text(1), text(2)])
    if subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True).returncode != 0:
        pytest.skip("cannot remount read-only")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"text": text(1)}) + "\n")
    for args in (["check", str(path)], ["query", str(path), str(queries), "-o", str(tmp_path / "out.jsonl")]):
        done = subprocess.run(
            [sys.executable, "-m", "neardup", "index", *args], env=ENV, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert '"id":"a"' in (tmp_path / "out.jsonl").read_text()
    assert sorted(os.listdir(tmpfs)) == ["i.ndx", "i.ndx.lock"] or "i.ndx-shm" not in os.listdir(tmpfs)


def test_an_index_in_a_folder_the_reader_cannot_write_is_read(tmp_path):
    """Without write permission on the folder (a reader without CAP_DAC_OVERRIDE), SQLite could
    not make the ``-shm`` a WAL reader needs: the index opens as immutable instead."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to read as a process without write permission")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "i.ndx"
    with neardup.Index.create(path, MinHashConfig(threshold=0.8)) as index:
        index.add(["a"], [text(1)])
    folder.chmod(0o555)
    path.chmod(0o444)
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    try:
        probe = subprocess.run([*drop, "touch", str(folder / "x")], capture_output=True)
        if probe.returncode == 0:
            pytest.skip("setpriv did not drop the permission override")
        done = subprocess.run(
            [*drop, sys.executable, "-m", "neardup", "index", "check", str(path)],
            env=ENV,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and '"ok":true' in done.stdout, done.stderr
    finally:
        folder.chmod(0o755)


# ---------------------------------------------------------------------------- Redis


class Redis:
    """A redis-server of the test's own (append-only, fsync per write) with extra arguments."""

    def __init__(self, directory: Path, *extra: str) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
        pytest.importorskip("redis")
        self.directory, self.extra, self.port = directory, extra, free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self) -> None:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory)]
        args += ["--save", "", "--appendonly", "yes", "--appendfsync", "always", *self.extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.exceptions.AuthenticationError:
                return  # up, and wants its password
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def client(self):
        import redis

        return redis.Redis(port=self.port)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(20)


@pytest.fixture
def redis_dir(tmp_path):
    d = tmp_path / "redis"
    d.mkdir()
    servers = []
    yield d, servers
    for s in servers:
        if s.proc.poll() is None:
            s.kill()


def test_redis_at_maxmemory_is_507_and_writes_resume_once_there_is_room(redis_dir, tmp_path):
    directory, servers = redis_dir
    redis = Redis(directory, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    servers.append(redis)
    url = f"{redis.url}/0/full"
    new_index(url)
    server = Server(url, log_dir=tmp_path)
    acknowledged: list[str] = []
    try:
        statuses = []
        for batch in range(60):  # bounded: 60 x 50 documents of ~0.5 KB sketch + text each
            ids = [f"m{batch}-{k}" for k in range(50)]
            r = server.add(ids)
            statuses.append(r.status_code)
            if r.status_code == 200:
                acknowledged += ids
                continue
            assert r.status_code == 507, r.text
            assert "Redis memory is full" in r.json()["detail"]
            break
        assert statuses[-1] == 507, statuses
        assert server.client.post("/v1/query", json={"documents": [{"text": text(3)}]}).status_code == 200
        redis.client().config_set("maxmemory", "0")
        r = server.add(["after-room"])
        assert r.status_code == 200, r.text
        acknowledged.append("after-room")
    finally:
        assert server.stop() == 0
    log = assert_no_traceback(server)
    assert "with 507" in log and "maxmemory" in log
    assert set(acknowledged) == stored_ids(url)


def test_redis_killed_is_503_and_restarted_serves_every_acknowledged_add(redis_dir, tmp_path):
    directory, servers = redis_dir
    redis = Redis(directory)
    servers.append(redis)
    url = f"{redis.url}/0/killed"
    new_index(url)
    server = Server(url, log_dir=tmp_path)
    try:
        assert server.add(["a", "b"]).status_code == 200
        redis.kill()
        r = server.add(["c"])
        assert r.status_code == 503 and r.headers.get("retry-after") == "1", r.text
        assert server.client.post("/v1/query", json={"documents": [{"text": text(3)}]}).status_code == 503
        assert server.client.get("/readyz").status_code == 503
        redis.start()
        deadline = time.monotonic() + 30
        while server.client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.add(["d"]).status_code == 200
        assert server.client.get("/v1/documents/a").status_code == 200
    finally:
        assert server.stop() == 0
    assert_no_traceback(server)
    assert {"a", "b", "d"} <= stored_ids(url)


def test_redis_keys_deleted_under_the_server_is_410(redis_dir, tmp_path):
    directory, servers = redis_dir
    redis = Redis(directory)
    servers.append(redis)
    url = f"{redis.url}/0/flushed"
    new_index(url)
    server = Server(url, log_dir=tmp_path)
    try:
        assert server.add(["a"]).status_code == 200
        redis.client().flushdb()
        r = server.add(["b"])
        assert r.status_code == 410 and "removed" in r.json()["detail"], r.text
        assert server.client.post("/v1/query", json={"documents": [{"text": text(3)}]}).status_code == 410
        assert server.client.get("/readyz").status_code == 410
    finally:
        assert server.stop() == 0
    assert_no_traceback(server)


def test_a_read_only_redis_replica_is_503_and_nothing_is_stored(redis_dir, tmp_path):
    """A server pointed at a read-only store (a Redis replica: every write refused with READONLY)
    answers adds with 503 naming why, and serves queries."""
    directory, servers = redis_dir
    (directory / "p").mkdir()
    (directory / "r").mkdir()
    primary = Redis(directory / "p")
    servers.append(primary)
    replica = Redis(directory / "r", "--replicaof", "127.0.0.1", str(primary.port))
    servers.append(replica)
    with neardup.Index.create(f"{primary.url}/0/ro", MinHashConfig(threshold=0.8)) as index:
        index.add(["a"], [text(1)])
    deadline = time.monotonic() + 30
    while not replica.client().exists("neardup:{ro}:meta") and time.monotonic() < deadline:
        time.sleep(0.1)
    server = Server(f"{replica.url}/0/ro", log_dir=tmp_path)
    try:
        r = server.add(["b"])
        assert r.status_code == 503 and "cannot be written now" in r.json()["detail"], r.text
        q = server.client.post("/v1/query", json={"documents": [{"text": text(1)}]})
        assert q.status_code == 200 and q.json()["results"][0]["matches"][0]["id"] == "a"
    finally:
        assert server.stop() == 0
    log = assert_no_traceback(server)
    assert "with 503" in log and "read only" in log.lower()
    assert stored_ids(f"{primary.url}/0/ro") == {"a"}


@pytest.mark.parametrize(
    ("code", "message", "kind", "status"),
    [
        (13, "database or disk is full", "IndexFullError", 507),
        (8, "attempt to write a readonly database", "IndexReadOnlyError", 503),
        (1032, "attempt to write a readonly database", "IndexReadOnlyError", 503),
        (14, "unable to open database file", "IndexReadOnlyError", 503),
        (778, "disk I/O error", "IndexWriteError", 503),
        (5, "database is locked", "IndexLockedError", 503),
    ],
)
def test_sqlite_write_errors_map_to_their_class_and_status(code, message, kind, status):
    import sqlite3

    from neardup.index.store import write_error
    from neardup.service.operations import error_answer

    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorcode = code
    error = write_error("/x/i.ndx", exc)
    assert type(error).__name__ == kind and "/x/i.ndx" in str(error)
    got, body, _ = error_answer(error, "POST", "/v1/documents")
    assert got == status and "Traceback" not in body["detail"]


# ---------------------------------------------------------------------------- HTTP edges


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory):
    """One server for the HTTP edges: a 1 MB body limit, 1 s for headers, 2 s for a body."""
    folder = tmp_path_factory.mktemp("edges")
    path = folder / "i.ndx"
    neardup.Index.create(path, MinHashConfig(threshold=0.8), store_text=True).close()
    limits = ["--max-body-bytes", "1000000", "--header-timeout", "1", "--body-timeout", "2"]
    server = Server(path, *limits, log_dir=folder)
    yield server
    assert server.stop() == 0
    assert_no_traceback(server)


IDS = ["a/b", "/lead", "trail/", "a//b", "100%", "%2F", "with space", "q?x#y", "ünï/cödé", "日本語", "tab\tid", "+plus"]


def test_ids_of_any_characters_are_readable_and_deletable(edge_server):
    from urllib.parse import quote

    c = edge_server.client
    docs = [{"id": i, "text": f"{text(k)} {k}"} for k, i in enumerate(IDS)]
    assert c.post("/v1/documents", json={"documents": docs}, headers=AUTH).status_code == 200
    for i in IDS:
        url = "/v1/documents/" + quote(i, safe="")
        r = c.get(url)
        assert r.status_code == 200 and r.json()["id"] == i, (i, r.text)
        assert c.delete(url, headers=AUTH).status_code == 204, i
        assert c.get(url).status_code == 404, i


def _post_urllib(url: str, body: bytes) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json", **AUTH})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _post_curl(url: str, body_file: Path) -> tuple[int, bytes]:
    done = subprocess.run(
        ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", "content-type: application/json"]
        + ["-H", AUTH["Authorization"].join(["Authorization: ", ""]), "--data-binary", f"@{body_file}", url],
        capture_output=True,
        timeout=120,
    )
    out, _, code = done.stdout.rpartition(b"\n")
    return int(code or 0), out


def test_an_over_limit_body_is_a_413_that_urllib_httpx_requests_and_curl_all_read(edge_server, tmp_path):
    clients = {
        "urllib": _post_urllib,
        "httpx": lambda url, body: (lambda r: (r.status_code, r.content))(
            httpx.post(url, content=body, headers={"content-type": "application/json", **AUTH}, timeout=60)
        ),
    }
    try:
        import requests

        clients["requests"] = lambda url, body: (lambda r: (r.status_code, r.content))(
            requests.post(url, data=body, headers={"content-type": "application/json", **AUTH}, timeout=60)
        )
    except ImportError:
        pass
    seen = set()
    for size in (2_000_000, 20_000_000, 60_000_000):
        body = b'{"documents": [{"id": "big", "text": "' + b"x" * size + b'"}]}'
        body_file = tmp_path / "body.json"
        body_file.write_bytes(body)
        runs = dict(clients)
        if shutil.which("curl"):
            runs["curl"] = lambda url, body: _post_curl(url, body_file)
        for name, post in runs.items():
            for route in ("/v1/documents", "/v1/query"):
                status, answer = post(edge_server.url + route, body)
                assert status == 413 and b"--max-body-bytes" in answer, (name, size, route, status, answer[:200])
                seen.add(name)
    assert {"urllib", "httpx"} <= seen
    assert edge_server.client.get("/healthz").status_code == 200


def test_slow_headers_and_slow_bodies_get_408_within_their_timeouts(edge_server):
    started = time.monotonic()
    conns = []
    for k in range(20):  # 10 that never finish their headers, 10 that never finish their body
        s = socket.create_connection(("127.0.0.1", edge_server.port), timeout=30)
        if k % 2:
            s.sendall(b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n")
        else:
            s.sendall(b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 500\r\n\r\n{")
        conns.append((k, s))
    for k, s in conns:
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        s.close()
        what = b"--header-timeout" if k % 2 else b"--body-timeout"
        assert answer.startswith(b"HTTP/1.1 408 ") and what in answer, answer
    assert time.monotonic() - started < 20  # 1 s and 2 s deadlines, under load
    assert edge_server.client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/documents", {"documents": [{"id": "x", "text": "t"}], "if_unique": "yes"}, "if_unique"),
        ("/v1/documents", {"documents": [{"id": "x", "text": "t"}], "if_unique": 1}, "if_unique"),
        ("/v1/query", {"documents": [{"text": "t"}], "limit": True}, "limit"),
        ("/v1/query", {"documents": [{"text": "t"}], "limit": "3"}, "limit"),
        ("/v1/query", {"documents": [{"text": "t"}], "min_similarity": "0.5"}, "min_similarity"),
        ("/v1/query", {"documents": [{"text": 5}]}, "documents.0.text"),
        ("/v1/documents", {"documents": [{"id": 7, "text": "t"}]}, "documents.0.id"),
    ],
)
def test_wrong_json_types_are_422_naming_the_field(edge_server, route, body, field):
    r = edge_server.client.post(route, json=body, headers=AUTH)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, r.text


def test_whole_numbers_are_still_accepted_where_json_schema_allows_them(edge_server):
    r = edge_server.client.post("/v1/query", json={"documents": [{"text": "t"}], "limit": 3.0, "min_similarity": 1})
    assert r.status_code == 200, r.text


def test_the_host_header_is_checked_against_the_listening_address(edge_server, tmp_path):
    c = edge_server.client
    for host in ("127.0.0.1", f"127.0.0.1:{edge_server.port}", "localhost:1", "[::1]:8080", "LOCALHOST"):
        assert c.get("/v1/stats", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example", "[::2]"):
        for method, route in (("GET", "/v1/stats"), ("POST", "/v1/query"), ("GET", "/v1/documents/a")):
            r = c.request(method, route, json={"documents": [{"text": "t"}]}, headers={"Host": host})
            assert r.status_code == 421 and "--allowed-hosts" in r.json()["detail"], (host, route)
    path = tmp_path / "h.ndx"
    new_index(path)
    server = Server(path, "--allowed-hosts", "api.example.com", log_dir=tmp_path)
    try:
        assert server.client.get("/v1/stats", headers={"Host": "api.example.com:443"}).status_code == 200
        assert server.client.get("/v1/stats", headers={"Host": "other.example.com"}).status_code == 421
        assert server.client.get("/v1/stats").status_code == 200  # 127.0.0.1 still
    finally:
        assert server.stop() == 0


def test_a_non_ascii_token_is_compared_as_utf8():
    from neardup.service.operations import token_error

    token = "clé-секрет"
    header = "Bearer " + token.encode("utf-8").decode("latin-1")  # what the server gets from curl
    assert token_error(token, header) is None
    assert token_error(token, "Bearer " + token) is not None and token_error(token, "Bearer cle") is not None


def _serve_fails(args, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neardup", "serve", *args],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_start_up_mistakes_are_one_line_without_a_traceback(tmp_path):
    path = tmp_path / "i.ndx"
    new_index(path)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    cases = [
        (["--token-file", str(tmp_path / "missing")], {}, 2, "cannot read"),
        ([], {"NEARDUP_TOKEN": "clé"}, 2, "printable ASCII"),
        ([], {"NUMBA_NUM_THREADS": "0"}, 2, "NUMBA_NUM_THREADS"),
        (["--port", "99999"], {}, 2, "99999"),
        (["--header-timeout", "0"], {}, 2, "--header-timeout"),
        (["--port", str(busy.getsockname()[1])], {}, 1, "address already in use"),
        ([], {"__path": str(tmp_path / "none.ndx")}, 1, "no index there"),
    ]
    try:
        for args, env, code, words in cases:
            target = env.pop("__path", str(path))
            done = _serve_fails([target, *args, "--log-level", "warning"], env)
            assert done.returncode == code, (args, env, done.stderr)
            assert "Traceback" not in done.stderr, (args, done.stderr)
            assert words.lower() in done.stderr.lower(), (args, done.stderr)
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            assert len(lines) <= 3, (args, done.stderr)  # one line, or click's usage, hint and error
    finally:
        busy.close()


def test_redis_passwords_are_masked_in_every_line(tmp_path):
    directory = tmp_path / "redis"
    directory.mkdir()
    redis = Redis(directory, "--requirepass", "pw-Secret-1")
    try:
        rows = tmp_path / "docs.jsonl"
        rows.write_text("".join(json.dumps({"id": f"d{k}", "text": text(k)}) + "\n" for k in range(5)))
        for url in (
            f"redis://:pw-Secret-1@127.0.0.1:{redis.port}/0/masked",
            f"redis://127.0.0.1:{redis.port}/0/masked2?password=pw-Secret-1",
        ):
            outputs = []
            for args in (
                ["index", "create", url, "--method", "minhash"],
                ["index", "add", url, str(rows)],
                ["index", "compact", url],
                ["index", "stats", url],
                ["index", "check", url],
                ["index", "add", url.replace(str(redis.port), "1"), str(rows)],  # unreachable
            ):
                done = subprocess.run(
                    [sys.executable, "-m", "neardup", *args], env=ENV, capture_output=True, text=True, timeout=120
                )
                outputs.append(done.stdout + done.stderr)
            assert "pw-Secret-1" not in "".join(outputs), outputs
            assert "***" in "".join(outputs) or "?" in url  # the query is left out of the shown URL
            done = _serve_fails([url.replace(str(redis.port), "1")])
            assert done.returncode == 1 and "pw-Secret-1" not in done.stderr and "cannot reach" in done.stderr
            done = subprocess.run(
                [sys.executable, "-m", "neardup", "index", "add", url, str(rows), "--replace"],
                env=ENV,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0 and "pw-Secret-1" not in done.stderr and "redis://" in done.stderr
    finally:
        redis.kill()


def test_an_index_made_immutable_under_the_server_is_503_and_writes_resume_after(tmp_path):
    """``chattr +i`` on the index file and its WAL while the server has them open (ext4 refuses
    writes through open descriptors too; tmpfs does not): adds answer 503, and 200 again after
    ``chattr -i``; every acknowledged add is stored."""
    path = tmp_path / "i.ndx"
    new_index(path)
    server = Server(path, log_dir=tmp_path)
    files = [str(path), f"{path}-wal"]
    acknowledged = []
    try:
        assert server.add(["a"]).status_code == 200
        acknowledged.append("a")
        if subprocess.run(["chattr", "+i", *files], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not supported here")
        try:
            r = server.add(["b"])
            if r.status_code == 200:  # a file system that lets open descriptors write (tmpfs)
                acknowledged.append("b")
            else:
                assert r.status_code == 503 and "nothing of it was stored" in r.json()["detail"], r.text
        finally:
            subprocess.run(["chattr", "-i", *files], capture_output=True)
        r = server.add(["c"])
        assert r.status_code == 200, r.text
        acknowledged.append("c")
    finally:
        assert server.stop() == 0
    assert_no_traceback(server)
    assert set(acknowledged) <= stored_ids(path)
