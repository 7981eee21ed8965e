"""The HTTP API over a durable index (FastAPI): query, add (optionally only if unique), get, delete.

Bodies are JSON; every answer to a bad request says which field or limit it broke (422 for a
malformed body or a field of the wrong type or size, 413 for a body over ``max_body_bytes``),
and no stack trace reaches a client (an unexpected error is logged and answered with 500 and
``{"detail": "internal error"}``). Writes need ``Authorization: Bearer TOKEN`` (compared in
constant time); reads too when ``auth_reads`` is set.

The index is thread-safe (one lock) and ``add_if_unique`` checks and adds under it in one
transaction, so two concurrent requests with near-identical texts never both get added. Over an
index in Redis, several server processes share the index: each catches up with the others'
writes before it answers, and check-and-add stays atomic across them. A store that cannot be
reached (Redis down) is answered with 503 (the details go to the server's log).

The two operations that carry the load, ``POST /v1/query`` and ``POST /v1/documents``, are
answered by :class:`~neardup.service.hot.HotRoutes` before FastAPI's routing (FastAPI's layers
cost several times the query itself); they share the request models, the token check, the
limits, the error answers and the operations (:mod:`neardup.service.operations`) with the
FastAPI routes, which still describe them in the OpenAPI document and answer them when the app
is made with ``hot=False``.
"""

import gc
import os

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from .. import __version__
from ..core.errors import NeardupError
from ..index.durable import DurableIndex
from .hot import HotRoutes, ServiceApp, drain
from .operations import (
    Limits,
    error_answer,
    run_add,
    run_query,
    token_error,
    too_large_detail,
    validation_answer,
)

__all__ = ["Limits", "allowed_hosts_for", "create_app", "freeze_heap"]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def allowed_hosts_for(host: str, extra: str | None = None) -> frozenset[str] | None:
    """The ``Host`` names a server listening on ``host`` answers to: a loopback address answers to
    127.0.0.1, localhost and ::1, another address to itself, every interface (0.0.0.0, ::) to any
    name; ``extra`` (``--allowed-hosts``, comma-separated) adds names, and ``*`` allows any.

    >>> sorted(allowed_hosts_for("127.0.0.1")), allowed_hosts_for("0.0.0.0")
    (['127.0.0.1', '::1', 'localhost'], None)
    >>> sorted(allowed_hosts_for("0.0.0.0", "api.example.com, 10.0.0.5"))
    ['10.0.0.5', 'api.example.com']
    """
    names = {n.strip().lower().strip("[]").rstrip(".") for n in (extra or "").split(",") if n.strip()}
    if "*" in names:
        return None
    host = host.strip("[]").lower()
    if host in ("0.0.0.0", "::", ""):
        return frozenset(names) if names else None
    if host in LOOPBACK_NAMES or host.startswith("127."):
        names |= LOOPBACK_NAMES
    return frozenset(names | {host})


class Match(BaseModel):
    id: str
    similarity: float


class QueryResult(BaseModel):
    id: str | None
    matches: list[Match]


class QueryResponse(BaseModel):
    results: list[QueryResult]


class Duplicate(BaseModel):
    id: str
    matches: list[Match]


class AddResponse(BaseModel):
    added: list[str]
    duplicates: list[Duplicate]


class Error(BaseModel):
    detail: str = Field(description="What was wrong: the field or limit and what was expected.")
    errors: list[dict] | None = None


ERRORS = {code: {"model": Error} for code in (401, 403, 404, 409, 410, 413, 422, 503, 507)}


def _json_integer(value):
    """A JSON integer (also written ``3.0``, as JSON Schema allows), never a boolean nor a string."""
    if isinstance(value, (bool, str)):
        raise ValueError(f"must be an integer, got a {'boolean' if isinstance(value, bool) else 'string'}")
    return value


def request_models(limits: Limits):
    """The request bodies, with the server's limits in their schema (so the OpenAPI description
    says them, and a request that breaks one gets 422 naming the field). Strict types: JSON's own
    type for each field, never coerced (``"if_unique": "yes"``, ``"limit": true`` or ``"3"`` are 422)."""

    class Document(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        id: StrictStr | None = Field(default=None, min_length=1, max_length=1024, description="The document's id.")
        text: StrictStr = Field(max_length=limits.max_text_chars, description="The document's text.")

    class NewDocument(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        id: StrictStr = Field(min_length=1, max_length=1024, description="The document's id (unique in the index).")
        text: StrictStr = Field(max_length=limits.max_text_chars, description="The document's text.")

    class QueryRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        documents: list[Document] = Field(
            min_length=1, max_length=limits.max_batch, description="Texts to look up (ids optional, echoed back)."
        )
        limit: int | None = Field(
            default=None, ge=0, le=limits.max_limit, strict=False, description="At most this many matches each."
        )
        min_similarity: float | None = Field(
            default=None, ge=0.0, le=1.0, description="Default: the index's threshold."
        )

        _limit_is_an_integer = field_validator("limit", mode="before")(_json_integer)

    class AddRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        documents: list[NewDocument] = Field(
            min_length=1, max_length=limits.max_batch, description="Documents to add, with their ids."
        )
        if_unique: bool = Field(default=False, description="Add only documents with no near-duplicate in the index.")
        min_similarity: float | None = Field(default=None, ge=0.0, le=1.0)

    return QueryRequest, AddRequest


class StoredDocument(BaseModel):
    id: str
    empty: bool
    text: str | None = None


def too_large(max_bytes: int) -> JSONResponse:
    return JSONResponse({"detail": too_large_detail(max_bytes)}, status_code=413)


class BodyLimit:
    """ASGI middleware: 413 for a body over ``max_bytes``, by its Content-Length or as it is read."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await drain(receive, scope)
            return await too_large(self.max_bytes)(scope, receive, send)
        if length is not None or scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS"):
            return await self.app(scope, receive, send)
        # no Content-Length (chunked): read the body up to the limit, then hand it on
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                if message.get("more_body", False):
                    await drain(receive, scope)
                return await too_large(self.max_bytes)(scope, receive, send)
            if not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _answer(request: Request, exc: Exception) -> JSONResponse:
    status, body, headers = error_answer(exc, request.method, request.url.path)
    return JSONResponse(body, status_code=status, headers=headers or None)


DEFAULT_LIMITS = Limits()


def freeze_heap() -> None:
    """Leave the objects made so far (the imports, the app, the open index: over 160,000 of
    them) out of every later garbage collection: a server calls it once, just before it serves.

    CPython's full collection walks every tracked object, and one ran every few thousand
    requests, stopping the event loop for all the requests in flight (20-120 ms each at 160k
    objects, measured in docs/service.md: the slowest 1% of answers at 200 clients). A frozen
    object is never collected; what startup made lives as long as the server anyway."""
    gc.collect()
    gc.freeze()


def create_app(
    index: DurableIndex,
    *,
    token: str | None,
    limits: Limits = DEFAULT_LIMITS,
    auth_reads: bool = False,
    hot: bool = True,
    allowed_hosts: frozenset[str] | None = None,
) -> FastAPI:
    """The API over ``index``. ``token``: the bearer token writes need (None: writes refused).
    ``hot``: answer the query and add requests on the fast path (:mod:`neardup.service.hot`).
    ``allowed_hosts``: the names a request's ``Host`` header may give (lower case, without port;
    None: any; :func:`allowed_hosts_for` gives the default of a listening address)."""
    QueryRequest, AddRequest = request_models(limits)
    app = ServiceApp(
        title="neardup",
        version=__version__,
        description="Near-duplicate lookup over a durable index: have we seen something like this before?",
    )
    app.allowed_hosts = allowed_hosts
    if hot:
        app.hot = HotRoutes(index, token=token, limits=limits, auth_reads=auth_reads, models=(QueryRequest, AddRequest))

    async def check_token(request: Request) -> None:  # async: no thread hop for a comparison
        error = token_error(token, request.headers.get("authorization", ""))
        if error is not None:
            raise error

    async def check_read(request: Request) -> None:
        if auth_reads:
            await check_token(request)

    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        return JSONResponse(validation_answer(list(exc.errors())), status_code=422)

    # the store's failures by the exception middleware (one line in the log); anything else by
    # Starlette's server error middleware, which logs its trace
    for kind in (NeardupError, OSError, Exception):
        app.add_exception_handler(kind, _answer)

    @app.post("/v1/query", response_model=QueryResponse, responses=ERRORS, dependencies=[Depends(check_read)])
    async def query(body: QueryRequest) -> dict:  # async: the query takes microseconds, a thread hop more
        """The stored documents like each given text, best first, in request order."""
        return run_query(index, body)

    @app.post("/v1/documents", response_model=AddResponse, responses=ERRORS, dependencies=[Depends(check_token)])
    def add(body: AddRequest) -> dict:
        """Add documents (all, or with ``if_unique`` only those without a near-duplicate; atomic)."""
        return run_add(index, body)

    @app.get(
        "/v1/documents/{doc_id:path}",
        response_model=StoredDocument,
        responses=ERRORS,
        dependencies=[Depends(check_read)],
    )
    async def get(doc_id: str) -> dict:
        """A stored document (its text when the index keeps texts)."""
        row = index.get(doc_id)
        if row is None:
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return row

    @app.delete("/v1/documents/{doc_id:path}", status_code=204, responses=ERRORS, dependencies=[Depends(check_token)])
    def delete(doc_id: str) -> Response:
        """Remove a stored document."""
        try:
            index.remove([doc_id])
        except KeyError:
            raise HTTPException(404, f"no document with id {doc_id!r}") from None
        return Response(status_code=204)

    @app.get("/v1/stats", responses=ERRORS, dependencies=[Depends(check_read)])
    def stats() -> dict:
        """Size, method, settings and scheme of the index."""
        return index.stats()

    @app.get("/healthz")
    def healthz() -> dict:
        """The process answers (``pid``: which server process, when several serve the index)."""
        return {"status": "ok", "pid": os.getpid()}

    @app.get("/readyz", responses=ERRORS)
    def readyz() -> dict:
        """The index is open, its store answers and its file is still there (else 503 or 410)."""
        index.check_ready()
        return {"status": "ready", "documents": len(index)}

    return app
