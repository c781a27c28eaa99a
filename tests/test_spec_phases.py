"""The five phases on a small purpose-built corpus: strata order, SCRUB per node,
FINAL job-wide with back-propagation, outcome mapping, POST_OUTCOME, collectors,
reporting contract, ties, and rules that raise."""
from __future__ import annotations

import pytest

from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.rules.loader import load_corpus
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session

RULES = {
    "symptoms.toml": """
        [[symptom]]
        name = "HW_A"
        outcome = "hardware"
        sub_domain = "gpu"
        rank = 900
        blame = "node"
        [[symptom]]
        name = "HW_B"
        outcome = "hardware"
        sub_domain = "gpu_memory"
        rank = 900
        blame = "node"
        [[symptom]]
        name = "NET_X"
        outcome = "network"
        sub_domain = "infiniband"
        rank = 800
        blame = "link"
        [[symptom]]
        name = "APP_Y"
        outcome = "application"
        sub_domain = "python"
        rank = 600
        blame = "workload"
        [[symptom]]
        name = "NOISE"
        outcome = "network"
        sub_domain = "nccl"
        rank = 400
        blame = "link"
    """,
    "extract.toml": """
        [[extractor]]
        name = "ExA"
        match_re = 'FAULT-A'
        emit = { type = "bad_node", symptom = "HW_A" }
        [[extractor]]
        name = "ExB"
        match_re = 'FAULT-B'
        emit = { type = "bad_node", symptom = "HW_B" }
        [[extractor]]
        name = "ExNet"
        match_re = 'NETFAIL peer=(?P<peer>\\S+)'
        emit = { type = "bad_node", symptom = "NET_X", fields = { peer = "{peer}" } }
        [[extractor]]
        name = "ExApp"
        match_re = 'APPERR'
        emit = { type = "bad_node", symptom = "APP_Y" }
        [[extractor]]
        name = "ExNoise"
        match_re = 'NOISY'
        emit = { type = "bad_node", symptom = "NOISE" }
        [[extractor]]
        name = "ExVersion"
        match_re = 'version=(?P<version>[\\d.]+)'
        emit = { type = "data", fields = { kind = "version" } }
    """,
    # deliberately defined in reverse file order to prove strata, not file order, decide
    "a_late.py": """
        from rulekit.plugin import filter_def, FilterPriority
        ORDER = []
        @filter_def(name="LateFilter", author="t", priority=FilterPriority.LATE)
        def late(ctx):
            ctx.event_stream.add(__import__("rulekit.plugin", fromlist=["EventSpec"]).EventSpec(
                type="data", fields={"order": "LATE"}), rule="LateFilter")
        @filter_def(name="EarlyFilter2", author="t", priority=FilterPriority.EARLY + 5)
        def early2(ctx):
            ctx.event_stream.add(__import__("rulekit.plugin", fromlist=["EventSpec"]).EventSpec(
                type="data", fields={"order": "EARLY+5"}), rule="EarlyFilter2")
    """,
    "b_early.py": """
        from rulekit.plugin import filter_def, FilterPriority, EventSpec, demote_bad_by_symptom
        @filter_def(name="EarlyFilter", author="t", priority=FilterPriority.EARLY)
        def early(ctx):
            ctx.event_stream.add(EventSpec(type="data", fields={"order": "EARLY"}), rule="EarlyFilter")
        @filter_def(name="MidFilter", author="t", priority=FilterPriority.MID)
        def mid(ctx):
            ctx.event_stream.add(EventSpec(type="data", fields={"order": "MID"}), rule="MidFilter")
        @filter_def(name="DemoteNoise", author="t", priority=FilterPriority.STANDARD, symptoms=("NOISE",))
        def demote_noise(ctx):
            if any(e.symptom == "HW_A" for e in ctx.event_stream.bad_events()):
                demote_bad_by_symptom(ctx.event_stream, {"NOISE"}, "DemoteNoise")
    """,
    "c_refine.py": """
        from rulekit.plugin import refiner_def, RefinerPriority, collector_def
        SEEN = {}
        @refiner_def(name="ScrubApp", author="t", priority=RefinerPriority.SCRUB)
        def scrub(ctx):
            # per node: an application error next to a hardware fault on the same node is a consequence
            SEEN.setdefault("scrub_nodes", []).append(ctx.node)
            if "HW_A" in ctx.symptoms and "APP_Y" in ctx.symptoms:
                ctx.symptoms.discard("APP_Y", "ScrubApp", "consequence of HW_A on this node")
        @refiner_def(name="FinalNet", author="t", priority=RefinerPriority.FINAL)
        def final(ctx):
            SEEN["final_symptoms"] = ctx.symptoms.symptoms()
            if "HW_A" in ctx.symptoms and "NET_X" in ctx.symptoms:
                ctx.symptoms.demote("NET_X", "FinalNet", "peers of a hardware fault")
        @refiner_def(name="PostOutcome", author="t", priority=RefinerPriority.POST_OUTCOME)
        def post(ctx):
            SEEN["outcome"] = ctx.outcome.outcome
            if ctx.outcome.root_symptom == "APP_Y" and ctx.job.state == "CANCELLED":
                ctx.outcome.set("PostOutcome", outcome="cancelled", sub_domain="scheduler")
        @refiner_def(name="Broken", author="t", priority=RefinerPriority.FINAL + 500)
        def broken(ctx):
            raise RuntimeError("bug in a rule")
        @collector_def(name="versions", author="t")
        def versions(ctx):
            return sorted({e.fields["version"] for e in ctx.event_stream.data_events() if "version" in e.fields})
        @collector_def(name="filter_order", author="t")
        def order(ctx):
            return [e.fields["order"] for e in ctx.event_stream.data_events() if "order" in e.fields]
    """,
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    import textwrap

    root = tmp_path_factory.mktemp("phases")
    for name, text in RULES.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    res = load_corpus([root])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    return res.engine


def run(engine, node_lines: dict[str, list[str]], state: str = "FAILED", trace: bool = True):
    job = JobInfoBuilder("j1", state, tuple(node_lines)).build()
    with Session(engine, job) as s:
        for node, lines in node_lines.items():
            s.ingest(Observation(source="syslog", node=node, lines=lines, label=f"syslog/{node}.log"))
        return s.attribute(with_trace=trace)


def test_filters_run_by_stratum_then_priority(engine):
    r = run(engine, {"n1": ["version=2.21.5"]})
    assert r["collectors"]["filter_order"] == ["EARLY", "EARLY+5", "MID", "LATE"]
    assert r["collectors"]["versions"] == ["2.21.5"]


def test_scrub_runs_per_node_and_final_job_wide_with_back_propagation(engine):
    r = run(engine, {"n1": ["FAULT-A", "APPERR", "NOISY"], "n2": ["NETFAIL peer=n1", "APPERR"]})
    mod = engine.by_name["ScrubApp"].func.__globals__["SEEN"]
    assert sorted(mod["scrub_nodes"][-2:]) == ["n1", "n2"]
    # APP_Y discarded on n1 only (SCRUB is per node); NET_X demoted job-wide (FINAL)
    assert "APP_Y" in mod["final_symptoms"] and "NOISE" not in mod["final_symptoms"]
    assert r["root_cause"]["symptom"] == "HW_A" and r["root_cause"]["node"] == "n1"
    assert r["outcome"] == "hardware" and r["sub_domain"] == "gpu"
    # APP_Y blames the workload: n2 is affected, not bad (only node/link/peer blame makes a bad node)
    assert {b["node"]: b["symptoms"] for b in r["bad_nodes"]} == {"n1": ["HW_A"]}
    assert r["bad_nodes"][0]["blame"] == "node" and r["bad_nodes"][0]["confidence"] == "certain"
    assert {b["node"]: b["symptoms"] for b in r["affected_nodes"]} == {"n2": ["APP_Y"]}
    inter = {b["node"]: b["symptoms"] for b in r["interesting_nodes"]}
    assert inter == {"n2": ["NET_X"]}  # n1 is a bad node; demoted events stay as evidence
    ev = {(e["symptom"], e["node"], e["event_type"].rsplit(".", 1)[1]) for e in r["evidence"]}
    assert ("NET_X", "n2", "interesting") in ev  # demoted by FinalNet
    assert ("NOISE", "n1", "interesting") in ev  # demoted by the STANDARD filter
    assert not any(s == "APP_Y" and n == "n1" for s, n, _ in ev)  # discarded by ScrubApp
    actions = {(t["rule"], t["action"]) for t in r["trace"]}
    assert {("ScrubApp", "discard_symptom"), ("ScrubApp", "discard"), ("FinalNet", "demote_symptom"),
            ("FinalNet", "demote"), ("DemoteNoise", "demote")} <= actions


def test_outcome_from_highest_rank_and_post_outcome_can_change_it(engine):
    r = run(engine, {"n1": ["APPERR"]}, state="CANCELLED")
    mod = engine.by_name["ScrubApp"].func.__globals__["SEEN"]
    assert mod["outcome"] == "application"  # what outcome mapping decided
    assert r["outcome"] == "cancelled" and r["sub_domain"] == "scheduler"  # what POST_OUTCOME made of it
    assert r["root_cause"]["symptom"] == "APP_Y"


def test_equal_rank_different_outcomes_is_ambiguous(engine):
    r = run(engine, {"n1": ["FAULT-A"], "n2": ["FAULT-B"]})
    assert r["ambiguous"] is True
    assert set(r["tied_symptoms"]) == {"HW_A", "HW_B"}
    assert sorted(b["node"] for b in r["bad_nodes"]) == ["n1", "n2"]


def test_same_symptom_on_two_nodes_is_not_ambiguous(engine):
    r = run(engine, {"n1": ["FAULT-A"], "n2": ["FAULT-A"]})
    assert r["ambiguous"] is False and len(r["bad_nodes"]) == 2


def test_no_evidence_gives_unknown_never_a_guess(engine):
    r = run(engine, {"n1": ["all good here"]})
    assert r["outcome"] == "unknown" and r["root_cause"] is None and r["bad_nodes"] == []


def test_a_rule_that_raises_is_reported_and_attribution_continues(engine):
    r = run(engine, {"n1": ["FAULT-A"]})
    assert r["outcome"] == "hardware"
    assert [e["rule"] for e in r["rule_errors"]] == ["Broken"]
    assert "bug in a rule" in r["rule_errors"][0]["error"]


def test_result_has_the_contract_keys(engine):
    r = run(engine, {"n1": ["FAULT-A"]}, trace=False)
    assert set(r) >= {"job_id", "outcome", "sub_domain", "ambiguous", "confidence", "alternatives", "root_cause",
                      "bad_nodes", "affected_nodes", "interesting_nodes", "symptoms", "collectors", "evidence"}
    assert set(r["root_cause"]) == {"symptom", "node", "rule", "blame", "action", "evidence"}
    assert set(r["bad_nodes"][0]) == {"node", "symptoms", "blame", "action", "confidence"}
    assert r["confidence"] in ("high", "medium", "low")
    ev = r["root_cause"]["evidence"][0]
    assert set(ev) == {"event_type", "symptom", "node", "rule", "source", "line_num", "timestamp", "time_source", "datum"}
    assert ev["source"] == "syslog/n1.log" and ev["line_num"] == 1 and ev["datum"] == "FAULT-A"
    assert "trace" not in r


def test_extraction_is_write_only_and_the_event_table_is_restored(engine):
    job = JobInfoBuilder("j", "FAILED", ("n1",)).build()
    with Session(engine, job) as s:
        s.ingest(Observation(source="syslog", node="n1", lines=["FAULT-A", "NOISY", "APPERR"]))
        before = [(e.id, e.event_type, e.symptom) for e in s.manager.stream(s.context_id).all()]
        s.attribute()
        s.ingest(Observation(source="syslog", node="n1", lines=[]))  # restores the checkpoint first
        after = [(e.id, e.event_type, e.symptom) for e in s.manager.stream(s.context_id).all()]
    assert before == after


def test_demote_where_keeps_roots_and_demotes_matching_symptoms(engine):
    from rulekit.plugin import demote_where
    from rulekit.engine.refine import SymptomSet

    s = SymptomSet(engine.registry, None, [], "refine:FINAL")
    for sym in ("HW_A", "NET_X", "APP_Y", "NOISE"):
        s._put(sym, "n1", None)
    gone = demote_where(s, engine.registry, lambda sym, info: info.outcome != "hardware", "R", "why", keep=("NOISE",))
    assert sorted(gone) == ["APP_Y", "NET_X"] and s.symptoms() == ["HW_A", "NOISE"]
    assert s.removed["NET_X"].action == "demote" and s.removed["NET_X"].rule == "R"
