"""The service's fast path: ``POST /v1/query`` and ``POST /v1/documents`` answered as plain ASGI.

FastAPI's layers (routing, dependency solving, the body parsed by the standard library and then
validated as a dict, the answer validated against its response model and encoded) cost about
three times the query of one document: about 0.45 ms of server CPU per single-document query
against 0.16 ms on this path (docs/service.md). This path makes the same checks in the same
spirit, sharing the app's code for each: the body's size (413, by Content-Length or as it is
read), the token (401/403, :func:`~neardup.service.operations.token_error`), the body parsed and validated
in one step by pydantic from the bytes with the app's request models (422 with the same messages,
:func:`~neardup.service.operations.validation_answer`), the operation (:func:`~neardup.service.operations.run_query`,
:func:`~neardup.service.operations.run_add`), and any exception answered as the app answers it
(:func:`~neardup.service.operations.error_answer`: no stack trace reaches a client). The answer is
encoded with orjson.

Where it differs from the FastAPI routes: the token is checked before the body is parsed (FastAPI
parses the JSON first, so a malformed body without a token gets 422 there and 401 here), and a
text with a lone UTF-16 surrogate escape is malformed JSON here (FastAPI's parser accepts it).
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..index.durable import DurableIndex
from .operations import Limits, error_answer, run_add, run_query, token_error, too_large_detail, validation_answer

__all__ = ["DRAIN_BYTES", "HotRoutes", "ServiceApp", "drain", "host_allowed"]

_JSON = (b"content-type", b"application/json")

DRAIN_BYTES = 1 << 30
"""The most bytes of a refused body (over ``--max-body-bytes``) read and discarded before the 413
is sent: a client that writes its whole body before it reads (Python's urllib, which also asks to
close the connection) then reads the 413 rather than a connection reset. A body beyond this is
answered at once and the connection closed; the body timeout bounds a slow one."""


def host_allowed(allowed: frozenset[str] | None, headers) -> bool:
    """Whether the request's ``Host`` header names one of ``allowed`` (None: any host; the port is
    not compared; a request without the header is allowed: browsers always send it)."""
    if allowed is None:
        return True
    for name, value in headers:
        if name == b"host":
            host = value.decode("latin-1").strip().lower()
            if host.startswith("["):  # [::1]:8080
                host = host[1 : host.find("]")] if "]" in host else host
            elif host.count(":") == 1:
                host = host.rpartition(":")[0]
            return host.rstrip(".") in allowed
    return True


async def drain(receive, scope) -> None:
    """Read and discard the rest of a refused request's body (at most :data:`DRAIN_BYTES`); not
    when the client waits for ``100 Continue`` (it has sent no body and reads the answer first)."""
    for name, value in scope["headers"]:
        if name == b"expect" and value.lower() == b"100-continue":
            return
    seen = 0
    while seen <= DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


class ServiceApp(FastAPI):
    """FastAPI, with the requests :attr:`hot` takes answered before FastAPI's own layers, and
    every request's ``Host`` header checked against :attr:`allowed_hosts` first (421 otherwise:
    a page of another site, its name rebound to this address, cannot read through a browser)."""

    hot: HotRoutes | None = None
    allowed_hosts: frozenset[str] | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            if not host_allowed(self.allowed_hosts, scope["headers"]):
                host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
                detail = f"Host header {host!r} is not a name this server answers to (serve --allowed-hosts)"
                await drain(receive, scope)
                await _send(send, 421, {"detail": detail}, {})
                return
            if self.hot is not None:
                route = self.hot.route(scope["method"], scope["path"])
                if route is not None:
                    await route(scope, receive, send)
                    return
        await super().__call__(scope, receive, send)


class _Disconnected(Exception):
    """The client went away before its body arrived: nobody to answer."""


class HotRoutes:
    """The ASGI handlers of the query and add operations over ``index``."""

    def __init__(
        self, index: DurableIndex, *, token: str | None, limits: Limits, auth_reads: bool, models: tuple[Any, Any]
    ) -> None:
        self._index, self._token, self._max = index, token, limits.max_body_bytes
        query_model, add_model = models
        # (model, needs the token, operation, run on the thread pool: an add waits on the disk)
        self._routes = {
            ("POST", "/v1/query"): (query_model, auth_reads, run_query, False),
            ("POST", "/v1/documents"): (add_model, True, run_add, True),
        }

    def route(self, method: str, path: str):
        """The handler of ``method path``, or None (FastAPI answers it)."""
        spec = self._routes.get((method, path))
        if spec is None:
            return None

        async def handle(scope, receive, send) -> None:
            await self._serve(scope, receive, send, *spec)

        return handle

    async def _serve(self, scope, receive, send, model, needs_token: bool, operation, threaded: bool) -> None:
        try:
            length, authorization = None, b""
            for name, value in scope["headers"]:
                if name == b"content-length":
                    length = value
                elif name == b"authorization":
                    authorization = value
            if length is not None and (not length.isdigit() or int(length) > self._max):
                await drain(receive, scope)
                status, answer, headers = self._too_large()
            else:
                body = await self._body(receive, scope)
                if body is None:
                    status, answer, headers = self._too_large()
                else:
                    status, answer, headers = await self._answer(
                        body, authorization, model, needs_token, operation, threaded
                    )
        except _Disconnected:
            return
        except Exception as exc:  # answered as the app answers it: logged, no trace
            status, answer, headers = error_answer(exc, scope["method"], scope["path"])
        await _send(send, status, answer, headers)

    async def _answer(self, body: bytes, authorization: bytes, model, needs_token: bool, operation, threaded: bool):
        if needs_token:
            error = token_error(self._token, authorization.decode("latin-1"))
            if error is not None:
                return error_answer(error, "", "")
        try:
            request = model.model_validate_json(body)
        except ValidationError as exc:
            return 422, validation_answer(exc.errors(include_url=False)), {}
        if threaded:
            return 200, await run_in_threadpool(operation, self._index, request), {}
        return 200, operation(self._index, request), {}

    async def _body(self, receive, scope) -> bytes | None:
        """The request's body, or None once it passes the limit (a chunked body is counted as it
        arrives; the rest of it is then read and discarded, :func:`drain`)."""
        parts, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise _Disconnected
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self._max:
                if message.get("more_body", False):
                    await drain(receive, scope)
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                return parts[0] if len(parts) == 1 else b"".join(parts)

    def _too_large(self) -> tuple[int, dict, dict[str, str]]:
        return 413, {"detail": too_large_detail(self._max)}, {}


async def _send(send, status: int, answer: dict, headers: dict[str, str]) -> None:
    data = orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY)
    raw = [_JSON, (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})
