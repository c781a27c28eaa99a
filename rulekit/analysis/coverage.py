"""Test coverage of a corpus, as Diagnostics:

* RK402 untested-rule: an extractor (or accumulator) with no positive inline test line.
* RK406 missing-negative-test: one that has positive tests but no near-miss line.
* RK403 rule-never-fires: a rule that no test case (inline, job test, example job)
  makes fire: an extractor or accumulator that never emits, a filter or refiner
  that never touches an event or symptom, a collector... never counted (collectors
  only read; they are out of scope).
* RK404 symptom-never-produced: a registered symptom no test case produces.

The entries of one `[[catalog]]` share one pattern template and differ only in the
key literal, so a catalog is one unit here: it is tested when any entry has a
test, and fires when any entry fires.  (Family members have their own
parameters and are counted one by one.)  Pure: takes the engine and the test
results, returns Diagnostics.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from rulekit.diagnostics import Diagnostic
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.model import AccumulatorRule, CollectorRule, ExtractorRule
from rulekit.analysis.testing import TestResult


def _unit(rule: Any) -> str:
    origin = getattr(rule, "origin", None) or ""
    if origin.startswith("catalog:"):
        return origin.split("[", 1)[0]
    return rule.name


def static_coverage(engine: RuleEngine, settings: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """RK402 and RK406: what the inline tests cover, without running anything."""
    cfg = dict(settings or {})
    units: dict[str, list[ExtractorRule | AccumulatorRule]] = {}
    for r in (*engine.extractors, *engine.accumulators):
        units.setdefault(_unit(r), []).append(r)
    out: list[Diagnostic] = []
    for unit, rules in units.items():
        tests = [t for r in rules for t in r.tests]
        first = rules[0]
        label = f"catalog `{unit.split(':', 1)[1]}`" if unit.startswith("catalog:") else f"`{first.name}`"
        if not any(t.expect != "nothing" for t in tests):
            if cfg.get("untested_rule", True):
                out.append(Diagnostic("RK402", f"{label} has no inline test line it must match", first.span,
                                      data={"rule": first.name, "unit": unit}))
        elif not any(t.expect == "nothing" for t in tests) and cfg.get("missing_negative_test", True):
            out.append(Diagnostic("RK406", f"{label} has no near-miss test line (expect = \"nothing\")", first.span,
                                  data={"rule": first.name, "unit": unit}))
    return out


def run_coverage(engine: RuleEngine, results: Iterable[TestResult], settings: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """RK403 and RK404 from the results of running every test of the corpus."""
    cfg = dict(settings or {})
    results = list(results)
    fired: set[str] = set()
    produced: set[str] = set()
    for r in results:
        fired |= r.fired
        produced |= {engine.registry.canonical(s) for s in r.symptoms}
    fired_units = {_unit(engine.by_name[n]) for n in fired if n in engine.by_name}
    out: list[Diagnostic] = []
    if cfg.get("rule_never_fires", True):
        seen: set[str] = set()
        for rule in engine.rules:
            if isinstance(rule, CollectorRule):
                continue
            unit = _unit(rule)
            if unit in fired_units or unit in seen:
                continue
            seen.add(unit)
            label = f"catalog `{unit.split(':', 1)[1]}`" if unit.startswith("catalog:") else f"`{rule.name}`"
            out.append(Diagnostic("RK403", f"{label} ({rule.kind.value}) never fires in any test case", rule.span,
                                  data={"rule": rule.name, "unit": unit}))
    if cfg.get("symptom_never_produced", True):
        for s in engine.ruleset.symptoms:
            names = {s.name, *s.aliases}
            if not names & produced:
                out.append(Diagnostic("RK404", f"no test case produces symptom `{s.name}`", s.span,
                                      data={"symptom": s.name}))
    return out


def coverage(engine: RuleEngine, results: Iterable[TestResult], settings: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """Every coverage finding: static (RK402, RK406) and from the run (RK403, RK404)."""
    return sorted(static_coverage(engine, settings) + run_coverage(engine, results, settings), key=Diagnostic.sort_key)
