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
from typing import Any, Callable, Iterable, Sequence

from rulekit.rules.records import dataclass
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.model import AccumulatorRule, ExtractorRule, JobTestCase, LineTest, MetricRule, MetricTest
from rulekit.analysis.testing import TestResult, find_examples, run_example, run_job_test, run_line_test, run_metric_test
from rulekit.diagnostics import Span


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
    from rulekit.rules.project import examples_beside

    return examples_beside(rule_paths or ())


def collect(engine: RuleEngine, example_paths: Iterable[Path] = (), pattern: str | None = None,
            only: Callable[[str], bool] | None = None) -> list[TestItem]:
    """The test cases to run, in order; `only`: a predicate on the file that defines a
    line, metric or job test (the user's own files when the bundled rules are context)."""
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
    if only is not None:
        items = [it for it in items if it.file is not None and only(it.file)]
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
    load: Any = None  # the LoadResult when the corpus was loaded here (`run_unaffected`)
    broken: list[str] = field(default_factory=list)  # what did not load: "file" or "file: rule `R`"

    @property
    def failed(self) -> list[TestResult]:
        return [r for r in self.results if not r.passed and r.status != "skipped"]

    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        for r in self.results:
            out[r.status] += 1
        return out


def run_tests(engine: RuleEngine, example_paths: Iterable[Path] = (), pattern: str | None = None,
              only: Callable[[str], bool] | None = None) -> TestRun:
    """Every selected test case, in order; never stops at a failure."""
    items = collect(engine, example_paths, pattern, only)
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
    if result.skipped:
        return [result.skipped]
    if result.error:
        return [result.error]
    body = list(result.mismatches)
    body.append("expected (-) vs actual (+):")
    diff = (line_diff(result.expected, result.actual) if result.kind in ("line", "metric")
            else job_diff(result.expected, result.actual))
    return body + ["  " + x for x in diff]


# ---- a corpus with errors: every test its errors do not affect ----------------------------------

MAX_PRUNE_ROUNDS = 8  # removing a broken rule can break the rules that need it; a chain this long is rare


def run_unaffected(choice: Any, example_paths: Iterable[Path] = (), pattern: str | None = None,
                   options: Any = None) -> TestRun:
    """Load the corpus `choice` names (`rulekit.rules.project.CorpusChoice`, or a list of
    rule paths) and run its tests (the user's own files' when the bundled rules are
    context).  When the corpus does not load, every test its errors do not affect still
    runs: the rules with an error (and a file that did not parse, or a symptom that is
    invalid, with everything that uses it) are left out, and the inline tests of every
    other rule run through their rule alone, as always.  Job tests and example jobs run
    the whole corpus, so an error anywhere affects them: they are reported `skipped`
    with the reason, never silently dropped.  `run.load` holds the load's diagnostics."""
    from rulekit.config import EngineOptions
    from rulekit.rules.loader import load_corpus

    paths = getattr(choice, "load_paths", None)
    paths = list(choice) if paths is None else paths
    only = choice.owns if getattr(choice, "own", ()) else None
    options = options or EngineOptions.from_env()
    res = load_corpus(paths or None, options=options)
    if res.engine is not None:
        run = run_tests(res.engine, example_paths, pattern, only)
        run.load = res
        return run
    engine, broken_rules, broken_files, why = _prune(res, options)
    run = TestRun(load=res, broken=sorted(broken_files) + [f"{f}: rule `{r}`" for r, f in sorted(broken_rules.items())])
    skip_all = engine is None
    reason = "not run: " + (why or "the corpus has errors")
    items: list[TestItem] = []
    for rule in res.ruleset.rules:  # every inline test of the corpus, in load order
        tests = getattr(rule, "tests", ()) or ()
        kind = "metric" if isinstance(rule, MetricRule) else "line"
        for i, t in enumerate(tests):
            sp = t.span or rule.span
            items.append(TestItem(kind, f"{rule.name} #{i + 1}", sp.file if sp else None, sp.line if sp else None,
                                  rule=rule, test=t, index=i))
    for c in res.ruleset.job_tests:
        items.append(TestItem("job", c.name, c.span.file if c.span else None, c.span.line if c.span else None, case=c))
    if only is not None:
        items = [it for it in items if it.file is not None and only(it.file)]
    for d in find_examples(list(example_paths)):
        items.append(TestItem("example", d.name, str(d / "expected.json"), 1, example=d))
    items = [it for it in items if it.matches(pattern)]
    live = {r.name: r for r in (engine.rules if engine is not None else ())}
    for it in items:
        span = Span(it.file, it.line or 1, 1) if it.file else None
        rule_name = it.rule.name if it.rule is not None else None
        if it.kind in ("line", "metric") and not skip_all and rule_name in live:
            run.results.append(run_item(engine, TestItem(it.kind, it.name, it.file, it.line, live[rule_name], it.test,
                                                         it.index)))
            run.items.append(it)
            continue
        if it.kind in ("line", "metric") and rule_name in broken_rules:
            why_not = "not run: the rule has errors (above)"
        elif it.kind in ("line", "metric"):
            why_not = reason
        else:
            why_not = f"{reason}; a {'job test' if it.kind == 'job' else 'example job'} runs the whole corpus"
        run.results.append(TestResult(it.kind, it.name, False, span, rule_name, skipped=why_not))
        run.items.append(it)
    return run


def _prune(res: Any, options: Any) -> tuple[RuleEngine | None, dict[str, str], set[str], str]:
    """The corpus of `res` without what its errors touch: (engine or None, broken rule ->
    its file, files left out whole, a short reason).  Rule-level errors (they name a rule)
    leave out that rule, symptom-level ones that symptom, anything else in a file that
    whole file; then the rest is validated again (what needed a removed rule or symptom is
    broken too), up to MAX_PRUNE_ROUNDS times."""
    from rulekit.diagnostics import Severity
    from rulekit.rules.loader import check_corpus
    from rulekit.rules.model import RuleSet
    from rulekit.rules.registry import SymptomRegistry

    rs = res.ruleset
    rules, symptoms = list(rs.rules), list(rs.symptoms)
    outcome_rules = list(rs.outcome_rules)
    broken_rules: dict[str, str] = {}
    broken_files: set[str] = set()
    plugin_files = {f: t for f, t in res.texts.items() if f.endswith(".py")}
    errors = [d for d in res.diagnostics if d.severity is Severity.ERROR]
    first = errors[0] if errors else None
    why = (f"{first.span}: {first.code} in the corpus" if first is not None and first.span is not None
           else "the corpus has errors")
    for _ in range(MAX_PRUNE_ROUNDS):
        bad_rules: set[str] = set()
        bad_symptoms: set[str] = set()
        for d in errors:
            rule, sym = d.data.get("rule"), d.data.get("symptom")
            if isinstance(rule, str) and any(r.name == rule for r in rules):
                bad_rules.add(rule)
            elif isinstance(sym, str) and d.code != "RK203" and any(x.name == sym for x in symptoms):
                bad_symptoms.add(sym)
            elif d.span is not None:
                broken_files.add(d.span.file)
            else:
                return None, broken_rules, broken_files, why
        for r in rules:
            if r.name in bad_rules or (r.span is not None and r.span.file in broken_files):
                broken_rules.setdefault(r.name, r.span.file if r.span else "?")
        rules = [r for r in rules if r.name not in broken_rules]
        symptoms = [x for x in symptoms if x.name not in bad_symptoms
                    and not (x.span is not None and x.span.file in broken_files)]
        outcome_rules = [o for o in outcome_rules if not (o.span is not None and o.span.file in broken_files)]
        kept = RuleSet(rules=rules, symptoms=symptoms, outcome_rules=outcome_rules)
        registry = SymptomRegistry(kept.symptoms, kept.outcome_rules)
        again = check_corpus(kept, registry, {f: t for f, t in plugin_files.items() if f not in broken_files})
        errors = [d for d in again if d.severity is Severity.ERROR]
        if not errors:
            try:
                return RuleEngine(kept, registry, options=options), broken_rules, broken_files, why
            except Exception:  # noqa: BLE001 - a corpus that cannot even be organised: nothing runs
                return None, broken_rules, broken_files, why
    return None, broken_rules, broken_files, why

