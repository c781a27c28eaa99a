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

`TimedH11Protocol` closes a connection that has not sent complete request
headers within `header_timeout` seconds of connecting, or of the first byte of
its next request: uvicorn itself only times out idle keep-alive connections, so
a client trickling header bytes would hold a connection forever.  No routing.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from uvicorn.protocols.http.h11_impl import H11Protocol

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
                msg = await asyncio.wait_for(receive(), max(0.0, min(self.timeout, left)))
            except asyncio.TimeoutError:
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
                msg = await asyncio.wait_for(receive(), self.timeout)
            except asyncio.TimeoutError:
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


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for complete request headers."""

    header_timeout: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline)

    def _cancel_header_timer(self) -> None:
        t = getattr(self, "_header_timer", None)
        if t is not None:
            t.cancel()
            self._header_timer = None

    def _header_deadline(self) -> None:
        self._header_timer = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        # the first bytes of a request on a kept-alive connection start its header clock
        # (an idle kept-alive connection is uvicorn's keep-alive timeout's business)
        if (self.cycle is None or self.cycle.response_complete) and getattr(self, "_header_timer", None) is None:
            self._arm_header_timer()
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._cancel_header_timer()  # the headers are in: the body has its own timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)
