"""`neardup serve`: a real server process on 127.0.0.1 and a real HTTP client (httpx)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import neardup  # noqa: E402
from neardup.methods.minhash.config import MinHashConfig  # noqa: E402

from conftest import wait_healthy  # noqa: E402

TOKEN = "test-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE_TEXT = " ".join(f"word{i}" for i in range(80))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, path, *args, token=TOKEN):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop("NEARDUP_TOKEN", None)
        if token:
            env["NEARDUP_TOKEN"] = token
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neardup",
                "serve",
                str(path),
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                *args,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_healthy(self.url, self.proc, self.proc.stderr.read, self.stop)
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def stop(self, sig=signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("svc") / "i.ndx"
    neardup.Index.create(path, MinHashConfig(threshold=0.8), store_text=True).close()
    s = Server(path, "--max-batch", "50", "--max-text-chars", "5000", "--max-body-bytes", "200000")
    yield s
    assert s.stop() == 0


def test_add_query_get_delete_stats(server):
    c = server.client
    r = c.post(
        "/v1/documents",
        json={"documents": [{"id": "a", "text": BASE_TEXT}, {"id": "b", "text": "other " * 30}]},
        headers=AUTH,
    )
    assert r.status_code == 200 and r.json() == {"added": ["a", "b"], "duplicates": []}
    r = c.post(
        "/v1/query",
        json={
            "documents": [{"id": "q1", "text": BASE_TEXT + " extra"}, {"text": "nothing like it at all"}],
            "limit": 5,
        },
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert (
        results[0]["id"] == "q1"
        and results[0]["matches"][0]["id"] == "a"
        and results[0]["matches"][0]["similarity"] > 0.8
    )
    assert results[1] == {"id": None, "matches": []}
    assert c.get("/v1/documents/a").json() == {"id": "a", "empty": False, "text": BASE_TEXT}
    assert c.get("/v1/documents/zzz").status_code == 404
    r = c.post("/v1/documents", json={"documents": [{"id": "a", "text": "x"}]}, headers=AUTH)
    assert r.status_code == 409 and "'a'" in r.json()["detail"]
    assert c.delete("/v1/documents/b", headers=AUTH).status_code == 204
    assert c.delete("/v1/documents/b", headers=AUTH).status_code == 404
    stats = c.get("/v1/stats").json()
    assert stats["documents"] == 1 and stats["method"] == "minhash" and stats["scheme"]["scheme"] == "minhash"
    assert c.get("/readyz").json()["status"] == "ready"
    assert "/v1/query" in c.get("/openapi.json").json()["paths"] and c.get("/docs").status_code == 200


def test_if_unique_adds_only_new_documents(server):
    c = server.client
    docs = [
        {"id": "u1", "text": "fresh " + BASE_TEXT},
        {"id": "u2", "text": "zeta " * 40},
        {"id": "u3", "text": "zeta " * 40},
    ]
    r = c.post("/v1/documents", json={"documents": docs, "if_unique": True}, headers=AUTH)
    body = r.json()
    assert r.status_code == 200 and body["added"] == ["u2"]
    dups = {d["id"]: d["matches"][0]["id"] for d in body["duplicates"]}
    assert dups["u1"] in ("a", "b") or dups["u1"] == "a"
    assert dups["u3"] == "u2"


def test_concurrent_check_and_add_never_admits_two_near_identical_texts(server):
    c = server.client
    results = []

    def post(k):
        with httpx.Client(base_url=server.url, timeout=30) as cl:
            text = "concurrency " + " ".join(f"tok{i}" for i in range(60)) + f" v{k}"
            results.append(
                cl.post(
                    "/v1/documents",
                    json={"documents": [{"id": f"c{k}", "text": text}], "if_unique": True},
                    headers=AUTH,
                ).json()
            )

    threads = [threading.Thread(target=post, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [r["added"] for r in results if r["added"]]
    assert len(results) == 12 and len(added) == 1
    assert sum(len(r["duplicates"]) for r in results) == 11
    assert c.get(f"/v1/documents/{added[0][0]}").status_code == 200


def test_auth(server):
    c = server.client
    doc = {"documents": [{"id": "x1", "text": "t"}]}
    assert c.post("/v1/documents", json=doc).status_code == 401
    assert c.post("/v1/documents", json=doc, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.post("/v1/documents", json=doc, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert c.delete("/v1/documents/a").status_code == 401
    assert c.post("/v1/query", json={"documents": [{"text": "t"}]}).status_code == 200  # reads are open


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (
            {"documents": [{"text": "t"}] * 51},
            422,
            "documents: List should have at most 50 items after validation, not 51 (--max-batch)",
        ),
        (
            {"documents": [{"text": "t" * 5001}]},
            422,
            "documents.0.text: String should have at most 5000 characters (--max-text-chars)",
        ),
        ({"documents": []}, 422, "documents"),
        ({"documents": [{"text": 5}]}, 422, "documents.0.text"),
        ({"documents": [{"text": "t"}], "limit": -1}, 422, "limit"),
        ({"documents": [{"text": "t"}], "min_similarity": 2}, 422, "min_similarity"),
        ({"documents": [{"text": "t"}], "bogus": 1}, 422, "bogus"),
        ({"docs": []}, 422, "documents"),
    ],
)
def test_limits_and_bad_bodies_name_the_field(server, body, status, says):
    r = server.client.post("/v1/query", json=body)
    assert r.status_code == status and says in r.json()["detail"], r.text
    assert "Traceback" not in r.text


def test_malformed_json_oversized_body_and_missing_id(server):
    c = server.client
    r = c.post("/v1/query", content=b'{"documents": [', headers={"content-type": "application/json"})
    assert r.status_code == 422 and "Traceback" not in r.text and "JSON" in r.text
    r = c.post("/v1/query", content=b"x" * 200001, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "--max-body-bytes" in r.json()["detail"]

    def chunks():  # no Content-Length: counted as it is read
        for _ in range(30):
            yield b" " * 10000

    r = c.post("/v1/query", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = c.post("/v1/documents", json={"documents": [{"text": "no id"}]}, headers=AUTH)
    assert r.status_code == 422 and r.json()["detail"] == "documents.0.id: Field required"


def test_writes_refused_without_a_token_and_listens_on_loopback(tmp_path):
    path = tmp_path / "i.ndx"
    neardup.Index.create(path, MinHashConfig()).close()
    s = Server(path, token=None)
    try:
        r = s.client.post("/v1/documents", json={"documents": [{"id": "a", "text": "t"}]}, headers=AUTH)
        assert r.status_code == 403 and "NEARDUP_TOKEN" in r.json()["detail"]
        assert s.client.post("/v1/query", json={"documents": [{"text": "t"}]}).status_code == 200
        out = (
            subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
            if os.path.exists("/usr/bin/ss")
            else ""
        )
        if out:
            line = next(ln for ln in out.splitlines() if f":{s.port} " in ln)
            assert "127.0.0.1" in line
    finally:
        assert s.stop() == 0


def test_sigterm_drains_and_kill_9_loses_no_acknowledged_insert(tmp_path, monkeypatch):
    """Three servers, each given 30 inserts (each acknowledged before the next is sent) and then
    one insert it holds in flight (tests/crash_points.py, point held-add) until the signal has
    come: kill -9 twice (the held insert gets no answer and is not added), then SIGTERM, which
    drains: released once the server has stopped listening, the held insert is answered 200 and
    the server exits 0. Every acknowledged insert is in the index and check() passes."""
    from crash_points import at_point, wait_at

    path = tmp_path / "i.ndx"
    neardup.Index.create(path, MinHashConfig()).close()
    marker = tmp_path / "held"
    release = tmp_path / "held.release"
    real_popen = subprocess.Popen

    def popen_at_point(command, **kwargs):  # Server's `python -m neardup serve` through crash_points.py
        return real_popen(at_point(list(command), "held-add", marker), **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen_at_point)
    acknowledged = []
    for trial in range(3):
        s = Server(path)
        for k in range(30):
            doc_id = f"t{trial}-{k}"
            r = s.client.post(
                "/v1/documents", json={"documents": [{"id": doc_id, "text": f"doc {doc_id} " * 20}]}, headers=AUTH
            )
            assert r.status_code == 200, r.text
            acknowledged.append(doc_id)
        held: dict = {}

        def send(doc_id=f"t{trial}-held"):
            body = {"documents": [{"id": doc_id, "text": f"doc {doc_id} " * 20}]}
            try:
                held["response"] = s.client.post("/v1/documents", json=body, headers=AUTH)
            except httpx.HTTPError as exc:
                held["error"] = exc

        thread = threading.Thread(target=send)
        thread.start()
        wait_at(s.proc, marker, "held-add")
        if trial < 2:
            assert s.stop(signal.SIGKILL) == -signal.SIGKILL
            thread.join(60)
            assert "error" in held, held  # never answered
        else:
            s.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the server shuts down: it stops listening first
                try:
                    socket.create_connection(("127.0.0.1", s.port), timeout=1).close()
                except OSError:
                    break
                time.sleep(0.01)
            else:
                raise AssertionError("the server kept listening 60 s after SIGTERM")
            release.touch()
            thread.join(60)
            assert held["response"].status_code == 200, held  # drained: the request in flight is answered
            acknowledged.append(f"t{trial}-held")
            assert s.proc.wait(60) == 0
        s.client.close()
    with neardup.Index.open(path) as index:
        assert set(acknowledged) <= set(index) and len(acknowledged) == 91
        assert "t0-held" not in index and "t1-held" not in index  # killed before they were added
        assert index.check() == []


def test_openapi_fuzz_no_5xx_and_responses_match_the_schema(server):
    """schemathesis generates requests for every operation from the OpenAPI description (bounded:
    25 examples each): no 5xx, every response matches the schema."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/query", "/v1/documents", "/v1/documents/{doc_id}", "/v1/stats"}
    for op in operations:

        @given(case=op.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case):
            case.call_and_validate(headers=AUTH)

        fuzz()


def test_the_usage_curl_example_works_as_written(tmp_path):
    """The service example of docs/usage.md, run as written (on a free port instead of 8080)."""
    import re
    import shutil

    from conftest import REPO

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    text = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    block = re.search(r"## Running the service.*?```bash\n(.*?)```", text, flags=re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    assert lines[0] == "neardup index create pages.ndx --store-text"
    assert lines[1].startswith("NEARDUP_TOKEN=s3cret neardup serve pages.ndx --port 8080")
    neardup.Index.create(tmp_path / "pages.ndx", MinHashConfig(), store_text=True).close()
    s = Server(tmp_path / "pages.ndx", token="s3cret")
    try:
        outputs = []
        for line in lines[2:]:
            cmd = line.replace("localhost:8080", f"127.0.0.1:{s.port}")
            outputs.append(subprocess.run(cmd, shell=True, capture_output=True, text=True, check=True).stdout)
        assert json.loads(outputs[0]) == {"added": ["p1"], "duplicates": []}
        assert json.loads(outputs[1]) == {"results": [{"id": None, "matches": [{"id": "p1", "similarity": 1.0}]}]}
        assert json.loads(outputs[2]) == {
            "added": [],
            "duplicates": [{"id": "p2", "matches": [{"id": "p1", "similarity": 1.0}]}],
        }
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("flag", ["--access-log", "--no-access-log"])
def test_the_access_log_can_be_turned_off(tmp_path, flag):
    path = tmp_path / "i.ndx"
    neardup.Index.create(path, MinHashConfig()).close()
    s = Server(path, "--log-level", "info", flag)
    assert s.client.post("/v1/query", json={"documents": [{"text": "t"}]}).status_code == 200
    assert s.stop() == 0
    logged = s.proc.stdout.read() + s.proc.stderr.read()
    assert "Application startup complete" in logged  # the info level is on either way
    assert ('"POST /v1/query HTTP/1.1" 200' in logged) == (flag == "--access-log")
