"""Running a corpus's tests for `rulekit test`, the pytest plugin and `lint`'s
coverage: selection (`-k`), the example-job folder default, a readable
expected-vs-actual diff per failure, and a run that never stops at the first
failure.  The test semantics themselves are `rulekit.analysis.testing`'s; this module
only selects, runs and describes.  No printing.
"""
from __future__ import annotations

import fnmatch
from dataclasses import field
from pathlib import Path
from typing import Any, Iterable, Sequence

from rulekit.rules.records import dataclass
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.model import AccumulatorRule, ExtractorRule, JobTestCase, LineTest, MetricRule, MetricTest
from rulekit.analysis.testing import TestResult, find_examples, run_example, run_job_test, run_line_test, run_metric_test


@dataclass(frozen=True)
class TestItem:
    """One runnable test case, before it runs."""

    kind: str  # line | metric | job | example
    name: str
    file: str | None
    line: int | None
    rule: ExtractorRule | AccumulatorRule | MetricRule | None = None
    test: LineTest | MetricTest | None = None
    index: int = 0
    case: JobTestCase | None = None
    example: Path | None = None

    @property
    def nodeid(self) -> str:
        return f"{self.kind}::{self.name}"

    def matches(self, pattern: str | None) -> bool:
        """pytest-like -k: substring (case-insensitive) of kind, name, rule or file, or a glob."""
        if not pattern:
            return True
        hay = " ".join(x for x in (self.kind, self.name, self.rule.name if self.rule else "", self.file or "") if x)
        p = pattern.lower()
        if any(ch in p for ch in "*?["):
            return fnmatch.fnmatch(hay.lower(), f"*{p}*")
        return p in hay.lower()


def default_example_paths(rule_paths: Sequence[str | Path] | None) -> list[Path]:
    """`examples/` beside each rules folder's parent (a repository's layout), when it exists."""
    out: list[Path] = []
    for p in rule_paths or ():
        p = Path(p)
        folder = p if p.is_dir() else p.parent
        cand = folder.resolve().parent / "examples"
        if cand.is_dir() and cand not in out:
            out.append(cand)
    return out


def collect(engine: RuleEngine, example_paths: Iterable[Path] = (), pattern: str | None = None) -> list[TestItem]:
    items: list[TestItem] = []
    for rule in (*engine.extractors, *engine.accumulators):
        for i, t in enumerate(rule.tests):
            s = t.span or rule.span
            items.append(TestItem("line", f"{rule.name} #{i + 1}", s.file if s else None, s.line if s else None,
                                  rule=rule, test=t, index=i))
    for mrule in engine.metric_rules:
        for i, mt in enumerate(mrule.tests):
            s = mt.span or mrule.span
            items.append(TestItem("metric", f"{mrule.name} #{i + 1}", s.file if s else None, s.line if s else None,
                                  rule=mrule, test=mt, index=i))
    for c in engine.job_tests:
        s = c.span
        items.append(TestItem("job", c.name, s.file if s else None, s.line if s else None, case=c))
    for d in find_examples(list(example_paths)):
        items.append(TestItem("example", d.name, str(d / "expected.json"), 1, example=d))
    return [it for it in items if it.matches(pattern)]


def run_item(engine: RuleEngine, item: TestItem) -> TestResult:
    try:
        if item.kind == "line":
            assert item.rule is not None and item.test is not None
            return run_line_test(engine, item.rule, item.test, item.index)  # type: ignore[arg-type]
        if item.kind == "metric":
            assert isinstance(item.rule, MetricRule) and isinstance(item.test, MetricTest)
            return run_metric_test(engine, item.rule, item.test, item.index)
        if item.kind == "job":
            assert item.case is not None
            return run_job_test(engine, item.case)  # type: ignore[arg-type]
        assert item.example is not None
        return run_example(engine, item.example)  # type: ignore[arg-type]
    except Exception as e:  # a case that cannot run is reported, the run goes on
        from rulekit.diagnostics import Span

        span = Span(item.file, item.line or 1, 1) if item.file else None
        return TestResult(item.kind, item.name, False, span, item.rule.name if item.rule else None,
                          error=f"could not run: {type(e).__name__}: {e}")


@dataclass
class TestRun:
    results: list[TestResult] = field(default_factory=list)
    items: list[TestItem] = field(default_factory=list)

    @property
    def failed(self) -> list[TestResult]:
        return [r for r in self.results if not r.passed]

    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "error": 0}
        for r in self.results:
            out[r.status] += 1
        return out


def run_tests(engine: RuleEngine, example_paths: Iterable[Path] = (), pattern: str | None = None) -> TestRun:
    """Every selected test case, in order; never stops at a failure."""
    items = collect(engine, example_paths, pattern)
    if sum(1 for it in items if it.kind == "line") > 1:
        engine.scan_plan("applog", "text")  # the plan over every rule: each line test's rules are a part of it
    return TestRun([run_item(engine, it) for it in items], items)


# ---- describing a failure ----------------------------------------------------------------

_JOB_FIELDS = ("outcome", "sub_domain", "root_cause", "root_node", "bad_nodes", "affected_nodes", "interesting_nodes",
               "interesting_symptoms", "symptoms", "absent_symptoms", "ambiguous", "confidence")


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return "none" if v is None else str(v)


def job_diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """A readable diff of a job-level expectation against the actual summary:
    `-` expected, `+` actual, ` ` equal, for each field the test names."""
    out: list[str] = []
    present = set(actual.get("symptoms") or [])
    for k in _JOB_FIELDS:
        if k not in expected:
            continue
        want = expected[k]
        if k == "root_cause" and isinstance(want, dict):
            want = want.get("symptom")
        if k == "symptoms":
            missing = [s for s in want if s not in present]
            for s in want:
                out.append(f"{'-' if s in missing else ' '} symptom {s}" + ("   (missing)" if s in missing else ""))
            continue
        if k == "absent_symptoms":
            for s in want:
                if s in present:
                    out.append(f"+ symptom {s}   (must be absent)")
            continue
        got = actual.get(k)
        if k in ("bad_nodes", "affected_nodes", "interesting_nodes"):
            want, got = sorted(want), sorted(got or [])
        if want == got or (k == "ambiguous" and bool(want) == bool(got)):
            out.append(f"  {k}: {_fmt(want)}")
        else:
            out.append(f"- {k}: {_fmt(want)}")
            out.append(f"+ {k}: {_fmt(got)}")
    return out


def line_diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    want = f"{expected.get('expect')}" + (f" {expected['symptom']}" if expected.get("symptom") else "")
    if expected.get("node"):
        want += f" on {expected['node']}"
    if expected.get("captures"):
        want += " with " + ", ".join(f"{k}={v!r}" for k, v in expected["captures"].items())
    out = [f"- {want}"]
    events = actual.get("events") or []
    if not events:
        out.append("+ nothing (no rule matched the line)")
    for e in events:
        caps = ", ".join(f"{k}={v!r}" for k, v in sorted(e.get("captures", {}).items()))
        out.append(f"+ {e['type']} {e.get('symptom') or ''} on {e.get('node') or '?'} (rule {e['rule']})"
                   + (f" with {caps}" if caps else ""))
    return out


def describe(result: TestResult) -> list[str]:
    """The lines that explain a failed or broken case (empty for a pass)."""
    if result.passed:
        return []
    if result.error:
        return [result.error]
    body = list(result.mismatches)
    body.append("expected (-) vs actual (+):")
    diff = (line_diff(result.expected, result.actual) if result.kind in ("line", "metric")
            else job_diff(result.expected, result.actual))
    return body + ["  " + x for x in diff]
