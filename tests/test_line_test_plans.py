"""A line test runs its rules through the corpus's own scan plan, narrowed to them,
once that plan is built (`RuleEngine.scanner_for_rules`; `run_tests` builds it for a
run of many): every bundled line test sees the same events as through a scanner of
its rules' own, and rules that are not the corpus's still get one."""
from __future__ import annotations

from rulekit.analysis.testing import run_line_test
from rulekit.rules.corpus import _FilteredScanner
from rulekit.rules.loader import bundled_rules_path, load_corpus
from rulekit.rules.model import AccumulatorRule, ExtractorRule


def _line_tests(engine):
    for rule in engine.rules:
        if isinstance(rule, (ExtractorRule, AccumulatorRule)):
            for i, test in enumerate(getattr(rule, "tests", ()) or ()):
                yield rule, test, i


def test_a_narrowed_plan_gives_every_line_test_the_same_events():
    own = load_corpus([bundled_rules_path()]).engine  # no plan over every rule: a scanner per test
    narrowed = load_corpus([bundled_rules_path()]).engine
    narrowed.scan_plan("applog", "text")
    cases = list(_line_tests(own))
    assert len(cases) > 500
    for (rule, test, i), (rule2, test2, _) in zip(cases, _line_tests(narrowed)):
        a, b = run_line_test(own, rule, test, i), run_line_test(narrowed, rule2, test2, i)
        assert (a.passed, a.actual, a.error) == (b.passed, b.actual, b.error), rule.name
    some, some2 = cases[0][0], next(_line_tests(narrowed))[0]  # the same rule, each engine's own object
    assert not isinstance(own.scanner_for_rules([some]).scanner, _FilteredScanner)
    assert isinstance(narrowed.scanner_for_rules([some2]).scanner, _FilteredScanner)


def test_rules_that_are_not_the_corpus_s_get_a_scanner_of_their_own():
    engine = load_corpus([bundled_rules_path()]).engine
    engine.scan_plan("applog", "text")
    stranger = load_corpus([bundled_rules_path()]).engine.extractors[0]  # equal, but another object
    plan = engine.scanner_for_rules([stranger])
    assert not isinstance(plan.scanner, _FilteredScanner) and plan.rules == (stranger,)
    first, second = engine.extractors[0], engine.extractors[1]
    assert not isinstance(engine.scanner_for_rules([second, first]).scanner, _FilteredScanner)  # not in its order
