"""The order of evidence: one explicit key, the same whatever the log files are
called and in whatever order they are read (DESIGN "Attribution result"), and the
order in time rules reason with (`lead`, `Before`, `all_before`), with the
clock-skew tolerance of docs/time.md.

An event sorts by its place on the job's one clock (`Event.when`, set by
`rulekit.engine.timeline`: its line's timestamp or, for a line without one, the
timestamp `carried` from the nearest earlier stamped line of the same file and
rank, payload field `carried_ts`; zoned stamps in UTC, naive ones in the job's
zone); events with neither come after all timed ones.  Ties break on kernel
uptime, then rank (lower first), then the line number, node, line text and, last,
the event id.  File names and read order (the observation-context id) are never
part of the key.

`TimeCarry` (`rulekit.extract.hitfacts`, where chunk-parallel workers use it
too) finds the carried timestamp during extraction: at each hit it looks back
(at most `LOOKBACK` bytes, C-speed searches of the stretch reversed) for the
last line of the hit's rank that looks time-stamped and parses it.  Pure: no SQL,
no rule knowledge.
"""
from __future__ import annotations

import heapq
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Iterable

NO_RANK = 1 << 30
_UTC = "+00:00"


def when_of(ts: str | None) -> str | None:
    """A timestamp's place on the job's clock read as UTC (`Event.when` when the timeline
    did not set one): a zoned stamp (always given in UTC) without its zone, a naive one as it reads."""
    if not ts:
        return None
    return ts[:-6] if ts.endswith(_UTC) else ts


def when(e: Any) -> str | None:
    """An event's place on the job's clock (own timestamp, else the carried one), or None.
    `Event.when` once the timeline settled it ("": no time), else read from the stamps."""
    w = getattr(e, "when", None)
    if w is not None:
        return w or None
    return when_of(e.timestamp or e.fields.get("carried_ts"))


def time_source(e: Any) -> str | None:
    """"line" (the event's line printed its stamp), "inherited" (carried from an earlier
    line of its file and rank), or None (no time)."""
    if e.timestamp:
        return "line"
    return "inherited" if e.fields.get("carried_ts") else None


def event_order_key(e: Any) -> tuple:
    """The total order of events (see the module docstring)."""
    f = e.fields
    w = when(e)
    rank = _rank(f)
    return ((0, w) if w else (1, ""), float(f.get("uptime") or 0.0), rank, e.line_num or 0, e.node or "",
            e.datum or "", e.id)


def time_part(e: Any) -> tuple:
    """`event_order_key(e)[0]`, the part the order compares first, alone (cheaper)."""
    w = when(e)
    return (0, w) if w else (1, "")


def first_in_order(events: list, k: int) -> list:
    """`heapq.nsmallest(k, events, key=event_order_key)`, with the whole key computed
    only for the events whose `time_part` is among the k smallest: the order compares
    that first, so no other event can come before the k-th of them."""
    if len(events) <= k:
        return sorted(events, key=event_order_key)
    parts = [time_part(e) for e in events]
    bound = heapq.nsmallest(k, parts)[-1]
    return heapq.nsmallest(k, [e for e, p in zip(events, parts) if p <= bound], key=event_order_key)


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


# ---- order in time, for rules ------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def seconds_of(w: str) -> float | None:
    """Seconds on the job's clock of a `when` string (None: not a moment; a year-less
    stamp whose year stayed unknown counts from year 2000, so two of them compare)."""
    try:
        if w.startswith("0000"):
            w = "2000" + w[4:]
        return datetime.fromisoformat(w).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def seconds(e: Any) -> float | None:
    """The event's time in seconds on the job's clock, or None."""
    w = when(e)
    return seconds_of(w) if w else None


def _stream(e: Any) -> tuple | None:
    """One file (observation) and one rank in it: where print order is record order."""
    if e.obs_context_id is None or e.line_num is None:
        return None
    return (e.obs_context_id, _rank(e.fields))


JOB_WINDOW_MARGIN = 24 * 3600.0  # seconds around a job's start and end where its lines' stamps are trusted


def job_window(job: Any, margin: float = JOB_WINDOW_MARGIN) -> tuple[float, float] | None:
    """The span (seconds on the job's clock) in which a stamp can be one of the job's own:
    its record's start and end, `margin` before and after (pre-job syslog, clocks off by a
    zone); None when the record gives neither.  A stamp outside it is shown, and orders
    the evidence, but proves nothing about order (`lead`): a clock that wrong, or lines
    pasted from another run, would make any conclusion arbitrary."""
    start, end = getattr(job, "start", None), getattr(job, "end", None)
    if start is None and end is None:
        return None
    lo = (start or end).timestamp() - margin
    hi = (end or start).timestamp() + margin
    return lo, hi


def _in(t: float | None, window: tuple[float, float] | None) -> bool:
    return t is not None and (window is None or window[0] <= t <= window[1])


def lead(a: Any, b: Any, skew: float, window: tuple[float, float] | None = None) -> float | None:
    """By how many seconds event `a` provably comes before event `b`, or None when that
    cannot be shown: `a`'s own stamp (a carried stamp only says when a line was printed
    at the earliest) more than `skew` seconds (clock skew and stamp resolution,
    docs/time.md) before `b`'s own or carried stamp, both inside the job's `window`
    (`job_window`) when there is one, and, when the two are lines of one file and rank,
    `a`'s line first (stamps that contradict the print order of one stream prove
    nothing).  Line order alone proves nothing either: one report spans several lines,
    and a summary line may come before its cause's."""
    if not a.timestamp:
        return None
    ta, tb = seconds(a), seconds(b)
    if not _in(ta, window) or not _in(tb, window):
        return None
    gap = tb - ta
    if gap <= skew:
        return None
    s = _stream(a)
    if s is not None and s == _stream(b) and a.line_num >= b.line_num:
        return None
    return gap


class Before:
    """`Before(then, skew, window)(a)`: the least lead (`lead`) of event `a` over every
    event of `then`, None unless `a` provably comes before each of them (and there is
    one).  Linear: `then` is read once (its earliest stamp, whether one has none or one
    outside the window, the first line of each file and rank)."""

    def __init__(self, then: Iterable[Any], skew: float, window: tuple[float, float] | None = None):
        self.skew = skew
        self.window = window
        self.earliest: float | None = None
        self.any = False
        self.unstamped = False  # (or stamped outside the window: no proof either way)
        self.first_line: dict[tuple, int] = {}  # file and rank -> the first line of `then` in it
        for b in then:
            self.any = True
            tb = seconds(b)
            if not _in(tb, window):
                self.unstamped = True
            elif self.earliest is None or tb < self.earliest:
                self.earliest = tb
            s = _stream(b)
            if s is not None and (s not in self.first_line or b.line_num < self.first_line[s]):
                self.first_line[s] = b.line_num

    def __call__(self, a: Any) -> float | None:
        if not self.any or self.unstamped or self.earliest is None or not a.timestamp:
            return None
        ta = seconds(a)
        if not _in(ta, self.window):
            return None
        gap = self.earliest - ta
        if gap <= self.skew:
            return None
        s = _stream(a)
        if s is not None and s in self.first_line and a.line_num >= self.first_line[s]:
            return None
        return gap


def all_before(first: Iterable[Any], then: Iterable[Any], skew: float,
               window: tuple[float, float] | None = None) -> float | None:
    """The least lead of every event of `first` over every event of `then` (`Before`):
    None unless each one of `first` provably comes before each one of `then`."""
    before = Before(then, skew, window)
    least: float | None = None
    n = 0
    for a in first:
        n += 1
        got = before(a)
        if got is None:
            return None
        least = got if least is None else min(least, got)
    return least if n else None
