"""What the service's two paths share (the FastAPI routes of :mod:`neardup.service.app` and the
fast path of :mod:`neardup.service.hot`): the limits, the token check, the answers to invalid
requests and to errors, and the query and add operations over the index."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from ..index.durable import (
    DurableIndex,
    IndexCorruptError,
    IndexFullError,
    IndexGoneError,
    IndexLockedError,
    IndexReadOnlyError,
    IndexUnavailableError,
    IndexWriteError,
)

__all__ = [
    "STORE_ANSWERS",
    "Limits",
    "error_answer",
    "run_add",
    "run_query",
    "token_error",
    "too_large_detail",
    "validation_answer",
]

log = logging.getLogger("neardup.service")


@dataclass(frozen=True)
class Limits:
    """Bounds on one request (each answered with a message naming it)."""

    max_body_bytes: int = 16 * 2**20
    max_batch: int = 1000
    max_text_chars: int = 1_000_000
    max_limit: int = 1000


FLAGS = {"documents": "--max-batch", "text": "--max-text-chars", "limit": "the largest limit"}


def too_large_detail(max_bytes: int) -> str:
    return f"request body over {max_bytes} bytes (--max-body-bytes)"


def _matches(found: list[tuple[str, float]]) -> list[dict[str, Any]]:
    return [{"id": m, "similarity": s} for m, s in found]


def token_error(token: str | None, authorization: str) -> HTTPException | None:
    """Why a request with this ``Authorization`` header may not write (None: it may)."""
    if token is None:
        return HTTPException(403, "writes are disabled: start the server with NEARDUP_TOKEN or --token-file")
    scheme, _, value = authorization.partition(" ")
    # the header's bytes (decoded as Latin-1 by the server) against the token's UTF-8 bytes
    given = value.encode("latin-1", "replace")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given, token.encode("utf-8")):
        return HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
    return None


def validation_answer(errors: list[dict]) -> dict:
    """The 422 body for pydantic's errors: each field as a dotted path and, for a limit the server
    sets, the flag that sets it."""
    out = []
    for e in errors:
        loc = [str(p) for p in e.get("loc", ()) if p != "body"]
        message = e.get("msg", "")
        flag = FLAGS.get(loc[-1]) if loc and e.get("type", "").endswith(("too_long", "less_than_equal")) else None
        if flag:
            message += f" ({flag})"
        out.append({"field": ".".join(loc) or "body", "message": message})
    first = out[0] if out else {"field": "body", "message": "invalid"}
    return {"detail": f"{first['field']}: {first['message']}", "errors": out}


STORE_ANSWERS: tuple[tuple[type[Exception], int, str], ...] = (
    (
        IndexGoneError,
        410,
        "the index was removed from under the server (its file deleted or replaced, or its keys deleted "
        "from Redis); writes are refused so that none is lost",
    ),
    (IndexFullError, 507, "no room to store it: the index's disk or Redis memory is full; nothing of it was stored"),
    (
        IndexReadOnlyError,
        503,
        "the index cannot be written now (read-only file system, immutable file or refused permission); "
        "nothing of it was stored",
    ),
    (IndexWriteError, 503, "the index could not store it (a write error); nothing of it was stored"),
    (IndexUnavailableError, 503, "the index's store is unavailable; try again later"),
    (IndexLockedError, 503, "the index is busy with other writers; try again"),
    (IndexCorruptError, 500, "the index is damaged; the server's log says where (run `neardup index check`)"),
)
"""The answers to the store's expected failures, first match: the class, the status and the
one-line reason in the body (the log has the store's own message, naming the file or URL)."""


def error_answer(exc: Exception, method: str, path: str) -> tuple[int, dict, dict[str, str]]:
    """Status, body and headers answering an exception raised while serving ``method path``
    (logged unless it is the client's fault: a store's failure as one line, anything else with its
    stack trace; never a stack trace to the client)."""
    if isinstance(exc, HTTPException):
        return exc.status_code, {"detail": exc.detail}, dict(exc.headers or {})
    for kind, status, detail in STORE_ANSWERS:
        if isinstance(exc, kind):
            log.log(
                logging.WARNING if kind is IndexLockedError else logging.ERROR,
                "answering %s %s with %d: %s",
                method,
                path,
                status,
                exc,
            )
            return status, {"detail": detail}, {"Retry-After": "1"} if status == 503 else {}
    log.error("error answering %s %s", method, path, exc_info=exc)
    return 500, {"detail": "internal error"}, {}


def run_query(index: DurableIndex, body: Any) -> dict:
    """The answer to a valid query request (``QueryRequest``)."""
    docs = body.documents
    found = index.query_batch([d.text for d in docs], min_similarity=body.min_similarity, limit=body.limit)
    return {"results": [{"id": d.id, "matches": _matches(f)} for d, f in zip(docs, found)]}


def run_add(index: DurableIndex, body: Any) -> dict:
    """The answer to a valid add request (``AddRequest``); raises HTTPException 409 for a repeated
    or already stored id."""
    ids = [d.id for d in body.documents]
    texts = [d.text for d in body.documents]
    if len(set(ids)) != len(ids):
        raise HTTPException(409, "documents: ids must be unique within a request")
    try:
        if body.if_unique:
            r = index.add_if_unique(ids, texts, min_similarity=body.min_similarity)
            return {"added": r.added, "duplicates": [{"id": i, "matches": _matches(m)} for i, m in r.duplicates]}
        index.add(ids, texts)
    except KeyError as exc:
        raise HTTPException(409, str(exc.args[0]) if exc.args else "id exists") from None
    return {"added": ids, "duplicates": []}
