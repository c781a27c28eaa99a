"""What a single log line says about itself: rank prefix, printing host, timestamp.

Used on matched lines only (never on the hot path of every line).  Recognises
`srun -l` (`12: `), torch (`[rank12]:`) and torchrun --tee (`[default12]:`)
rank prefixes, the NCCL `host:pid:tid [dev]` prefix, and the wall-clock shapes of
docs/time.md behind any of them: ISO 8601 (`T` or a space, dashes or slashes,
a `.` or `,` fraction, a zone or none: journald short-iso, Python logging, torch
elastic, Slurm, NCCL's `[date]`), `dmesg -T`, glog / PyTorch c10 (`E0601` and the
3-digit `E601`), classic syslog, and the kernel's monotonic `[ 812.3]`.  A shape
without a year (glog, syslog) takes the job's (`YearHint`); when the job gives none
its stamp keeps the year `NO_YEAR` for attribution to resolve from the job's other
stamps (`rulekit.engine.timeline`).  Pure functions, no I/O.
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
# ISO 8601 and its relatives: `2026-06-01T03:10:40`, `2026-06-01 03:10:40,123` (Python logging,
# torch elastic), `2026/06/01 03:10:40` (Go, the k8s device plugin), a fraction of any length,
# a zone (`Z`, `+02:00`, `+0200`, `+02`, ` UTC`) or none
_ISO = re.compile(r"(\d{4})([-/])(\d\d)\2(\d\d)[T ](\d\d:\d\d:\d\d)([.,]\d+)?(Z|[+-]\d\d(?::?\d\d)?| ?UTC| ?GMT)?")
# classic syslog `Jun  1 03:10:40 host ...` and journalctl's short-precise `May 20 07:32:44.587165 ...`
_SYSLOG = re.compile(r"(?:^|\s)([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d)(\.\d+)? ")
# glog / torch c10: `E0601 03:22:41.426415 ` and the `E601 ` some builds print (month 1-9)
_GLOG = re.compile(r"(?:^|[\s\[:])[EIWF](\d{3,4}) (\d\d):(\d\d):(\d\d)(\.\d+)? ")
# `\d\d:\d\d:\d\d` (in the ISO, dmesg -T, glog and syslog shapes alike), found from its first
# colon: a pattern that starts with a literal is scanned for it at C speed (one that starts with
# `\d` is tried at every position: ~2 us a line); a match starts 2 before the clock
_CLOCK = re.compile(r":(?<=\d\d:)\d\d:\d\d")
_SYSLOG_CLOCK = re.compile(r":(?<=\d \d\d:)\d\d:\d\d[ .]")  # what every `_SYSLOG` match holds, found the same way
_UTC_OFFSETS = frozenset({"Z", "+00:00", "+0000", "+00", "-00:00", "-0000", "-00", "UTC", " UTC", "GMT", " GMT"})
_MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}
_MONTH_DIGITS = {m: f"{i:02d}" for m, i in _MONTHS.items()}

# the year of a stamp that prints none when the job gives none (glog, syslog): attribution
# resolves it from the job's other stamps (`rulekit.engine.timeline`), else it stays unknown
NO_YEAR = "0000"
_LEAP = "2000"  # a leap year: how a date of NO_YEAR is checked (29 February exists in some year)


@dataclass(frozen=True)
class YearHint:
    """The year of a year-less stamp (`E0601`, `Jun  1`) in a job that ran from `first`
    (its start's month-day `first_md`, "MM-DD") to `last`: `first`, or `last` for a
    month-day before the start's when the job ran into a new year."""

    first: int
    last: int
    first_md: str = "01-01"

    def of(self, month: str, day: str) -> int:
        if self.first == self.last or f"{month}-{day}" >= self.first_md:
            return self.first
        return self.last




def _year_text(year: "int | YearHint | None", month: str, day: str) -> str:
    if year is None:
        return NO_YEAR
    if isinstance(year, YearHint):
        year = year.of(month, day)
    return f"{year:04d}"


@dataclass(frozen=True)
class LineContext:
    rank: int | None
    host: str | None
    timestamp: str | None  # ISO 8601, UTC when the line says its zone (year NO_YEAR: not known yet)
    uptime: float | None  # kernel monotonic seconds


MAX_RANK_DIGITS = 18  # a longer number is no rank (and one of 4,300 digits or more would not even convert)


def rank_of(line: str) -> int | None:
    m = _RANK.match(line)
    if not m:
        return None
    return rank_number(m.group(1) or m.group(2))


def rank_number(digits: str | bytes) -> int | None:
    """The rank a prefix's digits say, or None for a number no rank has."""
    return int(digits) if len(digits) <= MAX_RANK_DIGITS else None


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
    return rank_number(m.group(1) or m.group(2))


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


@lru_cache(maxsize=4096)
def _iso_second(date: str, clock: str) -> str | None:
    """`YYYY-MM-DDTHH:MM:SS` of an ASCII date and clock, None when there is no such moment
    (a date of `NO_YEAR` is checked in a leap year).  Remembered: a log prints the same
    second on many lines, and building the string through `datetime` costs more than
    the rest of `timestamp_of`."""
    text = f"{date}T{clock}"
    try:  # (a check: an ASCII date and clock are printed back as they are)
        datetime.fromisoformat(_LEAP + text[4:] if text.startswith(NO_YEAR) else text)
    except ValueError:
        return None
    return text


@lru_cache(maxsize=4096)
def _named_month_second(year: str, month: str, day: str, clock: str) -> str | None:
    """The same for a month name and a day (dmesg -T, syslog), None when no such moment."""
    try:
        text = datetime(int(_LEAP if year == NO_YEAR else year), _MONTHS[month], int(day),
                        *map(int, clock.split(":"))).isoformat()
    except (KeyError, ValueError):
        return None
    return NO_YEAR + text[4:] if year == NO_YEAR else text


def _fraction(frac: str) -> str:
    """`datetime.isoformat`'s fraction for the `.digits` (or `,digits`) a line printed (at
    most 6 read; none when they are all zeros)."""
    digits = frac[1:7]
    if not digits or digits.count("0") == len(digits):
        return ""
    return "." + digits.ljust(6, "0")


def _zone(tz: str) -> str:
    """A printed zone as `fromisoformat` reads it (`+02` -> `+02:00`, `+0200` -> `+02:00`)."""
    if tz in _UTC_OFFSETS:
        return "+00:00"
    if len(tz) == 3:
        return tz + ":00"
    return tz if ":" in tz else tz[:3] + ":" + tz[3:]


# the characters a shape has at fixed places before its clock (offset from the clock's
# start, the characters allowed there): a clock without them cannot be that shape's
_ISO_AROUND = ((-1, "T "), (-4, "-/"), (-7, "-/"))  # `YYYY-MM-DD[T ]HH:MM:SS`
_GLOG_AROUND = (((-1, " "), (-6, "EIWF")), ((-1, " "), (-5, "EIWF")))  # `E0813 HH:MM:SS`, `E813 HH:MM:SS`


def _at_a_clock(rx: re.Pattern, head: str, c: re.Match, befores: tuple[int, ...],
                arounds: tuple[tuple[tuple[int, str], ...], ...]) -> re.Match | None:
    """`rx.search(head)` for a shape whose clock stands one of `befores` characters after
    its start (or one fewer, at the start of the line: glog's `^`), tried only there
    for each clock from `c` (the first) on, overlapping ones included, and only where
    the characters around the clock are the shape's (`arounds`, one per `before`): a
    failed search over the whole line tries every position (~30,000 instructions), a
    failed match ~1,500.  Of two starts at one clock the earlier is tried first, so the
    match is the leftmost, as the search's."""
    while c is not None:
        cs = c.start() - 2
        for before, around in zip(befores, arounds):
            start = cs - before
            if start < -1:
                continue
            for off, allowed in around:
                if cs + off < 0 or head[cs + off] not in allowed:
                    break
            else:
                m = rx.match(head, max(start, 0))
                if m is not None:
                    return m
        c = _CLOCK.search(head, c.start() + 1)
    return None


def timestamp_of(line: str, year: "int | YearHint | None" = None) -> tuple[str | None, float | None]:
    """(ISO 8601 timestamp, kernel uptime) of a line, either None.  The first shape that
    matches anywhere in the first 160 characters wins: ISO (dashes or slashes), dmesg -T,
    glog, syslog.  A zoned ISO stamp is given in UTC (`+00:00`), every other stamp as the
    node's wall clock printed it (no zone).  glog and syslog print no year: the job's
    (`year`), else `NO_YEAR`.  Every dated shape holds a clock, so each is tried only
    where it would start for one of the line's clocks (`_at_a_clock`): the same leftmost
    match, without trying every position.  The result is the string
    `datetime.isoformat` gives, built from the remembered second (`_iso_second`) when
    the stamp is ASCII.  (tests/test_linectx_timestamps.py holds the plain version this
    must agree with.)"""
    head = line[:160]
    uptime = None
    m = _MONO.search(head)
    c = _CLOCK.search(head)
    if c is None:  # every dated shape below has a clock: at most an uptime
        if m:
            try:
                uptime = float(m.group(1))
            except ValueError:
                pass
        return None, uptime
    d = _DMESG_T.search(head)  # (starts with a literal: scanned fast)
    if m and not d:
        try:
            uptime = float(m.group(1))
        except ValueError:
            uptime = None
    m = _at_a_clock(_ISO, head, c, (11,), (_ISO_AROUND,))  # `YYYY-MM-DD ` before its clock
    if m and m.group(1) != NO_YEAR:
        frac = m.group(6) or ""
        tz = m.group(7)
        if m.group(0).isascii() and (not tz or tz in _UTC_OFFSETS):  # the common case: no conversion
            base = _iso_second(f"{m.group(1)}-{m.group(3)}-{m.group(4)}", m.group(5))
            if base is not None:
                return base + _fraction(frac) + ("+00:00" if tz else ""), uptime
        else:
            try:
                dt = datetime.fromisoformat(f"{m.group(1)}-{m.group(3)}-{m.group(4)}T{m.group(5)}"
                                            f"{'.' + frac[1:7] if len(frac) > 1 else ''}")
                if tz:
                    dt = datetime.fromisoformat(dt.isoformat() + _zone(tz)).astimezone(timezone.utc)
                return dt.isoformat(), uptime
            except ValueError:
                pass
    if d and d.group(4) != NO_YEAR:
        got = _named_month_second(d.group(4), d.group(1), d.group(2), d.group(3))
        if got is not None:
            return got, uptime
    m = _at_a_clock(_GLOG, head, c, (7, 6), _GLOG_AROUND)  # a separator (or the start) and `E0813 ` before its clock
    if m:  # glog / torch c10 prefix: E0813 08:21:22.980000 (no year: the job's)
        md = m.group(1)
        month, day = md[:-2].rjust(2, "0"), md[-2:]
        frac = m.group(5) or ""
        if m.group(0).isascii():
            base = _iso_second(f"{_year_text(year, month, day)}-{month}-{day}",
                               f"{m.group(2)}:{m.group(3)}:{m.group(4)}")
            if base is not None:
                return base + _fraction(frac), uptime
    m = _SYSLOG.search(head) if _SYSLOG_CLOCK.search(head, c.start()) else None
    if m and m.group(1) in _MONTHS:
        got = _named_month_second(_year_text(year, _MONTH_DIGITS[m.group(1)], m.group(2).rjust(2, "0")),
                                  m.group(1), m.group(2), m.group(3))
        if got is not None:
            return got + (_fraction(m.group(4)) if m.group(4) and m.group(4).isascii() else ""), uptime
    return None, uptime


def line_context(line: str, year: "int | YearHint | None" = None) -> LineContext:
    ts, up = timestamp_of(line, year)
    return LineContext(rank_of(line), host_of(line), ts, up)
