"""The order of evidence: one explicit key, the same whatever the log files are
called and in whatever order they are read (DESIGN "Attribution result").

An event sorts by its line's timestamp or, for a line without one, the
timestamp `carried` from the nearest earlier stamped line of the same file
(payload field `carried_ts`); events with neither come after all timed ones.
Ties break on kernel uptime, then rank (lower first), then the line number,
node, line text and, last, the event id.  File names and read order (the
observation-context id) are never part of the key.

`TimeCarry` (`rulekit.extract.hitfacts`, where chunk-parallel workers use it
too) finds the carried timestamp during extraction: at each hit it looks back
(at most `LOOKBACK` bytes, C-speed searches of the stretch reversed) for the
last line that looks time-stamped and parses it.  Pure: no SQL, no rule knowledge.
"""
from __future__ import annotations

import heapq
from typing import Any

NO_RANK = 1 << 30


def event_order_key(e: Any) -> tuple:
    """The total order of events (see the module docstring)."""
    f = e.fields
    ts = e.timestamp or f.get("carried_ts")
    rank = _rank(f)
    return ((0, ts) if ts else (1, ""), float(f.get("uptime") or 0.0), rank, e.line_num or 0, e.node or "",
            e.datum or "", e.id)


def time_part(e: Any) -> tuple:
    """`event_order_key(e)[0]`, the part the order compares first, alone (cheaper)."""
    ts = e.timestamp or e.fields.get("carried_ts")
    return (0, ts) if ts else (1, "")


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
