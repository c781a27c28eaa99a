"""What each hit's line says of itself and of where it stands in its file: its own
timestamp and kernel uptime, its rank prefix, its printing host, and the timestamp carried from the
nearest earlier stamped line of the same rank (`TimeCarry`).

Extraction reads these one hit at a time, lazily (only what a stored event
shows); a chunk-parallel scan worker (`rulekit.extract.parallel`) computes them
for all of a chunk's hits at once (`chunk_facts`), in the same order with the
same functions, so what extraction does with either cannot differ.  The one
thing a worker cannot know is the carried timestamp of a hit with no stamped
line of its rank before it in its own chunk: that is `INHERIT` (the value the
chunks before leave for that rank), or `Tail(n)` when the hit's window runs into
the chunk before and its part in this chunk holds no clock line of its rank (the
last `n` bytes before the chunk decide), resolved by the caller (`CarryJoin`).
The carried timestamp is the same whatever the chunks
(tests/test_carried_across_chunks.py): a hit's window is its `LOOKBACK` bytes
before it, back to the previous hit of its rank, across chunk boundaries, and only
lines of its rank count in it (a rank is an `srun -l` / `[rankN]:` / `[defaultN]:`
prefix, or none: interleaved ranks never lend each other a stamp).  Pure
functions of bytes; no rules, no events, no I/O.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import Any, Callable, Sequence

from rulekit.extract.linectx import host_of, rank_number, rank_of, rank_of_raw, timestamp_of
from rulekit.extract.scan import decode_line, rule_text

LOOKBACK = 64 * 1024
_CLOCK = re.compile(rb":(?<=\d\d:)\d\d:\d\d")  # `\d\d:\d\d:\d\d`, found from its first colon (a literal: fast)
# what of a clock line is returned (`_last_clock_line`): its rank prefix and timestamp (`timestamp_of`
# reads 160 characters) lie in its start; a line of hundreds of MB is not copied for them
LINE_HEAD = 64 * 1024
INHERIT = False  # "the carried timestamp from before this chunk" (a value is a str or None)
MAX_RANKS = 1 << 17  # ranks whose carry is remembered at once (then the first seen is forgotten: a hostile log)

Facts = tuple  # (own timestamp, uptime, rank, carried timestamp | INHERIT | Tail | None, printing host)


class Tail:
    """A worker's carried timestamp for a hit whose window (its `LOOKBACK` bytes before it,
    back to the previous hit of its rank) runs into the chunk before and found no clock
    line of its rank in this chunk: the last such line among the last `n` bytes of the
    file before the chunk (after the rank's previous hit), if it parses, else the value
    the chunks before leave.  Resolved by the caller (`CarryJoin.resolve`), which has
    those bytes."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tail) and other.n == self.n

    def __repr__(self) -> str:
        return f"Tail({self.n})"


def next_tail(tail: bytes, chunk: bytes) -> bytes:
    """What a window may still reach of the file before the next chunk, after `chunk`
    (`tail`: what it could reach before `chunk`): the last `LOOKBACK` bytes of the
    two, from the start of the line they begin in (a clock line is read whole)."""
    if len(chunk) >= LOOKBACK or not tail:
        buf = chunk
    else:
        buf = tail + chunk
    lo = len(buf) - LOOKBACK
    if lo > 0:
        nl = buf.rfind(b"\n", 0, lo)
        lo = nl + 1 if nl >= 0 else 0
        return buf[lo:]
    return buf


class _Rank:
    """One rank's carry: its value, its stretches not searched yet (oldest first), how far
    its windows reached in the chunk, whether a hit of it passed in the chunk, and
    where its last hit line ends (in the chunk; -1: none)."""

    __slots__ = ("ts", "pending", "pos", "hit", "last_end")

    def __init__(self, ts: Any):
        self.ts = ts
        self.pending: list[tuple[bytes, int, int, Any]] = []
        self.pos = 0
        self.hit = False
        self.last_end = -1


class TimeCarry:
    """The last timestamp of each rank seen before a position of one observation.

    `advance()` only notes the stretch it passes (no search); a stretch's last
    clock-looking line of the rank is found, and parsed, when a timestamp is asked for
    (`before()`, `ts()`), newest stretch first, stopping at the first that parses
    (usually the newest): so a stretch nobody asks about is searched only once, when
    its chunk ends, and hits past their cap, which ask nothing, cost nothing here.
    The value is the same as finding and parsing at every step: the newest stretch's
    line that parses wins, else the value before it.  A chunk's stretches are resolved
    before the next chunk (`new_chunk`): none outlives the chunk it points into.
    Given the chunks (`new_chunk(chunk)`), it keeps what a window of the next chunk's
    first hit of a rank may reach of the file before (`tail`, cut at the rank's last
    hit there), searched as part of that hit's stretch when the stretch's part in the
    chunk holds no clock line of the rank."""

    MAX_PENDING = 64  # stretches of one rank held unsearched at most

    def __init__(self, year: Any, start: Any = None):
        self.year = year
        self.start = start  # a rank's value before its first stamp: None, or INHERIT in a worker
        self._ranks: dict[Any, _Rank] = {}
        self.tail = b""  # the file before this chunk that a window may still reach (`next_tail`)
        self._chunk: bytes | None = None
        self._base = 0  # where the chunk starts in the file
        self._floor: dict[Any, int] = {}  # rank -> where its last hit line before this chunk ends, in the file
        self.first = FirstTry()
        self._index: _LineIndex | None = None  # the clock lines of the chunk searched most often, by rank
        self._ix_chunk: bytes | None = None  # the chunk `_asks` counts the searches of
        self._asks = 0

    def _state(self, rank: Any) -> _Rank:
        st = self._ranks.get(rank)
        if st is None:
            if len(self._ranks) >= MAX_RANKS:
                self._forget()
            st = self._ranks[rank] = _Rank(self.start)
        return st

    def _forget(self) -> None:
        """Forget the first rank seen (bounded memory whatever ranks a log prints; no real job
        has this many, and past it a worker's chunks may forget another rank than a serial read)."""
        old = next(iter(self._ranks))
        del self._ranks[old]
        self._floor.pop(old, None)

    def _search(self, chunk: bytes, lo: int, start: int, rank: Any) -> bytes | None:
        """`_last_clock_line` of a stretch; when a chunk's stretches are searched often (one
        search per `ASK_SPAN` bytes so far, or more: the ranks' hits are dense, and each
        search would walk back over the others' lines), from an index of the chunk's clock
        lines by rank instead (`_LineIndex`: every line read once).  The same line either way."""
        ix = self._index
        if ix is None or ix.chunk is not chunk:
            if self._ix_chunk is not chunk:
                self._ix_chunk, self._asks = chunk, 0
            self._asks += 1
            if self._asks * ASK_SPAN <= start or start < 4 * ASK_SPAN:
                return _last_clock_line(chunk, lo, start, rank, self.first)
            ix = self._index = _LineIndex(chunk, start - LOOKBACK)
        return ix.last(lo, start, rank)

    def _resolve(self, st: _Rank, rank: Any) -> Any:
        if st.pending:
            for chunk, lo, start, before in reversed(st.pending):
                raw = self._search(chunk, lo, start, rank)
                if raw is None and before is not None:
                    if isinstance(before, Tail):  # a worker: the caller searches the bytes before
                        st.ts = before
                        break
                    raw = _last_clock_line(self.tail, before, len(self.tail), rank, self.first)
                if raw is not None:
                    ts = timestamp_of(decode_line(raw), self.year)[0]
                    if ts:
                        st.ts = ts
                        break
            st.pending.clear()
        return st.ts

    def ts(self, rank: Any = None) -> Any:
        """The carried timestamp of `rank` after everything passed so far."""
        st = self._ranks.get(rank)
        return self.start if st is None else self._resolve(st, rank)

    def ranks(self) -> dict[Any, Any]:
        """rank -> its carried value, for every rank a hit of which passed (resolved now)."""
        return {r: self._resolve(st, r) for r, st in self._ranks.items()}

    def new_chunk(self, chunk: bytes | None = None) -> None:
        """The next chunk of the observation starts (`chunk`: it, to keep what a window of
        its first hit of a rank may reach of the one before; None: chunks are not continued)."""
        for r, st in self._ranks.items():
            if st.pending:
                self._resolve(st, r)  # (the stretches point into the chunk that ends here)
            if st.last_end >= 0:
                self._floor[r] = self._base + st.last_end
            st.pos, st.hit, st.last_end = 0, False, -1
        if chunk is not None:
            if self._chunk is not None:
                self.tail = next_tail(self.tail, self._chunk)
                self._base += len(self._chunk)
            self._chunk = chunk

    def _first_window(self, rank: Any, start: int) -> Any:
        """What the first stretch of a rank in a chunk reaches before it: the offset in
        `tail` its window starts at, a `Tail` in a worker, or None."""
        if start >= LOOKBACK:
            return None
        st_ts = self._ranks[rank].ts
        if st_ts is INHERIT:  # a worker's (its first hit of the rank sees the start value): the caller has the bytes
            return Tail(LOOKBACK - start)
        if not self.tail:
            return None
        tail_base = self._base - len(self.tail)
        begin = max(self._base - (LOOKBACK - start), self._floor.get(rank, -1), tail_base)
        return begin - tail_base if begin < self._base else None

    def advance(self, chunk: bytes, start: int, rank: Any = None) -> None:
        """Pass the stretch before a hit of `rank` starting at `start` of `chunk` (no search yet)."""
        st = self._state(rank)
        lo = max(st.pos, start - LOOKBACK)
        before = None if st.hit else self._first_window(rank, start)
        if lo < start or before is not None:
            st.pending.append((chunk, lo, start, before))
            if len(st.pending) > self.MAX_PENDING:
                self._resolve(st, rank)
        if start > st.pos:
            st.pos = start
        st.hit = True

    def before(self, chunk: bytes, start: int, rank: Any = None) -> Any:
        """The carried timestamp for a hit of `rank` starting at `start` of `chunk`."""
        self.advance(chunk, start, rank)
        return self._resolve(self._ranks[rank], rank)

    def saw(self, ts: str | None, end: int, rank: Any = None) -> None:
        """A hit's own line: its timestamp (if any) is carried from here on for its rank."""
        st = self._state(rank)
        if ts:
            st.ts = ts
            st.pending.clear()
        if end > st.pos:
            st.pos = end
        st.hit = True
        if end > st.last_end:
            st.last_end = end

    def hit_line(self, chunk: bytes, start: int, end: int, ts: str | None, rank: Any = None) -> None:
        """A hit's line `chunk[start:end]` and its own timestamp: `advance` to it when it has
        none, then `saw` it (one call for the two, in a worker's loop over a chunk's lines)."""
        if ts is None:
            self.advance(chunk, start, rank)
        self.saw(ts, end, rank)

    def last_ends(self) -> dict[Any, int]:
        """rank -> where its last hit line in this chunk ends (ranks with a hit in it)."""
        return {r: st.last_end for r, st in self._ranks.items() if st.last_end >= 0}


def _last_clock_line(chunk: bytes, lo: int, start: int, rank: Any = None, first: Any = None) -> bytes | None:
    """The line of `chunk[lo:start]`'s last clock on a line of `rank` (`rank_of_raw`), or
    None: the whole line, from its start in `chunk` (which may lie before `lo`: a window
    that starts inside the line).  Found by searching the stretch reversed, in blocks
    from its end growing 4x (a clock reads the same reversed; the first one found is the
    last one): the backtracking search costs ~140 instructions a byte, this ~20, and
    stops at the first clock from the end.  For a rank, the last clock line of any rank
    is looked at first (`first`, a `FirstTry`: while it is usually the rank's own, as in
    a log whose ranks print in bursts); when it is another rank's, or not looked at, the
    rank's own lines are searched (`_last_rank_clock_line`: C-speed searches skip the
    other ranks' lines).  For lines with no rank, the clock lines one by one.  The line
    found is the same either way."""
    if rank is not None and (first is None or not first.worth()):
        return _last_rank_clock_line(chunk, lo, start, rank)
    e, size = start, 256
    while e > lo:
        b = max(lo, e - size)
        m = _CLOCK.search(chunk[b:e][::-1])
        if m is not None:
            end = e - (m.start() - 2)  # where the clock ends in `chunk`
            ls = chunk.rfind(b"\n", 0, end) + 1
            le = chunk.find(b"\n", end, start)
            raw = chunk[ls:min(le if le >= 0 else start, ls + LINE_HEAD)]
            if rank_of_raw(raw) == rank:
                if first is not None:
                    first.note(True)
                return raw
            if rank is not None:  # (no clock line after this one: the rank's lines before it)
                first.note(False)
                return _last_rank_clock_line(chunk, lo, ls, rank) if ls > lo else None
            e, size = ls, 256  # a rank's line: on before it (no clock runs across a line start)
            continue
        if b == lo:
            return None
        e, size = b + 7, size * 4  # the next block overlaps by 7 bytes: a clock across `b` is whole in it
    return None


ASK_SPAN = 2 * 1024  # a chunk searched once per this many bytes or more often is indexed (`TimeCarry._search`)
# `rank_of_raw`'s pattern at a position of a chunk (no `^`: `match(chunk, pos)` anchors at `pos`)
_RANK_AT = re.compile(rb"[ \t\r\x0b\x0c\x1c-\x1f]{0,8}(?:\[(?:rank|default)([0-9]+)\]:|([0-9]+): )").match


class _LineIndex:
    """The lines with a clock of one chunk, from `base` (a line start) on, by rank
    (`rank_of_raw`): read once, as far as asked (`upto`), with one C-speed search for
    clocks.  `last(lo, start, rank)` is `_last_clock_line(chunk, lo, start, rank)`."""

    __slots__ = ("chunk", "base", "upto", "lines")

    def __init__(self, chunk: bytes, base: int):
        self.chunk = chunk
        self.base = chunk.rfind(b"\n", 0, max(0, base)) + 1 if base > 0 else 0
        self.upto = self.base
        self.lines: dict[Any, list[tuple[int, int]]] = {}  # rank -> (line start, line end), in line order

    def _extend(self, to: int) -> None:
        chunk, lines, at = self.chunk, self.lines, _RANK_AT
        rfind, find = chunk.rfind, chunk.find
        end = -1
        for m in _CLOCK.finditer(chunk, self.upto, to):
            c = m.start()
            if c < end:
                continue  # another clock of a line already read
            ls = rfind(b"\n", 0, c) + 1
            end = find(b"\n", c, to)
            if end < 0:
                end = to
            p = at(chunk, ls)  # `rank_of_raw`'s answer on an ASCII prefix (the bytes pattern cannot run past the line)
            if p is not None:
                rank = rank_number(p.group(1) or p.group(2))
            elif chunk[ls:min(end, ls + 64)].isascii():
                rank = None
            else:  # a prefix with a non-ASCII blank: the str pattern decides
                rank = rank_of_raw(chunk[ls:min(end, ls + LINE_HEAD)])
            got = lines.get(rank)
            if got is None:
                lines[rank] = [(ls, end)]
            else:
                got.append((ls, end))
        self.upto = to

    def last(self, lo: int, start: int, rank: Any) -> bytes | None:
        if start > self.upto:
            self._extend(start)
        got = self.lines.get(rank)
        if got:
            i = bisect_left(got, (start,)) - 1
            if i >= 0:
                ls, le = got[i]
                if ls >= lo:
                    return self.chunk[ls:min(le, ls + LINE_HEAD)]
                if le > lo and _CLOCK.search(self.chunk[lo:le]):  # a line the stretch starts in: its clock inside
                    return self.chunk[ls:min(le, ls + LINE_HEAD)]
                return None
        if lo < self.base:  # (the stretch reaches before the index)
            return _last_clock_line(self.chunk, lo, self.base, rank)
        return None


class FirstTry:
    """Whether looking at the last clock line of any rank first pays, for one observation:
    it does while that line is the asking rank's own at least half the time (ranks that
    print in bursts), not when ranks interleave line by line (a wasted search each time).
    What it decides changes the cost, never the line found."""

    __slots__ = ("tries", "hits", "asks")

    def __init__(self) -> None:
        self.tries = self.hits = self.asks = 0

    def worth(self) -> bool:
        self.asks += 1
        return self.tries < 8 or 2 * self.hits >= self.tries or self.asks % 32 == 0  # (now and then: look again)

    def note(self, hit: bool) -> None:
        self.tries += 1
        self.hits += hit
        if self.tries >= 64:  # the recent asks count
            self.tries //= 2
            self.hits //= 2


@lru_cache(maxsize=1024)
def _rank_marks(rank: int) -> tuple[bytes, bytes, tuple[bytes, ...]]:
    """The literals a prefix of `rank` ends with, `12: ` (`srun -l`, also `012: `, ` 12: `)
    and `12]:` (`[rank12]:`, `[default12]:`), and how a line of it starts without blanks
    or leading zeros (`startswith`: no regex needed)."""
    d = str(rank).encode()
    return d + b": ", d + b"]:", (d + b": ", b"[rank" + d + b"]:", b"[default" + d + b"]:")


def _last_rank_clock_line(chunk: bytes, lo: int, start: int, rank: int) -> bytes | None:
    """`_last_clock_line` for a rank: its lines from the newest back, the first with a
    clock inside the stretch.  A line of the rank holds one of its prefix's literals
    (`_rank_marks`), found from the end with `bytes.rfind` (C speed, the other ranks'
    lines skipped but for the few that hold the same literal) in blocks growing 4x, so
    a search costs about the distance back to the line it finds (a literal the log
    never prints is not searched for over the whole stretch); each one found is
    checked whole (`rank_of_raw`, unless it starts with the plain prefix)."""
    srun, bracket, plain = _rank_marks(rank)
    over = len(bracket) - 1  # a literal across a block's start is whole in the next block
    floor = chunk.rfind(b"\n", 0, lo) + 1  # a line may start before the stretch and have its clock in it
    e, size = start, 2048
    while e > floor:
        b = max(floor, e - size)
        at = chunk.rfind(srun, b, e)
        at = max(at, chunk.rfind(bracket, max(b, at + 1), e))  # (the other literal only after the first's)
        if at < 0:
            if b == floor:
                return None
            e, size = b + over, size * 4
            continue
        ls = chunk.rfind(b"\n", floor, at) + 1 or floor
        le = chunk.find(b"\n", at, start)
        if le < 0:
            le = start
        if (chunk.startswith(plain, ls) or rank_of_raw(chunk[ls:min(le, ls + LINE_HEAD)]) == rank) \
                and _CLOCK.search(chunk[max(ls, lo):le]):
            return chunk[ls:min(le, ls + LINE_HEAD)]  # (its clock wholly inside the stretch, as the reversed search finds one)
        e, size = ls, 2048  # another line, or one without a clock: on before it
    return None


class CarryJoin:
    """The caller's side of chunk-parallel carrying: workers' carried values made whole,
    chunk after chunk in file order.  `resolve(value, rank)` turns a worker's INHERIT or
    `Tail` into the value the chunks before leave (searching the kept bytes before the
    chunk for a `Tail`, from the rank's last hit there on); `end_chunk` takes a chunk's
    values after it and its ranks' last hit lines (`chunk_facts`)."""

    def __init__(self, year: Any):
        self.year = year
        self.inherited: dict[Any, Any] = {}  # rank -> its carried value where the chunk starts
        self.floor: dict[Any, int] = {}  # rank -> where its last hit line before the chunk ends, in the file
        self.tail = b""
        self._base = 0

    def resolve(self, carried: Any, rank: Any) -> Any:
        if carried is INHERIT:
            return self.inherited.get(rank)
        if isinstance(carried, Tail):
            if self.tail:
                tail_base = self._base - len(self.tail)
                begin = max(self._base - carried.n, self.floor.get(rank, -1), tail_base)
                if begin < self._base:
                    raw = _last_clock_line(self.tail, begin - tail_base, len(self.tail), rank)
                    if raw is not None:
                        ts = timestamp_of(decode_line(raw), self.year)[0]
                        if ts:
                            return ts
            return self.inherited.get(rank)
        return carried

    def end_chunk(self, chunk: bytes, after: dict[Any, Any], last_ends: dict[Any, int]) -> None:
        resolved = {r: self.resolve(v, r) for r, v in after.items() if v is not INHERIT}
        self.inherited.update(resolved)
        for r, end in last_ends.items():
            self.floor[r] = self._base + end
        if len(self.inherited) > MAX_RANKS:  # (as TimeCarry forgets them: the first seen)
            for r in list(self.inherited)[:len(self.inherited) - MAX_RANKS]:
                del self.inherited[r]
                self.floor.pop(r, None)
        self.tail = next_tail(self.tail, chunk)
        self._base += len(chunk)


def chunk_facts(chunk: bytes, hits: Sequence[tuple], year: Any, hosts: bool = True,
                leave_out: Callable[[tuple, str, Any, Any, Any, int], tuple | None] | None = None
                ) -> tuple[list, list, list, dict, int, dict]:
    """(hits, their facts in hit order, their lines (newlines before them in the chunk),
    each rank's carried timestamp after the chunk (a rank with a hit in it; a `Tail`:
    the caller's bytes before the chunk decide), the chunk's newlines, where each
    rank's last hit line ends), as extraction would read them.  Each hit's own
    timestamp is carried from its line on for its rank, stored or not.  `hosts=False`:
    the host is not read (None; the caller's observation declares its node).  Hits of
    several rules on one line (they are in line order) share that line's facts.
    `leave_out(hit, line, rank, host, timestamp, its line's number in the chunk)`: None
    to keep the hit, else what stands in for it (`(hit sent, facts entry)`, or `()`:
    nothing); no carried timestamp is looked up for a hit not kept.
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
            line = rule_text(chunk, start, end)
            ts, uptime = timestamp_of(line, year)
            rank = rank_of(line)
            host = host_of(line) if hosts else None
            carry.hit_line(chunk, start, end, ts, rank)  # (a stretch is searched only if a kept hit asks)
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
            f = (ts, uptime, rank, carry.ts(rank) if ts is None else None, host)
        out_hits.append(h)
        out.append(f)
        lines.append(num)
    return out_hits, out, lines, carry.ranks(), num + count(b"\n", pos), carry.last_ends()
