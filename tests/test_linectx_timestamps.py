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
from rulekit.extract.linectx import timestamp_of

# ---- the plain version (linectx before the fast paths) ---------------------------------------

_MONO = re.compile(r"\[\s*(\d+\.\d+)\]")
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})\]")
_ISO = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?")
_SYSLOG = re.compile(r"(?:^|\s)([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d) ")
_GLOG = re.compile(r"(?:^|[\s\[:])[EIWF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)? ")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")
_MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def plain_timestamp_of(line: str, year: int | None = None) -> tuple[str | None, float | None]:
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
    if m and year:
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


# ---- generated lines -------------------------------------------------------------------------------

_D2 = st.sampled_from(["00", "01", "02", "09", "11", "12", "13", "23", "24", "28", "29", "30", "31", "59", "60", "99",
                       "\u0661\u0662"])
_D4 = st.sampled_from(["2024", "2026", "1999", "0000", "9999", "\u0662\u0660\u0662\u0666"])
_FRAC = st.sampled_from(["", ".", ".0", ".000000", ".1", ".12", ".123", ".1234", ".12345", ".123456", ".1234567",
                         ".123456789", ".000100", ".\u0661"])
_TZ = st.sampled_from(["", "Z", "+00:00", "+0000", "-00:00", "-0000", "+05:30", "-0800", "+02", "+14:00"])
_MON = st.sampled_from(["Jan", "Feb", "Jun", "Dec", "Foo", "jun"])
_DAY = st.sampled_from(["Mon", "Tue", "Sun", "Xyz"])
_SP = st.sampled_from([" ", "  ", "   "])


def _clock(h, m, s):
    return f"{h}:{m}:{s}"


_CLOCKS = st.builds(_clock, _D2, _D2, _D2)
_SHAPE = st.one_of(
    st.builds(lambda y, mo, d, sep, c, f, tz: f"{y}-{mo}-{d}{sep}{c}{f}{tz}", _D4, _D2, _D2, st.sampled_from(["T", " ", "_"]),
              _CLOCKS, _FRAC, _TZ),
    st.builds(lambda wd, mo, sp, d, c, y: f"[{wd} {mo}{sp}{d} {c} {y}]", _DAY, _MON, _SP,
              st.sampled_from(["1", "9", "29", "31", "32"]), _CLOCKS, _D4),
    st.builds(lambda sep, lv, mo, d, c, f: f"{sep}{lv}{mo}{d} {c}{f} ", st.sampled_from(["", " ", "[", ":", "x"]),
              st.sampled_from(["E", "I", "W", "F", "D"]), _D2, _D2, _CLOCKS, _FRAC),
    st.builds(lambda mo, sp, d, c: f"{mo}{sp}{d} {c} ", _MON, _SP, st.sampled_from(["1", "9", "29", "31", "32"]), _CLOCKS),
    st.builds(lambda a, b: f"[{a}.{b}]", st.sampled_from(["0", " 5120", "812", "  12"]),
              st.sampled_from(["3", "118850", "0"])),  # kernel uptime
    st.sampled_from(["PCI:0064:42:00", "0000:3b:00.0", "12:34:56:78", "1:23:45:67:89 ", "05:36<19:33",
                     "12:34:5", "iteration 12:00", "é", "\u00a0", "2026-01-01", "11 12:13:14"]),
)
_TEXT = st.sampled_from(["", " ", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", "kernel: ", "[rank3]:", "12: ",
                         "node-02 ", "  ", "x" * 150, "ProcessGroupNCCL.cpp:1234] ", "é ", "\t"])
_LINE = st.lists(st.one_of(_SHAPE, _TEXT), min_size=0, max_size=6).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_LINE, st.sampled_from([None, 2026, 999]))
def test_timestamp_of_agrees_with_the_plain_version(line, year):
    assert timestamp_of(line, year) == plain_timestamp_of(line, year)


def test_shapes_real_logs_print():
    cases = [
        ("12: 2026-08-11T03:14:22.118843+00:00 node0001 kernel: NVRM: Xid", 2026, "2026-08-11T03:14:22.118843+00:00"),
        ("2026-08-11 03:14:22,118 INFO x", None, "2026-08-11T03:14:22"),
        ("2026-08-11T03:14:22.5-07:00 y", None, "2026-08-11T10:14:22.500000+00:00"),
        ("[rank3]:[E1201 12:00:01.123456 12345 ProcessGroupNCCL.cpp:1234] x", 2026, "2026-12-01T12:00:01.123456"),
        ("[Mon Jun  1 03:12:44 2026] NVRM: Xid", None, "2026-06-01T03:12:44"),
        ("Jun  1 03:12:44 node-02 kernel: x", 2026, "2026-06-01T03:12:44"),
        ("18: [ 812.3] [ T1946] NVRM: Xid (PCI:0064:42:00): 135", 2026, None),
    ]
    for line, year, want in cases:
        assert timestamp_of(line, year)[0] == want, line
        assert plain_timestamp_of(line, year)[0] == want, line


# ---- the carried timestamp ---------------------------------------------------------------------------------

_LAST_CLOCK = re.compile(rb"(?s:.*)\d\d:\d\d:\d\d")


class PlainCarry:
    """The carry as first written: at every hit the stretch's last clock line is found
    with one backtracking search (and parsed only when asked)."""

    MAX_PENDING = 64

    def __init__(self, year):
        self.year, self._ts, self._pending, self._pos = year, None, [], 0

    @property
    def ts(self):
        if self._pending:
            for raw in reversed(self._pending):
                ts = plain_timestamp_of(raw.decode("utf-8", "replace"), self.year)[0]
                if ts:
                    self._ts = ts
                    break
            self._pending.clear()
        return self._ts

    def new_chunk(self):
        self._pos = 0

    def advance(self, chunk: bytes, start: int) -> None:
        lo = max(self._pos, start - hitfacts.LOOKBACK)
        if lo < start:
            m = _LAST_CLOCK.match(chunk, lo, start)
            if m is not None:
                ls = chunk.rfind(b"\n", 0, m.end()) + 1  # (the clock's whole line)
                le = chunk.find(b"\n", m.end(), start)
                self._pending.append(chunk[ls:le if le >= 0 else start])
                if len(self._pending) > self.MAX_PENDING:
                    _ = self.ts
        self._pos = max(self._pos, start)

    def before(self, chunk, start):
        self.advance(chunk, start)
        return self.ts

    def saw(self, ts, end):
        if ts:
            self._ts = ts
            self._pending.clear()
        self._pos = max(self._pos, end)


_CARRY_LINE = st.one_of(_SHAPE.map(lambda s: "5: " + s + " text"), _TEXT, st.just("no clock here"),
                        st.just("x" * 200), st.just(""))


@settings(max_examples=1500, deadline=None)
@given(st.lists(_CARRY_LINE, min_size=1, max_size=40), st.lists(st.integers(0, 39), max_size=12),
       st.sampled_from([None, 2026]), st.sampled_from([64 * 1024, 40, 7]))
def test_carry_agrees_with_one_backtracking_search(lines, hit_rows, year, lookback):
    data = "\n".join(lines).encode() + b"\n"
    starts, pos = [], 0
    for raw in data.split(b"\n")[:-1]:
        starts.append(pos)
        pos += len(raw) + 1
    hits = sorted({r for r in hit_rows if r < len(starts)})
    saved = hitfacts.LOOKBACK
    hitfacts.LOOKBACK = lookback
    try:
        fast, plain = TimeCarry(year), PlainCarry(year)
        for n, r in enumerate(hits):
            start = starts[r]
            end = data.find(b"\n", start)
            own = timestamp_of(data[start:end].decode("utf-8", "replace"), year)[0]
            if n % 3 == 1 and own is None:  # a hit past its cap: passes the stretch, asks nothing
                fast.advance(data, start)
                plain.advance(data, start)
            else:
                assert fast.before(data, start) == plain.before(data, start)
            fast.saw(own, end)
            plain.saw(own, end)
        assert fast.ts == plain.ts
    finally:
        hitfacts.LOOKBACK = saved


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
