"""Transport limits of the Service: the request-body limit and body timeout (an
ASGI middleware), and the header timeout (uvicorn's h11 protocol, subclassed).

`BodyLimit` streams the body: a `Content-Length` over the limit is refused
with 413 before a byte is kept; a chunked body is counted as it arrives and
refused the moment it passes the limit.  A body within the limit is handed
to the application whole (every route parses its body whole), once the number
of JSON values it can hold (its `[`, `{`, `,` and `:` bytes) is within
`max_values` (413 otherwise: parsed, `[[],[],...]` costs ~19 bytes of memory per
byte of body).  The rest of an oversized
body is read and discarded (up to 1 GiB, so the client reads the 413 rather
than a reset connection), never held in memory.  Each chunk must arrive within `body_timeout_s`,
and the whole body within `body_deadline_s` however it trickles (408
otherwise).  The answers are the Service's JSON error body.

The header deadline: a connection that has not sent complete request headers
within `header_timeout` seconds of connecting, or of the first byte of its next
request, is closed (uvicorn itself only times out idle keep-alive connections, so
a client trickling header bytes would hold a connection forever).  Both of
uvicorn's HTTP/1.1 protocols get it: `TimedHttpToolsProtocol` (the C parser,
llhttp; the default, `http_protocol("auto")`: a small request costs ~0.5 ms less
of the worker's CPU than through h11) and `TimedH11Protocol` (pure Python, the
fallback where httptools is not installed).  llhttp keeps no limit on a header
block, so the httptools protocol sets h11's: a request whose headers are still
incomplete past `MAX_HEADER_BYTES` is answered 400 and closed, as h11 does (a
pipelined request that began in the read where the one before it ended is counted
from its next read: at most one read more).  No routing.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools not installed: h11 only
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

from rulekit.inputs.bounded import json_value_bound

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


DRAIN_MAX_BYTES = 1 << 30  # an oversized body up to this is read and discarded before the 413
DRAIN_MAX_S = 60.0


def error_message(status: int, loc: list, msg: str, kind: str) -> tuple[Message, Message]:
    body = json.dumps({"detail": [{"loc": loc, "msg": msg, "type": kind}]}).encode()
    return ({"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                         (b"connection", b"close")]},
            {"type": "http.response.body", "body": body})


class BodyLimit:
    def __init__(self, app: Callable, max_body_bytes: int, body_timeout_s: float, body_deadline_s: float = 120.0,
                 max_values: int = 6_000_000):
        self.app = app
        self.max = max_body_bytes
        self.timeout = body_timeout_s
        self.deadline = body_deadline_s
        self.max_values = max_values

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = None
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    await _send_all(send, error_message(400, ["header", "content-length"], "not a number", "bad_header"))
                    return
        if declared is not None and declared > self.max:
            await self._drain(receive, declared)
            await _send_all(send, self._too_large())
            return
        # read the body here, within the limit and the timeout, then hand it to the app
        # whole (every route reads its body whole anyway): nothing past the limit is kept
        chunks: list[bytes] = []
        seen = 0
        loop = asyncio.get_running_loop()
        end = loop.time() + self.deadline
        while True:
            left = end - loop.time()
            try:
                if left <= 0:  # (a body always ready to read would never wait for a timeout to fire)
                    raise TimeoutError
                # (`asyncio.timeout`, not `wait_for`: no task per read)
                async with asyncio.timeout(min(self.timeout, left)):
                    msg = await receive()
            except TimeoutError:
                if left <= self.timeout:
                    text = f"the request body did not arrive in full within {self.deadline:g} s (--body-deadline)"
                else:
                    text = f"the request body did not arrive within {self.timeout:g} s"
                await _send_all(send, error_message(408, ["body"], text, "body_timeout"))
                return
            if msg["type"] != "http.request":  # the client went away
                return
            part = msg.get("body", b"")
            seen += len(part)
            if seen > self.max:
                chunks.clear()
                await self._drain(receive, None)
                await _send_all(send, self._too_large())
                return
            if part:
                chunks.append(part)
            if not msg.get("more_body", False):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        values = json_value_bound(body)
        if values > self.max_values:
            await _send_all(send, error_message(
                413, ["body"], f"the request body holds up to {values} JSON values, more than the {self.max_values} "
                "allowed (each becomes an object in memory): send the observations in several batches", "too_many_values"))
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered, body
            if not delivered:
                delivered = True
                msg, body = {"type": "http.request", "body": body, "more_body": False}, b""
                return msg
            return await receive()

        await self.app(scope, replay, send)

    async def _drain(self, receive: Receive, declared: int | None) -> None:
        """Read and discard the rest of an oversized body (nothing is kept), so that the
        client, still sending, reads the 413 instead of a reset connection.  Bodies
        beyond DRAIN_MAX_BYTES, or that stall, are not waited for."""
        if declared is not None and declared > DRAIN_MAX_BYTES:
            return
        drained = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_MAX_S
        while drained <= DRAIN_MAX_BYTES and loop.time() < deadline:
            try:
                async with asyncio.timeout(self.timeout):
                    msg = await receive()
            except TimeoutError:
                return
            if msg["type"] != "http.request":
                return
            drained += len(msg.get("body", b""))
            if not msg.get("more_body", False):
                return

    def _too_large(self) -> tuple[Message, Message]:
        return error_message(413, ["body"], f"the request body is larger than {self.max} bytes "
                             f"(--max-body-mb {self.max / (1 << 20):g})", "body_too_large")


async def _send_all(send: Send, msgs: tuple[Message, Message]) -> None:
    for m in msgs:
        await send(m)


MAX_HEADER_BYTES = 16 * 1024  # h11's limit on an incomplete header block (uvicorn's default), for both protocols


class _HeaderDeadline:
    """The header clock shared by both protocols (uvicorn's `loop`, `cycle`, `transport`)."""

    header_timeout: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline)  # type: ignore[attr-defined]

    def _cancel_header_timer(self) -> None:
        t = getattr(self, "_header_timer", None)
        if t is not None:
            t.cancel()
            self._header_timer = None

    def _waiting(self) -> bool:
        """No request in progress: the next one's headers are awaited."""
        cycle = self.cycle  # type: ignore[attr-defined]
        return cycle is None or cycle.response_complete

    def _header_deadline(self) -> None:
        self._header_timer = None
        if self._waiting() and not self.transport.is_closing():  # type: ignore[attr-defined]
            self.transport.close()  # type: ignore[attr-defined]

    def _start_header_clock(self) -> None:
        # the first bytes of a request on a kept-alive connection start its header clock
        # (an idle kept-alive connection is uvicorn's keep-alive timeout's business)
        if getattr(self, "_header_timer", None) is None and self._waiting():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)  # type: ignore[misc]


class TimedH11Protocol(_HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol with a deadline for complete request headers."""

    def data_received(self, data: bytes) -> None:
        self._start_header_clock()
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._cancel_header_timer()  # the headers are in: the body has its own timeout


if HttpToolsProtocol is not None:
    class TimedHttpToolsProtocol(_HeaderDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with a deadline for complete request headers and
        h11's bound on their bytes."""

        _awaiting_headers = False
        _header_bytes = 0
        _ended_in_read = False  # a request ended in the read being parsed
        _began_mid_read = False  # the awaited request began in a read after another one's end

        def data_received(self, data: bytes) -> None:
            self._start_header_clock()
            self._ended_in_read = False
            super().data_received(data)
            if self._awaiting_headers and self.parser is not None and not self.transport.is_closing():
                if self._began_mid_read:  # (its read also held the end of the one before: not counted,
                    self._began_mid_read = False  # at most one read's size)
                    return
                self._header_bytes += len(data)
                if self._header_bytes > MAX_HEADER_BYTES:
                    self._awaiting_headers = False
                    self.logger.warning("Invalid HTTP request received.")
                    self.send_400_response("Invalid HTTP request received.")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._awaiting_headers, self._header_bytes, self._began_mid_read = True, 0, self._ended_in_read

        def on_message_complete(self) -> None:
            self._ended_in_read = True
            super().on_message_complete()

        def on_headers_complete(self) -> None:
            self._awaiting_headers = False
            self._cancel_header_timer()  # the headers are in: the body has its own timeout
            super().on_headers_complete()
else:  # pragma: no cover - httptools is a dependency; without it, h11
    TimedHttpToolsProtocol = None  # type: ignore[assignment,misc]

HTTP_PROTOCOLS = ("auto", "httptools", "h11")


def http_protocol(name: str, header_timeout: float) -> type:
    """The protocol class uvicorn is to run (`ServiceSettings.http`), with the header deadline set:
    "auto" is httptools when it is installed, else h11."""
    if name not in HTTP_PROTOCOLS:
        raise ValueError(f"http: {name!r} is not one of {', '.join(HTTP_PROTOCOLS)}")
    if name == "httptools" and TimedHttpToolsProtocol is None:
        raise ValueError("http: httptools is not installed (pip install httptools), or use h11")
    cls = TimedHttpToolsProtocol if name != "h11" and TimedHttpToolsProtocol is not None else TimedH11Protocol
    cls.header_timeout = header_timeout
    return cls
