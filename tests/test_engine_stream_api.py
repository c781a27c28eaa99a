"""The stream API filters call and the refinement phase's named steps:
`frozen()`, the running rule (changes need not name it), `move_to_node`,
`Selection` / `select`, the one event-type name mapping, the public
`SymptomSet` API, `RefinementPhase.STEPS`, the report built once, and a user
plugin written against the older API (rule named on every call) still working."""
from __future__ import annotations

import pytest

from rulekit.analysis.testing import job_from_mapping
from rulekit.engine import phases
from rulekit.engine.phases import AttributionState, RefinementPhase
from rulekit.engine.refine import Removal, SymptomSet
from rulekit.engine.session import Session
from rulekit.engine.store import EventManager, ReadOnlyStreamError
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import load_corpus
from rulekit.rules.model import EventSpec, EventType, event_type_name, short_type
from rulekit.rules.selection import Selection

BAD, INT = EventType.BAD_NODE.value, EventType.INTERESTING_NODE.value


def _stream(events: list[tuple[str, str | None, str | None]]):
    """A stream over events given as (type, symptom, node)."""
    m = EventManager(["R"])
    ctx = m.context("j")
    for i, (etype, sym, node) in enumerate(events):
        m.add(m.row(ctx, etype, "R", None, f"2026-01-01T00:00:{i:02d}", i + 1, f"line {i}", node, sym, {"k": i}))
    return m.stream(ctx)


def test_frozen_refuses_writes_inside_and_restores_after_even_on_error():
    s = _stream([(BAD, "A", "n1")])
    with s.frozen():
        with pytest.raises(ReadOnlyStreamError):
            s.demote(s.bad_events(), rule="F")
        with s.frozen():  # nested: still frozen after the inner block
            pass
        assert s.read_only
    assert not s.read_only
    with pytest.raises(KeyError):
        with s.frozen():
            raise KeyError("a rule's bug")
    assert not s.read_only
    assert s.demote(s.bad_events(), rule="F") == 1


def test_the_running_rule_authors_changes_that_do_not_name_it():
    s = _stream([(BAD, "A", "n1"), (BAD, "B", "n1"), (INT, "C", "n2")])
    with s.running("MyFilter", "filter:MID"):
        s.demote([e for e in s.bad_events() if e.symptom == "A"], reason="why")
        s.promote([e for e in s.interesting_events() if e.symptom == "C"])
        s.discard([e for e in s.bad_events() if e.symptom == "B"])
        s.add(EventSpec(type="data", fields={"x": 1}))
        s.demote(s.bad_events(), rule="Explicit")  # a named rule still wins
    assert [(t.rule, t.action, t.phase) for t in s.trace] == [
        ("MyFilter", "demote", "filter:MID"), ("MyFilter", "promote", "filter:MID"),
        ("MyFilter", "discard", "filter:MID"), ("MyFilter", "add", "filter:MID"),
        ("Explicit", "demote", "filter:MID")]
    assert s.rule is None and s.phase == ""  # restored after the block
    with pytest.raises(ValueError, match="no rule name"):
        s.demote(s.bad_events())


def test_move_to_node_copies_the_event_onto_the_node_and_discards_the_original():
    s = _stream([(BAD, "A", None), (INT, "B", None)])
    orig_bad, orig_int = s.query()
    with s.running("Mover", "filter:EARLY"):
        moved = s.move_to_node(orig_bad, "n7", reason="rank 3 runs on n7")
        moved_int = s.move_to_node(orig_int, "n8")
    assert (moved.event_type, moved.symptom, moved.node) == (BAD, "A", "n7")
    assert (moved.line_num, moved.timestamp, moved.datum, moved.fields) == (
        orig_bad.line_num, orig_bad.timestamp, orig_bad.datum, orig_bad.fields)
    assert moved.payload["cause_event"] == orig_bad.id and moved.payload["added_by"] == "Mover"
    assert moved_int.event_type == INT and moved_int.node == "n8"
    assert s.get(orig_bad.id) is None and s.get(orig_int.id) is None
    assert [(t.action, t.event_id, t.reason) for t in s.trace[:2]] == [
        ("add", moved.id, "rank 3 runs on n7"), ("discard", orig_bad.id, "re-attributed to n7")]


def test_select_answers_types_and_patterns_like_a_loop_over_the_stream():
    s = _stream([(BAD, "XID-79-OFF", "n1"), (INT, "XID-43-RESET", "n1"), (BAD, "NCCL_TIMEOUT", "n2"),
                 (BAD, None, "n2"), (BAD, "XID-13-GR", "n3"), ("data", None, None)])
    cases = [Selection.of("bad_node", ["XID-*"]), Selection.of(["bad_node", "interesting_node"], ["XID-*", "XID-7*"]),
             Selection.of(None, ["NCCL_TIMEOUT", "XID-43-RESET"]), Selection.of("bad_node"), Selection.of()]
    for sel in cases:
        want = [e for e in s.query() if (sel.types is None or e.event_type in sel.types) and sel.wants(e.symptom)]
        assert s.select(sel) == want, sel
    assert [e.symptom for e in s.select(cases[1])] == ["XID-79-OFF", "XID-43-RESET", "XID-13-GR"]  # once each
    # a demoted event moves between types: the selection follows
    with s.running("F"):
        s.demote(s.select(Selection.of("bad_node", ["XID-79-OFF"])))
    assert [e.symptom for e in s.select(Selection.of("interesting_node", ["XID-*"]))] == ["XID-79-OFF", "XID-43-RESET"]


def test_one_event_type_mapping_both_ways():
    for short, et in (("bad_node", EventType.BAD_NODE), ("data", EventType.DATA)):
        assert event_type_name(short) == event_type_name(et) == event_type_name(et.value) == et.value
        assert short_type(et.value) == short
    assert event_type_name("custom.type") == short_type("custom.type") == "custom.type"


def test_symptom_set_public_api(bundled):
    reg = bundled.registry
    trace: list = []
    a = SymptomSet(reg, "n1", trace, "refine:SCRUB")
    a.put("XID-79-FALLEN_OFF_THE_BUS", "n1", 5)
    a.put("XID-79-FALLEN_OFF_THE_BUS", "n1", 6)
    a.put("NCCL_WATCHDOG_TIMEOUT", "n1")
    assert a.recorded() == ["XID-79-FALLEN_OFF_THE_BUS", "NCCL_WATCHDOG_TIMEOUT"]
    assert a.discard("NCCL_WATCHDOG_TIMEOUT", "R", "victim")
    assert a.removal("NCCL_WATCHDOG_TIMEOUT") == Removal("discard", "R", "victim")
    assert a.removal("XID-79-FALLEN_OFF_THE_BUS") is None
    assert a.recorded() == ["XID-79-FALLEN_OFF_THE_BUS", "NCCL_WATCHDOG_TIMEOUT"]  # removed ones stay recorded
    job = SymptomSet(reg, None, trace, "refine:FINAL")
    job.merge(a, "n1")
    assert job.symptoms() == ["XID-79-FALLEN_OFF_THE_BUS"] and job.event_ids("XID-79-FALLEN_OFF_THE_BUS") == [5, 6]
    a.record_removal("XID-79-FALLEN_OFF_THE_BUS", Removal("demote", "J", "job-wide"))
    a.record_removal("XID-79-FALLEN_OFF_THE_BUS", Removal("discard", "K", "later"))  # the first one stays
    assert a.removal("XID-79-FALLEN_OFF_THE_BUS").rule == "J"


STEP_CORPUS = {
    "s.rule": """
        author "t"
        symptom "HW" { outcome hardware sub_domain gpu rank 900 blame node }
        symptom "NET" { outcome network sub_domain infiniband rank 950 blame link }
        extractor ExHw { match /HWFAULT/ emit bad_node "HW" }
        extractor ExNet { match /NETFAULT/ emit bad_node "NET" }
    """,
    "r.py": """
        from rulekit.plugin import refiner_def, RefinerPriority, collector_def, filter_def, FilterPriority, EventSpec
        CALLS = []
        @refiner_def(name="Scrub", author="t", priority=RefinerPriority.SCRUB)
        def scrub(ctx):
            CALLS.append(("scrub", ctx.node, ctx.symptoms.symptoms()))
        @refiner_def(name="Final", author="t", priority=RefinerPriority.FINAL)
        def final(ctx):
            CALLS.append(("final", ctx.symptoms.phase, ctx.symptoms.symptoms()))
            ctx.symptoms.demote("NET", "Final", "a consequence")
        @refiner_def(name="Post", author="t", priority=RefinerPriority.POST_OUTCOME)
        def post(ctx):
            CALLS.append(("post", ctx.outcome.root_symptom, ctx.event_stream.read_only))
        @collector_def(name="seen", author="t")
        def seen(ctx):
            return {"root": ctx.result["root_cause"]["symptom"], "keys": sorted(ctx.result)}
        @collector_def(name="boom", author="t")
        def boom(ctx):
            raise RuntimeError("collector bug")
        @filter_def(name="OldStyle", author="t", priority=FilterPriority.MID)
        def old_style(context):
            # the older plugin API: the rule named on every call, positionally too
            stream = context.event_stream
            stream.add(EventSpec(type="data", fields={"old": 1}), "OldStyle", None, "positional")
            stream.promote(stream.interesting_events(), rule="OldStyle", reason="keyword")
    """,
}


@pytest.fixture
def step_engine(make_corpus):
    res = load_corpus([make_corpus(STEP_CORPUS)])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    return res.engine


def _session(engine):
    s = Session(engine, job_from_mapping({"id": "j", "state": "FAILED", "nodes": ["n1", "n2"]}))
    s.ingest(Observation(source="syslog", node="n1", lines=["HWFAULT"], label="syslog/n1.log"))
    s.ingest(Observation(source="syslog", node="n2", lines=["NETFAULT"], label="syslog/n2.log"))
    return s


def test_refinement_steps_run_in_order_and_each_does_its_part(step_engine):
    assert RefinementPhase.STEPS == ("scrub", "final", "outcome", "post_outcome")
    calls = next(r.func for r in step_engine.refiners if r.name == "Scrub").__globals__["CALLS"]
    calls.clear()
    with _session(step_engine) as s:
        stream = s.manager.stream(s.context_id)
        state = AttributionState(step_engine, s.job, stream, stream.trace)
        rp = RefinementPhase()
        rp.scrub(state)
        assert sorted(state.node_sets) == ["n1", "n2"] and state.job_set is None
        assert calls == [("scrub", "n1", ["HW"]), ("scrub", "n2", ["NET"])]
        rp.final(state)
        assert calls[-1] == ("final", "refine:FINAL", ["NET", "HW"])
        # back-propagated: the NET event is interesting now
        assert [(e.symptom, e.event_type) for e in stream.node_events()] == [("HW", BAD), ("NET", INT)]
        assert state.decision.root_symptom is None
        rp.outcome(state)
        assert (state.decision.root_symptom, state.decision.outcome, state.job_set.phase) == (
            "HW", "hardware", "refine:POST_OUTCOME")
        rp.post_outcome(state)
        assert calls[-1] == ("post", "HW", True)  # refiners see the stream frozen
        assert not stream.read_only


def test_report_is_built_once_collectors_read_it_and_their_errors_are_reported(step_engine, monkeypatch):
    built = []
    real = phases.ReportPhase.apply
    monkeypatch.setattr(phases.ReportPhase, "apply", lambda self, state: built.append(1) or real(self, state))
    with _session(step_engine) as s:
        result = s.attribute(with_trace=True)
    assert len(built) == 1
    assert result["collectors"]["seen"]["root"] == "HW" and "evidence" in result["collectors"]["seen"]["keys"]
    assert [e["rule"] for e in result["rule_errors"]] == ["boom"]
    assert list(result)[-3:] == ["rule_errors", "trace", "decision"]
    # the old-style plugin still works, and its changes carry its name
    old = [t for t in result["trace"] if t["rule"] == "OldStyle"]
    assert [(t["action"], t["reason"]) for t in old] == [("add", "positional")]


DSL_CORPUS = r'''
author "tests"
symptom "GPU_DEAD" { outcome hardware sub_domain gpu rank 900 blame node }
symptom "APP_CRASH" { outcome application sub_domain python rank 100 blame workload }
symptom "APP_HANG" { outcome application sub_domain python rank 90 blame workload }
extractor GpuDead { match /GPU DEAD/ emit bad_node "GPU_DEAD" }
extractor AppCrash { match /APP CRASH/ emit bad_node "APP_CRASH" }
extractor AppHang { match /APP HANG/ emit bad_node "APP_HANG" }
filter AppAfterGpu STANDARD { demote "APP_*" when "GPU_DEAD" on same node }
'''


def test_dsl_filters_read_through_their_compiled_selections(tmp_path, monkeypatch):
    from rulekit.engine.store import EventStream

    (tmp_path / "r.rule").write_text(DSL_CORPUS)
    res = load_corpus([tmp_path])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    selected = []
    real = EventStream.select
    monkeypatch.setattr(EventStream, "select", lambda self, sel: selected.append(sel) or real(self, sel))
    with Session(res.engine, job_from_mapping({"id": "j", "state": "FAILED", "nodes": ["n1", "n2"]})) as s:
        s.ingest(Observation(source="syslog", node="n1", lines=["GPU DEAD", "APP CRASH", "APP HANG"]))
        s.ingest(Observation(source="syslog", node="n2", lines=["APP CRASH"]))
        result = s.attribute(with_trace=True)
    assert selected[:2] == [Selection((BAD,), frozenset(), ("APP_",)), Selection((BAD,), frozenset({"GPU_DEAD"}))]
    demoted = [(t["symptom"], t["node"]) for t in result["trace"] if t["action"] == "demote"]
    assert demoted == [("APP_CRASH", "n1"), ("APP_HANG", "n1")]  # n2 has no GPU fault


SELECTS_CORPUS = {
    "s.rule": STEP_CORPUS["s.rule"],
    "f.py": """
        from rulekit.plugin import FilterPriority, Selection, filter_def
        SEEN = []
        @filter_def(name="Declared", author="t", priority=FilterPriority.MID,
                    selects=[Selection.of("bad_node", ["H*"]), Selection.of("bad_node", ["NET", "HW"])])
        def declared(context):
            SEEN.append([(e.symptom, e.node) for e in context.selected()])
            context.event_stream.demote(context.selected(), reason="declared read")
        @filter_def(name="Undeclared", author="t", priority=FilterPriority.LATE)
        def undeclared(context):
            context.selected()
    """,
}


def test_python_filters_declare_what_they_read(make_corpus):
    res = load_corpus([make_corpus(SELECTS_CORPUS)])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    rule = next(r for r in res.engine.filters if r.name == "Declared")
    assert rule.selects == (Selection((BAD,), frozenset(), ("H",)), Selection((BAD,), frozenset({"NET", "HW"})))
    with _session(res.engine) as s:
        result = s.attribute(with_trace=True)
    seen = rule.func.__globals__["SEEN"]
    assert seen == [[("HW", "n1"), ("NET", "n2")]]  # the union, id order, each event once
    assert [(t["rule"], t["symptom"]) for t in result["trace"] if t["action"] == "demote"][:2] == [
        ("Declared", "HW"), ("Declared", "NET")]
    assert [e["rule"] for e in result["rule_errors"]] == ["Undeclared"]  # selected() without selects=: a clear error
    assert "needs selects=" in result["rule_errors"][0]["error"]


def test_dsl_filters_declare_their_selections(tmp_path):
    (tmp_path / "r.rule").write_text(DSL_CORPUS)
    res = load_corpus([tmp_path])
    rule = next(r for r in res.engine.filters if r.name == "AppAfterGpu")
    assert rule.selects == (Selection((BAD,), frozenset(), ("APP_",)), Selection((BAD,), frozenset({"GPU_DEAD"})))


def test_events_by_id_skips_the_discarded():
    s = _stream([(BAD, "A", "n1"), (BAD, "B", "n1"), (BAD, "C", "n1")])
    a, b, c = s.query()
    s.discard([b], rule="F")
    assert s.events([c.id, b.id, a.id, 999]) == [c, a]
