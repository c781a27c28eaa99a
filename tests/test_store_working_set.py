"""The store's attribution side: real columns for what attribution selects on,
events decoded once per `attribute()`, checkpoints that survive a spill, and
accumulator failures that reach `rule_errors`."""
from __future__ import annotations

from pathlib import Path

import pytest

import rulekit.engine.store as store
from rulekit.engine.session import Session
from rulekit.engine.store import EventManager, EventRow
from rulekit.inputs.jobdir import read_job_dir
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import load_corpus
from rulekit.rules.model import EventSpec, EventType
from rulekit.analysis.testing import job_from_mapping

BAD = EventType.BAD_NODE.value
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "xid149-nvlink"


def _add(m: EventManager, ctx: int, n: int, symptom: str = "S", node: str = "n1") -> None:
    for i in range(n):
        m.add(m.row(ctx, BAD, "R", None, f"2026-01-01T00:00:{i:02d}", i + 1, f"line {i}", node, symptom,
                    {"rank": i, "k": "v"}))


def test_columns_hold_symptom_node_rank_and_the_payload_only_the_rest():
    m = EventManager()
    ctx = m.context("j")
    _add(m, ctx, 2, symptom="XID-79")
    m.flush()
    rows = m.conn.execute("SELECT symptom, resources, rank, timestamp, payload FROM events ORDER BY id").fetchall()
    assert [r[:3] for r in rows] == [("XID-79", "n1", 0), ("XID-79", "n1", 1)]
    assert '"symptom"' not in rows[0][4] and '"node"' not in rows[0][4] and '"k": "v"' in rows[0][4]
    e = m.stream(ctx).all()[0]  # the Event still carries everything
    assert (e.symptom, e.node, e.timestamp, e.payload["symptom"], e.fields) == (
        "XID-79", "n1", "2026-01-01T00:00:00", "XID-79", {"rank": 0, "k": "v"})


def test_queries_answer_from_the_working_set_in_id_order():
    m = EventManager()
    ctx = m.context("j")
    _add(m, ctx, 3, symptom="A")
    _add(m, ctx, 2, symptom="B", node="n2")
    s = m.stream(ctx)
    evs = s.all()
    s.demote([evs[3], evs[0]], rule="F")
    s.promote([evs[3]], rule="F")
    assert [e.id for e in s.bad_events()] == [evs[1].id, evs[2].id, evs[3].id, evs[4].id]
    assert [e.id for e in s.interesting_events()] == [evs[0].id]
    assert [e.id for e in s.query(symptom="B")] == [evs[3].id, evs[4].id]
    assert [e.id for e in s.query(prefix=("A",), event_type="bad_node")] == [evs[1].id, evs[2].id]
    assert [e.id for e in s.query(node="n2", rule="R")] == [evs[3].id, evs[4].id]
    s.set_symptom(evs[1], "C", rule="F")
    assert [e.id for e in s.query(symptom="C")] == [evs[1].id] and s.query(symptom="A")[0].id == evs[0].id
    assert s.discard([evs[1], evs[1]], rule="F") == 1  # once only
    # a fresh stream reads the store: every change was written through
    fresh = [(e.id, e.event_type, e.symptom) for e in m.stream(ctx).all()]
    assert fresh == [(e.id, e.event_type, e.symptom) for e in s.all()]
    assert m.conn.execute("SELECT symptom FROM events WHERE id = ?", (evs[2].id,)).fetchone() == ("A",)


def _count_builds(monkeypatch) -> tuple[list, list]:
    decoded, kept = [], []
    real_decode, real_from_rows = store._decode, store._from_rows

    def from_rows(rows, names):
        for e in real_from_rows(rows, names):
            kept.append(e.id)
            yield e

    monkeypatch.setattr(store, "_decode", lambda row, *names: decoded.append(row[0]) or real_decode(row, *names))
    monkeypatch.setattr(store, "_from_rows", from_rows)
    return decoded, kept


def test_events_are_built_once_per_attribute_from_the_kept_rows(bundled, monkeypatch):
    decoded, kept = _count_builds(monkeypatch)
    jd = read_job_dir(EXAMPLE)
    with Session(bundled, jd.job) as s:
        s.ingest_batch(jd.observations)
        extracted = s.manager.count(s.context_id)
        s.attribute()
        # 18 filters, one build each, and none read back from SQLite
        assert decoded == [] and sorted(kept) == sorted(set(kept)) and len(kept) == extracted
        kept.clear()
        s.attribute()  # again, from the restored checkpoint: the mirror is back, again once each
        assert decoded == [] and len(kept) == extracted == len(set(kept))


def test_without_kept_rows_events_are_decoded_once_per_attribute(bundled, monkeypatch):
    decoded, kept = _count_builds(monkeypatch)
    jd = read_job_dir(EXAMPLE)
    opts = bundled.options
    with Session(bundled, jd.job, manager=EventManager(bundled.rule_names(), keep_rows=0,
                                                         buffer_size=opts.buffer_size)) as s:
        s.ingest_batch(jd.observations)
        extracted = s.manager.count(s.context_id)
        s.attribute()
        assert kept == [] and sorted(decoded) == sorted(set(decoded)) and len(decoded) == extracted
        decoded.clear()
        s.attribute()
        assert len(decoded) == extracted == len(set(decoded))
        s.manager.close()


def _snapshot(events) -> list:
    return [(e.id, e.event_type, e.rule, e.node, e.symptom, e.timestamp, e.line_num, e.datum, e.source, e.format,
             e.label, list(e.payload.items()), list(e.fields.items()), e.obs_context_id) for e in events]


def test_kept_rows_give_what_sqlite_gives_back_key_order_included():
    """A flat fields dict is kept (sorted keys, as the JSON gives them); anything
    else (a list, a tuple, a non-str key, a value JSON would stringify) is encoded
    at once and decoded from its JSON: either way the events equal a read back."""
    m = EventManager()
    ctx = m.context("j")
    oc = m.observation_context(ctx, "syslog", "text", None, None, "syslog/n1.log")
    fields = [{"z": "1", "rank": 3, "a": 1.5, "m": None, "b": True}, {}, None, {"t": (1, 2)}, {"l": [1, {"x": 2}]},
              {"o": object.__name__, "s": {1}}, {"n": float("nan")}, {"big": 10 ** 30, "neg": -0.0}]
    for i, f in enumerate(fields):
        m.add(m.row(ctx, BAD, "R", oc if i % 2 else None, None, i + 1, "x" * (i * 3000), "n1", "S", f))
    kept = m.stream(ctx).all()
    assert [EventRow.of(r).fields is not None for r in m.mirror(ctx)] == [True, True, False, False, False, False, True, True]
    m.stream(ctx).set_symptom(kept[0], "T", rule="F")  # written through: SQLite no longer mirrored
    m.flush()
    assert m.mirror(ctx) is None
    read = m.stream(ctx).all()
    kept[0].symptom, kept[0].payload = read[0].symptom, read[0].payload  # the one change, made alike
    assert repr(_snapshot(kept)) == repr(_snapshot(read))  # nan == nan only as text
    assert list(read[0].fields) == ["a", "b", "m", "rank", "z"]
    m.close()


def test_a_restore_brings_the_mirror_back_and_drops_rows_added_after_the_checkpoint():
    m = EventManager()
    ctx = m.context("j")
    _add(m, ctx, 3)
    m.checkpoint(ctx)
    s = m.stream(ctx)
    s.demote(s.all(), rule="F")
    s.add(EventSpec(type="bad_node", symptom="D", node="n2", fields={"k": [1]}), rule="F")
    _add(m, ctx, 2, symptom="LATE")  # after the checkpoint: undone by the restore
    m.flush()
    assert m.mirror(ctx) is None and m.count(ctx) == 6
    m.restore(ctx)
    assert [EventRow.of(r).line_num for r in m.mirror(ctx)] == [1, 2, 3] and m.count(ctx) == 3
    assert all(e.is_bad and "history" not in e.payload for e in m.stream(ctx).all())
    _add(m, ctx, 1, symptom="NEXT")  # ids go on from the largest ever given, never reused
    ids = [e.id for e in m.stream(ctx).all()]
    assert ids[:3] == [1, 2, 3] and ids[3] == 7
    m.close()


def test_past_keep_rows_contexts_are_read_from_sqlite():
    m = EventManager(keep_rows=5)
    a = m.context("a")
    _add(m, a, 4)
    assert len(m.mirror(a)) == 4
    _add(m, a, 3)
    assert m.mirror(a) is None and m.mirror(m.context("b")) is None
    assert [e.line_num for e in m.stream(a).all()] == [1, 2, 3, 4, 1, 2, 3]
    m.close()


def test_spilling_a_shared_manager_keeps_the_checkpoints():
    """A spill used to copy the main database only: checkpoints in temp tables were
    lost and `restore` left the attributed (here: emptied) events in place."""
    m = EventManager(buffer_size=5, spill_threshold=20)
    a, b = m.context("a"), m.context("b")
    _add(m, a, 10)
    m.checkpoint(a)
    sa = m.stream(a)
    sa.discard(sa.all(), rule="F")
    assert m.count(a) == 0 and not m.spilled
    _add(m, b, 30)  # another job on the same manager pushes it over the threshold
    m.flush()
    assert m.spilled
    m.restore(a)
    assert m.count(a) == 10
    assert [e.line_num for e in m.stream(a).all()] == list(range(1, 11))
    m.restore(a)  # no checkpoint any more: a no-op
    assert m.count(a) == 10
    m.close()


def test_a_session_attributes_the_same_after_a_spill(bundled):
    jd = read_job_dir(EXAMPLE)
    with Session(bundled, jd.job) as plain:
        plain.ingest_batch(jd.observations)
        want = plain.attribute()
    m = EventManager(bundled.rule_names(), buffer_size=4, spill_threshold=10)
    s = Session(bundled, jd.job, manager=m)
    s.ingest_batch(jd.observations[:1])
    first = s.attribute()
    s.ingest_batch(jd.observations[1:])  # restores, extracts more, spills on the way
    assert m.spilled
    assert s.attribute() == want
    assert s.attribute() == want
    assert first != want
    m.close()


ACC_CORPUS = {
    "s.toml": """
        [[symptom]]
        name = "BOOM"
        rank = 10
        outcome = "application"
        sub_domain = "code"
        blame = "workload"
    """,
    "acc.py": """
        from rulekit.plugin import Accumulator, EventSpec, accumulator_def

        @accumulator_def(name="BadFactory", author="t", trigger_re=r"START-FACTORY", symptoms=["BOOM"])
        class BadFactory(Accumulator):
            def __init__(self, ctx, line, match):
                raise ValueError("factory broke")

        @accumulator_def(name="BadFeed", author="t", trigger_re=r"START-FEED", symptoms=["BOOM"])
        class BadFeed(Accumulator):
            def feed(self, line):
                raise KeyError("feed broke")
            def finalize(self):
                return [EventSpec(type="bad_node", symptom="BOOM")]

        @accumulator_def(name="BadFinalize", author="t", trigger_re=r"START-FINAL", symptoms=["BOOM"])
        class BadFinalize(Accumulator):
            def feed(self, line):
                return True
            def finalize(self):
                raise RuntimeError("finalize broke")
    """,
}


def test_accumulator_failures_reach_rule_errors(make_corpus):
    res = load_corpus([make_corpus(ACC_CORPUS)])
    assert res.engine is not None, res.diagnostics
    job = job_from_mapping({"id": "j", "state": "FAILED", "nodes": ["n1"]})
    with Session(res.engine, job) as s:
        s.ingest(Observation(source="applog", lines=["START-FACTORY", "START-FEED", "next line", "START-FINAL",
                                                     "more"]))
        result = s.attribute()
        errors = {(e["rule"], e["error"]) for e in result.get("rule_errors", [])}
        assert errors == {("BadFactory", "ValueError: factory broke"), ("BadFeed", "KeyError: 'feed broke'"),
                          ("BadFinalize", "RuntimeError: finalize broke")}
        assert all(e["where"].endswith(tuple(f"acc.py:{n}" for n in range(1, 30))) for e in result["rule_errors"])
        # the feed failure still finalizes: its event is there
        assert result["root_cause"]["symptom"] == "BOOM"
        assert len(s.attribute()["rule_errors"]) == 3  # reported by every attribution, not doubled


def test_changes_of_a_dropped_stream_are_written():
    m = EventManager()
    ctx = m.context("j")
    _add(m, ctx, 4)
    m.stream(ctx).demote(m.stream(ctx).all()[:3], rule="F")  # both streams dropped at once
    m.flush()
    got = [r[0] for r in m.conn.execute("SELECT et.name FROM events e JOIN event_types et ON et.id = e.event_type "
                                        "ORDER BY e.id")]
    assert got == [EventType.INTERESTING_NODE.value] * 3 + [BAD]


def _repeated_job(n: int) -> tuple:
    job = job_from_mapping({"id": "rep", "state": "FAILED", "nodes": ["node-01", "node-02"], "tasks_per_node": 8})
    app = []
    for i in range(n):
        app.append(f"[rank{i % 16}]:[E ProcessGroupNCCL.cpp:616] [Rank {i % 16}] Watchdog caught collective "
                   f"operation timeout: WorkNCCL(SeqNum=1000, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   f"Timeout(ms)=600000) ran for 600{i:03d} milliseconds before timing out.")
        app.append(f"[rank{i % 16}]: [Rank {i % 16}] Watchdog caught collective operation timeout: "
                   f"WorkNCCL(SeqNum={2000 + i}, OpType=BROADCAST, Timeout(ms)=600000)")  # never the same twice
        app.append(f"12: step {i} loss=2.0")
    sys_lines = [f"Jun  1 03:12:{i % 60:02d} node-02 kernel: [ 58{i:02d}.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
                 "GPU has fallen off the bus." for i in range(n // 4)]
    return job, [Observation(source="applog", lines=app, label="applog/train.log"),
                 Observation(source="syslog", node="node-02", lines=sys_lines, label="syslog/node-02.log")]


def test_repeated_evidence_beyond_the_cap_is_aggregated_with_the_same_result(bundled):
    """The same evidence (rule, type, symptom, node, captured values) beyond the cap is
    counted, not held; evidence that differs in a captured value is all kept (no group
    cap here: that one is tested in tests/test_extraction_bounds.py).  The
    result lists the same evidence items, also the root cause's, although the syslog's
    stamps wrap around (line 61 is as early as line 1, and only the first 8 are held)."""
    job, observations = _repeated_job(300)
    with Session(bundled, job, repeat_cap=10**9, group_cap=10**9) as s:
        s.ingest_batch(observations)
        full = s.attribute()
        full_events = s.manager.count(s.context_id)
    with Session(bundled, job, repeat_cap=8, group_cap=10**9) as s:
        s.ingest_batch(observations)
        capped = s.attribute()
        held, counted = s.manager.count(s.context_id), s.manager.repeats(s.context_id)
        assert held + counted == full_events and counted == 75 - 8  # the XID line's repeats: 8 held
        rows = s.manager.conn.execute(
            "SELECT symptom, resources, count, first_line, last_line FROM event_repeats ORDER BY id").fetchall()
    assert capped == full  # evidence_omitted counts the aggregated repeats too
    assert capped["evidence_omitted"] > 0
    by_sym = {(r[0], r[1]): r[2:] for r in rows}
    xid = by_sym[("XID-79-FALLEN_OFF_THE_BUS", "node-02")]
    assert xid == (75 - 8, 9, 75)  # count, first and last line of the repeats


def test_a_large_in_memory_store_spills_by_size():
    m = EventManager(buffer_size=50, spill_bytes=256 << 10)
    ctx = m.context("j")
    for i in range(2000):
        m.add(m.row(ctx, BAD, "R", None, None, i, "x" * 400, "n", "S", {}))
    m.flush()
    assert m.spilled and m.count(ctx) == 2000
    m.close()


def _rows(m: EventManager, ctx: int) -> list:
    return m.conn.execute("SELECT * FROM events WHERE context_id = ? ORDER BY id", (ctx,)).fetchall()


@pytest.mark.parametrize("on_disk", [False, True])
def test_restore_puts_back_every_row_as_it_was(tmp_path, on_disk):
    """In memory, a mirrored context's checkpoint is its kept rows and a restore
    rewrites only what changed; at a path it is a copy in the database.  Either way
    the restored rows are the checkpointed ones, column for column."""
    m = EventManager(path=str(tmp_path / "e.db") if on_disk else None, buffer_size=3)
    a, b = m.context("a"), m.context("b")
    _add(m, a, 6)
    m.add(m.row(a, BAD, "R", None, None, 99, "nested", "n1", "N", {"l": [1, 2]}))
    _add(m, b, 2)
    m.flush()
    before, other = _rows(m, a), _rows(m, b)
    m.checkpoint(a)
    copied = m.conn.execute("SELECT COUNT(*) FROM checkpoint_events").fetchone()[0]
    assert copied == (len(before) if on_disk else 0)
    s = m.stream(a)
    evs = s.all()
    s.demote(evs[:2], rule="F")
    s.set_symptom(evs[2], "T", rule="F")
    s.discard(evs[3:5], rule="F")
    s.add(EventSpec(type="bad_node", symptom="D", node="n2"), rule="F", cause=evs[6])
    _add(m, a, 2, symptom="LATE")
    assert m.count(a) == len(before) - 2 + 3 and _rows(m, a) != before
    m.restore(a)
    assert _rows(m, a) == before and _rows(m, b) == other
    assert [e.id for e in m.stream(a).all()] == [r[0] for r in before]
    m.close()


def test_a_row_numbered_before_the_checkpoint_and_added_after_is_undone_too():
    m = EventManager()
    ctx = m.context("j")
    late = m.row(ctx, BAD, "R", None, None, 50, "late", "n1", "L", {})
    _add(m, ctx, 3)
    m.flush()
    before = _rows(m, ctx)
    m.checkpoint(ctx)
    m.add(late)  # out of id order, after the checkpoint
    assert [e.line_num for e in m.stream(ctx).all()] == [50, 1, 2, 3]  # id order
    m.restore(ctx)
    assert _rows(m, ctx) == before and [EventRow.of(r).line_num for r in m.mirror(ctx)] == [1, 2, 3]
    m.close()


def test_kept_rows_are_left_alone_by_the_garbage_collector():
    """Kept rows are plain tuples of atomic values (flat fields as (keys, values)): after
    a young and an older collection the collector no longer walks them (an EventRow, a
    tuple subclass, or a tuple holding a dict it would walk on every full pass)."""
    import gc
    m = EventManager()
    ctx = m.context("j")
    _add(m, ctx, 50)
    gc.collect()
    gc.collect()
    assert not any(gc.is_tracked(r) for r in m.mirror(ctx))
    m.close()


def _sql_rows(m: EventManager) -> int:
    return m.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def test_a_one_shot_attribution_writes_no_event_row_and_gives_what_a_written_store_gives(bundled, tmp_path):
    """An in-memory store keeps a mirrored context's rows out of SQLite until SQLite is
    asked for them: extracting and attributing once writes none, and the result is the
    one a store that writes every row (at a path) gives; then `flush()` writes them,
    and a second attribution (a restore) and a third give the same again."""
    jd = read_job_dir(EXAMPLE)
    with Session(bundled, jd.job) as s:
        s.ingest_batch(jd.observations)
        first = s.attribute()
        assert _sql_rows(s.manager) == 0 and len(s.manager._late) > 10
        s.manager.flush()
        assert _sql_rows(s.manager) > 10 and not s.manager._late
        assert s.attribute() == first == s.attribute()
    on_disk = EventManager(bundled.rule_names(), path=str(tmp_path / "events.sqlite"))
    jd = read_job_dir(EXAMPLE)
    with Session(bundled, jd.job, manager=on_disk) as s:
        s.ingest_batch(jd.observations)
        assert _sql_rows(on_disk) > 10  # a store at a path writes as it goes
        assert s.attribute() == first
    on_disk.close()


def test_rows_waiting_are_written_before_a_change_reaches_sqlite(bundled):
    """A change written through to SQLite (a demote, a discard) finds its row there."""
    m = EventManager(bundled.rule_names())
    ctx = m.context("job")
    _add(m, ctx, 5)
    m.flush(rows_may_wait=True)
    assert _sql_rows(m) == 0
    stream = m.stream(ctx)
    with stream.running("test"):
        stream.discard(stream.query()[:2])
        stream.demote(stream.query()[:1])
    m.flush()
    rows = m.conn.execute("SELECT id, event_type FROM events ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [3, 4, 5] and rows[0][1] == m.lookup("event_types", EventType.INTERESTING_NODE.value)
    m.close()


def test_an_accumulators_repeated_evidence_is_capped_too(bundled):
    """An accumulator's events are capped as an extractor's are: the same evidence
    (rule, type, symptom, node, the fields it found, whatever the rank or carried
    timestamp) beyond `repeat_cap` is counted into `event_repeats`, not held, and the
    result is the one the uncapped job gives."""
    job = job_from_mapping({"id": "tails", "state": "FAILED", "nodes": ["node-01"], "tasks_per_node": 8})
    app = [f"{i % 8}: ValueError: bad shard {i % 3}" for i in range(120)]  # PythonTail, three kinds of evidence
    obs = [Observation(source="applog", lines=app, label="applog/train.log")]
    with Session(bundled, job, repeat_cap=10**9, group_cap=10**9) as s:
        s.ingest_batch(obs)
        full = s.attribute()
        assert s.manager.count(s.context_id) >= 120
    with Session(bundled, job, repeat_cap=5) as s:
        s.ingest_batch(obs)
        capped = s.attribute()
        s.manager.flush()
        stored = s.manager.conn.execute("SELECT count(*) FROM events e JOIN rules r ON r.id = e.source_rule "
                                        "WHERE r.name = 'PythonTail'").fetchone()[0]
        rows = s.manager.conn.execute("SELECT count, first_line, last_line FROM event_repeats e JOIN rules r "
                                      "ON r.id = e.source_rule WHERE r.name = 'PythonTail'").fetchall()
    assert stored == 3 * 5  # five of each kind, ranks notwithstanding
    assert rows == [(120 - 15, 16, 120)]  # one row per group: count, first and last line
    # the same diagnosis and evidence counts; only which lines are shown as examples may differ
    # (the first of each key held, not the first of each rank)
    for k in set(full) - {"evidence", "root_cause"}:
        assert capped[k] == full[k], k
    assert {k: v for k, v in capped["root_cause"].items() if k != "evidence"} == \
        {k: v for k, v in full["root_cause"].items() if k != "evidence"}
    assert capped["evidence_omitted"] + len(capped["evidence"]) == full["evidence_omitted"] + len(full["evidence"])
