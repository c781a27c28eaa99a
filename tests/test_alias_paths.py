"""An alias names the same symptom on every emit path: extraction, accumulators,
and events a filter adds or re-labels (`stream.add`, `set_symptom`), and a filter
can query by alias.  Before the fix, a filter that emitted an alias split the
symptom in two (two `symptoms`, two bad-node entries, a tie)."""
from __future__ import annotations

from rulekit import JobInfoBuilder, Observation, Session
from rulekit.rules.loader import load_corpus

RULES = {
    "s.toml": """
        [[symptom]]
        name = "GPU_GONE"
        outcome = "hardware"
        sub_domain = "gpu"
        rank = 900
        blame = "node"
        aliases = ["gpu gone (legacy name)"]

        [[extractor]]
        name = "Gone"
        match_re = 'GPU GONE'
        emit = { type = "bad_node", symptom = "GPU_GONE" }

        [[extractor]]
        name = "Hint"
        match_re = 'GPU HINT'
        emit = { type = "interesting_node", symptom = "GPU_GONE" }
    """,
    "f.py": """
        from rulekit.plugin import EventSpec, FilterPriority, filter_def

        @filter_def(name="AddByAlias", author="t", priority=FilterPriority.MID, symptoms=("GPU_GONE",))
        def add_by_alias(context):
            s = context.event_stream
            for e in s.query("interesting_node"):
                s.add(EventSpec(type="bad_node", symptom="gpu gone (legacy name)", node=e.node), rule="AddByAlias",
                      cause=e)
            for e in s.query("bad_node", symptom="gpu gone (legacy name)"):
                s.set_symptom(e, "gpu gone (legacy name)", rule="AddByAlias")
    """,
}


def test_a_filter_emitting_an_alias_does_not_split_the_symptom(make_corpus):
    res = load_corpus([make_corpus(RULES)])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    job = JobInfoBuilder("a", "FAILED", ("n1", "n2")).build()
    with Session(res.engine, job) as s:
        s.ingest(Observation(source="syslog", node="n1", lines=["GPU GONE"], label="n1"))
        s.ingest(Observation(source="syslog", node="n2", lines=["GPU HINT"], label="n2"))
        r = s.attribute(with_trace=True)
        events = s.manager.stream(s.context_id).all()
    assert {e.symptom for e in events} == {"GPU_GONE"}
    assert r["symptoms"] == ["GPU_GONE"] and not r.get("tied_symptoms")
    assert [(b["node"], b["symptoms"]) for b in r["bad_nodes"]] == [("n1", ["GPU_GONE"]), ("n2", ["GPU_GONE"])]
    # the query by alias found the added event (and set_symptom kept the canonical name)
    assert any(t["rule"] == "AddByAlias" and t["action"] == "set_symptom" for t in r["trace"])


def test_a_refiner_naming_an_alias_removes_the_symptom(make_corpus):
    rules = dict(RULES)
    rules["f.py"] = """
        from rulekit.plugin import RefinerPriority, refiner_def

        @refiner_def(name="DropByAlias", author="t", priority=RefinerPriority.FINAL)
        def drop_by_alias(context):
            assert "gpu gone (legacy name)" in context.symptoms
            context.symptoms.discard("gpu gone (legacy name)", rule="DropByAlias")
    """
    res = load_corpus([make_corpus(rules)])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    job = JobInfoBuilder("a", "FAILED", ("n1",)).build()
    with Session(res.engine, job) as s:
        s.ingest(Observation(source="syslog", node="n1", lines=["GPU GONE"], label="n1"))
        r = s.attribute()
    assert r["symptoms"] == [] and r["bad_nodes"] == [] and not r.get("rule_errors")
