"""Deadlines for slow clients: a request's headers and its body must arrive in time (408 otherwise).

uvicorn closes a connection that stays idle between requests (``timeout_keep_alive``) but sets no
deadline on a request that is being sent: a client that sends its headers or its body a byte at a
time holds a connection (and, for a body, a task of the server) for as long as it likes. This
protocol (uvicorn's ``httptools`` one) arms a timer when a connection opens and when a request's
first byte arrives (``header_timeout`` seconds for the headers), re-arms it when the headers are
complete (``body_timeout`` seconds for the whole body) and disarms it when the request has
arrived. When it fires before the answer has started, the client gets ``408 Request Timeout`` with
a one-line JSON reason and the connection is closed (the app sees the client as gone).

The deadlines ride on uvicorn's config (:func:`timed_config`), so the worker processes of
``serve --workers N`` get them too.
"""

from __future__ import annotations

import functools
import json
from typing import Any

__all__ = ["protocol_class", "timed_config"]

_ATTRIBUTE = "neardup_timeouts"


def _answer_408(what: str, seconds: float) -> bytes:
    body = json.dumps({"detail": f"the request's {what} did not arrive within {seconds:g} s (--{what}-timeout)"})
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode()


@functools.cache
def protocol_class() -> Any:
    """uvicorn's httptools protocol with the deadlines, or None where httptools is missing (then
    uvicorn's own h11 protocol serves, without them)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class TimedHttpToolsProtocol(HttpToolsProtocol):
        """:class:`HttpToolsProtocol` with a header deadline and a body deadline per request."""

        def __init__(self, config, *args, **kwargs) -> None:
            super().__init__(config, *args, **kwargs)
            self._timeouts = getattr(config, _ATTRIBUTE, (10.0, 60.0))
            self._deadline = None

        def _arm(self, what: str) -> None:
            self._disarm()
            seconds = self._timeouts[0] if what == "header" else self._timeouts[1]
            self._deadline = self.loop.call_later(seconds, self._expired, what, seconds)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm("header")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm("header")

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._arm("body")

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._disarm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _expired(self, what: str, seconds: float) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if cycle is None or cycle.response_complete or not cycle.response_started:
                self.transport.write(_answer_408(what, seconds))
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # the app's receive() answers http.disconnect
                cycle.message_event.set()
            self.transport.close()

    return TimedHttpToolsProtocol


def __getattr__(name: str) -> Any:
    if name == "TimedHttpToolsProtocol":  # by name, so uvicorn's worker processes import it
        found = protocol_class()
        if found is not None:
            return found
    raise AttributeError(name)


def timed_config(config: Any, header_timeout: float, body_timeout: float) -> Any:
    """``config`` (a ``uvicorn.Config``) serving with the deadlines, where httptools is there."""
    setattr(config, _ATTRIBUTE, (float(header_timeout), float(body_timeout)))
    if protocol_class() is not None:
        config.http = f"{__name__}:TimedHttpToolsProtocol"
    return config
