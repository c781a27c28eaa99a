"""The shortcuts on extraction's per-hit path read what the slow forms read:

- `linectx.rank_line_finder` (an accumulator's next line of its own rank, or of
  none, found with one search) finds exactly the lines `rank_of_raw` admits;
- `linectx.host_of`'s literal pre-check never rejects a line the full NCCL host
  pattern matches;
- a stamped line beyond the repeat cap is still the nearest earlier stamped line
  for the unstamped evidence after it (its timestamp is carried);
- `gcpolicy.fewer_collections` restores the thresholds, also when nested from
  threads;
- no collection walks a job's events between its attribution and its end
  (`jobrun.attribute_dir`);
- an accumulator declared `max_lines=0` is finalized on its trigger line, fed nothing.
Data: generated lines (hypothesis) built from the prefixes real logs print.
"""
from __future__ import annotations

import gc
import re
import threading

from hypothesis import given, settings, strategies as st

from rulekit.analysis.testing import job_from_mapping
from rulekit.engine.gcpolicy import THRESHOLD0, fewer_collections
from rulekit.engine.session import Session
from rulekit.extract import linectx
from rulekit.extract.linectx import host_of, rank_line_finder, rank_of_raw
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import load_corpus

_PREFIX = st.sampled_from(["", " ", "\t", " " * 8, " " * 9, "\x1c", "\r", "\u00a0", "\u2003", "x "])
_FORM = st.sampled_from(["{r}: a", "[rank{r}]: b", "[default{r}]: c", "0{r}: d", "{r}:e", "[rank{r}] f",
                         "{r} : g", "{r}0: h", "00{r}: i", "é {r}: j", "{r}: é", "", "[rank{r}]:", "\u0663: k",
                         "\u0661\u0662: l", "Traceback (most recent call last):"])
_LINE = st.builds(lambda p, f, r: p + f.format(r=r), _PREFIX, _FORM, st.sampled_from([0, 1, 2, 3, 12, 21]))


def _admitted_by_rank_of_raw(chunk: bytes, rank: int) -> list[int]:
    out, pos = [], 0
    for raw in chunk.split(b"\n"):
        if pos < len(chunk) and rank_of_raw(raw) in (None, rank):
            out.append(pos)
        pos += len(raw) + 1
    return out


def _found(chunk: bytes, rank: int) -> list[int]:
    """What `_ActiveAccumulator.feed_chunk` feeds: the finder's lines, a non-ASCII one re-read."""
    find, out, pos, n = rank_line_finder(rank), [], 0, len(chunk)
    while pos < n:
        start = find(chunk, pos)
        if start < 0 or start >= n:
            break
        nl = chunk.find(b"\n", start)
        end = n if nl < 0 else nl
        raw = chunk[start:end]
        if raw.isascii() or rank_of_raw(raw) in (None, rank):
            out.append(start)
        pos = end + 1
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=30), st.booleans(), st.sampled_from([0, 1, 2, 3, 12]))
def test_rank_line_finder_feeds_the_lines_rank_of_raw_admits(lines, trailing_newline, rank):
    chunk = ("\n".join(lines) + ("\n" if trailing_newline else "")).encode()
    assert _found(chunk, rank) == _admitted_by_rank_of_raw(chunk, rank)


_FULL_HOST = re.compile(r"(?:^|[\s\]:])([A-Za-z][\w.\-]*):(\d+):(\d+) \[\d+\]")
_HOSTLIKE = st.builds(lambda a, h, p, t, d, b: f"{a}{h}:{p}:{t} [{d}]{b}",
                      st.sampled_from(["", "12: ", "[rank3]: ", "x", " ", "]", ":", "é "]),
                      st.sampled_from(["node-01", "gpu7.cluster", "9bad", "a_b", "é", "h"]),
                      st.sampled_from(["1", "123", "٣", "x"]), st.sampled_from(["2", "45"]),
                      st.sampled_from(["0", "7", "", "x"]), st.sampled_from(["", " NCCL INFO x", "]"]))


@settings(max_examples=400, deadline=None)
@given(st.one_of(_HOSTLIKE, st.text(max_size=80), st.builds(lambda s: "x" * 290 + s, _HOSTLIKE)))
def test_host_of_is_the_full_nccl_host_pattern(line):
    m = _FULL_HOST.search(line[:300])
    assert host_of(line) == (m.group(1) if m else None)


def test_a_stamped_line_past_the_repeat_cap_is_carried_from():
    engine = load_corpus(None).engine
    job = job_from_mapping({"id": "carry", "state": "FAILED", "nodes": ["node-01"]})
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    lines = [f"2026-06-01T03:12:{s:02d}Z node-01 kernel: {xid}" for s in range(5)]  # the same evidence, stamped
    lines.append("NCCL WARN Cuda failure 'unspecified launch failure'")  # unstamped evidence after it
    with Session(engine, job, repeat_cap=2, group_cap=2) as s:
        s.ingest(Observation(source="syslog", node="node-01", lines=lines, label="syslog/node-01.log"))
        s.manager.flush()
        rows = s.manager.conn.execute("SELECT line_num, timestamp, payload FROM events ORDER BY id").fetchall()
    unstamped = [r for r in rows if r[0] == 6]  # the NCCL line's events (line 1 of the scheduler record has none)
    assert unstamped and all(r[1] is None for r in unstamped), rows
    # carried from the last stamped line (03:12:04, beyond the cap), not from the last one stored (03:12:01)
    assert all('"carried_ts": "' in r[2] and "03:12:04" in r[2] for r in unstamped), unstamped


def _inside_overlapping(cm, probe, threads: int = 3) -> list:
    """`probe()` read inside `cm()` entered by this thread and `threads` others, all
    inside at once (their blocks overlap), and left in turn."""
    barrier = threading.Barrier(threads + 1)
    seen: list = []

    def work():
        with cm():
            barrier.wait()
            seen.append(probe())
            barrier.wait()

    others = [threading.Thread(target=work) for _ in range(threads)]
    for t in others:
        t.start()
    work()
    for t in others:
        t.join()
    return seen


def test_fewer_collections_restores_the_thresholds_also_from_threads():
    before = gc.get_threshold()
    assert _inside_overlapping(fewer_collections, lambda: gc.get_threshold()[0]) == [max(THRESHOLD0, before[0])] * 4
    assert gc.get_threshold() == before
    gc.set_threshold(0)
    try:
        with fewer_collections():
            assert gc.get_threshold()[0] == 0  # collection switched off by the user stays off
    finally:
        gc.set_threshold(*before)
    assert linectx._NCCL_TAIL.pattern.startswith(":")  # the pre-check starts with a literal (C-speed search)


def test_paused_gc_nests_across_threads_and_keeps_a_users_off():
    from rulekit.engine.gcpolicy import paused_gc

    assert gc.isenabled()
    assert _inside_overlapping(paused_gc, gc.isenabled, threads=2) == [False] * 3 and gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # off before: still off
    finally:
        gc.enable()


def test_no_collection_walks_a_job_between_its_attribution_and_its_end(monkeypatch):
    """`attribute_dir` keeps collections paused from attribution until the session and
    its events are gone: a collection in between (the first after `attribute` resumed
    them, with a threshold of one object here) would walk every event only for them
    to be freed right after."""
    from pathlib import Path

    from rulekit.engine import jobrun

    engine = load_corpus(None).engine
    real_attribute, real_close = Session.attribute, Session.close
    window = {"open": False, "threshold": gc.get_threshold()}
    collections = []

    def attribute(self, *a, **k):
        window["open"] = True
        gc.set_threshold(1)
        return real_attribute(self, *a, **k)

    def close(self):
        real_close(self)
        if window["open"]:
            window["open"] = False
            gc.set_threshold(*window["threshold"])

    def seen(phase, info):
        if phase == "start" and window["open"]:
            collections.append(info["generation"])

    monkeypatch.setattr(Session, "attribute", attribute)
    monkeypatch.setattr(Session, "close", close)
    gc.callbacks.append(seen)
    try:
        result = jobrun.attribute_dir(engine, Path(__file__).parents[1] / "examples" / "xid149-nvlink")
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*window["threshold"])
    assert result["outcome"] == "hardware"
    assert not window["open"] and collections == []


ONE_LINE_CORPUS = {
    "s.toml": """
        [[symptom]]
        name = "ONE_LINE"
        rank = 10
        outcome = "application"
        sub_domain = "code"
        blame = "workload"
    """,
    "acc.py": """
        from rulekit.plugin import Accumulator, EventSpec, accumulator_def

        FED = []

        @accumulator_def(name="TriggerOnly", author="t", trigger_re=r"ONE-LINE (\\w+)", max_lines=0,
                         symptoms=["ONE_LINE"])
        class TriggerOnly(Accumulator):
            def __init__(self, ctx, line, match):
                self.word = line.split()[-1]
            def feed(self, line):
                FED.append(line)
                return True
            def finalize(self):
                if self.word == "boom":
                    def half():  # one event, then the rule's bug
                        yield EventSpec(type="bad_node", symptom="ONE_LINE", fields={"word": "half"})
                        raise ValueError("finalize broke")
                    return half()
                return [EventSpec(type="bad_node", symptom="ONE_LINE", fields={"word": self.word})]
    """,
}


def test_a_one_line_accumulator_that_raises_is_reported_and_emits_nothing(make_corpus):
    """As any accumulator's: a `finalize` that raises (here midway through its events)
    is a rule error of the result, emits none of them, and the other triggers go on."""
    res = load_corpus([make_corpus(ONE_LINE_CORPUS)])
    job = job_from_mapping({"id": "j", "state": "FAILED", "nodes": ["n1"]})
    with Session(res.engine, job) as s:
        s.ingest(Observation(source="applog", lines=["ONE-LINE boom", "ONE-LINE fine"]))
        result = s.attribute()
        s.manager.flush()
        words = [r[0] for r in s.manager.conn.execute("SELECT payload FROM events WHERE symptom = 'ONE_LINE'")]
    assert [e["rule"] for e in result["rule_errors"]] == ["TriggerOnly"]
    assert "finalize broke" in str(result["rule_errors"][0])
    assert len(words) == 1 and '"word": "fine"' in words[0]


def test_an_accumulator_of_max_lines_0_reads_its_trigger_line_alone(make_corpus):
    """`max_lines=0`: finalized on its trigger line, fed nothing (not even a line of its
    own rank after it), so its event comes in line order with the extractors' events."""
    import sys

    res = load_corpus([make_corpus(ONE_LINE_CORPUS)])
    assert res.engine is not None, res.diagnostics
    job = job_from_mapping({"id": "j", "state": "FAILED", "nodes": ["n1"]})
    lines = ["[rank0]: ONE-LINE first", "[rank0]: after it", "[rank1]: ONE-LINE last"]  # the last one: nothing after it
    with Session(res.engine, job) as s:
        s.ingest(Observation(source="applog", lines=lines))
        s.manager.flush()
        rows = s.manager.conn.execute("SELECT line_num, payload FROM events WHERE symptom = 'ONE_LINE' "
                                      "ORDER BY id").fetchall()
    fed = next(m.FED for name, m in sys.modules.items() if name.endswith("acc") and hasattr(m, "FED"))
    assert fed == []
    assert [r[0] for r in rows] == [1, 3] and '"word": "last"' in rows[1][1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(min_value=0, max_value=200), st.integers(min_value=60_000, max_value=70_000)),
                          st.integers(min_value=0, max_value=40),
                          st.sampled_from([None, "", "2026-01-01T00:00:01", "2026-01-01T00:00:02"]),
                          st.booleans()), max_size=40))
def test_hit_line_is_advance_then_saw(steps):
    """`TimeCarry.hit_line` (a worker's one call per hit line) leaves the carry as
    `advance` (for a line without its own timestamp) and then `saw` leave it."""
    from rulekit.extract.hitfacts import TimeCarry

    # (long enough that a stretch can start past LOOKBACK: gaps of 60-70 KB)
    chunk = b"".join(b"x 2026-01-01 00:00:%02d y\n" % (i % 60) if i % 3 else b"no clock here\n" for i in range(40_000))
    plain, fused, pos = TimeCarry(2026), TimeCarry(2026), 0
    for gap, length, ts, ask in steps:
        start = min(pos + gap, len(chunk))
        end = min(start + length, len(chunk))
        if ts is None:
            plain.advance(chunk, start)
        plain.saw(ts, end)
        fused.hit_line(chunk, start, end, ts)
        a, b = plain._state(None), fused._state(None)
        assert (a.pos, a.pending, a.ts, a.hit, a.last_end) == (b.pos, b.pending, b.ts, b.hit, b.last_end)
        if ask:
            assert plain.ts() == fused.ts()
        pos = end
