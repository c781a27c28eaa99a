"""The event store as the spec describes it: lookup tables + one growing events
table, buffered inserts, spilling, close()/close(flush=False)/destructor, and the
EventStream operations filters use."""
from __future__ import annotations

import gc
import os
import sqlite3

import pytest

from rulekit.rules.model import EventSpec, EventType
from rulekit.engine.store import EventManager, ReadOnlyStreamError

BAD = EventType.BAD_NODE.value


def add(m: EventManager, ctx: int, n: int, symptom: str = "S", node: str = "n1") -> None:
    for i in range(n):
        m.add(m.row(ctx, BAD, "R", None, None, i + 1, f"line {i}", node, symptom, {}))


def tables(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_schema_and_lookup_tables_shared_from_the_engine():
    m = EventManager(["RuleA", "RuleB"])
    assert tables(m.conn) >= {"contexts", "event_types", "rules", "observation_contexts", "obs_sources",
                              "obs_formats", "events"}
    assert [r[0] for r in m.conn.execute("SELECT name FROM rules ORDER BY id")] == ["RuleA", "RuleB"]
    cols = [r[1] for r in m.conn.execute("PRAGMA table_info(events)")]
    assert cols == ["id", "context_id", "event_type", "source_rule", "obs_context_id", "timestamp", "line_num",
                    "source_datum", "resources", "symptom", "rank", "payload"]
    # what attribution selects on is indexed; the payload holds only the rest
    indexed = {r[2] for ix in m.conn.execute("PRAGMA index_list(events)")
               for r in m.conn.execute(f"PRAGMA index_info({ix[1]})")}
    assert {"context_id", "event_type", "symptom", "resources"} <= indexed
    ctx = m.context("job-1")
    oc = m.observation_context(ctx, "syslog", "text", "2026-01-01T00:00:00", None, "syslog/n1.log")
    m.add(m.row(ctx, BAD, "RuleA", oc, None, 3, "x", "n1", "S", None))
    sizes_before = {t: m.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("rules", "event_types")}
    add(m, ctx, 50)
    m.flush()
    sizes_after = {t: m.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("rules", "event_types")}
    assert sizes_after["event_types"] == sizes_before["event_types"]
    assert sizes_after["rules"] == sizes_before["rules"] + 1  # "R" added once, not per event
    row = m.conn.execute("SELECT source_rule, obs_context_id FROM events WHERE line_num = 3").fetchone()
    assert row == (m.lookup("rules", "RuleA"), oc)


def test_inserts_are_buffered_until_flush():
    m = EventManager(buffer_size=100)
    ctx = m.context("j")
    add(m, ctx, 10)
    assert m.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    m.flush()
    assert m.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 10


def test_close_flushes_and_close_without_flush_discards(tmp_path):
    p1, p2 = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    m = EventManager(path=p1, buffer_size=1000)
    add(m, m.context("j"), 7)
    m.close()
    assert sqlite3.connect(p1).execute("SELECT COUNT(*) FROM events").fetchone()[0] == 7
    m = EventManager(path=p2, buffer_size=1000)
    add(m, m.context("j"), 7)
    m.close(flush=False)
    assert sqlite3.connect(p2).execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_destructor_discards_buffers(tmp_path):
    p = str(tmp_path / "c.db")
    m = EventManager(path=p, buffer_size=1000)
    add(m, m.context("j"), 5)
    del m
    gc.collect()
    assert sqlite3.connect(p).execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_large_in_memory_store_spills_to_a_private_file_removed_on_close():
    m = EventManager(buffer_size=10, spill_threshold=25)
    ctx = m.context("j")
    add(m, ctx, 40)
    m.flush()
    assert m.spilled
    d = m._private_dir
    assert d and os.path.isdir(d) and (os.stat(d).st_mode & 0o777) == 0o700
    assert m.count(ctx) == 40
    m.close()
    assert not os.path.exists(d)


def test_event_stream_demote_promote_discard_add():
    m = EventManager(["R"])
    ctx = m.context("j")
    add(m, ctx, 3, symptom="X")
    s = m.stream(ctx)
    evs = s.bad_events()
    assert len(evs) == 3
    assert s.demote(evs[:2], rule="F", reason="why") == 2
    assert [e.event_type for e in s.query()] == [EventType.INTERESTING_NODE.value] * 2 + [BAD]
    assert s.query(event_type="interesting_node")[0].payload["demoted_by"] == "F"
    assert s.promote(s.interesting_events()[:1], rule="F") == 1
    assert s.discard(s.bad_events()[:1], rule="F") == 1
    new = s.add(EventSpec(type="bad_node", symptom="Y", node="n9", fields={"k": 1}), rule="F", cause=evs[2])
    assert new.symptom == "Y" and new.node == "n9" and new.line_num == evs[2].line_num and new.fields == {"k": 1}
    assert [t.action for t in s.trace] == ["demote", "demote", "promote", "discard", "add"]
    s.read_only = True
    with pytest.raises(ReadOnlyStreamError):
        s.demote(s.bad_events(), rule="F")


def test_checkpoint_and_restore_one_context_only():
    m = EventManager()
    a, b = m.context("a"), m.context("b")
    add(m, a, 3)
    add(m, b, 2)
    m.checkpoint(a)
    sa = m.stream(a)
    sa.discard(sa.all(), rule="F")
    m.stream(b).demote(m.stream(b).all(), rule="F")
    assert m.count(a) == 0
    m.restore(a)
    assert m.count(a) == 3 and all(e.is_bad for e in m.stream(a).all())
    assert all(e.is_interesting for e in m.stream(b).all())  # other contexts untouched


def test_long_datum_is_clipped():
    m = EventManager()
    ctx = m.context("j")
    m.add(m.row(ctx, BAD, "R", None, None, 1, "x" * 100_000, "n", "S", None))
    d = m.stream(ctx).all()[0].datum
    assert len(d) < 5000 and d.endswith("more characters]")
