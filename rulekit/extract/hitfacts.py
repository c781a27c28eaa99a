"""What each hit's line says of itself and of where it stands in its file: its own
timestamp and kernel uptime, its rank prefix, its printing host, and the timestamp carried from the
nearest earlier stamped line (`TimeCarry`).

Extraction reads these one hit at a time, lazily (only what a stored event
shows); a chunk-parallel scan worker (`rulekit.extract.parallel`) computes them
for all of a chunk's hits at once (`chunk_facts`), in the same order with the
same functions, so what extraction does with either cannot differ.  The one
thing a worker cannot know is the carried timestamp of a hit with no stamped
line before it in its own chunk: that is `INHERIT` (the value the chunks before
leave), or `Tail(n)` when the hit's window runs into the chunk before and its
part in this chunk holds no clock (the last `n` bytes before the chunk decide),
resolved by the caller (`resolve_tail`, `next_tail`).  The carried timestamp is
the same whatever the chunks (tests/test_carried_across_chunks.py): a hit's window
is its `LOOKBACK` bytes before it, back to the previous hit's line, across chunk
boundaries.  Pure functions of bytes; no rules, no events, no I/O.
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


class Tail:
    """A worker's carried timestamp for a hit whose window (its `LOOKBACK` bytes before it,
    back to the previous hit's line) runs into the chunk before and found no clock in
    this chunk: the last clock line among the last `n` bytes the caller kept of the
    file before the chunk (`TimeCarry.tail`), if it parses, else INHERIT's value.
    Resolved by the caller (`resolve_tail`), which has those bytes."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n


def resolve_tail(carried: Any, tail: bytes, year: int | None, inherited: Any) -> Any:
    """A worker's carried value with the file's bytes before its chunk at hand: `Tail(n)`
    is the last clock line of `tail`'s last `n` bytes, if it parses, else `inherited`;
    INHERIT is `inherited`; any other value is itself."""
    if carried is INHERIT:
        return inherited
    if isinstance(carried, Tail):
        raw = _last_clock_line(tail, max(0, len(tail) - carried.n), len(tail)) if tail else None
        if raw is not None:
            ts = timestamp_of(decode_line(raw), year)[0]
            if ts:
                return ts
        return inherited
    return carried


def next_tail(tail: bytes, chunk: bytes, last_end: int) -> bytes:
    """What a window may still reach of the file before the next chunk, after `chunk`:
    its bytes after its last hit line (`last_end`, -1: no hit in it) or, with no hit,
    `tail` and all of it; the last `LOOKBACK` bytes of that, from the start of the line
    they begin in (a clock line is read whole)."""
    if last_end >= 0:
        buf, floor = chunk, last_end
    elif tail and len(chunk) < LOOKBACK:
        buf, floor = tail + chunk, 0
    else:
        buf, floor = chunk, 0
    lo = max(floor, len(buf) - LOOKBACK)
    if lo > floor:
        nl = buf.rfind(b"\n", floor, lo)
        lo = nl if nl >= 0 else floor
    return buf[lo:]


class TimeCarry:
    """The last timestamp seen before a position of one observation.

    `advance()` only notes the stretch it passes (no search); a stretch's last
    clock-looking line is found, and parsed, when a timestamp is asked for
    (`before()`, `ts`), newest stretch first, stopping at the first that parses
    (usually the newest): so a stretch nobody asks about is never searched, and
    hits past their cap, which ask nothing, cost nothing here.  The value is the
    same as finding and parsing at every step: the newest stretch's line that
    parses wins, else the value before it.  A chunk's stretches are resolved
    before the next chunk (`new_chunk`): none outlives the chunk it points into.
    Given the chunks (`new_chunk(chunk)`), it keeps what a window of the next chunk's
    first hit may reach of the file before (`tail`), searched as part of that hit's
    stretch when the stretch's part in the chunk holds no clock."""

    MAX_PENDING = 64  # stretches held unsearched at most

    def __init__(self, year: int | None, start: Any = None):
        self.year = year
        self._ts: Any = start  # None, or INHERIT in a worker that has not seen its chunk's first stamp
        # stretches (chunk, lo, start, before) since `_ts`, oldest first; `before`: for the first stretch
        # of a chunk whose window runs into the file before it, where in `tail` the window starts
        # (`tail[before:]` is searched when the stretch's own part holds no clock: the two are one
        # stretch), or, in a worker (which has not got those bytes), a `Tail` to hand back; else None
        self._pending: list[tuple[bytes, int, int, Any]] = []
        self._pos = 0
        self._hit = False  # a hit passed in this chunk (a window cannot reach before its line)
        self.tail = b""  # the file before this chunk that a window may still reach (`next_tail`)
        self._chunk: bytes | None = None
        self._last_end = -1

    @property
    def ts(self) -> str | None:
        if self._pending:
            for chunk, lo, start, before in reversed(self._pending):
                raw = _last_clock_line(chunk, lo, start)
                if raw is None and before is not None:
                    if isinstance(before, Tail):  # a worker: the caller searches the bytes before
                        self._ts = before
                        break
                    raw = _last_clock_line(self.tail, before, len(self.tail))
                if raw is not None:
                    ts = timestamp_of(decode_line(raw), self.year)[0]
                    if ts:
                        self._ts = ts
                        break
            self._pending.clear()
        return self._ts

    def new_chunk(self, chunk: bytes | None = None) -> None:
        """The next chunk of the observation starts (`chunk`: it, to keep what a window of
        its first hit may reach of the one before; None: chunks are not continued)."""
        if self._pending:
            _ = self.ts  # (the stretches point into the chunk that ends here)
        if chunk is not None:
            if self._chunk is not None:
                self.tail = next_tail(self.tail, self._chunk, self._last_end)
            self._chunk = chunk
        self._pos = 0
        self._hit = False
        self._last_end = -1

    def _first_window(self, chunk: bytes, start: int) -> Any:
        """What the first stretch of a chunk reaches before it (see `_pending`), or None."""
        if start >= LOOKBACK:
            return None
        if self._ts is INHERIT:  # a worker's (its first hit sees the start value): the caller has the bytes
            return Tail(LOOKBACK - start)
        return max(0, len(self.tail) - (LOOKBACK - start)) if self.tail else None

    def advance(self, chunk: bytes, start: int) -> None:
        """Pass the stretch before a hit starting at `start` of `chunk` (no search yet)."""
        lo = max(self._pos, start - LOOKBACK)
        before = None if self._hit else self._first_window(chunk, start)
        if lo < start or before is not None:
            self._pending.append((chunk, lo, start, before))
            if len(self._pending) > self.MAX_PENDING:
                _ = self.ts
        self._pos = max(self._pos, start)
        self._hit = True

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
        self._hit = True
        self._last_end = max(self._last_end, end)

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
            before = None if self._hit else self._first_window(chunk, start)
            if lo < start or before is not None:
                self._pending.append((chunk, lo, start, before))
                if len(self._pending) > self.MAX_PENDING:
                    _ = self.ts
        if end > self._pos:
            self._pos = end
        self._hit = True
        if end > self._last_end:
            self._last_end = end


def _last_clock_line(chunk: bytes, lo: int, start: int) -> bytes | None:
    """The line of `chunk[lo:start]`'s last clock, or None: the whole line, from its start
    in `chunk` (which may lie before `lo`: a window that starts inside the line), the
    line the first version cut around one backtracking "anything, then a clock" match
    (tests/test_linectx_timestamps.py holds that version; the first version took a line
    starting before `lo` from the chunk's start, so what it found depended on where the
    chunk began).  Found by
    searching the stretch reversed, in blocks from its end growing 4x (a clock reads
    the same reversed; the first one found is the last one): the backtracking search
    costs ~140 instructions a byte, this ~20, and stops at the first clock from the end."""
    e, size = start, 256
    while e > lo:
        b = max(lo, e - size)
        m = _CLOCK.search(chunk[b:e][::-1])
        if m is not None:
            end = e - (m.start() - 2)  # where the clock ends in `chunk`
            ls = chunk.rfind(b"\n", 0, end) + 1
            le = chunk.find(b"\n", end, start)
            return chunk[ls:le if le >= 0 else start]
        if b == lo:
            return None
        e, size = b + 7, size * 4  # the next block overlaps by 7 bytes: a clock across `b` is whole in it
    return None


def chunk_facts(chunk: bytes, hits: Sequence[tuple], year: int | None, hosts: bool = True,
                leave_out: Callable[[tuple, str, Any, Any, Any, int], tuple | None] | None = None
                ) -> tuple[list, list, list, Any, int, int]:
    """(hits, their facts in hit order, their lines (newlines before them in the chunk),
    the carried timestamp after the chunk (INHERIT: the chunk changed nothing; a `Tail`:
    the caller's bytes before the chunk decide), the chunk's newlines, where its last
    hit line ends (-1: no hit)), as extraction would read them.  Each hit's own
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
    return out_hits, out, lines, carry.ts, num + count(b"\n", pos), carry._last_end
