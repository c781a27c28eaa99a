"""Bounded memory of extraction: evidence whose captured values never repeat
(pids, sequence numbers) is held up to the group cap per (rule, event type,
symptom, node) and counted beyond it, so the events held do not grow with the
length of a log; the attribution stays the same."""
from __future__ import annotations

import pytest

from rulekit.engine.session import Session
from rulekit.analysis.testing import job_from_mapping
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import load_corpus


@pytest.fixture(scope="module")
def bundled():
    return load_corpus(None).engine


def _job(n: int):
    job = job_from_mapping({"id": "bounds", "state": "FAILED", "nodes": ["node-01", "node-02"], "tasks_per_node": 8})
    app = [f"[rank{i % 16}]: [Rank {i % 16}] Watchdog caught collective operation timeout: "
           f"WorkNCCL(SeqNum={2000 + i}, OpType=BROADCAST, Timeout(ms)=600000)" for i in range(n)]  # never the same
    sys_lines = ["Jun  1 03:12:00 node-02 kernel: [ 5800.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
                 "GPU has fallen off the bus."]
    return job, [Observation(source="applog", lines=app, label="applog/train.log"),
                 Observation(source="syslog", node="node-02", lines=sys_lines, label="syslog/node-02.log")]


def _run(engine, n: int, group_cap: int):
    job, observations = _job(n)
    with Session(engine, job, group_cap=group_cap) as s:
        s.ingest_batch(observations)
        result = s.attribute()
        s.manager.flush()  # (an in-memory store writes its rows when asked: `EventManager.flush`)
        per_group = s.manager.conn.execute(
            "SELECT MAX(c) FROM (SELECT COUNT(*) AS c FROM events GROUP BY source_rule, event_type, symptom, "
            "resources)").fetchone()[0]
        rows = s.manager.conn.execute("SELECT COUNT(*) FROM event_repeats").fetchone()[0]
        return result, s.manager.count(s.context_id), s.manager.repeats(s.context_id), (per_group, rows)


def test_distinct_evidence_beyond_the_group_cap_is_counted_not_held(bundled):
    full, full_held, full_counted, _ = _run(bundled, 400, 10**9)
    capped, held, counted, (per_group, _rows) = _run(bundled, 400, 50)
    assert full_counted == 0
    assert per_group <= 50  # no (rule, type, symptom, node) holds more than the cap
    assert held < full_held and held + counted == full_held
    assert capped["root_cause"] == full["root_cause"] and capped["outcome"] == full["outcome"]
    # every piece of evidence is shown or counted as omitted, held or not
    assert (len(capped["evidence"]) + capped.get("evidence_omitted", 0)
            == len(full["evidence"]) + full.get("evidence_omitted", 0))


def test_events_held_do_not_grow_with_the_log(bundled):
    _, held_small, _, (_, rows_small) = _run(bundled, 600, 100)
    _, held_large, counted_large, (_, rows_large) = _run(bundled, 3000, 100)
    assert held_large == held_small  # five times the log, the same events held
    assert rows_large == rows_small  # and the same aggregate rows: one per group, not one per captured value
    assert counted_large > 2000


@pytest.mark.parametrize("raw", [
    b"12: x", b"  [rank3]: y", b"[default7]: z", b"\x1c5: a", b"\x1f\x1f[rank1]:", b"5: \r", b"5:\r", b"\r",
    b"         9: nine spaces", b"\t\t3: tabs", b"[rank]: none", b"x 12: late", b"0012: zeros", b"",
    "\u00a012: nbsp".encode(), "\u0663: arabic three".encode(), b"\xff12: bad utf8", "1\u0663: mixed".encode(),
])
def test_rank_of_raw_is_rank_of_the_decoded_line(raw):
    from rulekit.extract.linectx import rank_of, rank_of_raw
    from rulekit.extract.scan import decode_line

    assert rank_of_raw(raw) == rank_of(decode_line(raw))
