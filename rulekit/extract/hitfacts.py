"""What each hit's line says of itself and of where it stands in its file: its own
timestamp and kernel uptime, its rank prefix, its printing host, and the timestamp carried from the
nearest earlier stamped line (`TimeCarry`).

Extraction reads these one hit at a time, lazily (only what a stored event
shows); a chunk-parallel scan worker (`rulekit.extract.parallel`) computes them
for all of a chunk's hits at once (`chunk_facts`), in the same order with the
same functions, so what extraction does with either cannot differ.  The one
thing a worker cannot know is the carried timestamp of a hit with no stamped
line before it in its own chunk: that is `INHERIT`, resolved by the caller from
the chunks before.  Pure functions of bytes; no rules, no events, no I/O.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from rulekit.extract.linectx import host_of, rank_of, timestamp_of
from rulekit.extract.scan import decode_line

LOOKBACK = 64 * 1024
_CLOCK = re.compile(rb":(?<=\d\d:)\d\d:\d\d")  # `\d\d:\d\d:\d\d`, found from its first colon (a literal: fast)
INHERIT = False  # "the carried timestamp from before this chunk" (a value is a str or None)

Facts = tuple  # (own timestamp, uptime, rank, carried timestamp | INHERIT | None, printing host)


class TimeCarry:
    """The last timestamp seen before a position of one observation.

    `advance()` only notes the stretch it passes (no search); a stretch's last
    clock-looking line is found, and parsed, when a timestamp is asked for
    (`before()`, `ts`), newest stretch first, stopping at the first that parses
    (usually the newest): so a stretch nobody asks about is never searched, and
    hits past their cap, which ask nothing, cost nothing here.  The value is the
    same as finding and parsing at every step: the newest stretch's line that
    parses wins, else the value before it.  A chunk's stretches are resolved
    before the next chunk (`new_chunk`): none outlives the chunk it points into."""

    MAX_PENDING = 64  # stretches held unsearched at most

    def __init__(self, year: int | None, start: Any = None):
        self.year = year
        self._ts: Any = start  # None, or INHERIT in a worker that has not seen its chunk's first stamp
        self._pending: list[tuple[bytes, int, int]] = []  # stretches (chunk, lo, start) since `_ts`, oldest first
        self._pos = 0

    @property
    def ts(self) -> str | None:
        if self._pending:
            for chunk, lo, start in reversed(self._pending):
                raw = _last_clock_line(chunk, lo, start)
                if raw is not None:
                    ts = timestamp_of(decode_line(raw), self.year)[0]
                    if ts:
                        self._ts = ts
                        break
            self._pending.clear()
        return self._ts

    def new_chunk(self) -> None:
        if self._pending:
            _ = self.ts  # (the stretches point into the chunk that ends here)
        self._pos = 0

    def advance(self, chunk: bytes, start: int) -> None:
        """Pass the stretch before a hit starting at `start` of `chunk` (no search yet)."""
        lo = max(self._pos, start - LOOKBACK)
        if lo < start:
            self._pending.append((chunk, lo, start))
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

    def hit_line(self, chunk: bytes, start: int, end: int, ts: str | None) -> None:
        """A hit's line `chunk[start:end]` and its own timestamp: `advance` to it when it has
        none, then `saw` it (one call for the two, in a worker's loop over a chunk's lines)."""
        if ts is not None:
            if ts:
                self._ts = ts
                if self._pending:
                    self._pending.clear()
        else:
            pos = self._pos
            lo = start - LOOKBACK
            if lo < pos:
                lo = pos
            if lo < start:
                self._pending.append((chunk, lo, start))
                if len(self._pending) > self.MAX_PENDING:
                    _ = self.ts
        if end > self._pos:
            self._pos = end


def _last_clock_line(chunk: bytes, lo: int, start: int) -> bytes | None:
    """The line of `chunk[lo:start]`'s last clock, or None: the line the first version
    cut around one backtracking "anything, then a clock" match (its start may lie
    before `lo`; tests/test_linectx_timestamps.py holds that version).  Found by
    searching the stretch reversed, in blocks from its end growing 4x (a clock reads
    the same reversed; the first one found is the last one): the backtracking search
    costs ~140 instructions a byte, this ~20, and stops at the first clock from the end."""
    e, size = start, 256
    while e > lo:
        b = max(lo, e - size)
        m = _CLOCK.search(chunk[b:e][::-1])
        if m is not None:
            end = e - (m.start() - 2)  # where the clock ends in `chunk`
            ls = chunk.rfind(b"\n", lo, end) + 1
            le = chunk.find(b"\n", end, start)
            return chunk[ls:le if le >= 0 else start]
        if b == lo:
            return None
        e, size = b + 7, size * 4  # the next block overlaps by 7 bytes: a clock across `b` is whole in it
    return None


def chunk_facts(chunk: bytes, hits: Sequence[tuple], year: int | None, hosts: bool = True,
                leave_out: Callable[[tuple, str, Any, Any, Any, int], tuple | None] | None = None
                ) -> tuple[list, list, list, Any, int]:
    """(hits, their facts in hit order, their lines (newlines before them in the chunk),
    the carried timestamp after the chunk (INHERIT: the chunk changed nothing), the
    chunk's newlines), as extraction would read them.  Each hit's own
    timestamp is carried from its line on, stored or not.  `hosts=False`: the host is
    not read (None; the caller's observation declares its node).  Hits of several rules
    on one line (they are in line order) share that line's facts.  `leave_out(hit,
    line, rank, host, timestamp, its line's number in the chunk)`: None to keep the hit,
    else what stands in for it (`(hit sent, facts entry)`, or `()`: nothing); no
    carried timestamp is looked up for a hit not kept.
    """
    carry = TimeCarry(year, INHERIT)
    out_hits: list = []
    out: list = []
    lines: list[int] = []
    last = -1
    line = ""
    ts = uptime = rank = host = f = None
    num = pos = 0  # newlines before `pos`
    count = chunk.count
    for h in hits:
        start, end = h[0], h[1]
        if start != last:  # a line's facts are read once, for all its hits
            last = start
            num += count(b"\n", pos, start)
            pos = start
            line = decode_line(chunk[start:end])
            ts, uptime = timestamp_of(line, year)
            rank = rank_of(line)
            host = host_of(line) if hosts else None
            carry.hit_line(chunk, start, end, ts)  # (a stretch is searched only if a kept hit asks: `carry.ts`)
            f = None
        if leave_out is not None:
            stand_in = leave_out(h, line, rank, host, ts, num)
            if stand_in is not None:
                if stand_in:
                    out_hits.append(stand_in[0])
                    out.append(stand_in[1])
                    lines.append(num)
                continue
        if f is None:
            f = (ts, uptime, rank, carry.ts if ts is None else None, host)
        out_hits.append(h)
        out.append(f)
        lines.append(num)
    return out_hits, out, lines, carry.ts, num + count(b"\n", pos)
