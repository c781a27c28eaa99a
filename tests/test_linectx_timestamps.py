"""`linectx.timestamp_of` (shapes tried only where a clock puts them, seconds
remembered, the ISO string built without `datetime` on ASCII lines) gives what the
plain version below gives: every shape searched over the whole head, every result
through `datetime`.  And `hitfacts.TimeCarry` (stretches searched reversed, only
when a timestamp is asked for, newest first) carries what the first version carried
(one backtracking search at every hit), also past hits that ask nothing.

Data: lines generated (hypothesis) from the timestamp shapes of REFERENCE.md, valid
and not (month 13, hour 24, 29 February), with fractions of 0-9 digits, UTC and
other zones, Unicode digits, clocks inside PCI addresses and overlapping clocks,
behind rank prefixes and before or after other text.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from hypothesis import given, settings, strategies as st

from rulekit.extract import hitfacts
from rulekit.extract.hitfacts import TimeCarry
from rulekit.extract.linectx import NO_YEAR, YearHint, rank_of, timestamp_of

# ---- the plain version (linectx before the fast paths) ---------------------------------------

_MONO = re.compile(r"\[\s*(\d+\.\d+)\]")
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})\]")
_ISO = re.compile(r"(\d{4})([-/])(\d\d)\2(\d\d)[T ](\d\d:\d\d:\d\d)([.,]\d+)?(Z|[+-]\d\d(?::?\d\d)?| ?UTC| ?GMT)?")
_SYSLOG = re.compile(r"(?:^|\s)([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d)(\.\d+)? ")
_GLOG = re.compile(r"(?:^|[\s\[:])[EIWF](\d{3,4}) (\d\d):(\d\d):(\d\d)(\.\d+)? ")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")
_MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def _year(year, month, day):
    """The year a year-less stamp gets: the job's (an int, or a YearHint), else NO_YEAR (0)."""
    if year is None:
        return 0
    return year.of(f"{int(month):02d}", f"{int(day):02d}") if isinstance(year, YearHint) else year


def _no_year(dt, year):
    return dt.isoformat() if year else NO_YEAR + dt.isoformat()[4:]


def plain_timestamp_of(line: str, year=None) -> tuple[str | None, float | None]:
    head = line[:160]
    uptime = None
    m = _MONO.search(head)
    if _CLOCK.search(head) is None:
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
    if m and m.group(1) != NO_YEAR:
        frac = (m.group(6) or "")[1:7]
        tz = m.group(7)
        try:
            dt = datetime.fromisoformat(f"{m.group(1)}-{m.group(3)}-{m.group(4)}T{m.group(5)}"
                                        + (f".{frac.ljust(6, '0')}" if frac else ""))
            if tz:
                tz = tz.strip()
                if tz in ("Z", "UTC", "GMT"):
                    tz = "+00:00"
                elif len(tz) == 3:
                    tz += ":00"
                elif ":" not in tz:
                    tz = tz[:3] + ":" + tz[3:]
                dt = dt.replace(tzinfo=datetime.fromisoformat("2000-01-01T00:00:00" + tz).tzinfo).astimezone(timezone.utc)
            return dt.isoformat(), uptime
        except ValueError:
            pass
    m = _DMESG_T.search(head)
    if m and m.group(4) != NO_YEAR:
        try:
            dt = datetime(int(m.group(4)), _MONTHS[m.group(1)], int(m.group(2)), *map(int, m.group(3).split(":")))
            return dt.isoformat(), uptime
        except (KeyError, ValueError):
            pass
    m = _GLOG.search(head)
    if m and m.group(0).isascii():
        md = m.group(1)
        month, day = md[:-2], md[-2:]
        y = _year(year, month, day)
        try:
            frac = (m.group(5) or "")[:7]
            dt = datetime.fromisoformat(f"{y or 2000:04d}-{int(month):02d}-{day}T{m.group(2)}:{m.group(3)}:"
                                        f"{m.group(4)}{frac}")
            return _no_year(dt, y), uptime
        except ValueError:
            pass
    m = _SYSLOG.search(head)
    if m and m.group(1) in _MONTHS:
        y = _year(year, _MONTHS[m.group(1)], m.group(2))
        try:
            dt = datetime(y or 2000, _MONTHS[m.group(1)], int(m.group(2)), *map(int, m.group(3).split(":")))
            frac = m.group(4) or ""
            if len(frac) > 1 and frac.isascii():
                dt = dt.replace(microsecond=int(frac[1:7].ljust(6, "0")))
            return _no_year(dt, y), uptime
        except ValueError:
            pass
    return None, uptime


# ---- generated lines -------------------------------------------------------------------------------

_D2 = st.sampled_from(["00", "01", "02", "09", "11", "12", "13", "23", "24", "28", "29", "30", "31", "59", "60", "99",
                       "\u0661\u0662"])
_D4 = st.sampled_from(["2024", "2026", "1999", "0000", "9999", "\u0662\u0660\u0662\u0666"])
_FRAC = st.sampled_from(["", ".", ".0", ".000000", ".1", ".12", ".123", ".1234", ".12345", ".123456", ".1234567",
                         ".123456789", ".000100", ".\u0661", ",123", ",", ",000"])
_TZ = st.sampled_from(["", "Z", "+00:00", "+0000", "-00:00", "-0000", "+05:30", "-0800", "+02", "+14:00", "-00",
                       " UTC", "UTC", " GMT", "+2", "+99:99"])
_MON = st.sampled_from(["Jan", "Feb", "Jun", "Dec", "Foo", "jun"])
_DAY = st.sampled_from(["Mon", "Tue", "Sun", "Xyz"])
_SP = st.sampled_from([" ", "  ", "   "])


def _clock(h, m, s):
    return f"{h}:{m}:{s}"


_CLOCKS = st.builds(_clock, _D2, _D2, _D2)
_SHAPE = st.one_of(
    st.builds(lambda y, ds, mo, d, sep, c, f, tz: f"{y}{ds}{mo}{ds[-1]}{d}{sep}{c}{f}{tz}", _D4,
              st.sampled_from(["-", "/", "-/"]), _D2, _D2, st.sampled_from(["T", " ", "_"]), _CLOCKS, _FRAC, _TZ),
    st.builds(lambda wd, mo, sp, d, c, y: f"[{wd} {mo}{sp}{d} {c} {y}]", _DAY, _MON, _SP,
              st.sampled_from(["1", "9", "29", "31", "32"]), _CLOCKS, _D4),
    st.builds(lambda sep, lv, mo, d, c, f: f"{sep}{lv}{mo}{d} {c}{f} ", st.sampled_from(["", " ", "[", ":", "x"]),
              st.sampled_from(["E", "I", "W", "F", "D"]), st.sampled_from(["0", "1", "6", "9", "00", "01", "06", "12", "13",
                                                                          "\u0661"]), _D2, _CLOCKS, _FRAC),
    st.builds(lambda mo, sp, d, c, f: f"{mo}{sp}{d} {c}{f} ", _MON, _SP, st.sampled_from(["1", "9", "29", "31", "32"]),
              _CLOCKS, _FRAC),
    st.builds(lambda a, b: f"[{a}.{b}]", st.sampled_from(["0", " 5120", "812", "  12"]),
              st.sampled_from(["3", "118850", "0"])),  # kernel uptime
    st.sampled_from(["PCI:0064:42:00", "0000:3b:00.0", "12:34:56:78", "1:23:45:67:89 ", "05:36<19:33",
                     "12:34:5", "iteration 12:00", "é", "\u00a0", "2026-01-01", "11 12:13:14"]),
)
_TEXT = st.sampled_from(["", " ", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", "kernel: ", "[rank3]:", "12: ",
                         "node-02 ", "  ", "x" * 150, "ProcessGroupNCCL.cpp:1234] ", "é ", "\t"])
_LINE = st.lists(st.one_of(_SHAPE, _TEXT), min_size=0, max_size=6).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_LINE, st.sampled_from([None, 2026, 999, YearHint(2026, 2027, "12-30")]))
def test_timestamp_of_agrees_with_the_plain_version(line, year):
    assert timestamp_of(line, year) == plain_timestamp_of(line, year)


def test_shapes_real_logs_print():
    cases = [
        ("12: 2026-08-11T03:14:22.118843+00:00 node0001 kernel: NVRM: Xid", 2026, "2026-08-11T03:14:22.118843+00:00"),
        ("2026-08-11 03:14:22,118 INFO x", None, "2026-08-11T03:14:22.118000"),  # Python logging
        ("[2026-08-11 03:14:22,118] torch.distributed.elastic.agent x", None, "2026-08-11T03:14:22.118000"),
        ("[2026-08-11T03:14:22.118] error: slurmstepd x", None, "2026-08-11T03:14:22.118000"),  # Slurm
        ("2026/08/11 03:14:22 XidCriticalError: Xid=69", None, "2026-08-11T03:14:22"),  # Go, the k8s device plugin
        ("3: [2026-08-11 03:14:22] node0001:2211:2290 [0] NCCL WARN x", None, "2026-08-11T03:14:22"),  # NCCL's [date]
        ("2026-08-11T05:14:22+0200 node0001 kernel: x", None, "2026-08-11T03:14:22+00:00"),  # journald short-iso
        ("2026-08-11T03:14:22,118843+00:00 node0001 kernel: x", None, "2026-08-11T03:14:22.118843+00:00"),  # dmesg iso
        ("2026-08-11 03:14:22 UTC x", None, "2026-08-11T03:14:22+00:00"),
        ("2026-08-11T03:14:22.123456789Z pod x", None, "2026-08-11T03:14:22.123456+00:00"),
        ("2026-08-11T03:14:22.5-07:00 y", None, "2026-08-11T10:14:22.500000+00:00"),
        ("[rank3]:[E1201 12:00:01.123456 12345 ProcessGroupNCCL.cpp:1234] x", 2026, "2026-12-01T12:00:01.123456"),
        ("[rank0]:[E601 03:22:41.426415540 ProcessGroupNCCL.cpp:629] x", 2026, "2026-06-01T03:22:41.426415"),
        ("[default3]:E0601 03:22:41.426 12 api.py:9] x", None, NO_YEAR + "-06-01T03:22:41.426000"),  # the year: later
        ("I1231 23:59:59.5 12 x.cc:1] x", YearHint(2026, 2027, "12-30"), "2026-12-31T23:59:59.500000"),
        ("I0101 00:00:01.5 12 x.cc:1] x", YearHint(2026, 2027, "12-30"), "2027-01-01T00:00:01.500000"),
        ("[Mon Jun  1 03:12:44 2026] NVRM: Xid", None, "2026-06-01T03:12:44"),
        ("Jun  1 03:12:44 node-02 kernel: x", 2026, "2026-06-01T03:12:44"),
        ("Jun  1 03:12:44 node-02 kernel: x", None, NO_YEAR + "-06-01T03:12:44"),
        ("Feb 29 03:12:44 node-02 kernel: x", None, NO_YEAR + "-02-29T03:12:44"),  # a leap day: some year has it
        ("Feb 29 03:12:44 node-02 kernel: x", 2026, None),
        ("18: [ 812.3] [ T1946] NVRM: Xid (PCI:0064:42:00): 135", 2026, None),
    ]
    for line, year, want in cases:
        assert timestamp_of(line, year)[0] == want, line
        assert plain_timestamp_of(line, year)[0] == want, line


# ---- the carried timestamp ---------------------------------------------------------------------------------

_CLOCK_LINE = re.compile(rb"[^\n]*\d\d:\d\d:\d\d[^\n]*")


class PlainCarry:
    """The carry as first written, one rank apart from another: at every hit of a rank the
    last clock line of that rank in its stretch is found with a plain search of every
    line (and parsed only when asked)."""

    MAX_PENDING = 64

    def __init__(self, year):
        self.year, self._ts, self._pending, self._pos = year, {}, {}, {}

    def ts(self, rank=None):
        pending = self._pending.get(rank)
        if pending:
            for raw in reversed(pending):
                ts = plain_timestamp_of(raw.decode("utf-8", "replace"), self.year)[0]
                if ts:
                    self._ts[rank] = ts
                    break
            pending.clear()
        return self._ts.get(rank)

    def advance(self, chunk: bytes, start: int, rank=None) -> None:
        lo = max(self._pos.get(rank, 0), start - hitfacts.LOOKBACK)
        if lo < start:
            last = None
            ls = chunk.rfind(b"\n", 0, lo) + 1  # (the line the stretch starts in, whole)
            for m in _CLOCK_LINE.finditer(chunk, ls, start):
                line = m.group(0)
                if m.end() > lo and re.search(rb"\d\d:\d\d:\d\d", chunk[max(lo, m.start()):min(m.end(), start)]) \
                        and rank_of(line.decode("utf-8", "replace")) == rank:
                    last = line
            if last is not None:
                self._pending.setdefault(rank, []).append(last)
                if len(self._pending[rank]) > self.MAX_PENDING:
                    self.ts(rank)
        self._pos[rank] = max(self._pos.get(rank, 0), start)

    def before(self, chunk, start, rank=None):
        self.advance(chunk, start, rank)
        return self.ts(rank)

    def saw(self, ts, end, rank=None):
        if ts:
            self._ts[rank] = ts
            self._pending.pop(rank, None)
        self._pos[rank] = max(self._pos.get(rank, 0), end)


_CARRY_LINE = st.one_of(_SHAPE.map(lambda s: "5: " + s + " text"), _SHAPE.map(lambda s: s + " text"),
                        _SHAPE.map(lambda s: "[rank3]:" + s), _TEXT, st.just("no clock here"),
                        st.just("x" * 200), st.just(""))


@settings(max_examples=1500, deadline=None)
@given(st.lists(_CARRY_LINE, min_size=1, max_size=40), st.lists(st.integers(0, 39), max_size=12),
       st.sampled_from([None, 2026]), st.sampled_from([64 * 1024, 40, 7]), st.sampled_from([16 * 1024, 2]))
def test_carry_agrees_with_one_backtracking_search(lines, hit_rows, year, lookback, ask_span):
    data = "\n".join(lines).encode() + b"\n"
    starts, pos = [], 0
    for raw in data.split(b"\n")[:-1]:
        starts.append(pos)
        pos += len(raw) + 1
    hits = sorted({r for r in hit_rows if r < len(starts)})
    saved = hitfacts.LOOKBACK, hitfacts.ASK_SPAN
    hitfacts.LOOKBACK, hitfacts.ASK_SPAN = lookback, ask_span  # (a small span: the chunk's lines indexed)
    try:
        fast, plain = TimeCarry(year), PlainCarry(year)
        for n, r in enumerate(hits):
            start = starts[r]
            end = data.find(b"\n", start)
            line = data[start:end].decode("utf-8", "replace")
            own, rank = timestamp_of(line, year)[0], rank_of(line)
            if n % 3 == 1 and own is None:  # a hit past its cap: passes the stretch, asks nothing
                fast.advance(data, start, rank)
                plain.advance(data, start, rank)
            else:
                assert fast.before(data, start, rank) == plain.before(data, start, rank)
            fast.saw(own, end, rank)
            plain.saw(own, end, rank)
        for rank in (None, 3, 5, 12):
            assert fast.ts(rank) == plain.ts(rank)
    finally:
        hitfacts.LOOKBACK, hitfacts.ASK_SPAN = saved


def test_the_newest_stamped_stretch_wins_past_hits_that_ask_nothing():
    """Each stretch between hits gives its last clock-looking line; the newest of those
    that parses wins (a stretch whose last one does not parse gives nothing)."""
    def lines(*text):
        data = b"".join(t + b"\n" for t in text)
        starts, pos = [], 0
        for t in text:
            starts.append(pos)
            pos += len(t) + 1
        return data, starts

    cases = [
        (lines(b"2026-01-01 00:00:01 a", b"capped evidence", b"2026-01-01 00:00:02 b", b"more capped evidence",
               b"stored evidence"), "2026-01-01T00:00:02"),
        (lines(b"2026-01-01 00:00:01 a", b"capped evidence", b"2026-01-01 00:00:02 b", b"12:34:56 not a date",
               b"more capped evidence", b"stored evidence"), "2026-01-01T00:00:01"),
    ]
    for (data, starts), want in cases:
        capped = [i for i, _ in enumerate(starts) if b"capped" in data[starts[i]:starts[i] + 20]]
        for carry in (TimeCarry(2026), PlainCarry(2026)):
            for i in capped:
                carry.advance(data, starts[i])
                carry.saw(None, starts[i + 1] - 1)
            assert carry.before(data, starts[-1]) == want


def test_interleaved_ranks_lend_each_other_no_stamp():
    """Each rank carries its own last stamp; a line with no rank prefix carries the last
    unprefixed stamp; a rank that never printed one carries none."""
    text = (b"0: 2026-01-01 00:00:01 rank 0 step\n"
            b"1: 2026-01-01 00:00:05 rank 1 step\n"
            b"2026-01-01 00:00:07 launcher\n"
            b"0: 2026-01-01 00:00:09 rank 0 step\n"
            b"1: evidence of rank 1\n"
            b"0: evidence of rank 0\n"
            b"2: evidence of rank 2\n"
            b"evidence of the launcher\n")
    for carry in (TimeCarry(2026), PlainCarry(2026)):
        got = []
        for rank, needle in ((1, b"1: evidence"), (0, b"0: evidence"), (2, b"2: evidence"), (None, b"evidence of the")):
            start = text.find(needle)
            got.append(carry.before(text, start, rank))
            carry.saw(None, text.find(b"\n", start), rank)
        assert got == ["2026-01-01T00:00:05", "2026-01-01T00:00:09", None, "2026-01-01T00:00:07"]
