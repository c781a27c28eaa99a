"""The Blueprint's limits on what remote servers and local evidence may cost: their
defaults (one table, documented in docs/security.md), size parsing, and the
`Deadline` each connector runs under.

A `Deadline` is a point in time (monotonic clock).  The orchestrator starts one
per connector per attempt (`deadline` key of the connector's table, default
`CONNECTOR_DEADLINE_S`) and makes it current (`current()`, a context variable,
so concurrent attempts on one worker keep theirs apart); the HTTP client ends
every request at the earlier of its own total deadline and the connector's, and
sleeps between retries only while time is left.  No I/O.
"""
from __future__ import annotations

import contextvars
import re
import time
from contextlib import contextmanager
from typing import Iterator

from rulekit.blueprint.model import ConnectorError

# ---- defaults (each a key of the connector's config table; docs/security.md lists them) ----
REQUEST_TIMEOUT_S = 10.0  # `timeout`: one HTTP request, connect to last byte (a total, not per read)
CONNECTOR_DEADLINE_S = 60.0  # `deadline`: one connector for one attempt, retries and pages included
RETRIES = 2  # `retries`: on 429 / 5xx / connection errors, with backoff, within the deadline
MAX_RESPONSE_BYTES = 64 << 20  # `max_response_bytes`: one HTTP answer's body
MAX_BYTES = 512 << 20  # `max_bytes`: everything one connector keeps for one attempt (lines, bodies)
MAX_PAGES = 50  # `max_pages`: requests of one paged query (Loki, Kubernetes lists)
MAX_DECOMPRESSED = 256 << 20  # `max_decompressed_bytes`: one rotated `.gz` log, decompressed
ATTEMPT_SHARE = 0.6  # with `--timeout S`: collection may take this share of S, attribution the rest

_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]i?B|B)?\s*$", re.I)
_UNIT = {"b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
         "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(v: str | int) -> int:
    """Bytes: an integer, or "64MiB", "1GiB", "500MB"."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 1:
            raise ValueError(f"not a size: {v!r} (at least 1 byte)")
        return v
    m = _SIZE.match(str(v))
    if not m:
        raise ValueError(f"not a size: {v!r} (use bytes, or 64MiB, 1GiB)")
    n = int(m.group(1)) * _UNIT[(m.group(2) or "b").lower()]
    if n < 1:
        raise ValueError(f"not a size: {v!r} (at least 1 byte)")
    return n


class DeadlineExceeded(ConnectorError):
    """A connector (or one request) ran out of time."""


class Deadline:
    """A point in time on the monotonic clock; `None` seconds: never."""

    def __init__(self, seconds: float | None, what: str = "the connector's deadline"):
        self.seconds = seconds
        self.what = what
        self.at = None if seconds is None else time.monotonic() + max(0.0, seconds)

    def left(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def check(self, doing: str = "") -> None:
        if self.expired():
            raise DeadlineExceeded(f"{self.what} of {self.seconds:g} s passed" + (f" ({doing})" if doing else ""))

    def earlier(self, other: "Deadline | None") -> "Deadline":
        if other is None or other.at is None:
            return self
        if self.at is None or other.at < self.at:
            return other
        return self


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("rulekit_connector_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the connector running in this context, if any."""
    return _CURRENT.get()


@contextmanager
def running_until(deadline: Deadline | None) -> Iterator[Deadline | None]:
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)
