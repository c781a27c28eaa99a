"""A small HTTP GET client for connectors, bounded in time and bytes: a total
deadline per request (connect to last byte, not per read), the connector's own
deadline on top, a cap on the body read in chunks with a running total,
retries with exponential backoff on 429, 5xx and refused connections
(honouring Retry-After) only while time is left, none after a request timed
out (`RequestTimedOut`: the connector stops asking that server), JSON decoding; every failure becomes a `ConnectorError`
with a one-line reason.

A request's deadline is kept by a timer that shuts the socket down, so a server
that accepts and never answers, or sends one byte a second (headers or body),
costs at most the deadline.  Proxies from the environment (`https_proxy`,
`http_proxy`, `no_proxy`) are used; redirects are not followed (the answer is
an error naming where it points).  stdlib only; no state.
"""
from __future__ import annotations

import collections
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable

from rulekit.blueprint import limits
from rulekit.blueprint.limits import MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, Deadline, DeadlineExceeded
from rulekit.blueprint.model import ConnectorError

RETRY_STATUS = {429, 500, 502, 503, 504}
STEP = 64 * 1024


class ResponseTooLarge(ConnectorError):
    """An answer's body went past its cap."""


class RequestTimedOut(DeadlineExceeded):
    """The server did not answer one request within its timeout: the connector stops asking."""


def get_json(url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
             timeout: float = REQUEST_TIMEOUT_S, retries: int = 3, backoff: float = 0.5,
             sleep: Callable[[float], None] = time.sleep, max_bytes: int = MAX_RESPONSE_BYTES) -> Any:
    body = get_bytes(url, params, headers, timeout, retries, backoff, sleep, max_bytes)
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConnectorError(f"{url} answered something that is not JSON ({getattr(e, 'msg', e)})") from None
    except RecursionError:
        raise ConnectorError(f"{url} answered JSON nested too deeply") from None


def get_bytes(url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
              timeout: float = REQUEST_TIMEOUT_S, retries: int = 3, backoff: float = 0.5,
              sleep: Callable[[float], None] = time.sleep, max_bytes: int = MAX_RESPONSE_BYTES,
              tail: Callable[[int], None] | None = None) -> bytes:
    """The body of `GET url?params` (status 2xx), read within `timeout` seconds in all
    and at most `max_bytes`; retried on 429 / 5xx / connection errors while the
    connector's deadline (`limits.current()`) leaves time.  `tail`: keep the last
    `max_bytes` of a longer body (a log: its end matters most) and call `tail(n)` with
    the number of bytes left out at its start, instead of refusing the answer."""
    full = url + ("?" + urllib.parse.urlencode(params) if params else "")
    outer = limits.current()
    last = ""
    for attempt in range(retries + 1):
        if outer is not None and outer.expired():
            raise DeadlineExceeded(f"{outer.what} of {outer.seconds:g} s passed before {url} answered"
                                   + (f" ({last})" if last else ""))
        deadline = Deadline(timeout, "the request timeout").earlier(outer)
        wait: float | None = None
        try:
            status, resp_headers, body, cut = fetch(full, {"Accept": "application/json", **(headers or {})},
                                                    deadline, max_bytes, keep_tail=tail is not None)
        except ResponseTooLarge:
            raise
        except DeadlineExceeded as e:
            if outer is not None and outer.expired():
                raise
            # a server that accepts and does not answer (or drips) within the timeout is not asked again:
            # the connector stops its other requests too, so it costs one timeout, not one per request
            raise RequestTimedOut(f"{url} did not answer within the request timeout of {timeout:g} s "
                                  "(`timeout`); its other requests were not sent") from None
        except (OSError, http.client.HTTPException) as e:
            last = f"{url} unreachable: {getattr(e, 'reason', None) or e}"
            wait = backoff * (2 ** attempt)
        else:
            if 200 <= status < 300:
                if cut and tail is not None:
                    tail(cut)
                return body
            if 300 <= status < 400:
                raise ConnectorError(f"HTTP {status} from {url}: redirected to {resp_headers.get('location', '?')!r}; "
                                     "configure that URL (redirects are not followed)")
            detail = body[:300].decode("utf-8", "replace")
            try:
                j = json.loads(detail)
                detail = j.get("error") or j.get("message") or detail  # Prometheus / Kubernetes Status
            except (json.JSONDecodeError, AttributeError):
                pass
            last = f"HTTP {status} from {url}: {str(detail).strip()}"
            if status not in RETRY_STATUS:
                raise ConnectorError(last)
            ra = resp_headers.get("retry-after")
            wait = float(ra) if ra and ra.replace(".", "", 1).isdigit() else backoff * (2 ** attempt)
        if attempt < retries:
            wait = min(wait or 0.0, 30.0)
            left = outer.left() if outer is not None else None
            if left is not None and wait >= left:
                raise DeadlineExceeded(f"{last}; no time left to retry within {outer.what} "  # type: ignore[union-attr]
                                       f"of {outer.seconds:g} s")  # type: ignore[union-attr]
            sleep(wait)
    raise ConnectorError(last + (f" (after {retries + 1} tries)" if retries else ""))


def fetch(url: str, headers: dict[str, str], deadline: Deadline, max_bytes: int,
          keep_tail: bool = False) -> tuple[int, dict[str, str], bytes, int]:
    """One GET: (status, lower-cased headers, body of at most `max_bytes`, bytes left out),
    all of it within `deadline`; DeadlineExceeded, ResponseTooLarge, OSError otherwise.
    `keep_tail`: a longer body is read to its end keeping only its last `max_bytes`."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ConnectorError(f"{url}: not an http(s) URL")
    left = deadline.left()
    if left is not None and left <= 0:
        raise DeadlineExceeded(f"{deadline.what} of {deadline.seconds:g} s passed before {url} was asked")
    conn = _connection(u, left)
    timer = None
    aborted = threading.Event()
    if left is not None:
        def abort() -> None:
            aborted.set()
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        timer = threading.Timer(left, abort)
        timer.daemon = True
        timer.start()
    try:
        target = url if getattr(conn, "_rulekit_via_proxy", False) else (u.path or "/") + (f"?{u.query}" if u.query else "")
        conn.request("GET", target, headers=headers)
        resp = conn.getresponse()
        declared = resp.getheader("content-length")
        if not keep_tail and declared and declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(f"{url} answered {declared} bytes, more than the {max_bytes} allowed "
                                   "(`max_response_bytes`)")
        chunks: collections.deque[bytes] = collections.deque()
        total = cut = 0
        while True:
            chunk = resp.read(STEP)
            if not chunk:
                break
            total += len(chunk)
            chunks.append(chunk)
            if total > max_bytes:
                if not keep_tail:
                    raise ResponseTooLarge(f"{url} answered more than the {max_bytes} bytes allowed "
                                           "(`max_response_bytes`); the answer was dropped")
                while total - len(chunks[0]) >= max_bytes:
                    total -= len(chunks[0])
                    cut += len(chunks.popleft())
        if aborted.is_set():  # the socket was shut at the deadline: what arrived is not the answer
            raise DeadlineExceeded(f"{url} did not answer within {deadline.what} of {deadline.seconds:g} s")
        if resp.length:  # Content-Length not reached: the connection ended early
            raise http.client.IncompleteRead(b"", resp.length)
        body = b"".join(chunks)
        if total > max_bytes:
            cut += total - max_bytes
            body = body[total - max_bytes:]
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body, cut
    except (OSError, http.client.HTTPException) as e:
        if aborted.is_set() or deadline.expired():
            raise DeadlineExceeded(f"{url} did not answer within {deadline.what} of {deadline.seconds:g} s") from None
        raise e
    finally:
        if timer is not None:
            timer.cancel()
        conn.close()


def _connection(u: urllib.parse.SplitResult, timeout: float | None) -> http.client.HTTPConnection:
    """A connection to the URL's host, through the environment's proxy when it names one."""
    host, port = u.hostname or "", u.port
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(u.scheme)
    kw: dict[str, Any] = {"timeout": timeout}
    if proxy:
        p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if u.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                p.hostname or "", p.port or 80, context=ssl.create_default_context(), **kw)
            conn.set_tunnel(host, port or 443)
        else:
            conn = http.client.HTTPConnection(p.hostname or "", p.port or 80, **kw)
            conn._rulekit_via_proxy = True  # type: ignore[attr-defined]
        return conn
    if u.scheme == "https":
        return http.client.HTTPSConnection(host, port, context=ssl.create_default_context(), **kw)
    return http.client.HTTPConnection(host, port, **kw)
