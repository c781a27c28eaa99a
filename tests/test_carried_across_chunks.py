"""A hit's carried timestamp is the nearest earlier stamped line of its file and rank within
`LOOKBACK` bytes before it and after the previous hit's line of that rank
(`rulekit.engine.ordering`, `rulekit.extract.hitfacts.TimeCarry`), whatever the chunks
extraction reads the file in, serially or in scan workers (`CarryJoin`).

Until session 10 a chunk's stretches were recorded only up to its last hit, so the
stamped lines between a chunk's last hit and its end were never looked at, and a
window was cut at its chunk's start: the first unstamped hit of a chunk carried the
timestamp from before the previous chunk's last hit (at every 4 MiB boundary of a
large log; serial and chunk-parallel scans agreed, so `test_chunk_parallel.py` could
not see it).  Now the file before a chunk that a window may still reach is kept
(`TimeCarry.tail`, `next_tail`), searched when the window's part in the chunk holds no
clock (the two are one stretch), and a worker, which has only its chunk, hands back a
`Tail` for the caller to resolve with those bytes (`resolve_tail`).

Data: generated lines (stamped in several shapes, unstamped, clock-like but not a
timestamp, long; with no rank prefix or one of three ranks' interleaved), hits on some of them (some past their cap: they pass their stretch
and ask nothing), cut into chunks at line ends anywhere, small `LOOKBACK`s so that
windows run across one chunk and several.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

import rulekit.engine.phases as phases
from rulekit.engine.session import Session
from rulekit.extract import hitfacts
from rulekit.extract.hitfacts import CarryJoin, TimeCarry, chunk_facts
from rulekit.extract.linectx import rank_of, timestamp_of
from rulekit.inputs.jobdir import read_job_dir
from rulekit.rules.loader import load_corpus

REPO = Path(__file__).resolve().parent.parent

_BODY = st.one_of(
    st.sampled_from(["2026-06-01 03:00:%02d step" % s for s in range(0, 60, 7)]),
    st.sampled_from(["Jun  1 04:%02d:00 node-01 kernel: x" % m for m in range(0, 60, 11)]),
    st.sampled_from(["[E601 05:%02d:00.125 c10.cpp:9] x" % m for m in range(0, 60, 13)]),
    st.just("elapsed 00:12:34 (a clock, not a timestamp)"),
    st.just("no clock here"),
    st.just("y" * 90),
    st.just(""),
)
_LINE = st.builds(lambda prefix, body: prefix + body, st.sampled_from(["", "", "3: ", "[rank5]:", "[default3]:", "12: "]),
                  _BODY)


def _layout(lines: list[str]) -> tuple[bytes, list[int]]:
    data = "\n".join(lines).encode() + b"\n"
    starts, pos = [], 0
    for raw in data.split(b"\n")[:-1]:
        starts.append(pos)
        pos += len(raw) + 1
    return data, starts


def _chunks(data: bytes, starts: list[int], cuts: list[int]) -> list[tuple[int, bytes]]:
    """(offset, chunk) pieces of `data` cut at the line starts `cuts` name."""
    at = sorted({starts[c] for c in cuts if 0 < c < len(starts)})
    out, prev = [], 0
    for b in [*at, len(data)]:
        out.append((prev, data[prev:b]))
        prev = b
    return out


def _feed(carry: TimeCarry, buf: bytes, hits, year, got: list) -> None:
    """Pass `buf`'s hits (start, end, asks) as extraction does, collecting what the asking
    ones without a timestamp of their own carry."""
    for start, end, ask in hits:
        line = buf[start:end].decode("utf-8", "replace")
        own, rank = timestamp_of(line, year)[0], rank_of(line)
        if own is None:
            if ask:
                got.append(carry.before(buf, start, rank))
            else:
                carry.advance(buf, start, rank)
        carry.saw(own, end, rank)


def _whole(data: bytes, hits: list[tuple[int, int, bool]], year) -> list:
    """The carried value of each asking hit, the file read as one chunk."""
    got: list = []
    _feed(TimeCarry(year), data, hits, year, got)
    return got


_CUT_MIDLINE = ["2026-06-01 03:00:00 step"] * 2 + ["elapsed 00:12:34 (a clock, not a timestamp)"] * 12


@settings(max_examples=600, deadline=None)
# a window that starts inside the line of its last clock: the line is read whole (it was read
# from its chunk's start, here the file's first line, with another chunk's start another line)
@example(lines=_CUT_MIDLINE, hit_rows=[13], cut_rows=[12], year=None, lookback=40, ask_span=16 * 1024)
@given(lines=st.lists(_LINE, min_size=1, max_size=40), hit_rows=st.lists(st.integers(0, 39), max_size=14),
       cut_rows=st.lists(st.integers(0, 39), max_size=8), year=st.sampled_from([None, 2026]),
       lookback=st.sampled_from([7, 40, 150, 64 * 1024]), ask_span=st.sampled_from([16 * 1024, 4, 1]))
def test_carried_is_the_same_in_any_chunks_serial_and_in_workers(lines, hit_rows, cut_rows, year, lookback, ask_span):
    """(`ask_span`: how often a chunk is searched before its lines are indexed instead; the
    line found, and so the value carried, is the same either way)"""
    saved = hitfacts.LOOKBACK, hitfacts.ASK_SPAN
    hitfacts.LOOKBACK, hitfacts.ASK_SPAN = lookback, ask_span
    try:
        _check(lines, hit_rows, cut_rows, year)
    finally:
        hitfacts.LOOKBACK, hitfacts.ASK_SPAN = saved


@pytest.mark.parametrize("lookback", [150, 64 * 1024])
def test_a_window_reaches_across_a_chunk_without_hits(lookback, monkeypatch):
    """The stamped lines two chunks back, past a short chunk with no hit and no clock,
    are still within the window of the next chunk's first hit."""
    monkeypatch.setattr(hitfacts, "LOOKBACK", lookback)
    lines = ["2026-06-01 03:00:07 step", "2026-06-01 03:00:14 step", "no clock here", "no clock here"]
    _check(lines, [3], [2, 3], 2026)  # chunks: lines 0-1, line 2, line 3 (the hit)
    data, _starts = _layout(lines)
    assert _whole(data, [(data.rfind(b"no clock"), len(data) - 1, True)], 2026) == ["2026-06-01T03:00:14"]


def _check(lines, hit_rows, cut_rows, year) -> None:
    data, starts = _layout(lines)
    rows = sorted({r for r in hit_rows if r < len(starts)})
    hits = [(starts[r], data.find(b"\n", starts[r]), n % 3 != 1) for n, r in enumerate(rows)]
    want = _whole(data, hits, year)
    pieces = _chunks(data, starts, cut_rows)

    # serial, chunk by chunk (what extraction does without workers)
    carry, got = TimeCarry(year), []
    for off, chunk in pieces:
        carry.new_chunk(chunk)
        _feed(carry, chunk, [(s - off, e - off, a) for s, e, a in hits if off <= s < off + len(chunk)], year, got)
    assert got == want

    # each chunk's facts as a worker reads them, resolved in order as extraction resolves them
    join, got = CarryJoin(year), []
    for off, chunk in pieces:
        mine = [(s - off, e - off, 0, {}) for s, e, _a in hits if off <= s < off + len(chunk)]
        asks = {h[0]: a for h, (_s, _e, a) in zip(mine, [x for x in hits if off <= x[0] < off + len(chunk)])}
        keep = lambda hit, *_: None if asks[hit[0]] else ()  # noqa: E731 - a hit past its cap asks nothing
        _sent, facts, _lines, after, _n, last_ends = chunk_facts(chunk, mine, year, False, keep)
        for f in facts:
            if f[0] is None:  # (a hit with its own timestamp carries none)
                got.append(join.resolve(f[3], f[2]))
        join.end_chunk(chunk, after, last_ends)
    assert got == want


HIT = "node0002:1234:1300 [0] NCCL WARN NET/Socket : socket recv error: Connection reset by peer"  # no timestamp
CHUNK = 4096


def _log() -> tuple[str, str]:
    lines = ["2026-06-01 03:00:00 iteration 1 | lm loss: 1.8E+00", HIT]
    n = 2
    while sum(len(x) + 1 for x in lines) < CHUNK - 200:  # stamped lines up to just before the first chunk's end
        lines.append(f"2026-06-01 03:{n // 60:02d}:{n % 60:02d} iteration {n} | lm loss: 1.8E+00")
        n += 1
    last = lines[-1][:19]
    body = "\n".join(lines) + "\n"
    body += "x" * (CHUNK - len(body) - 1) + "\n"  # an unstamped filler line ends the chunk exactly
    return body + HIT.replace("1300", "1301") + "\n", last


def _carried(engine, job: Path, chunk: int) -> list[tuple[int, str | None]]:
    phases.ExtractionPhase.chunk_size = chunk
    try:
        jd = read_job_dir(job)
        with Session(engine, jd.job) as s:
            s.ingest_batch(jd.observations)
            s.manager.flush()
            rows = s.manager.conn.execute(
                "SELECT line_num, payload FROM events WHERE source_datum LIKE '%socket recv error%' ORDER BY line_num").fetchall()
    finally:
        phases.ExtractionPhase.chunk_size = phases.CHUNK_SIZE
    return [(n, json.loads(p)["fields"].get("carried_ts")) for n, p in rows]


def test_the_stamped_lines_after_a_chunks_last_hit_are_carried(tmp_path, monkeypatch):
    """The reproduction: the second hit, first of the second chunk, carries the stamped
    line just before the chunk boundary (03:01:14 here), not the one before the first hit."""
    engine = load_corpus(None).engine
    monkeypatch.setattr(engine, "options", engine.options.with_(scan_workers=0))
    job = tmp_path / "job"
    shutil.copytree(REPO / "examples" / "xid149-nvlink", job)
    text, last = _log()
    (job / "applog" / "train.log").write_text(text)
    whole = _carried(engine, job, 4 << 20)
    assert len(whole) == 2 and whole[1][1] == last.replace(" ", "T")  # one chunk: the nearest stamped line
    assert _carried(engine, job, CHUNK) == whole
