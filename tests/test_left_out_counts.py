"""Hits past their cap are counted into `event_repeats` rows the same way whether
extraction counts each one (`ExtractionPhase._left_out`, in line order) or a scan
worker first sums a chunk's per group (`workerhits.GroupCounts`) and extraction adds
those sums (`_left_out_many`) among the hits it counts itself: a worker told of a
cap late sends some of a group's hits whole, and extraction finds them capped, so
both kinds of one group interleave in one chunk.  Rows, their order and every
field (count, first and last line, last timestamp) must be the same."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rulekit.engine.phases import ExtractionPhase
from rulekit.engine.workerhits import GroupCounts
from rulekit.extract.hitfacts import chunk_facts

GROUPS = [("R1", "bad_node", "XID_79", "n1"), ("R1", "bad_node", "XID_79", "n2"), ("R2", "info", "NCCL_INFO", None)]
TIMES = [None, "", "2026-11-03T07:05:35", "2026-11-03T07:05:36"]


def _counter() -> ExtractionPhase:
    phase = ExtractionPhase.__new__(ExtractionPhase)  # (only its counting: no engine, no store)
    phase._repeats = {}
    return phase


def _serial(hits, base: int, oc: int = 1) -> list:
    phase = _counter()
    for line, group, ts, _by_worker in hits:
        phase._left_out(oc, group, base + line, ts)
    return [(k, v[:4]) for k, v in phase._repeats.items()]


def _chunked(hits, base: int, oc: int = 1) -> list:
    counts = GroupCounts()
    entries = []
    for line, group, ts, by_worker in hits:
        if by_worker:
            got = counts.add((line * 5, line * 5 + 4, 7, {"x": "1"}), group, ts, line)
            if got:
                entries.append((got[0][0] // 5, "worker", got[0][3], got[1]))
    assert len(entries) == len({e[2] for e in entries})  # one entry per group
    own = [(line, "here", group, ts) for line, group, ts, by_worker in hits if not by_worker]
    phase = _counter()
    for line, kind, group, what in sorted(entries + own, key=lambda e: e[0]):  # (lines are distinct)
        if kind == "worker":
            phase._left_out_many(oc, group, base, *what)
        else:
            phase._left_out(oc, group, base + line, what)
    return [(k, v[:4]) for k, v in phase._repeats.items()]


hit_lists = st.lists(st.tuples(st.sampled_from(GROUPS), st.sampled_from(TIMES), st.booleans()), max_size=40).map(
    lambda hs: [(3 * i + (i % 3), g, ts, w) for i, (g, ts, w) in enumerate(hs)])  # increasing, with gaps


@settings(max_examples=300, deadline=None)
@given(hit_lists, st.integers(min_value=1, max_value=10_000))
def test_sums_from_a_worker_count_like_each_hit(hits, base):
    assert _chunked(hits, base) == _serial(hits, base)


def test_a_late_hit_counted_here_does_not_undo_the_workers_later_ones():
    """The worker's entry stands at its group's first hit (line 0) and already holds its
    last (line 20, stamped); extraction then counts one at line 10 itself."""
    g = GROUPS[0]
    hits = [(0, g, "2026-11-03T07:05:35", True), (10, g, "2026-11-03T07:05:36", False),
            (20, g, "2026-11-03T07:05:37", True), (30, g, None, True)]
    got = _chunked(hits, 100)
    assert got == _serial(hits, 100) == [((1, g), [4, 100, 130, "2026-11-03T07:05:37"])]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["x", "", "NVRM: Xid 79", "a\r", "2026-01-01T00:00:00Z b"]), max_size=30),
       st.booleans(), st.sets(st.integers(min_value=0, max_value=29)))
def test_chunk_facts_numbers_each_sent_hits_line_as_counting_would(lines, trailing, keep):
    """The lines `chunk_facts` gives with each hit sent (and its left-out stand-ins) and its
    chunk's newlines are what counting the newlines before them gives: extraction takes a
    worker's numbers instead of counting again."""
    chunk = ("\n".join(lines) + ("\n" if trailing and lines else "")).encode()
    hits, pos = [], 0
    for i, text in enumerate(lines):
        for rule in (0, 1) if i % 2 else (0,):  # (two hits on some lines)
            hits.append((pos, pos + len(text), rule, {}))
        pos += len(text) + 1

    def leave_out(hit, _line, _rank, _host, _ts, num):
        assert num == chunk.count(b"\n", 0, hit[0])
        return None if num in keep else ((hit[0], hit[1], -1, ("g",)), [1, num, num, None, -1]) if hit[2] else ()

    sent, facts, nums, _after, newlines, _last_end = chunk_facts(chunk, hits, 2026, True, leave_out)
    assert len(sent) == len(facts) == len(nums)
    assert nums == [chunk.count(b"\n", 0, h[0]) for h in sent]
    assert newlines == chunk.count(b"\n")
