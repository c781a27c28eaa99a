"""What a small job costs that does not depend on its size: corpus-derived tables
are worked out once per corpus (not per session), a fresh store's lookup rows are
read from memory, and the rule watchdog is started once for many stretches of
rule code, not once per stretch, and a store that aggregated no repeats answers
their counts without SQLite (a server answering hundreds of small jobs a
second paid each of these on every request)."""
from __future__ import annotations

import threading
import time

import pytest

from rulekit.engine import phases
from rulekit.engine.session import Session
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.observation import Observation
from rulekit.rules import containment

XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def _job(i: int = 0) -> JobInfo:
    return JobInfo(id=f"small-{i}", state="FAILED", nodes=("n1", "n2"), tasks_per_node=8)


def _attribute(engine, i: int = 0) -> dict:
    with Session(engine, _job(i)) as s:
        s.ingest(Observation(source="syslog", node="n2", lines=[XID79]))
        return s.attribute()


def test_roles_and_rule_lists_are_worked_out_once_per_corpus(bundled, monkeypatch):
    first = _attribute(bundled, 0)
    assert first["outcome"] != "unknown" and first["bad_nodes"][0]["node"] == "n2"

    def not_again(*a, **k):
        raise AssertionError("per-corpus work done again for a new session")

    monkeypatch.setattr(phases, "rule_role", not_again)  # the plan's roles
    monkeypatch.setattr(phases, "stratum_of", not_again)  # the filters' trace names
    second = _attribute(bundled, 0)
    assert second == first


def test_a_fresh_store_reads_its_lookup_rows_from_memory(bundled):
    """The working set maps event-type and rule ids without asking SQLite, and gives
    the same names it would have read there."""
    statements: list[str] = []
    with Session(bundled, _job()) as s:
        s.manager.conn.set_trace_callback(statements.append)
        s.ingest(Observation(source="syslog", node="n2", lines=[XID79]))
        result = s.attribute()
        conn = s.manager.conn
        assert s.manager.names_by_id("rules") == dict(conn.execute("SELECT id, name FROM rules").fetchall())
        assert s.manager.names_by_id("event_types") == dict(conn.execute("SELECT id, name FROM event_types"))
    read = [q for q in statements if "FROM rules" in q or "FROM event_types" in q and "JOIN" not in q]
    assert read == ["SELECT id, name FROM rules", "SELECT id, name FROM event_types"]  # only the check above
    assert result["evidence"][0]["rule"]


def _attribute_asking_sqlite_of_repeats(engine, lines: list[str], ask: bool) -> tuple[dict, list[str]]:
    """A job's result and the statements its store ran; `ask`: as a store that does not know
    it holds no aggregated repeats (every question about them goes to SQLite)."""
    statements: list[str] = []
    with Session(engine, _job(), repeat_cap=2, group_cap=3) as s:
        s.manager.conn.set_trace_callback(statements.append)
        if ask:
            s.manager._no_repeats = False
        s.ingest(Observation(source="syslog", node="n2", lines=lines))
        return s.attribute(), statements[:]  # (not what closing the store runs)


@pytest.mark.parametrize("repeats", [1, 12])
def test_a_store_without_repeats_answers_their_counts_without_sqlite(bundled, repeats):
    """A fresh store that never aggregated a repeat answers `repeats`, `repeats_by_group` and
    `left_out` from memory, with what SQLite would say; one that did asks SQLite."""
    lines = [XID79.replace("5120.118843", f"5120.{i:06d}") for i in range(repeats)]
    fast, statements = _attribute_asking_sqlite_of_repeats(bundled, lines, ask=False)
    slow, asked = _attribute_asking_sqlite_of_repeats(bundled, lines, ask=True)
    assert fast == slow
    assert any("event_repeats" in q for q in asked)
    if repeats == 1:
        assert fast.get("evidence_omitted", 0) == 0
        assert not any("event_repeats" in q for q in statements)
    else:  # past the caps: aggregated rows, counted as before
        assert fast["evidence_omitted"] > 0
        assert any("SELECT SUM(r.count)" in q for q in statements)


def test_a_mirrored_checkpoint_is_one_statement_and_the_cycle_still_restores(bundled):
    """A job's checkpoint by its kept rows writes one row (no copy to delete: none was made);
    attribute, ingest more, attribute again gives what one attribution of everything gives,
    also after a copied checkpoint (a store that stopped mirroring) and a restore."""
    nccl = ("[rank3]:[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600013 milliseconds")
    statements: list[str] = []
    with Session(bundled, _job()) as s:
        s.manager.conn.set_trace_callback(statements.append)
        s.ingest(Observation(source="syslog", node="n2", lines=[XID79]))
        s.attribute()
        checkpoint = [q for q in statements if "checkpoint" in q or q in ("BEGIN", "COMMIT")]
        assert checkpoint == ["INSERT OR REPLACE INTO checkpoints(context_id) VALUES (1)"]
        s.ingest(Observation(source="applog", node="n1", lines=[nccl]))
        twice = s.attribute()
        s.manager._drop_kept()  # from here on every checkpoint is a copy in SQL
        s.ingest(Observation(source="applog", node="n1", lines=[nccl.replace("SeqNum=1", "SeqNum=2")]))
        s.attribute()
        copied = s.manager._copied
        assert copied == {s.context_id}
        thrice = s.attribute()  # (restored, then copied again)
    with Session(bundled, _job()) as once:
        once.ingest(Observation(source="syslog", node="n2", lines=[XID79]))
        once.ingest(Observation(source="applog", node="n1", lines=[nccl]))
        assert once.attribute() == twice
        once.ingest(Observation(source="applog", node="n1", lines=[nccl.replace("SeqNum=1", "SeqNum=2")]))
        assert once.attribute() == thrice


def test_a_store_at_a_path_still_reads_its_lookup_rows(bundled, tmp_path):
    from rulekit.engine.store import EventManager

    m = EventManager(["A"], path=str(tmp_path / "events.sqlite"))
    try:
        assert m.names_by_id("rules") is None  # may hold rows of earlier runs: SQLite says
    finally:
        m.close()


@pytest.fixture
def short_linger(monkeypatch):
    monkeypatch.setattr(containment, "LINGER_S", 0.3)
    yield
    deadline = time.monotonic() + 5
    while containment._STATE["thread"] is not None and time.monotonic() < deadline:
        time.sleep(0.05)


def _watchdogs() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "rulekit-rule-watchdog"]


def test_the_watchdog_serves_many_stretches_then_ends_by_itself(short_linger):
    never = lambda code: False  # noqa: E731
    with containment.contained(never, 5.0):
        pass
    first = containment._STATE["thread"]
    assert first is not None and first.is_alive()
    for _ in range(20):  # back-to-back stretches (one small request each): the same thread
        with containment.contained(never, 5.0):
            pass
    assert containment._STATE["thread"] is first
    first.join(5)  # idle past LINGER_S: it ends by itself
    assert not first.is_alive() and containment._STATE["thread"] is None
    assert not _watchdogs()


def test_a_lingering_watchdog_still_stops_a_looping_rule(short_linger):
    def loop():
        while True:
            pass

    match = lambda code: code is loop.__code__  # noqa: E731
    with containment.contained(match, 5.0):
        pass
    lingering = containment._STATE["thread"]
    assert lingering is not None
    t0 = time.monotonic()
    with pytest.raises(containment.RuleTimeout):
        with containment.contained(match, 0.2):
            loop()
    assert time.monotonic() - t0 < 5
    assert containment._STATE["thread"] is lingering  # the same watchdog did it


def test_a_stretch_after_the_watchdog_ended_starts_a_new_one(short_linger):
    never = lambda code: False  # noqa: E731
    with containment.contained(never, 5.0):
        pass
    first = containment._STATE["thread"]
    first.join(5)
    assert not first.is_alive()
    with containment.contained(never, 5.0):
        second = containment._STATE["thread"]
        assert second is not None and second is not first and second.is_alive()
