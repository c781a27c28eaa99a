"""Running a corpus's tests as data: inline line tests of extractors (and
accumulators), job-level tests (`*.test.toml`, DSL job cases) and example jobs
with an `expected.json`.  Returns TestResult records (pass/fail, expected vs
actual, the rules that fired and the symptoms produced) for the CLI, the pytest
plugin and the language server to render.  Never stops at the first failure.
"""
from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path
from typing import Any, Iterable, Mapping

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Diagnostic, RulekitError, Span
from rulekit.rules.corpus import RuleEngine
from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.fleet import FleetContext, FleetContextError
from rulekit.inputs.jobdir import read_job_dir
from rulekit.inputs.jobinfo import JobInfo
from rulekit.rules.model import (AccumulatorRule, ExtractorRule, JobTestCase, LineTest, MetricRule, MetricTest,
                                 event_type_name, short_type)
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation
from rulekit.engine.metrics import MetricPhase
from rulekit.engine.phases import ExtractionPhase
from rulekit.engine.session import Session
from rulekit.engine.store import EventManager

__all__ = ["TestResult", "run_line_test", "run_metric_test", "run_inline_tests", "run_job_tests", "run_examples", "compare_expect",
           "attribute_dir", "run_all"]


@dataclass
class TestResult:
    kind: str  # "line" | "metric" | "job" | "example"
    name: str
    passed: bool
    span: Span | None = None
    rule: str | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    actual: dict[str, Any] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    error: str | None = None  # the case could not be run
    fired: set[str] = field(default_factory=set)
    symptoms: set[str] = field(default_factory=set)
    skipped: str | None = None  # not run, and why (an error in the corpus it depends on)

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        return "error" if self.error else ("passed" if self.passed else "failed")

    def to_dict(self) -> dict[str, Any]:
        s = self.span
        d = {"kind": self.kind, "name": self.name, "status": self.status, "rule": self.rule,
             "file": s.file if s else None, "line": s.line if s else None,
             "expected": self.expected, "actual": self.actual, "mismatches": self.mismatches, "error": self.error}
        if self.skipped:
            d["skipped"] = self.skipped
        return d

    def diagnostic(self) -> Diagnostic:
        code = "RK405" if self.error else "RK401"
        msg = self.error or f"{self.kind} test `{self.name}` failed: " + "; ".join(self.mismatches)
        return Diagnostic(code, msg, self.span, data={"expected": self.expected, "actual": self.actual})


def _group_rules(engine: RuleEngine, rule: ExtractorRule | AccumulatorRule) -> list[ExtractorRule | AccumulatorRule]:
    """A catalog's tests run through every rule of that catalog."""
    origin = getattr(rule, "origin", None)
    if origin and origin.startswith("catalog:"):
        return list(engine.rules_of_origin(origin))
    return [rule]


def run_line_test(engine: RuleEngine, rule: ExtractorRule | AccumulatorRule, test: LineTest, index: int = 0) -> TestResult:
    rules = _group_rules(engine, rule)
    name = f"{rule.name} #{index + 1}"
    source = test.source or (rule.sources[0] if rule.sources else "applog")
    fmt = test.format or (rule.formats[0] if rule.formats else "text")
    job = JobInfo(id="line-test", nodes=(test.node,) if test.node else ())
    manager = EventManager([r.name for r in rules])
    try:
        ctx = manager.context("line-test")
        phase = ExtractionPhase(engine, manager, ctx, job)
        obs = Observation(source=source, format=fmt, lines=test.line.split("\n"), label="test line")
        plan = engine.scanner_for_rules(rules)
        phase.apply(obs, plan=plan)
        events = manager.stream(ctx).all()
    except Exception as e:  # a rule that cannot run is a test error, not a crash
        manager.close(flush=False)
        return TestResult("line", name, False, test.span, rule.name, error=f"could not run: {type(e).__name__}: {e}")
    manager.close(flush=False)
    expected: dict[str, Any] = {"expect": test.expect}
    if test.symptom:
        expected["symptom"] = test.symptom
    if test.node:
        expected["node"] = test.node
    if test.captures:
        expected["captures"] = dict(test.captures)
    actual = {"events": [{"type": _short(e.event_type), "symptom": e.symptom, "node": e.node, "rule": e.rule,
                          "captures": {k: v for k, v in e.fields.items() if k not in ("rank", "uptime")}} for e in events]}
    mismatches: list[str] = []
    if test.expect == "nothing":
        if events:
            mismatches.append(f"expected no match, but {events[0].rule} emitted {_short(events[0].event_type)} "
                              f"{events[0].symptom or ''}".rstrip())
    else:
        want_type = event_type_name(test.expect)
        ok = [e for e in events if e.event_type == want_type
              and (test.symptom is None or e.symptom == engine.registry.canonical(test.symptom))
              and (test.node is None or e.node == test.node)
              and all(str(e.fields.get(k)) == v for k, v in test.captures)]
        if not ok:
            if not events:
                mismatches.append("expected a match, but the rule did not match the line")
            else:
                mismatches += _what_differs(engine, test, want_type, events)
    return TestResult("line", name, not mismatches, test.span, rule.name, expected, actual, mismatches,
                      fired={e.rule for e in events if e.rule}, symptoms={e.symptom for e in events if e.symptom})


_short = short_type  # the stored event type's rule-file name (rulekit.rules.model)


def _what_differs(engine: RuleEngine, test: LineTest, want_type: str, events: list) -> list[str]:
    """What the nearest emitted event has that the test did not expect, one clause per
    field that differs (`node: expected 'node-02', got none`), so a failure's headline
    says what is wrong rather than restating what matched."""
    sym = engine.registry.canonical(test.symptom) if test.symptom else None

    def differences(e) -> list[str]:
        out = []
        if e.event_type != want_type:
            out.append(f"type: expected {test.expect}, got {_short(e.event_type)}")
        if sym is not None and e.symptom != sym:
            out.append(f"symptom: expected {test.symptom!r}, got {e.symptom!r}" if e.symptom else
                       f"symptom: expected {test.symptom!r}, got none")
        if test.node is not None and e.node != test.node:
            out.append(f"node: expected {test.node!r}, got " + (repr(e.node) if e.node else
                       "none (the line names no node: rank prefix, syslog host or NCCL host prefix)"))
        for k, v in test.captures:
            got = e.fields.get(k)
            if str(got) != v:
                out.append(f"capture `{k}`: expected {v!r}, got " + (repr(str(got)) if got is not None else "none"))
        return out

    nearest = min((differences(e) for e in events), key=len)
    if len(events) > 1:
        nearest = [*nearest, f"(nearest of {len(events)} events the line produced)"]
    return nearest


def run_metric_test(engine: RuleEngine, rule: MetricRule, test: MetricTest, index: int = 0) -> TestResult:
    """One inline test of a metric rule: its series run through the rule alone."""
    name = f"{rule.name} #{index + 1}"
    job = JobInfo(id="metric-test", nodes=(test.node,))
    manager = EventManager([rule.name])
    try:
        ctx = manager.context("metric-test")
        MetricPhase(engine, manager, ctx, job).apply(
            MetricSeries.of(test.node, rule.metric, list(test.samples), dict(test.labels)), rules=[rule])
        events = manager.stream(ctx).all()
    except Exception as e:  # a rule that cannot run is a test error, not a crash
        return TestResult("metric", name, False, test.span, rule.name, error=f"could not run: {type(e).__name__}: {e}")
    finally:
        manager.close(flush=False)
    expected: dict[str, Any] = {"expect": test.expect}
    if test.symptom:
        expected["symptom"] = test.symptom
    actual = {"events": [{"type": _short(e.event_type), "symptom": e.symptom, "node": e.node, "rule": e.rule,
                          "datum": e.datum} for e in events]}
    mismatches: list[str] = []
    if test.expect == "nothing":
        if events:
            mismatches.append(f"expected no event, but the rule fired: {events[0].datum}")
    else:
        want = event_type_name(test.expect)
        sym = engine.registry.canonical(test.symptom) if test.symptom else None
        if not any(e.event_type == want and (sym is None or e.symptom == sym) for e in events):
            if not events:
                mismatches.append("expected the rule to fire, but its condition never held long enough")
            else:
                e = events[0]
                if e.event_type != want:
                    mismatches.append(f"type: expected {test.expect}, got {_short(e.event_type)}")
                if sym is not None and e.symptom != sym:
                    mismatches.append(f"symptom: expected {test.symptom!r}, got {e.symptom!r}")
    return TestResult("metric", name, not mismatches, test.span, rule.name, expected, actual, mismatches,
                      fired={e.rule for e in events if e.rule}, symptoms={e.symptom for e in events if e.symptom})


def run_inline_tests(engine: RuleEngine) -> list[TestResult]:
    """Every inline test: extractors' and accumulators' lines, metric rules' series."""
    out = []
    for rule in (*engine.extractors, *engine.accumulators):
        for i, t in enumerate(rule.tests):
            out.append(run_line_test(engine, rule, t, i))
    for mrule in engine.metric_rules:
        for i, mt in enumerate(mrule.tests):
            out.append(run_metric_test(engine, mrule, mt, i))
    return out


def compare_expect(expect: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """Differences between an expectation (subset of result fields) and a result."""
    diffs: list[str] = []
    root = result.get("root_cause") or {}
    bad_nodes = sorted(b["node"] for b in result.get("bad_nodes", []))
    present = set(result.get("symptoms", []))
    for b in (*result.get("bad_nodes", []), *result.get("affected_nodes", [])):
        present.update(b.get("symptoms", []))
    interesting = sorted(b["node"] for b in result.get("interesting_nodes", []))
    interesting_syms = {s for b in result.get("interesting_nodes", []) for s in b.get("symptoms", [])}
    for k, want in expect.items():
        if k == "outcome" and result.get("outcome") != want:
            diffs.append(f"outcome: expected {want!r}, got {result.get('outcome')!r}")
        elif k == "sub_domain" and result.get("sub_domain") != want:
            diffs.append(f"sub_domain: expected {want!r}, got {result.get('sub_domain')!r}")
        elif k == "root_cause":
            got = root.get("symptom") if isinstance(root, dict) else None
            if isinstance(want, dict):
                want = want.get("symptom")
            if got != want:
                diffs.append(f"root cause: expected {want!r}, got {got!r}")
        elif k == "root_node" and root.get("node") != want:
            diffs.append(f"root node: expected {want!r}, got {root.get('node')!r}")
        elif k in ("bad_nodes", "affected_nodes"):
            got_nodes = bad_nodes if k == "bad_nodes" else sorted(b["node"] for b in result.get(k, []))
            w = sorted(x["node"] if isinstance(x, dict) else x for x in want)
            if w != got_nodes:
                missing = sorted(set(w) - set(got_nodes))
                extra = sorted(set(got_nodes) - set(w))
                diffs.append(f"{k.replace('_', ' ')}: expected {w}, got {got_nodes}"
                             + (f" (missing {missing})" if missing else "") + (f" (unexpected {extra})" if extra else ""))
        elif k == "confidence" and result.get("confidence") != want:
            diffs.append(f"confidence: expected {want!r}, got {result.get('confidence')!r}")
        elif k == "interesting_nodes":
            w = sorted(x["node"] if isinstance(x, dict) else x for x in want)
            if w != interesting:
                diffs.append(f"interesting nodes: expected {w}, got {interesting}")
        elif k == "interesting_symptoms":
            missing = [s for s in want if s not in interesting_syms]
            if missing:
                diffs.append(f"interesting symptoms: missing {missing} (present: {sorted(interesting_syms)})")
        elif k == "symptoms":
            missing = [s for s in want if s not in present]
            if missing:
                diffs.append(f"symptoms: missing {missing} (present: {sorted(present)})")
        elif k == "absent_symptoms":
            there = [s for s in want if s in present]
            if there:
                diffs.append(f"symptoms that must be absent are present: {there}")
        elif k == "ambiguous" and bool(result.get("ambiguous")) != bool(want):
            diffs.append(f"ambiguous: expected {want}, got {result.get('ambiguous')}")
    return diffs


def job_from_mapping(job: Mapping[str, Any], default_id: str = "job-test") -> JobInfo:
    """A test case's job table through the one job-record schema (`rulekit.inputs.jobrecord`)."""
    j = dict(job)
    j.setdefault("id", default_id)
    return parse_job_record(j)


def _summary(result: Mapping[str, Any]) -> dict[str, Any]:
    root = result.get("root_cause") or {}
    return {"outcome": result.get("outcome"), "sub_domain": result.get("sub_domain"),
            "root_cause": root.get("symptom"), "root_node": root.get("node"),
            "bad_nodes": [b["node"] for b in result.get("bad_nodes", [])],
            "affected_nodes": [b["node"] for b in result.get("affected_nodes", [])],
            "confidence": result.get("confidence"),
            "interesting_nodes": [b["node"] for b in result.get("interesting_nodes", [])],
            "interesting_symptoms": sorted({s for b in result.get("interesting_nodes", []) for s in b.get("symptoms", [])}),
            "symptoms": list(result.get("symptoms", [])), "ambiguous": result.get("ambiguous")}


def _fired(session: Session) -> tuple[set[str], set[str]]:
    events = session.manager.stream(session.context_id).all()
    rules = {e.rule for e in events if e.rule} | {t.rule for t in session.trace}
    return rules, {e.symptom for e in events if e.symptom}


def run_job_test(engine: RuleEngine, case: JobTestCase) -> TestResult:
    try:
        job = job_from_mapping(case.job)
    except (RulekitError, JobRecordError, TypeError, ValueError) as e:
        return TestResult("job", case.name, False, case.span, error=f"invalid job in test case: {e}")
    try:
        fleet = FleetContext.from_dict(dict(case.fleet), "fleet") if case.fleet is not None else None
    except FleetContextError as e:
        return TestResult("job", case.name, False, case.span, error=f"invalid fleet in test case: {e}")
    with Session(engine, job, fleet=fleet) as s:
        for o in case.observations:
            s.ingest(Observation(source=o.source, format=o.format, node=o.node, lines=list(o.lines),
                                 label=f"{case.name}:{o.source}"))
        s.ingest_metrics(MetricSeries.of(m.node, m.name, list(m.samples), dict(m.labels)) for m in case.metrics)
        result = s.attribute()
        fired, symptoms = _fired(s)
    diffs = compare_expect(case.expect, result)
    return TestResult("job", case.name, not diffs, case.span, None, dict(case.expect), _summary(result), diffs,
                      fired=fired, symptoms=symptoms)


def run_job_tests(engine: RuleEngine, cases: Iterable[JobTestCase] | None = None) -> list[TestResult]:
    return [run_job_test(engine, c) for c in (engine.job_tests if cases is None else cases)]


def run_example(engine: RuleEngine, job_dir: Path) -> TestResult:
    exp_path = job_dir / "expected.json"
    span = Span(str(exp_path), 1, 1)
    try:
        expect = json.loads(exp_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        return TestResult("example", job_dir.name, False, span, error=f"cannot read expected.json: {e}")
    try:
        jd = read_job_dir(job_dir)
    except RulekitError as e:
        return TestResult("example", job_dir.name, False, span, error=str(e))
    with Session(engine, jd.job) as s:
        s.ingest_batch(jd.observations)
        s.ingest_metrics(jd.metrics)
        result = s.attribute()
        fired, symptoms = _fired(s)
    diffs = compare_expect(expect, result)
    return TestResult("example", job_dir.name, not diffs, span, None, expect, _summary(result), diffs,
                      fired=fired, symptoms=symptoms)


def find_examples(paths: Iterable[Path]) -> list[Path]:
    out = []
    for p in paths:
        if (p / "expected.json").exists():
            out.append(p)
        elif p.is_dir():
            out.extend(sorted(d for d in p.iterdir() if (d / "expected.json").exists()))
    return out


def run_examples(engine: RuleEngine, paths: Iterable[Path]) -> list[TestResult]:
    return [run_example(engine, d) for d in find_examples(paths)]


def run_all(engine: RuleEngine, example_paths: Iterable[Path] = ()) -> list[TestResult]:
    return run_inline_tests(engine) + run_job_tests(engine) + run_examples(engine, example_paths)
