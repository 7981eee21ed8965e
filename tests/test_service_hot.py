"""The service's fast path (neardup.service.hot) answers as FastAPI's routes do: the same requests
sent to an app with and without it get the same status and body (in process, starlette's
TestClient), and its errors reach no client as a stack trace."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

import neardup
from neardup.index.durable import IndexUnavailableError
from neardup.methods.minhash.config import MinHashConfig
from neardup.service.app import Limits, create_app

TOKEN = "hot-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEXT = " ".join(f"word{i}" for i in range(80))
LIMITS = Limits(max_body_bytes=20_000, max_batch=5, max_text_chars=2_000, max_limit=10)

# (method, path, json body or raw bytes, headers): run in order, writes included
REQUESTS = [
    (
        "POST",
        "/v1/documents",
        {"documents": [{"id": "a", "text": TEXT}, {"id": "b", "text": "other words here"}]},
        AUTH,
    ),
    ("POST", "/v1/query", {"documents": [{"id": "q", "text": TEXT + " extra"}, {"text": "nothing alike at all"}]}, {}),
    ("POST", "/v1/query", {"documents": [{"text": TEXT}], "limit": 1, "min_similarity": 0.5}, {}),
    ("POST", "/v1/query", {"documents": [{"text": TEXT}], "limit": 0}, {}),
    ("POST", "/v1/documents", {"documents": [{"id": "a", "text": "again"}]}, AUTH),  # 409: stored
    ("POST", "/v1/documents", {"documents": [{"id": "c", "text": "x"}, {"id": "c", "text": "y"}]}, AUTH),  # 409
    ("POST", "/v1/documents", {"documents": [{"id": "d", "text": TEXT}], "if_unique": True}, AUTH),
    ("POST", "/v1/documents", {"documents": [{"id": "e", "text": "fresh text for e"}], "if_unique": True}, AUTH),
    ("POST", "/v1/documents", {"documents": [{"id": "f", "text": "t"}]}, {}),  # 401
    ("POST", "/v1/documents", {"documents": [{"id": "f", "text": "t"}]}, {"Authorization": "Bearer no"}),
    ("POST", "/v1/documents", {"documents": [{"id": "f", "text": "t"}]}, {"Authorization": f"Basic {TOKEN}"}),
    ("POST", "/v1/documents", {"documents": [{"text": "no id"}]}, AUTH),  # 422
    ("POST", "/v1/query", {"documents": [{"text": "t"}] * 6}, {}),  # --max-batch
    ("POST", "/v1/query", {"documents": [{"text": "t" * 2001}]}, {}),  # --max-text-chars
    ("POST", "/v1/query", {"documents": [{"text": "t"}], "limit": 11}, {}),
    ("POST", "/v1/query", {"documents": []}, {}),
    ("POST", "/v1/query", {"documents": [{"text": 5}]}, {}),
    ("POST", "/v1/query", {"documents": [{"text": "t", "id": ""}]}, {}),
    ("POST", "/v1/query", {"documents": [{"text": "t"}], "min_similarity": 2}, {}),
    ("POST", "/v1/query", {"documents": [{"text": "t"}], "bogus": 1}, {}),
    ("POST", "/v1/query", {"docs": []}, {}),
    ("POST", "/v1/query", b"x" * 20_001, {"content-type": "application/json"}),  # 413
]

# the same status, worded by pydantic's JSON parser instead of FastAPI's (docs/service.md)
WORDED_APART = [
    ("POST", "/v1/query", [1, 2], {}),
    ("POST", "/v1/query", b'{"documents": [', {"content-type": "application/json"}),
    ("POST", "/v1/documents", b'{"documents": [', {**AUTH, "content-type": "application/json"}),
]


def _call(client, method, path, body, headers):
    if isinstance(body, bytes):
        return client.request(method, path, content=body, headers=headers)
    return client.request(method, path, json=body, headers=headers)


@pytest.fixture
def apps(tmp_path):
    out = []
    for name in ("hot", "fastapi"):
        path = tmp_path / f"{name}.ndx"
        index = neardup.Index.create(path, MinHashConfig(threshold=0.8), store_text=True)
        out.append((index, create_app(index, token=TOKEN, limits=LIMITS, hot=name == "hot")))
    yield out
    for index, _ in out:
        index.close()


def test_the_fast_path_answers_as_the_fastapi_routes(apps):
    (_, hot), (_, plain) = apps
    assert hot.hot is not None and plain.hot is None
    with TestClient(hot) as a, TestClient(plain) as b:
        for method, path, body, headers in REQUESTS:
            ra, rb = _call(a, method, path, body, headers), _call(b, method, path, body, headers)
            assert ra.status_code == rb.status_code, (path, body, ra.text, rb.text)
            assert ra.json() == rb.json(), (path, body)
            assert ra.headers.get("www-authenticate") == rb.headers.get("www-authenticate")
        for method, path, body, headers in WORDED_APART:
            ra, rb = _call(a, method, path, body, headers), _call(b, method, path, body, headers)
            assert ra.status_code == rb.status_code == 422 and ra.json()["detail"].startswith("body: ")
        assert a.get("/v1/documents/e").json() == b.get("/v1/documents/e").json()
        assert (
            a.get("/v1/stats").json()["documents"] == b.get("/v1/stats").json()["documents"] == 3
        )  # a, b, e (d is a near-duplicate of a)


def test_the_fast_path_reads_a_chunked_body_up_to_the_limit(apps):
    (_, hot), _ = apps

    def chunks(n):
        yield b'{"documents": [{"text": "'
        for _ in range(n):
            yield b"w " * 250
        yield b'"}]}'

    with TestClient(hot) as client:
        r = client.post("/v1/query", content=chunks(3))  # no Content-Length: counted as it is read
        assert r.status_code == 200 and r.json()["results"][0]["matches"] == []
        r = client.post("/v1/query", content=chunks(50))
        assert r.status_code == 413 and "--max-body-bytes" in r.json()["detail"]


def test_the_fast_path_checks_the_token_before_reading_the_document_and_without_a_token_refuses_writes(tmp_path):
    with neardup.Index.create(tmp_path / "i.ndx", MinHashConfig()) as index:
        closed = create_app(index, token=TOKEN, auth_reads=True)
        no_token = create_app(index, token=None)
        with TestClient(closed) as a, TestClient(no_token) as b:
            assert a.post("/v1/query", json={"documents": [{"text": "t"}]}).status_code == 401
            assert a.post("/v1/query", json={"documents": [{"text": "t"}]}, headers=AUTH).status_code == 200
            r = b.post("/v1/documents", json={"documents": [{"id": "a", "text": "t"}]}, headers=AUTH)
            assert r.status_code == 403 and "NEARDUP_TOKEN" in r.json()["detail"]


@pytest.mark.parametrize(
    ("error", "status", "detail"),
    [
        (RuntimeError("secret internals"), 500, "internal error"),
        (IndexUnavailableError("redis down"), 503, "the index's store is unavailable; try again later"),
    ],
)
@pytest.mark.parametrize("hot", [True, False])
def test_errors_are_answered_without_a_trace(tmp_path, caplog, error, status, detail, hot):
    with neardup.Index.create(tmp_path / "i.ndx", MinHashConfig()) as index:

        def fail(*args, **kwargs):
            raise error

        index.query_batch = fail
        index.add = fail
        with TestClient(create_app(index, token=TOKEN, hot=hot), raise_server_exceptions=False) as client:
            for path, doc in (("/v1/query", {"text": "t"}), ("/v1/documents", {"id": "a", "text": "t"})):
                r = client.post(path, json={"documents": [doc]}, headers=AUTH)
                assert r.status_code == status and r.json() == {"detail": detail}
                assert "secret" not in r.text and "Traceback" not in r.text
    assert "secret internals" in caplog.text or "redis down" in caplog.text  # the server's log says why
