"""The job's one clock: every event's time made comparable before any rule reads it.

Extraction stores what each line printed (`rulekit.extract.linectx`): a zoned stamp
in UTC, a naive one as the node's wall clock printed it, and a stamp that printed
no year (glog, syslog) in a job that gave none with the year `NO_YEAR`.  At
attribution (`EventStream` settles a job's events as it builds its working set,
and every event a rule adds):

- a year-less stamp takes the year of the job's other stamps (own or carried, that
  printed one): the year that puts it nearest their span; with no such stamp the
  year stays unknown (the evidence then shows `time_of_year`, docs/time.md);
- `Event.when`, the place on one clock that ordering and rules compare: a zoned
  stamp in UTC, a naive one read in the job's zone (the UTC offset the job record's
  start, else end, was written with; UTC without either).

`year_hint(job)` gives extraction the job's own year (its start and end).  Pure:
no SQL, no I/O, no rule knowledge.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Iterable

from rulekit.extract.linectx import NO_YEAR, YearHint
from rulekit.engine.ordering import when_of

_LEAP = 2000  # a year-less date is checked in a leap year


def year_hint(job: Any) -> int | YearHint | None:
    """The year of the job's year-less stamps: its start's (and end's, across a new
    year), None when the job record gives neither."""
    start, end = getattr(job, "start", None), getattr(job, "end", None)
    if start is None and end is None:
        return None
    if start is None or end is None or start.year == end.year:
        return (start or end).year
    return YearHint(start.year, end.year, f"{start.month:02d}-{start.day:02d}")


def job_offset(job: Any) -> timedelta | None:
    """The UTC offset naive stamps are read in: the job record's start (else end) as
    written; None for UTC or no time."""
    for t in (getattr(job, "start", None), getattr(job, "end", None)):
        if t is not None and t.utcoffset() is not None:
            off = t.utcoffset()
            return off if off else None
    return None


class Clock:
    """How one job's stamps are placed (see the module docstring)."""

    def __init__(self, offset: timedelta | None, dated: Iterable[str]):
        self.offset = offset
        lo = hi = None
        for ts in dated:
            w = ts[:19]
            if lo is None or w < lo:
                lo = w
            if hi is None or w > hi:
                hi = w
        self.span = (lo, hi) if lo is not None else None

    @classmethod
    def of(cls, job: Any, events: Iterable[Any]) -> "Clock":
        dated = []
        for e in events:
            for ts in (e.timestamp, e.fields.get("carried_ts")):
                if ts and not ts.startswith(NO_YEAR):
                    dated.append(when_of(ts))
        return cls(job_offset(job), dated)

    def year_of(self, ts: str) -> str | None:
        """The year for a stamp of `NO_YEAR` (`0000-MM-DDTHH:MM:SS...`), or None."""
        if self.span is None:
            return None
        return _nearest_year(ts[5:19], self.span)

    def settle(self, e: Any) -> None:
        """Give `e` its years and its place on the clock (`e.when`)."""
        ts = e.timestamp
        if ts and ts.startswith(NO_YEAR):
            y = self.year_of(ts)
            if y is not None:
                ts = e.timestamp = y + ts[4:]
        carried = None
        if not ts:
            fields = e.payload.get("fields")
            carried = fields.get("carried_ts") if fields else None
            if carried and carried.startswith(NO_YEAR):
                y = self.year_of(carried)
                if y is not None:
                    carried = fields["carried_ts"] = y + carried[4:]
        e.when = self.place(ts or carried) or ""  # ("": settled, no time)

    def place(self, ts: str | None) -> str | None:
        """A timestamp's place on the clock (UTC, fixed format), or None."""
        if not ts:
            return None
        if self.offset is None or ts.endswith("+00:00") or ts.startswith(NO_YEAR):
            return when_of(ts)
        return _shifted(ts, self.offset)


@lru_cache(maxsize=4096)
def _shifted(ts: str, offset: timedelta) -> str:
    try:
        return (datetime.fromisoformat(ts) - offset).isoformat()
    except (ValueError, OverflowError):
        return ts


@lru_cache(maxsize=4096)
def _nearest_year(md_clock: str, span: tuple[str, str]) -> str | None:
    """The year (4 digits) that puts `MM-DDTHH:MM:SS` inside the span of the job's dated
    stamps, else nearest to it."""
    lo, hi = span
    first, last = int(lo[:4]), int(hi[:4])
    best: tuple[float, int] | None = None
    for y in range(first - 1, last + 2):
        try:
            t = datetime.fromisoformat(f"{y:04d}-{md_clock}")
        except ValueError:  # 29 February of a common year
            continue
        a, b = datetime.fromisoformat(lo), datetime.fromisoformat(hi)
        dist = 0.0 if a <= t <= b else min(abs((t - a).total_seconds()), abs((t - b).total_seconds()))
        if best is None or dist < best[0]:
            best = (dist, y)
    return f"{best[1]:04d}" if best else None
