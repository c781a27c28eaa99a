"""What a single log line says about itself: rank prefix, printing host, timestamp.

Used on matched lines only (never on the hot path of every line).  Recognises
`srun -l` (`12: `), torch (`[rank12]:`) and torchrun --tee (`[default12]:`)
rank prefixes, the NCCL `host:pid:tid [dev]` prefix, and the timestamp shapes of
REFERENCE.md (monotonic, dmesg -T, classic syslog, ISO/journald, NCCL, glog,
Slurm).  Pure functions, no I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

_RANK = re.compile(r"^\s{0,8}(?:\[(?:rank|default)(\d+)\]:|(\d+): )")
_NCCL_HOST = re.compile(r"(?:^|[\s\]:])([A-Za-z][\w.\-]*):(\d+):(\d+) \[\d+\]")
# the part of `_NCCL_HOST` after the host: it starts with a literal, so a line without it is
# rejected at C speed (the full pattern tries every position: ~9 us a line)
_NCCL_TAIL = re.compile(r":\d+:\d+ \[\d+\]")
_MONO = re.compile(r"\[\s*(\d+\.\d+)\]")
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})\]")
_ISO = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?")
_SYSLOG = re.compile(r"(?:^|\s)([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d) ")
_GLOG = re.compile(r"(?:^|[\s\[:])[EIWF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)? ")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")  # in the ISO, dmesg -T, glog and syslog shapes alike
_MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


@dataclass(frozen=True)
class LineContext:
    rank: int | None
    host: str | None
    timestamp: str | None  # ISO 8601, UTC when the line says its zone or the job's year is known
    uptime: float | None  # kernel monotonic seconds


def rank_of(line: str) -> int | None:
    m = _RANK.match(line)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


# `_RANK` on the raw bytes of an ASCII line: the same matches (str `\s` on ASCII is
# these eleven bytes, `\d` is 0-9), without decoding the line first
_RANK_ASCII = re.compile(rb"^[ \t\n\r\x0b\x0c\x1c-\x1f]{0,8}(?:\[(?:rank|default)([0-9]+)\]:|([0-9]+): )")


def rank_of_raw(raw: bytes) -> int | None:
    """`rank_of` of a raw line (a trailing `\r` cannot change it), decoding only a line
    that is not ASCII."""
    if not raw.isascii():
        return rank_of(raw.decode("utf-8", "replace"))
    m = _RANK_ASCII.match(raw)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


_WS = rb"[ \t\r\x0b\x0c\x1c-\x1f]"  # `\s` on an ASCII line (which holds no newline)


@lru_cache(maxsize=256)
def rank_line_finder(rank: int):
    """`finder(chunk, pos) -> int`: the start of the first line at or after `pos` (a line
    start) whose raw bytes say `rank` or no rank at all, or -1.  On an ASCII line that is
    `rank_of_raw`'s answer; a non-ASCII line found as "no rank" may still hold a Unicode
    one (the caller asks `rank_of_raw`), and one found as `rank` or passed as another rank
    reads the same in str.  One C-speed search over the other ranks' lines."""
    digits = rb"0*" + str(rank).encode()
    own = rb"%s{0,8}(?:\[(?:rank|default)%s\]:|%s: )" % (_WS, digits, digits)
    none = rb"(?!%s{0,8}(?:\[(?:rank|default)[0-9]+\]:|[0-9]+: ))" % _WS
    here = re.compile(rb"%s|%s" % (own, none)).match
    later = re.compile(rb"\n(?:%s|%s)" % (own, none)).search  # a literal first: a fast scan to line ends

    def finder(chunk: bytes, pos: int) -> int:
        if here(chunk, pos) is not None:
            return pos
        m = later(chunk, pos)
        return -1 if m is None else m.start() + 1

    return finder


def host_of(line: str) -> str | None:
    head = line[:300]
    if _NCCL_TAIL.search(head) is None:  # every `_NCCL_HOST` match holds this
        return None
    m = _NCCL_HOST.search(head)
    return m.group(1) if m else None


def timestamp_of(line: str, year: int | None = None) -> tuple[str | None, float | None]:
    head = line[:160]
    uptime = None
    m = _MONO.search(head)
    if _CLOCK.search(head) is None:  # every dated shape below has a clock: at most an uptime
        if m:
            try:
                uptime = float(m.group(1))
            except ValueError:
                pass
        return None, uptime
    if m and not _DMESG_T.search(head):
        try:
            uptime = float(m.group(1))
        except ValueError:
            uptime = None
    m = _ISO.search(head)
    if m:
        frac = m.group(3) or ""
        tz = m.group(4)
        try:
            dt = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{frac[:7]}")
            if tz:
                tz = "+00:00" if tz == "Z" else (tz if ":" in tz else tz[:3] + ":" + tz[3:])
                dt = datetime.fromisoformat(dt.isoformat() + tz).astimezone(timezone.utc)
            return dt.isoformat(), uptime
        except ValueError:
            pass
    m = _DMESG_T.search(head)
    if m:
        try:
            dt = datetime(int(m.group(4)), _MONTHS[m.group(1)], int(m.group(2)), *map(int, m.group(3).split(":")))
            return dt.isoformat(), uptime
        except (KeyError, ValueError):
            pass
    m = _GLOG.search(head)
    if m and year:  # glog / torch c10 prefix: E0813 08:21:22.980000 (no year: the job's)
        try:
            frac = (m.group(6) or "")[:7]
            dt = datetime.fromisoformat(f"{year}-{m.group(1)}-{m.group(2)}T{m.group(3)}:{m.group(4)}:{m.group(5)}{frac}")
            return dt.isoformat(), uptime
        except ValueError:
            pass
    m = _SYSLOG.search(head)
    if m and year and m.group(1) in _MONTHS:
        try:
            dt = datetime(year, _MONTHS[m.group(1)], int(m.group(2)), *map(int, m.group(3).split(":")))
            return dt.isoformat(), uptime
        except ValueError:
            pass
    return None, uptime


def line_context(line: str, year: int | None = None) -> LineContext:
    ts, up = timestamp_of(line, year)
    return LineContext(rank_of(line), host_of(line), ts, up)
