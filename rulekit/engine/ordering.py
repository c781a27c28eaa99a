"""The order of evidence: one explicit key, the same whatever the log files are
called and in whatever order they are read (DESIGN "Attribution result").

An event sorts by its line's timestamp or, for a line without one, the
timestamp `carried` from the nearest earlier stamped line of the same file
(payload field `carried_ts`); events with neither come after all timed ones.
Ties break on kernel uptime, then rank (lower first), then the line number,
node, line text and, last, the event id.  File names and read order (the
observation-context id) are never part of the key.

`TimeCarry` finds the carried timestamp during extraction: at each hit it looks
back (at most `LOOKBACK` bytes, one C-speed regex search) for the last line
that looks time-stamped and parses it.  Pure: no SQL, no rule knowledge.
"""
from __future__ import annotations

import re
from typing import Any

from rulekit.extract.linectx import timestamp_of
from rulekit.extract.scan import decode_line

LOOKBACK = 64 * 1024
_LAST_CLOCK = re.compile(rb"(?s:.*)\d\d:\d\d:\d\d")
NO_RANK = 1 << 30


def event_order_key(e: Any) -> tuple:
    """The total order of events (see the module docstring)."""
    f = e.fields
    ts = e.timestamp or f.get("carried_ts")
    rank = _rank(f)
    return ((0, ts) if ts else (1, ""), float(f.get("uptime") or 0.0), rank, e.line_num or 0, e.node or "",
            e.datum or "", e.id)


def _rank(fields: dict) -> int:
    for k in ("rank", "pg_rank", "comm_rank"):
        v = fields.get(k)
        if v is None or v == "":
            continue
        try:
            return int(v)
        except (TypeError, ValueError):
            continue
    return NO_RANK


class TimeCarry:
    """The last timestamp seen before a position of one observation.

    `advance()` only finds the last clock-looking line of the stretch it passes
    (one regex search); the line is parsed when a timestamp is asked for
    (`before()`, `ts`), so a stretch nobody asks about is never parsed.  The
    value is the same as parsing at every step: the newest found line that
    parses wins, else the value before it."""

    MAX_PENDING = 64  # found lines held unparsed at most

    def __init__(self, year: int | None):
        self.year = year
        self._ts: str | None = None
        self._pending: list[bytes] = []  # clock-looking lines found since `_ts`, oldest first
        self._pos = 0

    @property
    def ts(self) -> str | None:
        if self._pending:
            for raw in reversed(self._pending):
                ts = timestamp_of(decode_line(raw), self.year)[0]
                if ts:
                    self._ts = ts
                    break
            self._pending.clear()
        return self._ts

    def new_chunk(self) -> None:
        self._pos = 0

    def advance(self, chunk: bytes, start: int) -> None:
        """Pass the stretch before a hit starting at `start` of `chunk` (no parsing)."""
        lo = max(self._pos, start - LOOKBACK)
        if lo < start:
            m = _LAST_CLOCK.match(chunk, lo, start)
            if m is not None:
                ls = chunk.rfind(b"\n", lo, m.end()) + 1
                le = chunk.find(b"\n", m.end(), start)
                self._pending.append(chunk[ls:le if le >= 0 else start])
                if len(self._pending) > self.MAX_PENDING:
                    _ = self.ts
        self._pos = max(self._pos, start)

    def before(self, chunk: bytes, start: int) -> str | None:
        """The carried timestamp for a hit starting at `start` of `chunk`."""
        self.advance(chunk, start)
        return self.ts

    def saw(self, ts: str | None, end: int) -> None:
        """A hit's own line: its timestamp (if any) is carried from here on."""
        if ts:
            self._ts = ts
            self._pending.clear()
        self._pos = max(self._pos, end)
